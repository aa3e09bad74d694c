// Lowering graph IR to loop IR. A kernel is a group of graph nodes lowered into
// one loop nest: elementwise and layout ops become index expressions inlined
// into their consumers (producer values are functions of an index, like Halide
// Funcs), reductions, normalizations and contractions become loop nests with
// accumulators that store into buffers.
//
// Assumes: a verified graph (types inferred). Guarantees: each kernel reads its
// inputs through the buffer parameters its KernelPlan lists and writes every
// group output value to an Output buffer in packed row-major order; symbolic
// dims are scalar i64 parameters named after the symbol, so a kernel compiled
// once runs for any value of them.
#pragma once

#include <span>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "ir/graph.h"
#include "ir/loop/loop_ir.h"
#include "ir/op_registry.h"
#include "passes/target.h"

namespace kiln::passes {

struct LowerOptions {
  // Graph inputs may be non-contiguous views (transposed, sliced, broadcast):
  // they are read through strides passed as scalar parameters. When false they
  // are assumed packed row-major and strides are folded into the index math.
  bool strided_inputs = true;
  // With strided_inputs: the innermost stride of each input is the constant
  // 1 (only the outer strides are parameters), so inputs load as vectors and
  // the index math folds; the executable packs an input whose innermost
  // stride is not 1 (runtime::Launch::Arg::unit_inner). compile() sets it for
  // CPU targets.
  bool unit_inner_stride = false;
  // The machine the kernel is for (which algorithms apply; GEMM/conv
  // blocking and vector widths on a CPU).
  Target target;
  // The algorithm chosen for the group's contraction node (passes/algorithms.h:
  // "gemm.packed", "conv.winograd", ...); empty: the op's heuristic choice.
  std::string algorithm;
};

enum class BufferRole : uint8_t {
  Input,         // a graph input or a value another kernel produced
  Output,        // a value this kernel produces for others (or the graph)
  Intermediate,  // produced and consumed inside this kernel only
  Constant,      // a constant tensor from the graph (data in `constant`)
};
const char* buffer_role_name(BufferRole r);

// One buffer parameter (same position as in Kernel::buffers).
struct BufferParam {
  loop::Buf buf;
  BufferRole role = BufferRole::Input;
  const ir::Value* value = nullptr;  // the graph value (null for Constant)
  Tensor constant;                   // Constant: the data
  std::vector<loop::Expr> shape;     // dims as expressions of symbolic-dim Vars
  bool strided = false;              // Input only: strides come as scalar parameters
  bool unit_inner = false;           // strided: all but the innermost (which is 1)
};

enum class ScalarRole : uint8_t {
  SymbolicDim,  // the run-time size of `symbol`
  Stride,       // the stride (in elements) of dim `dim` of buffers[buffer]
  Value,        // a scalar graph value (int -> i64, float -> f64, bool)
  Offset,       // a start index known at compile time (`offset`), passed as an argument
};

// One scalar parameter (same position as in Kernel::scalars).
struct ScalarParam {
  loop::Expr var;
  ScalarRole role = ScalarRole::SymbolicDim;
  std::string symbol;                // SymbolicDim
  int buffer = -1;                   // Stride
  int dim = -1;                      // Stride
  const ir::Value* value = nullptr;  // Value
  int64_t offset = 0;                // Offset
};

// What an executable needs to allocate buffers and launch one kernel.
struct KernelPlan {
  std::string name;
  ir::OpCategory category = ir::OpCategory::Elementwise;  // of the group's main node
  std::vector<const ir::Node*> nodes;
  std::vector<BufferParam> buffers;
  std::vector<ScalarParam> scalars;
};

struct LoweredKernel {
  loop::Kernel kernel;
  KernelPlan plan;
};

// What lowering any group of a graph needs to know about the whole graph,
// computed once per graph: value names, each value's readers, node positions,
// the graph's outputs, and which select/slice nodes take their start index as
// a kernel argument. lower_groups shares one across its groups, so lowering
// N groups costs O(graph + sum of group sizes), not O(N * graph).
//
// Offset arguments: a select or slice whose input has several select/slice
// readers that differ only in the start index (input.unbind(0) read by each
// step of an unrolled loop, x[t] per time step) reads that start as an i64
// scalar parameter (ScalarRole::Offset) instead of an immediate, so the
// kernels of the steps have identical code and are generated once (the
// executable passes each launch its own value). A lone select keeps its
// immediate, and so do siblings lowered into one kernel (horizontal fusion
// of slices: nothing to share). Only starts along a static dim are arguments.
class GraphLowerInfo {
 public:
  explicit GraphLowerInfo(const ir::Graph& g);
  const ir::Graph& graph() const { return g_; }
  const ir::ValueNames& names() const { return names_; }
  // The nodes reading `v` (a node reading it twice is listed twice).
  const std::vector<const ir::Node*>& users(const ir::Value* v) const;
  size_t position(const ir::Node* n) const { return position_.at(n); }
  bool is_output(const ir::Value* v) const { return outputs_.count(v) > 0; }
  // The family of select/slice node `n` whose siblings differ only in the
  // start (a start it may take as an Offset argument), or -1.
  int offset_family(const ir::Node* n) const {
    auto it = offset_args_.find(n);
    return it == offset_args_.end() ? -1 : it->second;
  }

