// Shared helpers of the schedule transforms: find a loop by its variable's
// name and rebuild the statement with that loop replaced, and the vector-lane
// rewriter. Internal to passes/schedule.
//
// Each transform has one code path that builds its result and, where the
// transform does not apply, records why in a `std::string* why_not` (the very
// message the public transform throws) and stops building. The transform
// throws that message as kiln::Error; its why_not_<transform> check returns it.
// So the two agree by construction, and nothing here catches an exception: an
// InternalError raised while building always surfaces.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ir/loop/analysis.h"
#include "ir/loop/loop_ir.h"

namespace kiln::passes::schedule_detail {

// The loops directly inside `s` (not those nested in them), in program order.
std::vector<const loop::For*> child_loops(const loop::Stmt& s);

// Rewrites one loop: returns its replacement, or sets *why_not and returns an
// undefined Stmt when the loop cannot be rewritten.
using LoopRewrite = std::function<loop::Stmt(const loop::For*, std::string* why_not)>;

// Replaces the first For whose var is named `loop_var` with f(that For), or
// every such For when `all` (split's PredicatedTail leaves two sibling loops of
// one name, the main chunk and the tail chunk, and vectorize/unroll treat both).
// Sets *why_not to the first reason f gave, or to "<what>: no loop named
// '<loop_var>'" when there is none, and then returns an undefined Stmt.
loop::Stmt rewrite_loop(const loop::Stmt& s, const std::string& loop_var, const char* what,
                        const LoopRewrite& f, std::string* why_not, bool all = false);

// The body of `for (var, min, lanes)` as vector lanes (vectorize's machinery,
// without simplification): `var` becomes ramp(min, 1, lanes). Sets *why_not
// ("vectorize: loop '<var>': <why>") and returns an undefined Stmt when the
// lanes cannot be formed.
loop::Stmt vectorize_body(const loop::Stmt& body, const std::string& var, const loop::Expr& min,
                          int lanes, std::string* why_not);

// The stride parameters worth specializing to 1: for each buffer with stride
// parameters named `<buffer>_s<dim>` (lower_graph's names), the one of its
// last dim, with the value 1 (default_schedule.cpp).
std::vector<std::pair<std::string, int64_t>> unit_stride_guesses(const loop::Kernel& k);

// A check's answer from the reason its transform's code path recorded.
inline std::optional<std::string> reason(std::string why_not) {
  if (why_not.empty()) return std::nullopt;
  return why_not;
}

// uses_var and linear_coefficient: ir/loop/analysis.h.
using loop::linear_coefficient;
using loop::uses_var;

}  // namespace kiln::passes::schedule_detail
