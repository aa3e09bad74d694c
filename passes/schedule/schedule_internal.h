// Shared helper of the schedule transforms: find a loop by its variable's name
// and rebuild the statement with that loop replaced. Internal to passes/schedule.
#pragma once

#include <functional>
#include <string>

#include "ir/loop/analysis.h"
#include "ir/loop/loop_ir.h"

namespace kiln::passes::schedule_detail {

// Replaces the first For whose var is named `loop_var` with f(that For), or
// every such For when `all` (split's PredicatedTail leaves two sibling loops of
// one name, the main chunk and the tail chunk, and vectorize/unroll treat both).
// Throws kiln::Error "<what>: no loop named '<loop_var>'" when there is none.
loop::Stmt rewrite_loop(const loop::Stmt& s, const std::string& loop_var, const char* what,
                        const std::function<loop::Stmt(const loop::For*)>& f, bool all = false);

// The body of `for (var, min, lanes)` as vector lanes (vectorize's machinery,
// without simplification): `var` becomes ramp(min, 1, lanes).
loop::Stmt vectorize_body(const loop::Stmt& body, const std::string& var, const loop::Expr& min,
                          int lanes);

// uses_var and linear_coefficient: ir/loop/analysis.h.
using loop::linear_coefficient;
using loop::uses_var;

}  // namespace kiln::passes::schedule_detail
