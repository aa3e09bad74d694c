// Internal interface of the lowering (AST -> graph IR), shared by lower_*.cpp.
//
// The lowering is an abstract interpreter over the AST: every script value is
// a compile-time `Val` — a number, string, dtype, tuple, module, function — or
// a tensor, which is an SSA ir::Value in the graph being built. Control flow
// (if, for, calls to other defs) runs at compile time, so the graph is a
// straight line; a condition that depends on tensor data is rejected.
//
// Mutation is functionalized: an in-place op or a slice assignment computes a
// new SSA value and rebinds the variable. Tensors carry an alias class
// (`storage`): views share their base's class, so an update that would be
// visible through another live variable is either applied to it too (a plain
// alias, `y = x`) or rejected — never silently lost.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "frontend/ast.h"
#include "frontend/diagnostics.h"
#include "frontend/limits.h"
#include "ir/graph.h"

namespace kiln::frontend {

// Thrown after a diagnostic has been recorded; unwinds to the statement.
struct Abort {};

struct Val {
  enum class Kind {
    None,
    Tensor,
    Int,
    Float,
    Bool,
    Str,
    DType,
    SymDim,  // a symbolic tensor size (s = symbol): known only at run time
    Tuple,
    List,
    Module,    // s = "torch", "F", "torch.nn", "math", "typing"
    Function,  // a def in this file; s = name
    Method,    // a bound tensor method; s = name, items[0] = self
    Builtin,   // s = "float", "int", "range", "torch.relu" ...
    Type,      // an annotation-only name: Tensor, List, Optional, ...
    Poison,    // produced by an expression that already reported an error
  };
  Kind kind = Kind::None;
  ir::Value* value = nullptr;  // Tensor
  int64_t storage = 0;         // Tensor alias class; List identity (0: a temporary)
  int64_t i = 0;
  double f = 0;
  std::string s;
  DType dtype = DType::F32;
  std::vector<Val> items;
  const Expr* receiver = nullptr;  // Method: the expression `self` came from
  // Tensor: a Python number whose value is known only at run time (`t.item()`,
  // `int(t)`, `float(t)`, `bool(t)`): Int, Float or Bool, held as a 0-d
  // tensor of i64, f64 or bool. None for an ordinary tensor.
  Kind number = Kind::None;

  static Val none() { return {}; }
  static Val int_(int64_t v) {
    Val x;
    x.kind = Kind::Int;
    x.i = v;
    return x;
  }
  static Val float_(double v) {
    Val x;
    x.kind = Kind::Float;
    x.f = v;
    return x;
  }
  static Val bool_(bool v) {
    Val x;
    x.kind = Kind::Bool;
    x.i = v;
    return x;
  }
  static Val str(std::string v) {
    Val x;
    x.kind = Kind::Str;
    x.s = std::move(v);
    return x;
  }
  static Val dtype_(DType d) {
    Val x;
    x.kind = Kind::DType;
    x.dtype = d;
    return x;
  }
  static Val tuple(std::vector<Val> items, Kind k = Kind::Tuple) {
    Val x;
    x.kind = k;
    x.items = std::move(items);
    return x;
  }
  static Val named(Kind k, std::string name) {
    Val x;
    x.kind = k;
    x.s = std::move(name);
    return x;
  }

  bool is_tensor() const { return kind == Kind::Tensor; }
  bool is_number() const { return kind == Kind::Int || kind == Kind::Float || kind == Kind::Bool; }
  bool is_runtime_number() const { return kind == Kind::Tensor && number != Kind::None; }
  bool is_seq() const { return kind == Kind::Tuple || kind == Kind::List; }
  double num() const { return kind == Kind::Float ? f : double(i); }
  const ir::Type& type() const { return value->type(); }
};

// "int", "Tensor", "tuple", ... for messages.
std::string kind_name(const Val& v);

// One call argument as written.
struct Arg {
  Val val;
  Span span;
  const Expr* expr = nullptr;  // as written, when an in-place flag must update it
};

struct CallArgs {
  std::vector<Arg> positional;
  std::vector<std::pair<std::string, Arg>> keywords;
  std::vector<Span> keyword_names;  // where each keyword's name is, for naming errors
  Span span;                        // the whole call
  Span callee;  // the callee name (method name for `x.m(...)`), where op errors point
};

class Lowerer;

// Arguments bound to a signature (see OpEntry::sig), with typed accessors that
// report conversion errors at the argument.
class Bound {
 public:
  Bound(Lowerer& L, std::string fn, const CallArgs& call) : L(L), fn(std::move(fn)), call(call) {}

