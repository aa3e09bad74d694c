// Shared machinery of the graph -> loop IR lowering (passes/lower/*.cpp): how a
// group sees a graph value (an Operand: a function from an index to an element
// expression), the per-kernel context that hands out fresh names and scalar
// parameters, the one table of per-op lowerings, and index-math helpers.
// Internal to passes/lower; the entry point is lower_graph.h.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/loop/loop_ir.h"
#include "kiln/error.h"
#include "passes/lower/lower_graph.h"

namespace kiln::passes::lower {

using loop::Buf;
using loop::Expr;
using loop::Stmt;
using Index = std::vector<Expr>;

// A graph value as the group reads it.
struct Operand {
  enum class Kind : uint8_t { Tensor, Scalar, None };
  Kind kind = Kind::None;
  DType dtype = DType::F32;
  std::vector<Expr> dims;                // Tensor
  std::function<Expr(const Index&)> at;  // Tensor: the element at an index of `dims`
  Expr scalar;                           // Scalar: an immediate or a scalar parameter
  ir::Type type;                         // the graph type (scalar-ness, rank)

  bool is_tensor() const { return kind == Kind::Tensor; }
  bool is_none() const { return kind == Kind::None; }
  int64_t rank() const { return static_cast<int64_t>(dims.size()); }
  // The element at `out_index` of a broadcast over `out_rank` dims: a scalar is
  // the same everywhere; a tensor's dims align right, static size-1 dims read 0.
  Expr broadcast_at(const Index& out_index) const;
};

Operand tensor_operand(DType dtype, std::vector<Expr> dims, std::function<Expr(const Index&)> at,
                       ir::Type type = {});
Operand scalar_operand(Expr value, ir::Type type);

// Per-kernel state: fresh names, scalar parameters (symbolic dims, strides,
// scalar values) and buffer parameters, collected in first-use order.
class LowerContext {
 public:
  explicit LowerContext(const LowerOptions& options) : options_(options) {}
  const LowerOptions& options() const { return options_; }

  std::string fresh(const std::string& prefix);  // "i0", "i1", "acc0", ...
  // A scratch buffer named fresh(prefix), skipping names a buffer or scalar
  // parameter has (parameters added later avoid the scratch names too).
  Buf scratch_buf(const std::string& prefix, DType dtype);
  Expr loop_var(const std::string& prefix = "i") {
    return loop::Var::make(loop::i64_t(), fresh(prefix));
  }

  Expr dim(const ir::Dim& d);  // IntImm, or the symbol's Var (registered as a parameter)
  std::vector<Expr> dims(const ir::Dims& d);

  // Buffer parameter for graph value `v` with `role`; returns its index.
  int add_buffer(const ir::Value* v, BufferRole role, const std::string& name, DType dtype,
                 std::vector<Expr> shape, bool strided);
  int add_constant(const Tensor& t, const std::string& name);
  Expr stride_param(int buffer, int dim);
  Expr scalar_param(const ir::Value* v, const std::string& name, DType dtype);
  // The start index `value` of a select/slice: an immediate, or an i64
  // Offset parameter named after `name` when the node is one of the offset
  // arguments (GraphLowerInfo: siblings that differ only in the start).
  Expr start_index(const ir::Node& n, const std::string& name, int64_t value);
  void set_offset_arguments(std::set<const ir::Node*> nodes) { offset_nodes_ = std::move(nodes); }

  std::vector<BufferParam>& buffers() { return buffers_; }
  std::vector<ScalarParam>& scalars() { return scalars_; }

 private:
  std::string unique_buffer_name(const std::string& base);
  // Whether a buffer or scalar parameter has this name.
  bool taken(const std::string& name) const;
  const LowerOptions& options_;
  std::set<const ir::Node*> offset_nodes_;  // start_index makes arguments of these
  std::map<std::string, int> counters_;
  std::set<std::string> scratch_names_;  // handed out by scratch_buf()
  std::vector<BufferParam> buffers_;
  std::vector<ScalarParam> scalars_;
};

// What one op's lowering sees.
struct NodeLowering {
  const ir::Node& node;
  std::vector<Operand> inputs;
  LowerContext& ctx;

