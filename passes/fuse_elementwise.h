// Kernel grouping: which graph nodes run together in one loop-IR kernel.
//
// Vertical elementwise fusion: a node whose lowering is pointwise (every
// elementwise op, and layout ops, which become index arithmetic) joins the
// kernel of a pointwise producer, so a chain of elementwise ops is one pass
// over memory; sibling producer kernels that feed the same pointwise node are
// merged into it. Reductions, normalizations and contractions start their own
// kernel (fusing work around them is the fusion issue's next step).
//
// Assumes: a verified graph in topological order. Guarantees: every node
// except constants (which fold into their users) is in exactly one group
// (a constant returned by the graph gets a copy group); groups are listed in
// an order in which each reads only values of earlier groups or graph inputs
// (no cycles through other kernels); each group records why it exists.
#pragma once

#include <string>
#include <vector>

#include "ir/graph.h"
#include "passes/algorithms.h"
#include "passes/lower/lower_graph.h"

namespace kiln::passes {

struct KernelGroup {
  std::vector<const ir::Node*> nodes;  // graph order
  std::string reason;                  // why this kernel boundary exists / what fused
  // For a group with a contraction node (matmul, conv2d, ...): the algorithm it
  // runs, the candidates and why (set by choose_algorithms or the autotuner).
  AlgorithmChoice algorithm;
};

struct FusionOptions {
  bool fuse = true;  // false: one group per node (the unfused baseline)
};

std::vector<KernelGroup> group_kernels(const ir::Graph& g, const FusionOptions& options = {});

// Sets KernelGroup::algorithm of every group holding a node with algorithm
// candidates to the heuristic's choice for `target`.
void choose_algorithms(std::vector<KernelGroup>& groups, const CpuTarget& target);

// Lowers each group with lower_group (with the group's algorithm, when it has
// one); kernel names are "<graph>_<k>_<ops>".
std::vector<loop::Kernel> lower_groups(const ir::Graph& g, const std::vector<KernelGroup>& groups,
                                       const LowerOptions& options = {},
                                       std::vector<KernelPlan>* plans = nullptr);

}  // namespace kiln::passes