  Lowerer& L;
  std::string fn;  // as written: "torch.sum", "F.conv2d", "Tensor.view"
  const CallArgs& call;
  std::map<std::string, Arg> args;

  const Val& val(const std::string& name) const;
  const Span& span(const std::string& name) const;
  bool is_none(const std::string& name) const;
  bool given(const std::string& name) const { return args.count(name) > 0; }

  ir::Value* tensor(const std::string& name) const;
  ir::Value* operand(const std::string& name) const;     // tensor or scalar constant
  ir::Value* opt_tensor(const std::string& name) const;  // tensor or none constant
  int64_t int_(const std::string& name) const;
  double float_(const std::string& name) const;
  bool bool_(const std::string& name) const;
  std::string str(const std::string& name) const;
  std::vector<int64_t> ints(const std::string& name) const;   // int or sequence of ints
  std::optional<DType> dtype(const std::string& name) const;  // None -> nullopt

  [[noreturn]] void fail(const std::string& name, const std::string& message) const;
  [[noreturn]] void fail(const std::string& message) const;  // at the callee
  // Fails when `v` (argument `name`) is a number known only at run time.
  void compile_time(const std::string& name, const Val& v) const;
};

using Handler = std::function<Val(Bound&)>;

// One entry of the name -> op table (lower_ops_*.cpp). `sig` lists parameters
// like Python: "input, dim=None, keepdim=False, *, dtype=None"; "*shape"
// collects the remaining positional arguments into a tuple.
inline constexpr unsigned kTorch = 1, kMethod = 2, kF = 4, kMath = 8, kSpecial = 16;
struct OpEntry {
  std::string name;
  unsigned spellings = 0;
  std::string sig;
  Handler fn;
  bool inplace = false;  // the method mutates self (fill_, zero_, copy_)
};

// Registration of the table, split by topic.
void add_math_ops(std::vector<OpEntry>& t);    // elementwise, comparisons, reductions
void add_nn_ops(std::vector<OpEntry>& t);      // softmax, norms, matmul, conv, pooling, factories
void add_layout_ops(std::vector<OpEntry>& t);  // view/reshape/permute/cat/split/... and casts
void add_nn2_ops(std::vector<OpEntry>& t);     // losses, group/instance norm, attention
void add_spatial_ops(std::vector<OpEntry>& t);  // pad, interpolate, conv1d/transpose, 1-D pools
void add_index_ops(std::vector<OpEntry>& t);   // gather, scatter, index_put, ... (lower_ops_index.cpp)
void add_shape_ops(std::vector<OpEntry>& t);   // einsum, flip, roll, repeat, diag, ... (issue 13)
// tan, atan2, lgamma, prelu, ... (lower_ops_extra_math.cpp)
void add_extra_math_ops(std::vector<OpEntry>& t);
void add_special_aliases(std::vector<OpEntry>& t);  // torch.special.X of torch.X entries (last)
void add_reduce_ops(std::vector<OpEntry>& t);  // scans, norms, var_mean, count_nonzero
void add_selection_ops(std::vector<OpEntry>& t);  // sort, topk, kthvalue, median
void add_scalar_ops(std::vector<OpEntry>& t);  // Tensor.item, aten spellings (lower_scalars.cpp)
const OpEntry* find_op(unsigned spelling, const std::string& name);
std::vector<std::string> op_names(unsigned spelling);

struct Frame {
  const FunctionDef* fn = nullptr;
  std::map<std::string, Val> vars;
  std::optional<Val> ret;
  bool returned = false;
  bool broke = false;
  bool continued = false;
};

class Lowerer {
 public:
  Lowerer(const Module& m, ir::Graph& g, Diagnostics& diags);

  // Lowers `fn`'s body with parameters already bound in `top`; returns the
  // returned value (flattened into graph outputs by the caller).
  Val run(const FunctionDef& fn, Frame top);

