// unroll: replaces a loop of constant extent by one copy of its body per
// iteration, the loop variable substituted by its value.
#include "ir/loop/simplify.h"
#include "ir/loop/visitor.h"
#include "kiln/error.h"
#include "passes/schedule/schedule.h"
#include "passes/schedule/schedule_internal.h"

namespace kiln::passes {

using namespace kiln::loop;  // NOLINT

namespace {

Stmt unroll_loops(const Stmt& s, const std::string& loop_var, std::string* why_not) {
  return schedule_detail::rewrite_loop(
      s, loop_var, "unroll",
      [&](const For* f, std::string* why) -> Stmt {
        int64_t extent = 0, lo = 0;
        if (!is_const_int(f->extent, &extent) || !is_const_int(f->min, &lo)) {
          *why = "unroll: loop '" + loop_var + "' needs constant bounds, got min " +
                 to_string(f->min) + " extent " + to_string(f->extent);
          return Stmt();
        }
        if (extent > 1024) {
          *why = "unroll: loop '" + loop_var + "' has " + std::to_string(extent) +
                 " iterations (at most 1024 unroll)";
          return Stmt();
        }
        std::vector<Stmt> copies;
        for (int64_t i = 0; i < extent; ++i)
          copies.push_back(substitute(f->body, loop_var, make_int(lo + i)));
        if (copies.empty()) return Block::make({});
        return Block::make(copies);
      },
      why_not, /*all=*/true);
}

}  // namespace

std::optional<std::string> why_not_unroll(const Stmt& s, const std::string& loop_var) {
  std::string why_not;
  unroll_loops(s, loop_var, &why_not);
  return schedule_detail::reason(why_not);
}

Stmt unroll(const Stmt& s, const std::string& loop_var) {
  std::string why_not;
  Stmt out = unroll_loops(s, loop_var, &why_not);
  KILN_USER_CHECK(why_not.empty(), why_not);
  return simplify(out);
}

}  // namespace kiln::passes
