// Kernel fusion: which graph nodes run together in one loop-IR kernel, and why.
//
// Rules, applied to nodes in graph order (each join is checked against the
// kernel-level dependence graph, so no grouping forms a cycle through another
// kernel):
//  - vertical elementwise fusion: an elementwise or layout node joins the
//    kernel of a pointwise producer (layout ops become index arithmetic), and
//    sibling producer kernels feeding it merge in;
//  - epilogues: an elementwise node of the same shape as the result of a
//    contraction or reduction root (matmul, conv2d, sum, layer_norm, ...)
//    joins the root's kernel and is applied to each element as the root
//    stores it (bias, activation, residual add, batch-norm scale and shift,
//    casts); the root's own result is then only stored if someone else reads it;
//  - reductions fuse with their elementwise producers (read once per element,
//    so nothing is recomputed) and with the consumers that broadcast their
//    result back over the rows (x - mean, e / sum): mean/var, hand-written
//    softmax and layer norm become one kernel whose nests the lowering fuses
//    into one loop over the rows;
//  - contractions never take computing producers (a producer inlined into a
//    GEMM operand would run once per use, K times); their layout producers
//    (transpose, reshape, split, permute ...) are recomputed inside the
//    contraction's kernel as indexing, and a layout kernel left with no other
//    reader disappears;
//  - horizontal fusion: kernels that read the same tensor and iterate over the
//    same space (siblings: two reductions over the rows of x, two elementwise
//    maps of x) merge into one multi-output kernel;
//  - limits: a kernel takes at most `max_buffers` buffer parameters and
//    `max_nodes` nodes (backend argument and register limits).
//
// Assumes: a verified graph in topological order. Guarantees: every node
// except constants (which fold into their users) is in exactly one group's
// `nodes`, or is a layout node in one or more groups' `recomputed` lists (a
// constant returned by the graph gets a copy group); groups are listed in an
// order in which each reads only values of earlier groups or graph inputs;
// each group records why it exists and what fused into it.
#pragma once

#include <string>
#include <vector>

#include "ir/graph.h"
#include "passes/algorithms.h"
#include "passes/lower/lower_graph.h"

namespace kiln::passes {

struct KernelGroup {
  std::vector<const ir::Node*> nodes;       // graph order; this kernel computes (and stores) them
  std::vector<const ir::Node*> recomputed;  // layout nodes recomputed here as indexing, graph order
  std::string reason;                       // why this kernel boundary exists / what fused
  // For a group with a contraction node (matmul, conv2d, ...): the algorithm it
  // runs, the candidates and why (set by choose_algorithms or the autotuner).
  AlgorithmChoice algorithm;
  // A fused attention (passes/attention_pattern.h): the scores matmul, its
  // elementwise ops, the softmax and the matmul by the values, run as
  // "attention.flash".
  bool attention = false;
  // A max_pool2d folded into the store of the conv2d kernel it reads (the
  // last node of `nodes`; see pool_fold_blocker): `fold_note` is the part of
  // `reason` that says so. choose_algorithms moves it back into a kernel of
  // its own unless the conv runs as conv.winograd on a CPU.
  const ir::Node* folded_pool = nullptr;
  std::string fold_note;
};

struct FusionOptions {
  bool fuse = true;      // false: one group per node (the unfused baseline)
  int max_buffers = 64;  // buffer parameters of one kernel
  int max_nodes = 128;   // nodes of one kernel
  // Fuse attention (matmul -> scale/mask -> softmax -> matmul) into one kernel:
  // the CPU has a generator for it ("attention.flash"), the GPU not yet.
  bool attention = false;
};

std::vector<KernelGroup> group_kernels(const ir::Graph& g, const FusionOptions& options = {});

// Whether a reader may compute `n` again instead of reading its stored value:
// a layout op, a factory (arange, full) or an elementwise op of a few
// instructions (compares, logical and bitwise ops, add/sub/mul, min/max, abs,
// neg, casts, where, masked_fill; no division, transcendental or power).
bool cheap_to_recompute(const ir::Node& n);

// Why max_pool2d node `pool` cannot be folded into the store of the conv2d
// kernel computing its operand; empty when it can: kernel 2x2, stride 2, no
// padding, dilation 1, no ceil mode, over an NCHW operand of static even
// height and width. Then every 2x2 output tile of conv.winograd is exactly
// one pool window (docs/conv.md).
std::string pool_fold_blocker(const ir::Node& pool);

// Sets KernelGroup::algorithm of every group holding a node with algorithm
// candidates to the heuristic's choice for `target`.
void choose_algorithms(std::vector<KernelGroup>& groups, const Target& target);

// Lowers each group with lower_group (with the group's algorithm, when it has
// one); kernel names are "<graph>_<k>_<ops>".
std::vector<loop::Kernel> lower_groups(const ir::Graph& g, const std::vector<KernelGroup>& groups,
                                       const LowerOptions& options = {},
                                       std::vector<KernelPlan>* plans = nullptr);

}  // namespace kiln::passes