  // --- graph emission (errors are re-reported at `at`) -------------------------
  std::vector<ir::Value*> apply(const std::string& op, std::vector<ir::Value*> inputs,
                                ir::Attrs attrs, const Span& at);
  ir::Value* apply1(const std::string& op, std::vector<ir::Value*> inputs, ir::Attrs attrs,
                    const Span& at);
  ir::Value* constant(const Val& v, const Span& at);  // scalar or none -> constant node
  ir::Value* operand(const Val& v, const Span& at);   // tensor, or constant for a scalar

  // A fresh tensor (new alias class) or a view of `base` (same class).
  Val fresh(ir::Value* v);
  Val view_of(ir::Value* v, const Val& base);

  [[noreturn]] void fail(const Span& at, const std::string& message, const std::string& note = {});
  const SourceFile& file() const { return *file_; }
  ir::Graph& graph() { return g_; }
  const Module& module() const { return m_; }

  // --- compile-time helpers -------------------------------------------------------------
  int64_t static_dim(ir::Value* t, int64_t d, const Span& at);  // d may be negative
  Val size_val(ir::Value* t, int64_t d);                        // Int, or SymDim when symbolic
  ir::Value* cast(ir::Value* t, DType to, const Span& at);      // no node when already `to`

  // --- expressions (lower_expr.cpp) ------------------------------------------------------
  Val eval(const Expr& e);
  Val binary(const std::string& op, const Val& a, const Val& b, const Span& at);
  Val unary(const std::string& op, const Val& a, const Span& at);
  Val compare(const std::string& op, const Val& a, const Val& b, const Span& at);
  bool truth(const Val& v, const Span& at);  // compile-time truthiness
  Val attribute(const Val& base, const std::string& name, const Expr& e);
  // torch.ops.aten.<name> (lower_scalars.cpp): the binding of torch.<name>,
  // or of Tensor.<name> with self first.
  Val aten_attribute(const std::string& path, const std::string& name, const Span& at);

  // --- run-time numbers (lower_scalars.cpp) ---------------------------------------------
  // int(t) / float(t) / bool(t) / t.item(): `kind` is Int, Float or Bool.
  Val to_runtime_number(const Val& t, Val::Kind kind, const std::string& how, const Span& at);
  // A binary operator where either side is a run-time number.
  Val runtime_binary(const std::string& op, const Val& a, const Val& b, const Span& at);
  // A run-time number as an operand next to tensor `other` (nullptr: none),
  // cast as PyTorch promotes a Python number (a "wrapped number").
  ir::Value* number_operand(const Val& v, ir::Value* other, const Span& at);
  // Fails: `v` (a run-time number) is used where a compile-time value is needed.
  [[noreturn]] void runtime_value_needed(const Val& v, const Span& at, const std::string& use,
                                         const std::string& instead);

  // --- indexing (lower_index.cpp) ----------------------------------------------------------
  Val subscript(const Val& base, const Expr& index, const Span& at);
  ir::Value* scatter(const Val& base, const Expr& index, const Val& value, const Span& at);

  // --- calls (lower_call.cpp) ---------------------------------------------------------------
  Val call(const Expr& e);
  Val call_value(const Val& callee, const CallArgs& args, const Expr* callee_expr);
  Val call_builtin(const std::string& name, const CallArgs& args);
  Val call_function(const FunctionDef& fn, const CallArgs& args);
  // torch.jit.annotate / is_scripting / is_tracing, torch.finfo / iinfo (lower_builtins.cpp).
  Val call_torch_builtin(const std::string& name, const CallArgs& args);
  // finfo(dtype).eps and friends; `info` is what call_torch_builtin returned.
  Val type_info_attr(const Val& info, const std::string& name, const Span& at);

  // --- lists (lower_list.cpp) ------------------------------------------------------------
  // Python lists are mutable and shared: every list bound to a name has an
  // identity (`storage`), and a method that changes it (`append`, ...)
  // updates every variable holding that list, in every frame.
  Val with_identity(Val v);  // a list without an identity gets a fresh one
  Val call_list_method(const Val& method, const CallArgs& args);
  // Calls `edit` on the items of the list in every variable that holds it.
  void change_list(const Val& list, const std::function<void(std::vector<Val>&)>& edit);
  const std::vector<Val>& current_items(const Val& list) const;
  // Records that `item` (a list, or a tensor's alias class) is now held
  // inside another value (a list in a tuple, a tensor in a list): changes to
  // it must then search values, not only variables.
  void note_nested(const Val& item);
  void note_items(const Val& seq);  // note_nested for every item, recursively
  // An in-place update of `old` seen through lists and tuples holding the
  // same tensor (and, with `vars`, through variables holding it too).
  void rebind_items(const Val& old, const Val& now, const Span& at, bool vars);
  // `xs.append` for a list variable, without copying the list's items.
  std::optional<Val> list_method_of(const Expr& e);
  void set_list_item(const Val& list, const Expr& index, const Val& v);  // xs[i] = v

