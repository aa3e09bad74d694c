// The graph pipeline: the graph-to-graph passes that run before kernel
// grouping (passes/fuse), as one list read top to bottom in pipeline.cpp.
//
//   infer-types -> canonicalize -> constant-fold -> fold-batch-norm -> simplify -> cse
//     -> merge-siblings -> dce
//
// Each pass is a free function in its own file (passes/<name>.cpp, whose top
// comment says what it assumes and guarantees) and returns whether it changed
// the graph. Every pass keeps the graph's inputs, outputs (count, order,
// types) and values (up to the rounding noted in simplify.cpp and
// constant_fold.cpp), and leaves a graph ir::verify accepts.
#pragma once

#include <functional>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "passes/pass_runner.h"

namespace kiln::passes {

// --- the passes ---------------------------------------------------------------------------

// Re-runs dtype and shape inference (static and symbolic dims) on every node in
// order, completing attributes, and records the results. Throws kiln::Error
// naming the node when an op no longer accepts its operands.
bool infer_types(ir::Graph& g);
// Constants to the second operand of commutative ops (and mirrored
// comparisons), so later passes match one form.
bool canonicalize(ir::Graph& g);
// Evaluates nodes whose operands are all constants with the ops' reference
// implementations and replaces them by constants (at most
// kMaxFoldElements elements per output; never random ops).
bool constant_fold(ir::Graph& g);
inline constexpr int64_t kMaxFoldElements = 4096;
// An inference batch_norm of a conv2d whose weight, bias and statistics are
// all constants becomes one conv2d with the batch norm folded into new
// constant weights and bias (fold_batch_norm.cpp).
bool fold_batch_norm(ir::Graph& g);
// Algebraic identities (x*1, x+0, x-0, x/1, --x, transpose/permute pairs,
// reshape chains, exact cast chains, same-dtype casts), only where the result
// keeps the original's dtype and shape.
bool simplify(ir::Graph& g);
// Merges nodes with the same op, operands and attributes (not random ops).
bool cse(ir::Graph& g);
// linear/matmul nodes reading the same input with constant weights become one
// over the weights concatenated along N, their outputs slices of it
// (merge_siblings.cpp).
bool merge_siblings(ir::Graph& g);
// Removes nodes whose outputs are neither used nor returned.
bool dce(ir::Graph& g);

// --- running them -------------------------------------------------------------------------

using GraphPass = Pass<ir::Graph>;

// The pipeline, in order.
const std::vector<GraphPass>& graph_pipeline();
std::vector<std::string> pipeline_pass_names();

// Every pass name --print-after accepts: the graph pipeline's and the loop
// pipelines' (passes/schedule/loop_pipeline.h); kiln::Error naming them all
// when `name` is none of them.
void check_pass_name(const std::string& name);

// How the runner prints and verifies graphs (ir::print_graph, ir::verify).
const IRHooks<ir::Graph>& graph_hooks();

// Runs `passes` in order on `g` (pass_runner.h: verify, print, time). A graph
// that fails verification after a pass is an internal error naming the pass;
// an invalid input graph is a kiln::Error; options.print_after must name a
// pass (check_pass_name).
void run_passes(ir::Graph& g, const std::vector<GraphPass>& passes,
                const PipelineOptions& options = {});
// run_passes(g, graph_pipeline(), options).
void run_pipeline(ir::Graph& g, const PipelineOptions& options = {});

}  // namespace kiln::passes
