// The one pass runner: runs a list of named passes over one IR, verifying
// between passes, printing the IR after them and timing them. The graph
// pipeline (passes/pipeline.h) and the loop pipeline
// (passes/schedule/loop_pipeline.h) are both run by it, so `--print-after-all`,
// `--print-after=NAME`, `--time-passes` and the verifier work the same on
// both; what differs is how each IR prints and verifies (IRHooks).
//
//   // -----// IR after constant-fold //----- //
//   graph @f(...) { ... }                   (or "// (unchanged)")
//   ...
//   // -----// Pass timing //----- //
//   //   pass               ms  changed
#pragma once

#include <chrono>
#include <cstdio>
#include <functional>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "kiln/error.h"

namespace kiln::passes {

// One pass over IR of type T: returns whether it changed anything.
template <typename T>
struct Pass {
  std::string name;  // what --print-after names ("constant-fold", "default-schedule")
  std::function<bool(T&)> run;
};

struct PipelineOptions {
  // Print the IR after every pass to `out` under a header line
  //   // -----// IR after constant-fold //----- //
  // (a pass that changed nothing prints "// (unchanged)" instead of the IR).
  bool print_after_all = false;
  // Print the IR after the pass of this name (even when unchanged). Names not
  // in the list run are ignored here: the caller checks a name against every
  // pipeline it runs (graph and loop passes share one --print-after).
  std::string print_after;
  // After the last pass, a table of each pass's time and whether it changed
  // the IR.
  bool time_passes = false;
  std::ostream* out = nullptr;  // where printing and timing go; nullptr: std::cerr
  // Verify the input and the IR after every pass. Unset: on in debug builds
  // (!NDEBUG) and when the environment has KILN_VERIFY_PASSES=1.
  std::optional<bool> verify_each;
};

// True when verification between passes is on by default (see verify_each).
bool verify_each_by_default();

// How one kind of IR prints and verifies, for the runner.
template <typename T>
struct IRHooks {
  std::string pipeline;  // "graph pipeline", "loop pipeline": message prefix
  std::string what;      // "graph", "kernel": "left an invalid <what>"
  std::function<std::string(const T&)> print;
  // Throws kiln::Error describing the first broken invariant.
  std::function<void(const T&)> verify;
};

namespace pass_runner_detail {

inline std::string header(const std::string& pass) {
  return "// -----// IR after " + pass + " //----- //\n";
}

struct Timing {
  std::string pass;
  double ms;
  bool changed;
};

inline void print_timing(std::ostream& out, const std::vector<Timing>& rows) {
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

// `culprit` names who broke the IR, for the message.
template <typename T>
void verify_after(const T& ir, const IRHooks<T>& hooks, const std::string& culprit) {
  try {
    hooks.verify(ir);
  } catch (const InternalError&) {
    throw;
  } catch (const Error& e) {
    // A pass broke an invariant: Kiln's bug, not the user's.
    throw InternalError(hooks.pipeline + ": " + culprit + " left an invalid " + hooks.what + ":\n" +
                        e.what() + "\n" + hooks.print(ir));
  }
}

}  // namespace pass_runner_detail

// Runs `passes` in order on `ir`. IR that fails verification after a pass is
// an internal error naming the pass (with the verifier's message and the IR);
// an invalid input is a kiln::Error. Without verify_each the final IR is
// still verified once.
template <typename T>
void run_passes(T& ir, const std::vector<Pass<T>>& passes, const IRHooks<T>& hooks,
                const PipelineOptions& options = {}) {
  using namespace pass_runner_detail;
  std::ostream& out = options.out ? *options.out : std::cerr;
  const bool verify_each = options.verify_each.value_or(verify_each_by_default());
  if (verify_each) hooks.verify(ir);  // the caller's IR: a user error when broken
  std::vector<Timing> timings;
  for (const Pass<T>& pass : passes) {
    auto start = std::chrono::steady_clock::now();
    bool changed = pass.run(ir);
    double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    timings.push_back({pass.name, ms, changed});
    if (verify_each) verify_after(ir, hooks, "pass '" + pass.name + "'");
    bool chosen = pass.name == options.print_after;
    if (options.print_after_all || chosen) {
      out << header(pass.name);
      if (!changed) out << "// (unchanged)\n";
      if (changed || chosen) out << hooks.print(ir);
    }
  }
  // Later stages trust the result, so it is checked once even when not after
  // every pass (well under a millisecond for a thousand nodes).
  if (!verify_each) verify_after(ir, hooks, "a pass (KILN_VERIFY_PASSES=1 names it)");
  if (options.time_passes) print_timing(out, timings);
  out.flush();
}

}  // namespace kiln::passes
