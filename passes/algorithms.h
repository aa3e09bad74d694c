// Algorithm choice for contraction nodes (matmul, bmm, linear, conv2d): which
// candidates exist for a node on a target, which one the heuristic picks, and
// why. The candidates are the AlgorithmLowerings registered with each op's
// lowering (passes/lower); this is their public face for the fusion pass,
// `kiln explain` and the autotuner (api/), which may replace the heuristic's
// pick by a measured one.
#pragma once

#include <string>
#include <vector>

#include "ir/graph.h"
#include "passes/target.h"

namespace kiln::passes {

struct AlgorithmCandidate {
  std::string name;         // "gemm.packed"
  bool applies = true;      // false: it cannot run this node (note says why)
  std::string note;         // the heuristic's reason for its score, or why it does not apply
  double score = 0;         // the heuristic's preference (higher wins)
  double seconds = -1;      // measured time when autotuned (< 0: not measured)
  bool rejected = false;    // autotuning: its output differed from the reference
  std::string tuning_note;  // autotuning: why rejected ("max |error| ..."), or "not timed (...)"
};

struct AlgorithmChoice {
  std::string name;    // the chosen algorithm; empty for a node without candidates
  std::string reason;  // why it won ("heuristic: ...", "autotuned: ...", "tuning cache: ...")
  std::vector<AlgorithmCandidate> candidates;  // every registered one, in registration order
};

// True when op `op` has several algorithms to choose from.
bool has_algorithms(const std::string& op);

// Every candidate for `n` that serves the kind of `t` (applicable on `t` or
// not) and the heuristic's pick: the applicable candidate with the highest
// score (the first registered on a tie). kiln::Error when none applies.
AlgorithmChoice choose_algorithm(const ir::Node& n, const Target& t);

// The names of the candidates that apply to `n` on `t`, in registration order.
std::vector<std::string> applicable_algorithms(const ir::Node& n, const Target& t);

}  // namespace kiln::passes