  // --- statements (lower_stmt.cpp) --------------------------------------------------------
  void exec_block(const std::vector<StmtPtr>& body);
  void exec(const Stmt& s);
  // Stores `v` into an assignment target (name, tuple of targets, subscript).
  void store(const Expr& target, const Val& v, const Span& at);
  // Makes `new_value` the value of the tensor that `receiver` denotes
  // (functionalized in-place update); returns the updated Val.
  Val mutate(const Expr* receiver, const Val& self, ir::Value* new_value, const Span& at);
  void poison_targets(const Expr& target);
  // After `s` failed: poisons the names it assigns or mutates.
  void poison_changed(const Stmt& s);

  Val lookup(const std::string& name, const Span& at);
  // Reports `fn`'s deferred errors (FunctionDef::deferred), if any, and aborts.
  void report_deferred(const FunctionDef& fn);
  Frame& frame() { return frames_.back(); }

  // --- compile-time budgets (frontend/limits.h) -----------------------------------------
  const CompileBudgets& budgets() const { return budgets_; }
  // Fails when a list, tuple, string or range of n items is over the budget.
  void check_sequence_length(__int128 n, const Span& at);
  // Fails when one loop would unroll n iterations, more than the per-loop budget.
  void check_loop_length(int64_t n, const Span& at);
  // Counts one unrolled iteration against the budget of the whole compile.
  void count_iteration(const Span& at);

  // --- recursion bound ---------------------------------------------------------------
  // The parser bounds each expression and block (kMaxExprNesting, ...), but
  // inlined calls stack them: lowering recurses through eval, exec and calls,
  // so it keeps one count of them all and stops cleanly at kMaxDepth.
  static constexpr int kMaxDepth = 500;
  static constexpr size_t kMaxInlineDepth = 32;  // nested calls of defs
  class Nesting {
   public:
    Nesting(Lowerer& L, const Span& at) : L_(L) { L_.enter(at); }
    ~Nesting() { --L_.depth_; }
    Nesting(const Nesting&) = delete;
    Nesting& operator=(const Nesting&) = delete;

   private:
    Lowerer& L_;
  };

 private:
  void rebind(const std::string& name, const Val& old, const Val& now, const Span& at);
  void enter(const Span& at);  // ++depth_, or fail when at kMaxDepth

  const Module& m_;
  ir::Graph& g_;
  Diagnostics& diags_;
  std::shared_ptr<const SourceFile> file_;
  std::vector<Frame> frames_;
  std::map<std::string, Val> globals_;
  // Module-level assignments that failed: their errors, reported (once) only
  // when the chosen def uses one of the names they assign.
  struct FailedGlobal {
    std::vector<Diagnostic> errors;
    bool reported = false;
  };
  std::map<std::string, std::shared_ptr<FailedGlobal>> failed_globals_;
  int64_t next_storage_ = 1;
  std::set<int64_t> nested_;  // list identities and tensor alias classes held inside values
  int depth_ = 0;             // open Nesting levels
  CompileBudgets budgets_ = CompileBudgets::from_env();
  int64_t unrolled_ = 0;  // loop iterations unrolled so far
};

// Compile-time scalar arithmetic with Python semantics.
Val scalar_binary(Lowerer& L, const std::string& op, const Val& a, const Val& b, const Span& at);

// Emits one op for an op-table handler, located at the callee.
inline Val emit(Bound& b, const std::string& op, std::vector<ir::Value*> inputs,
                ir::Attrs attrs = {}) {
  return b.L.fresh(b.L.apply1(op, std::move(inputs), std::move(attrs), b.call.callee));
}

// torch.<name> dtype constants: float32/float, int64/long, half, ...
std::optional<DType> torch_dtype(const std::string& name);

// Shared helpers for the op table.
DType default_float();  // torch.get_default_dtype(): f32
ir::Attrs reduce_attrs(const std::vector<int64_t>& dims, bool keepdim);

}  // namespace kiln::frontend