  const ir::Attrs& attrs() const { return node.attrs(); }
  const std::string& op() const { return node.op(); }
  const ir::Type& out_type(size_t i = 0) const { return node.output(i)->type(); }
  DType out_dtype(size_t i = 0) const { return out_type(i).dtype(); }
  std::vector<Expr> out_dims(size_t i = 0) const { return ctx.dims(out_type(i).dims()); }
  const Operand& in(size_t i) const { return inputs.at(i); }
};

// An output buffer a root lowering stores into, packed row-major.
//
// Epilogue fusion: when `epilogue` is set, store_at(out, index, value) emits
// epilogue(index, value) instead of a store into `buf`: the fused consumers of
// the root's value, applied to the one element (bias, activation, residual
// add, a cast), storing into their own buffers (of their own dtypes). `buf`
// is then not a kernel buffer: nothing may load from it or store into it
// directly. Roots that compute an element in several steps (partial sums over
// K blocks) keep the partial values in scratch of their own and call store_at
// once per element with the final value; they may call it inside a loop that
// a later schedule vectorizes (index and value are then scalar expressions of
// that loop's variable).
//
// Pool folding (docs/conv.md, "Max pool folded into Winograd"): when `pool` is
// set, the root's value is not stored at all. A root that computes whole 2x2
// windows of its output at once (conv.winograd's output tiles) applies
// pool->value (the epilogue chain's final value at an index, given the root's
// value there) to the four elements of a window and stores their max (NaN
// propagating) once into pool->out at the window's index (the last two dims
// halved). Only roots that check for it may be given one (lower_graph.cpp
// folds only for conv.winograd).
struct PooledOut;
struct OutBuf {
  using Epilogue = std::function<Stmt(const Index& index, const Expr& value)>;
  OutBuf() = default;
  OutBuf(Buf b, std::vector<Expr> d, Epilogue e = {})
      : buf(std::move(b)), dims(std::move(d)), epilogue(std::move(e)) {}
  Buf buf;
  std::vector<Expr> dims;
  Epilogue epilogue;
  std::shared_ptr<const PooledOut> pool;
};

// A 2x2 stride-2 max pool folded into a root's store (OutBuf::pool).
struct PooledOut {
  OutBuf out;                                                     // the pool's output
  std::function<Expr(const Index& index, const Expr& value)> value;  // the pooled value
};

// Elementwise and layout ops: the outputs as Operands (index functions).
using PointwiseFn = std::function<std::vector<Operand>(NodeLowering&)>;
// Ops that need loops of their own: a statement writing every output buffer.
using RootFn = std::function<Stmt(NodeLowering&, const std::vector<OutBuf>&)>;

// One algorithm of a contraction op (matmul: "gemm.packed", "gemm.small",
// "gemv"; conv2d: "conv.direct", "conv.winograd", ...). The heuristic runs the
// applicable candidate with the highest score; autotuning times them all.
// Only candidates that serve the target's kind are offered for it: the
// generators tuned for one kind of machine live under passes/lower/cpu/ and
// passes/lower/gpu/, plain loop nests serve every kind.
struct AlgorithmLowering {
  std::string name;
  // The target kinds it generates code for (never empty).
  std::vector<TargetKind> targets;
  // Whether it can compute node n on target t (of a kind it serves); when
  // not, why (one phrase).
  std::function<bool(const ir::Node& n, const Target& t, std::string* why_not)> applies;
  // The heuristic's preference among applicable candidates (higher wins) and
  // why, e.g. "M, N, K >= 64: packing pays for itself".
  std::function<double(const ir::Node& n, const Target& t, std::string* why)> score;
  RootFn root;

