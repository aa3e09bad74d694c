// kiln::optimize — runs the graph pipeline (type inference, canonicalization,
// constant folding, algebraic simplification, CSE, DCE) on a Function and
// returns the optimized Function, leaving the original as it was.
//
//   kiln::Function f = kiln::parse_ir(text);
//   kiln::OptimizeOptions o;
//   o.print_after_all = true;                 // the graph after each pass, on stderr
//   kiln::Function g = kiln::optimize(f, o);  // same inputs, outputs and values
//
// The `kiln` driver's --print-after-all, --print-after=PASS and --time-passes
// and `kiln dump --stage=graph-opt` go through here.
//
// This header stays free of Kiln's internal headers (see kiln/function.h).
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "kiln/function.h"

namespace kiln {

// Printing, timing and verification of passes. optimize() applies them to
// the graph pipeline; CompileOptions::passes to the passes compile() runs
// (the graph pipeline when CompileOptions::optimize, then the loop pipeline).
struct OptimizeOptions {
  bool print_after_all = false;  // the IR after every pass (or "(unchanged)")
  // The IR after this pass; a name from graph_pass_names() or loop_pass_names().
  std::string print_after;
  bool time_passes = false;  // a table of pass times after the last pass
  // Verify the IR after every pass (an internal error names the pass that
  // broke it). Also on in debug builds and with KILN_VERIFY_PASSES=1.
  bool verify_each = false;
  std::ostream* log = nullptr;  // where printing and timing go; nullptr: stderr
};

// The graph pipeline's passes, in order ("infer-types", ..., "dce").
std::vector<std::string> graph_pass_names();
// The loop pipelines' passes, of every target kind ("default-schedule",
// "gpu-map", "loop-simplify"); compile() runs those of its target.
std::vector<std::string> loop_pass_names();

// The optimized copy of `f`. Throws kiln::Error for an unknown pass name in
// print_after.
Function optimize(const Function& f, const OptimizeOptions& options = {});

}  // namespace kiln