 private:
  const ir::Graph& g_;
  ir::ValueNames names_;
  std::unordered_map<const ir::Value*, std::vector<const ir::Node*>> users_;
  std::unordered_map<const ir::Node*, size_t> position_;
  std::unordered_set<const ir::Value*> outputs_;
  std::unordered_map<const ir::Node*, int> offset_args_;
};

// Lowers a group of nodes of `g` (in graph order) into one kernel named `name`.
// Values produced in the group and used only by it are inlined (elementwise,
// layout) or kept in Intermediate buffers (others); a value used outside the
// group, returned by the graph, or unused becomes an Output buffer. Throws
// kiln::Error naming the op when a node has no lowering or an operand it
// cannot handle.
//
// Epilogues: when a root that stores each element once (OpLowering's
// stores_once: matmul, conv2d, reductions, layer_norm) has a single output
// whose in-group readers include elementwise nodes of the same shape reading
// only it (and values outside the group), those nodes are applied to each
// element as the root stores it; the root's own value is stored only when
// something else needs it. `recomputed` nodes (layout ops another kernel
// owns) are inlined as indexing and never stored. An expensive pointwise
// value (one with a transcendental call) that would be inlined at several
// places, or re-read by a multi-pass root, is stored once instead and read
// back.
LoweredKernel lower_group(const ir::Graph& g, std::span<const ir::Node* const> nodes,
                          const std::string& name, const LowerOptions& options = {},
                          std::span<const ir::Node* const> recomputed = {});
// The same with the graph's facts computed once by the caller (`info` of `g`).
LoweredKernel lower_group(const GraphLowerInfo& info, std::span<const ir::Node* const> nodes,
                          const std::string& name, const LowerOptions& options = {},
                          std::span<const ir::Node* const> recomputed = {});

// Lowers every node of `g` except `constant` into its own kernel (constants
// become immediates or Constant buffers of their users). `plans`, when given,
// receives one plan per kernel.
std::vector<loop::Kernel> lower_graph(const ir::Graph& g, const LowerOptions& options = {},
                                      std::vector<KernelPlan>* plans = nullptr);

// True when op `name` has a lowering.
bool has_lowering(const std::string& name);

// True when op `name` lowers to an index expression (elementwise and layout
// ops): its value can be inlined into a consumer in the same kernel.
bool has_pointwise_lowering(const std::string& name);

// True when op `name`'s root lowering may take an epilogue (see lower_group).
bool lowering_stores_once(const std::string& name);

}  // namespace kiln::passes
