// Loop IR — how a kernel is computed. Immutable expression and statement nodes
// behind reference-counted handles, built only through each node's validating
// `make()`. A pass never edits a node: it builds a new one (IRMutator returns
// the original handle when no child changed, so "did anything change?" is a
// pointer compare). The list of node kinds lives in nodes.def.
//
//   for (i, 0, n) parallel {
//     for (j.v, 0, 1024) vectorized {         // lanes come from Ramp/Broadcast
//       y[ramp(i * 1024 + j.v * 8, 1, 8)] = exp(x[ramp(...)])
//     }
//   }
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kiln/dtype.h"

namespace kiln::loop {

// Element type and vector width of an expression. Index arithmetic is i64;
// comparisons give bool.
struct VType {
  DType dtype = DType::I64;
  int lanes = 1;

  bool is_vector() const { return lanes > 1; }
  VType element() const { return {dtype, 1}; }
  VType with_lanes(int n) const { return {dtype, n}; }
  bool operator==(const VType&) const = default;
  std::string str() const;  // "f32", "f32x8"
};
inline VType i64_t(int lanes = 1) { return {DType::I64, lanes}; }
inline VType bool_t(int lanes = 1) { return {DType::Bool, lanes}; }

enum class NodeKind : uint8_t {
#define KILN_EXPR_NODE(Name) Name,
#define KILN_STMT_NODE(Name) Name,
#include "ir/loop/nodes.def"
};
const char* node_kind_name(NodeKind k);

// Base of every node: an intrusive reference count and the kind tag.
struct NodeBase {
  explicit NodeBase(NodeKind k) : kind(k) {}
  virtual ~NodeBase() = default;
  NodeBase(const NodeBase&) = delete;
  NodeBase& operator=(const NodeBase&) = delete;
  mutable std::atomic<int> refs{0};
  const NodeKind kind;
};

template <typename Base>
class Handle {
 public:
  Handle() = default;
  Handle(const Base* p) : p_(p) { retain(); }  // NOLINT: nodes convert to handles
  Handle(const Handle& o) : p_(o.p_) { retain(); }
  Handle(Handle&& o) noexcept : p_(o.p_) { o.p_ = nullptr; }
  Handle& operator=(Handle o) noexcept {
    std::swap(p_, o.p_);
    return *this;
  }
  ~Handle() { release(); }

  const Base* get() const { return p_; }
  const Base* operator->() const { return p_; }
  bool defined() const { return p_ != nullptr; }
  bool same_as(const Handle& o) const { return p_ == o.p_; }
  // The node as a concrete type, or nullptr when it is of another kind.
  template <typename T>
  const T* as() const {
    return p_ && p_->kind == T::kKind ? static_cast<const T*>(p_) : nullptr;
  }

