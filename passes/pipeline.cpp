// The graph pipeline as one list, and the runner that verifies, prints and
// times it (see pipeline.h).
//
// The order: inference first, so every later pass sees exact types;
// canonicalize before folding and CSE, so `2*a` and `a*2` are one form; fold
// before simplify, so identities see folded constants (`x * (3 - 2)`);
// batch norm folding right after, so weights computed from constants count;
// simplify before CSE, so the identities it strips do not hide duplicates;
// sibling linears merge after CSE, so duplicate inputs are one value first;
// DCE last, to drop what the others left unused.
#include "passes/pipeline.h"

#include <cstdlib>
#include <string_view>

#include "kiln/error.h"
#include "passes/schedule/loop_pipeline.h"

namespace kiln::passes {

const std::vector<GraphPass>& graph_pipeline() {
  static const std::vector<GraphPass> kPipeline = {
      {"infer-types", infer_types},
      {"canonicalize", canonicalize},
      {"constant-fold", constant_fold},
      {"fold-batch-norm", fold_batch_norm},
      {"simplify", simplify},
      {"cse", cse},
      {"merge-siblings", merge_siblings},
      {"dce", dce},
  };
  return kPipeline;
}

std::vector<std::string> pipeline_pass_names() {
  std::vector<std::string> names;
  for (const GraphPass& p : graph_pipeline()) names.push_back(p.name);
  return names;
}

bool verify_each_by_default() {
#ifndef NDEBUG
  return true;
#else
  const char* env = std::getenv("KILN_VERIFY_PASSES");
  return env && (std::string_view(env) == "1" || std::string_view(env) == "on" ||
                 std::string_view(env) == "true");
#endif
}

void check_pass_name(const std::string& name) {
  std::vector<std::string> graph = pipeline_pass_names(), loops = loop_pass_names();
  for (const std::vector<std::string>* names : {&graph, &loops}) {
    for (const std::string& n : *names) {
      if (n == name) return;
    }
  }
  auto joined = [](const std::vector<std::string>& v) {
    std::string s;
    for (const std::string& n : v) s += (s.empty() ? "" : ", ") + n;
    return s;
  };
  KILN_USER_ERROR("print-after: unknown pass '" << name << "'; passes: " << joined(graph)
                                                << " (graph); " << joined(loops) << " (loop)");
}

const IRHooks<ir::Graph>& graph_hooks() {
  static const IRHooks<ir::Graph> hooks = {
      "graph pipeline",
      "graph",
      [](const ir::Graph& g) { return ir::print_graph(g); },
      [](const ir::Graph& g) { ir::verify(g); },
  };
  return hooks;
}

void run_passes(ir::Graph& g, const std::vector<GraphPass>& passes,
                const PipelineOptions& options) {
  if (!options.print_after.empty()) check_pass_name(options.print_after);
  run_passes<ir::Graph>(g, passes, graph_hooks(), options);
}

void run_pipeline(ir::Graph& g, const PipelineOptions& options) {
  run_passes(g, graph_pipeline(), options);
}

}  // namespace kiln::passes
