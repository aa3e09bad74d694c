// The graph pipeline as one list, and the runner that verifies, prints and
// times it (see pipeline.h).
//
// The order: inference first, so every later pass sees exact types;
// canonicalize before folding and CSE, so `2*a` and `a*2` are one form; fold
// before simplify, so identities see folded constants (`x * (3 - 2)`);
// batch norm folding right after, so weights computed from constants count;
// simplify before CSE, so the identities it strips do not hide duplicates;
// DCE last, to drop what the others left unused.
#include "passes/pipeline.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string_view>

#include "kiln/error.h"

namespace kiln::passes {

const std::vector<GraphPass>& graph_pipeline() {
  static const std::vector<GraphPass> kPipeline = {
      {"infer-types", infer_types},
      {"canonicalize", canonicalize},
      {"constant-fold", constant_fold},
      {"fold-batch-norm", fold_batch_norm},
      {"simplify", simplify},
      {"cse", cse},
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

namespace {

std::string header(const std::string& pass) {
  return "// -----// IR after " + pass + " //----- //\n";
}

std::string joined(const std::vector<GraphPass>& passes) {
  std::string s;
  for (const GraphPass& p : passes) s += (s.empty() ? "" : ", ") + p.name;
  return s;
}

// `culprit` names who broke the graph, for the message.
void verify_after(const ir::Graph& g, const std::string& culprit) {
  try {
    ir::verify(g);
  } catch (const InternalError&) {
    throw;
  } catch (const Error& e) {
    // A pass broke an invariant: Kiln's bug, not the user's.
    throw InternalError("graph pipeline: " + culprit + " left an invalid graph:\n" + e.what() +
                        "\n" + ir::print_graph(g));
  }
}

struct Timing {
  std::string pass;
  double ms;
  bool changed;
};

void print_timing(std::ostream& out, const std::vector<Timing>& rows) {
  out << "// -----// Pass timing //----- //\n";
  double total = 0;
  char line[160];
  std::snprintf(line, sizeof line, "//   %-16s %10s  %s\n", "pass", "ms", "changed");
  out << line;
  for (const Timing& t : rows) {
    std::snprintf(line, sizeof line, "//   %-16s %10.3f  %s\n", t.pass.c_str(), t.ms,
                  t.changed ? "yes" : "no");
    out << line;
    total += t.ms;
  }
  std::snprintf(line, sizeof line, "//   %-16s %10.3f\n", "total", total);
  out << line;
}

}  // namespace

void run_passes(ir::Graph& g, const std::vector<GraphPass>& passes,
                const PipelineOptions& options) {
  if (!options.print_after.empty()) {
    bool known = false;
    for (const GraphPass& p : passes) known = known || p.name == options.print_after;
    KILN_USER_CHECK(known, "print-after: unknown pass '" << options.print_after
                                                         << "'; passes: " << joined(passes));
  }
  std::ostream& out = options.out ? *options.out : std::cerr;
  bool verify_each = options.verify_each.value_or(verify_each_by_default());
  if (verify_each) ir::verify(g);  // the caller's graph: a user error when broken
  std::vector<Timing> timings;
  for (const GraphPass& pass : passes) {
    auto start = std::chrono::steady_clock::now();
    bool changed = pass.run(g);
    double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    timings.push_back({pass.name, ms, changed});
    if (verify_each) verify_after(g, "pass '" + pass.name + "'");
    bool chosen = pass.name == options.print_after;
    if (options.print_after_all || chosen) {
      out << header(pass.name);
      if (!changed) out << "// (unchanged)\n";
      if (changed || chosen) out << ir::print_graph(g);
    }
  }
  // Later stages trust the result, so it is checked once even when not after
  // every pass (well under a millisecond for a thousand nodes).
  if (!verify_each) verify_after(g, "a pass (KILN_VERIFY_PASSES=1 names it)");
  if (options.time_passes) print_timing(out, timings);
  out.flush();
}

void run_pipeline(ir::Graph& g, const PipelineOptions& options) {
  run_passes(g, graph_pipeline(), options);
}

}  // namespace kiln::passes