  bool serves(TargetKind k) const;
};

struct OpLowering {
  PointwiseFn pointwise;  // either or both may be set; pointwise is preferred
  RootFn root;            // when the value is stored (root takes precedence then)
  // The root writes each output element exactly once, through store_at, with
  // its final value, and never reads its outputs back: elementwise consumers
  // of its (single) output may fuse in as an OutBuf epilogue.
  bool stores_once = false;
  // The root reads each element of its operands once (sum, amax, ...; not
  // softmax or layer_norm, which pass over a row several times): an expensive
  // producer inlined into it is computed once.
  bool reads_once = false;
  // Contraction ops: the candidates, in registration order. When non-empty,
  // lowering runs the one LowerOptions::algorithm names (the heuristic's when
  // empty) instead of `root`.
  std::vector<AlgorithmLowering> algorithms;
};

using LoweringTable = std::map<std::string, OpLowering>;
const LoweringTable& lowering_table();
void register_elementwise_lowerings(LoweringTable& t);    // lower_elementwise.cpp
void register_compare_lowerings(LoweringTable& t);        // lower_elementwise_select.cpp
void register_activation_lowerings(LoweringTable& t);     // lower_activation.cpp
void register_layout_lowerings(LoweringTable& t);         // lower_layout.cpp
void register_layout_stride_lowerings(LoweringTable& t);  // lower_layout_stride.cpp
void register_reduction_lowerings(LoweringTable& t);      // lower_reduction.cpp
void register_normalization_lowerings(LoweringTable& t);  // lower_normalization.cpp
void register_contraction_lowerings(LoweringTable& t);    // lower_contraction.cpp
void register_matmul_lowerings(LoweringTable& t);         // lower_matmul.cpp
void register_conv_lowerings(LoweringTable& t);           // lower_conv.cpp
void register_indexing_lowerings(LoweringTable& t);       // lower_indexing.cpp
void register_math_lowerings(LoweringTable& t);           // lower_math.cpp
void register_scan_lowerings(LoweringTable& t);           // lower_scan.cpp
void register_selection_lowerings(LoweringTable& t);      // lower_selection.cpp

// --- index math (index_math.cpp) ----------------------------------------------------------

Expr product(const std::vector<Expr>& dims);  // 1 for none
std::vector<Expr> packed_strides(const std::vector<Expr>& dims);
Expr offset_of(const Index& index, const std::vector<Expr>& strides);
Expr flat_index(const Index& index, const std::vector<Expr>& dims);  // row-major
Index unflatten(const Expr& flat, const std::vector<Expr>& dims);
// for (i0 ...) for (i1 ...) body(index); a rank-0 nest is body({}).
Stmt loop_nest(LowerContext& ctx, const std::vector<Expr>& dims,
               const std::function<Stmt(const Index&)>& body, const std::string& prefix = "i");
// Stores `value` (converted to the buffer's dtype) at `index` of a packed buffer.
Stmt store_at(const OutBuf& out, const Index& index, const Expr& value);
// A loop nest storing op(index) into every element of `out`.
Stmt store_all(LowerContext& ctx, const OutBuf& out, const std::function<Expr(const Index&)>& op);

// Scratch scalars for accumulators: Allocate'd one-element stack buffers.
struct Scratch {
  Buf buf;
  Expr load() const;
  Stmt store(const Expr& v) const;
};
Scratch make_scratch(LowerContext& ctx, const std::string& prefix, DType dtype);
Stmt allocate(const std::vector<Scratch>& scratch, Stmt body);

// --- value helpers -------------------------------------------------------------------------

Expr cast_to(const Expr& e, DType t);  // no-op when already of dtype t
Expr imm(DType t, double v);           // a scalar immediate of dtype t
Expr imm_int(DType t, int64_t v);      // an exact integral (or bool) immediate
Expr call(const std::string& name, std::vector<Expr> args);  // type of args[0]
Expr is_nan(const Expr& x);                                  // bool, false for non-floating x
Expr lowest(DType t);  // -inf for floats, the minimum for integers
Expr highest(DType t);
// The dtype loops accumulate `t` in: f32 for f16/bf16/f32, f64, i64 for the rest.
DType accum_dtype(DType t);
// Wrapped into [0, rank) (for attributes already validated by inference).
inline int64_t wrap_dim(int64_t d, int64_t rank) {
  return d < 0 ? d + rank : d;
}

[[noreturn]] void unsupported(const NodeLowering& n, const std::string& what);

}  // namespace kiln::passes::lower
