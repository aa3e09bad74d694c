// specialize: versions a statement on scalar parameters taking given values
// (see schedule.h). The specialized copy has the values substituted and
// simplified, so e.g. a stride of 1 turns a gathered vector load into a dense
// one; the original stays as the fallback. Guarantees: the result computes the
// same values as `s` for every value of the parameters.
#include "ir/loop/simplify.h"
#include "ir/loop/visitor.h"
#include "kiln/error.h"
#include "passes/schedule/schedule.h"

namespace kiln::passes {

using namespace kiln::loop;  // NOLINT

Stmt specialize(const Stmt& s, const std::vector<std::pair<std::string, int64_t>>& values) {
  if (values.empty()) return s;
  Expr cond;
  Stmt fast = s;
  for (const auto& [name, value] : values) {
    KILN_USER_CHECK(!name.empty(), "specialize: empty variable name");
    Expr v = Var::make(i64_t(), name);
    cond = cond.defined() ? (cond && v == make_int(value)) : (v == make_int(value));
    fast = substitute(fast, name, make_int(value));
  }
  return IfThenElse::make(cond, simplify(fast), s);
}

}  // namespace kiln::passes