 private:
  void retain() {
    if (p_) p_->refs.fetch_add(1, std::memory_order_relaxed);
  }
  void release() {
    if (p_ && p_->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) delete p_;
    p_ = nullptr;
  }
  const Base* p_ = nullptr;
};

struct ExprNode : NodeBase {
  ExprNode(NodeKind k, VType t) : NodeBase(k), type(t) {}
  const VType type;
};
struct StmtNode : NodeBase {
  explicit StmtNode(NodeKind k) : NodeBase(k) {}
};

class Expr : public Handle<ExprNode> {
 public:
  using Handle::Handle;
  VType type() const { return get()->type; }
};
class Stmt : public Handle<StmtNode> {
 public:
  using Handle::Handle;
};

// A buffer: a named, typed region of memory indexed by a flat element offset.
// Kernel parameters and Allocate'd scratch are both Bufs. Identity is the
// pointer; the name is for printing and differs from that of every other
// buffer in scope (loop::verify_kernel), though sibling scopes may reuse it.
struct BufferNode {
  std::string name;
  DType dtype;
};
using Buf = std::shared_ptr<const BufferNode>;
Buf make_buf(std::string name, DType dtype);

// ----------------------------------------------------------------------------- exprs

struct IntImm : ExprNode {
  static constexpr NodeKind kKind = NodeKind::IntImm;
  int64_t value;
  static Expr make(VType t, int64_t v);  // integral or bool scalar type
  IntImm(VType t, int64_t v) : ExprNode(kKind, t), value(v) {}
};

struct FloatImm : ExprNode {
  static constexpr NodeKind kKind = NodeKind::FloatImm;
  double value;
  static Expr make(VType t, double v);  // floating scalar type
  FloatImm(VType t, double v) : ExprNode(kKind, t), value(v) {}
};

// A scalar variable: a loop index, a let binding or a kernel scalar argument
// (e.g. a symbolic dim). Two Vars are the same variable when their names match.
struct Var : ExprNode {
  static constexpr NodeKind kKind = NodeKind::Var;
  std::string name;
  static Expr make(VType t, std::string name);
  Var(VType t, std::string n) : ExprNode(kKind, t), name(std::move(n)) {}
};

struct Cast : ExprNode {
  static constexpr NodeKind kKind = NodeKind::Cast;
  Expr value;
  static Expr make(VType t, Expr value);  // same lane count
  Cast(VType t, Expr v) : ExprNode(kKind, t), value(std::move(v)) {}
};

enum class BinOp : uint8_t { Add, Sub, Mul, Div, Mod, Min, Max, And, Or, BitAnd, BitOr, BitXor };
const char* binop_name(BinOp op);  // "+", "min", "&&", ...

// Operands have equal types. Integer Div/Mod round toward negative infinity
// (floor division, Python's sign rule), which is what index math wants; the
// lowering of C-style truncating division spells it out with Select.
struct Binary : ExprNode {
  static constexpr NodeKind kKind = NodeKind::Binary;
  BinOp op;
  Expr a, b;
  static Expr make(BinOp op, Expr a, Expr b);
  Binary(BinOp o, Expr x, Expr y) : ExprNode(kKind, x.type()), op(o), a(std::move(x)), b(std::move(y)) {}
};

enum class CmpOp : uint8_t { EQ, NE, LT, LE, GT, GE };
const char* cmpop_name(CmpOp op);

struct Compare : ExprNode {
  static constexpr NodeKind kKind = NodeKind::Compare;
  CmpOp op;
  Expr a, b;
  static Expr make(CmpOp op, Expr a, Expr b);  // bool with a's lanes
  Compare(CmpOp o, Expr x, Expr y)
      : ExprNode(kKind, bool_t(x.type().lanes)), op(o), a(std::move(x)), b(std::move(y)) {}
};

struct Not : ExprNode {
  static constexpr NodeKind kKind = NodeKind::Not;
  Expr a;
  static Expr make(Expr a);  // bool
  explicit Not(Expr x) : ExprNode(kKind, x.type()), a(std::move(x)) {}
};

struct Select : ExprNode {
  static constexpr NodeKind kKind = NodeKind::Select;
  Expr cond, true_value, false_value;
  static Expr make(Expr cond, Expr t, Expr f);
  Select(Expr c, Expr t, Expr f)
      : ExprNode(kKind, t.type()), cond(std::move(c)), true_value(std::move(t)), false_value(std::move(f)) {}
};

// buf[index]; a vector index (e.g. a Ramp) loads that many lanes. `predicate`
// (optional, bool with the index's lanes) masks lanes that must not be read;
// masked lanes read as zero.
struct Load : ExprNode {
  static constexpr NodeKind kKind = NodeKind::Load;
  Buf buf;
  Expr index, predicate;
  static Expr make(Buf buf, Expr index, Expr predicate = Expr());
  Load(VType t, Buf b, Expr i, Expr p)
      : ExprNode(kKind, t), buf(std::move(b)), index(std::move(i)), predicate(std::move(p)) {}
};

// base, base + stride, ..., base + (lanes - 1) * stride
struct Ramp : ExprNode {
  static constexpr NodeKind kKind = NodeKind::Ramp;
  Expr base, stride;
  int lanes;
  static Expr make(Expr base, Expr stride, int lanes);
  Ramp(Expr b, Expr s, int n)
      : ExprNode(kKind, b.type().with_lanes(n)), base(std::move(b)), stride(std::move(s)), lanes(n) {}
};

struct Broadcast : ExprNode {
  static constexpr NodeKind kKind = NodeKind::Broadcast;
  Expr value;
  int lanes;
  static Expr make(Expr value, int lanes);
  Broadcast(Expr v, int n) : ExprNode(kKind, v.type().with_lanes(n)), value(std::move(v)), lanes(n) {}
};

// A pure intrinsic applied lane-wise: exp, log, log1p, expm1, sqrt, rsqrt, sin,
// cos, tanh, sigmoid, erf, pow, floor, ceil, round (half to even), trunc, abs,
// fma, isnan. The backend picks the implementation (vector math).
struct Call : ExprNode {
  static constexpr NodeKind kKind = NodeKind::Call;
  std::string name;
  std::vector<Expr> args;
  static Expr make(VType t, std::string name, std::vector<Expr> args);
  Call(VType t, std::string n, std::vector<Expr> a)
      : ExprNode(kKind, t), name(std::move(n)), args(std::move(a)) {}
};

struct Let : ExprNode {
  static constexpr NodeKind kKind = NodeKind::Let;
  Expr var;  // a Var
  Expr value, body;
  static Expr make(Expr var, Expr value, Expr body);
  Let(Expr v, Expr val, Expr b)
      : ExprNode(kKind, b.type()), var(std::move(v)), value(std::move(val)), body(std::move(b)) {}
};

// ----------------------------------------------------------------------------- stmts

enum class ForKind : uint8_t { Serial, Parallel, Vectorized, Unrolled, GpuBlock, GpuThread };
const char* for_kind_name(ForKind k);

// for (var = min; var < min + extent; ++var) body. A Vectorized loop has a
// constant extent and is turned into Ramp/Broadcast lanes by vectorize();
// Parallel loops are outlined onto the thread pool by the backend.
struct For : StmtNode {
  static constexpr NodeKind kKind = NodeKind::For;
  Expr var;  // a Var of type i64
  Expr min, extent;
  ForKind for_kind;
  Stmt body;
  static Stmt make(Expr var, Expr min, Expr extent, ForKind kind, Stmt body);
  For(Expr v, Expr m, Expr e, ForKind k, Stmt b)
      : StmtNode(kKind), var(std::move(v)), min(std::move(m)), extent(std::move(e)), for_kind(k), body(std::move(b)) {}
};

struct Store : StmtNode {
  static constexpr NodeKind kKind = NodeKind::Store;
  Buf buf;
  Expr index, value, predicate;  // predicate optional, as for Load
  static Stmt make(Buf buf, Expr index, Expr value, Expr predicate = Expr());
  Store(Buf b, Expr i, Expr v, Expr p)
      : StmtNode(kKind), buf(std::move(b)), index(std::move(i)), value(std::move(v)), predicate(std::move(p)) {}
};

struct Block : StmtNode {
  static constexpr NodeKind kKind = NodeKind::Block;
  std::vector<Stmt> stmts;
  // Flattens nested blocks and drops undefined stmts; one stmt is returned as is.
  static Stmt make(std::vector<Stmt> stmts);
  explicit Block(std::vector<Stmt> s) : StmtNode(kKind), stmts(std::move(s)) {}
};

// Where scratch lives:
//   Stack      per-thread (per-task on the CPU) scratch for `body`, a local array
//   Heap       large CPU scratch from the runtime's pool
//   GpuShared  one array per GPU block, seen by all of its threads (`__shared__`);
//              allocated inside a gpu_block loop, outside its gpu_thread loops
//   GpuLocal   one array per GPU thread that lives across the barrier phases of
//              a block (registers or local memory): allocated inside a gpu_block
//              loop outside its gpu_thread loops, accessed only inside them, each
//              thread seeing its own `size` elements; the size is a constant
// New scopes go last: the canonical bytes (cache keys) hold the value.
enum class MemoryScope : uint8_t { Stack, Heap, GpuShared, GpuLocal };
const char* memory_scope_name(MemoryScope s);  // "stack", "heap", "gpu_shared", "gpu_local"

// Scratch memory for `body`: `size` elements of buf's dtype (per thread for
// GpuLocal).
struct Allocate : StmtNode {
  static constexpr NodeKind kKind = NodeKind::Allocate;
  Buf buf;
  Expr size;
  MemoryScope scope;
  Stmt body;
  static Stmt make(Buf buf, Expr size, MemoryScope scope, Stmt body);
  Allocate(Buf b, Expr s, MemoryScope sc, Stmt bd)
      : StmtNode(kKind), buf(std::move(b)), size(std::move(s)), scope(sc), body(std::move(bd)) {}
};

struct IfThenElse : StmtNode {
  static constexpr NodeKind kKind = NodeKind::IfThenElse;
  Expr cond;
  Stmt then_case, else_case;  // else optional
  static Stmt make(Expr cond, Stmt then_case, Stmt else_case = Stmt());
  IfThenElse(Expr c, Stmt t, Stmt e)
      : StmtNode(kKind), cond(std::move(c)), then_case(std::move(t)), else_case(std::move(e)) {}
};

struct LetStmt : StmtNode {
  static constexpr NodeKind kKind = NodeKind::LetStmt;
  Expr var, value;
  Stmt body;
  static Stmt make(Expr var, Expr value, Stmt body);
  LetStmt(Expr v, Expr val, Stmt b)
      : StmtNode(kKind), var(std::move(v)), value(std::move(val)), body(std::move(b)) {}
};

// GPU: all threads of a block meet here. On the CPU a GPU-mapped nest keeps each
// barrier phase as its own thread loop, so Barrier is a no-op there.
struct Barrier : StmtNode {
  static constexpr NodeKind kKind = NodeKind::Barrier;
  static Stmt make();
  Barrier() : StmtNode(kKind) {}
};

// A call into a runtime routine (e.g. a packed GEMM micro-kernel) with scalar
// arguments and buffer pointers.
struct ExternCall : StmtNode {
  static constexpr NodeKind kKind = NodeKind::ExternCall;
  std::string name;
  std::vector<Expr> args;
  std::vector<Buf> bufs;
  static Stmt make(std::string name, std::vector<Expr> args, std::vector<Buf> bufs);
  ExternCall(std::string n, std::vector<Expr> a, std::vector<Buf> b)
      : StmtNode(kKind), name(std::move(n)), args(std::move(a)), bufs(std::move(b)) {}
};

// ------------------------------------------------------------------------- kernels

// A kernel: buffer parameters (inputs then outputs), scalar parameters (symbolic
// dims, strides), and a body.
struct Kernel {
  std::string name;
  std::vector<Buf> buffers;
  std::vector<Expr> scalars;  // Vars
  Stmt body;
};

// ----------------------------------------------------------------------- shorthands

Expr make_int(int64_t v);                 // i64 scalar
Expr make_const(VType t, double v);       // IntImm or FloatImm (broadcast when t has lanes)
Expr make_zero(VType t);
Expr make_one(VType t);
bool is_const_int(const Expr& e, int64_t* value = nullptr);
bool is_const(const Expr& e);             // IntImm, FloatImm, or Broadcast of one

Expr operator+(Expr a, Expr b);
Expr operator-(Expr a, Expr b);
Expr operator*(Expr a, Expr b);
Expr operator/(Expr a, Expr b);  // floor division for integers
Expr operator%(Expr a, Expr b);  // floor modulo for integers
Expr operator+(Expr a, int64_t b);
Expr operator*(Expr a, int64_t b);
Expr min(Expr a, Expr b);
Expr max(Expr a, Expr b);
Expr operator<(Expr a, Expr b);
Expr operator<=(Expr a, Expr b);
Expr operator>(Expr a, Expr b);
Expr operator>=(Expr a, Expr b);
Expr operator==(Expr a, Expr b);
Expr operator!=(Expr a, Expr b);
Expr operator&&(Expr a, Expr b);
Expr operator||(Expr a, Expr b);
Expr operator!(Expr a);

}  // namespace kiln::loop
