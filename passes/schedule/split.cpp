// split: one loop into an outer loop over chunks of `factor` iterations and an
// inner loop of constant extent `factor`, with a tail strategy for extents the
// factor does not divide. Guarantees: every original iteration runs exactly
// once (GuardWithIf, Predicate) or at least once (ShiftInwards).
#include "ir/loop/simplify.h"
#include "ir/loop/visitor.h"
#include "kiln/error.h"
#include "passes/schedule/schedule.h"
#include "passes/schedule/schedule_internal.h"

namespace kiln::passes {

using namespace kiln::loop;  // NOLINT

Stmt split(const Stmt& s, const std::string& loop_var, int64_t factor,
           const std::string& outer_name, const std::string& inner_name, TailStrategy tail) {
  KILN_USER_CHECK(factor >= 1,
                  "split: factor must be >= 1, got " << factor << " (loop '" << loop_var << "')");
  Stmt out = schedule_detail::rewrite_loop(s, loop_var, "split", [&](const For* f) -> Stmt {
    Expr outer = Var::make(i64_t(), outer_name), inner = Var::make(i64_t(), inner_name);
    Expr fac = make_int(factor);
    Expr chunks = simplify((f->extent + make_int(factor - 1)) / fac);
    int64_t extent = 0;
    bool divides = is_const_int(f->extent, &extent) && extent % factor == 0;
    Expr offset = outer * fac;
    if (tail == TailStrategy::ShiftInwards && !divides) {
      KILN_USER_CHECK(!is_const_int(f->extent, &extent) || extent >= factor,
                      "split: ShiftInwards needs extent >= factor, loop '"
                          << loop_var << "' has extent " << extent);
      offset = min(offset, f->extent - fac);
    }
    Stmt body = substitute(f->body, loop_var, simplify(f->min + offset + inner));
    if (!divides && tail != TailStrategy::ShiftInwards) {
      body = IfThenElse::make(offset + inner < f->extent, body);
    }
    Stmt inner_loop = For::make(inner, make_int(0), fac, ForKind::Serial, body);
    return For::make(outer, make_int(0), chunks, f->for_kind, inner_loop);
  });
  return simplify(out);
}

}  // namespace kiln::passes
