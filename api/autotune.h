// Measured autotuning of contraction algorithms (docs/autotune.md): the step
// of compile() that, after passes::choose_algorithms, replaces the heuristic's
// choice for each contraction node by the fastest candidate that computes the
// right values, measured on this machine, or by the choice the tuning cache
// (runtime/tuning_cache.h) remembers from an earlier measurement.
//
// It lives in api/ because it needs a backend: each candidate is the node
// alone compiled through the same pipeline with LowerOptions::algorithm forced
// (compile_detail::build_with_algorithm), then run and timed.
#pragma once

#include <string>
#include <vector>

#include "api/compile_internal.h"
#include "passes/fuse.h"
#include "passes/target.h"

namespace kiln::compile_detail {

// True when `options.autotune` is set or KILN_AUTOTUNE is 1 (true, on, yes)
// in the environment.
bool autotune_requested(const CompileOptions& options);

// Tunes every group of `groups` (kernel groups of `g`, algorithms already
// chosen by the heuristic for `target`) that holds a contraction with
// candidates; KernelGroup::algorithm gets the winner, each candidate's
// measured time or verdict, and the reason. Throws kiln::Error when
// options.example_shapes do not fit the graph's inputs.
AutotuneReport autotune_groups(const ir::Graph& g, std::vector<passes::KernelGroup>& groups,
                               const CompileOptions& options, const std::string& backend,
                               const passes::Target& target);

// A duration for people: "12.3 us", "0.250 ms", "1.92 ms", "410 ms", "2.35 s".
std::string format_seconds(double seconds);

}  // namespace kiln::compile_detail
