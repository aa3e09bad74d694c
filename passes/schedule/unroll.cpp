// unroll: replaces a loop of constant extent by one copy of its body per
// iteration, the loop variable substituted by its value.
#include "ir/loop/simplify.h"
#include "ir/loop/visitor.h"
#include "kiln/error.h"
#include "passes/schedule/schedule.h"
#include "passes/schedule/schedule_internal.h"

namespace kiln::passes {

using namespace kiln::loop;  // NOLINT

Stmt unroll(const Stmt& s, const std::string& loop_var) {
  Stmt out = schedule_detail::rewrite_loop(
      s, loop_var, "unroll",
      [&](const For* f) -> Stmt {
        int64_t extent = 0, lo = 0;
        KILN_USER_CHECK(is_const_int(f->extent, &extent) && is_const_int(f->min, &lo),
                        "unroll: loop '" << loop_var << "' needs constant bounds, got min "
                                         << to_string(f->min) << " extent "
                                         << to_string(f->extent));
        KILN_USER_CHECK(extent <= 1024, "unroll: loop '" << loop_var << "' has " << extent
                                                         << " iterations (at most 1024 unroll)");
        std::vector<Stmt> copies;
        for (int64_t i = 0; i < extent; ++i)
          copies.push_back(substitute(f->body, loop_var, make_int(lo + i)));
        if (copies.empty()) return Block::make({});
        return Block::make(copies);
      },
      /*all=*/true);
  return simplify(out);
}

}  // namespace kiln::passes
