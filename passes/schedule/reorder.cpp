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

Stmt reorder_loops(const Stmt& s, const std::string& outer_var, const std::string& inner_var,
                   std::string* why_not) {
  return schedule_detail::rewrite_loop(
      s, outer_var, "reorder",
      [&](const For* o, std::string* why) -> Stmt {
        const For* i = o->body.as<For>();
        if (!i || i->var.as<Var>()->name != inner_var) {
          *why =
              "reorder: loop '" + inner_var + "' is not directly inside loop '" + outer_var + "'";
          return Stmt();
        }
        if (uses(i->min, outer_var) || uses(i->extent, outer_var)) {
          *why = "reorder: the bounds of loop '" + inner_var + "' depend on '" + outer_var + "'";
          return Stmt();
        }
        Stmt new_inner = For::make(o->var, o->min, o->extent, o->for_kind, i->body);
        return For::make(i->var, i->min, i->extent, i->for_kind, new_inner);
      },
      why_not);
}

}  // namespace

std::optional<std::string> why_not_reorder(const Stmt& s, const std::string& outer_var,
                                           const std::string& inner_var) {
  std::string why_not;
  reorder_loops(s, outer_var, inner_var, &why_not);
  return schedule_detail::reason(why_not);
}

Stmt reorder(const Stmt& s, const std::string& outer_var, const std::string& inner_var) {
  std::string why_not;
  Stmt out = reorder_loops(s, outer_var, inner_var, &why_not);
  KILN_USER_CHECK(why_not.empty(), why_not);
  return out;
}

}  // namespace kiln::passes
