// reorder: swaps two directly nested loops. Assumes the iterations of the nest
// are independent in either order (true of the lowered elementwise and
// contraction output nests); the inner loop's bounds must not use the outer var.
#include "ir/loop/simplify.h"
#include "ir/loop/visitor.h"
#include "kiln/error.h"
#include "passes/schedule/schedule.h"
#include "passes/schedule/schedule_internal.h"

namespace kiln::passes {

using namespace kiln::loop;  // NOLINT

namespace {
bool uses(const Expr& e, const std::string& var) {
  return !substitute(e, var, make_int(0)).same_as(e);
}
}  // namespace

Stmt reorder(const Stmt& s, const std::string& outer_var, const std::string& inner_var) {
  return schedule_detail::rewrite_loop(s, outer_var, "reorder", [&](const For* o) -> Stmt {
    const For* i = o->body.as<For>();
    KILN_USER_CHECK(
        i && i->var.as<Var>()->name == inner_var,
        "reorder: loop '" << inner_var << "' is not directly inside loop '" << outer_var << "'");
    KILN_USER_CHECK(
        !uses(i->min, outer_var) && !uses(i->extent, outer_var),
        "reorder: the bounds of loop '" << inner_var << "' depend on '" << outer_var << "'");
    Stmt new_inner = For::make(o->var, o->min, o->extent, o->for_kind, i->body);
    return For::make(i->var, i->min, i->extent, i->for_kind, new_inner);
  });
}

}  // namespace kiln::passes
