// Shared helper of the schedule transforms: find a loop by its variable's name
// and rebuild the statement with that loop replaced. Internal to passes/schedule.
#pragma once

#include <functional>
#include <string>

#include "ir/loop/loop_ir.h"

namespace kiln::passes::schedule_detail {

// Replaces the first For whose var is named `loop_var` with f(that For).
// Throws kiln::Error "<what>: no loop named '<loop_var>'" when there is none.
loop::Stmt rewrite_loop(const loop::Stmt& s, const std::string& loop_var, const char* what,
                        const std::function<loop::Stmt(const loop::For*)>& f);

}  // namespace kiln::passes::schedule_detail
