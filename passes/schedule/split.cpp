// split: one loop into an outer loop over chunks of `factor` iterations and an
// inner loop over one chunk, with a tail strategy for extents the factor does
// not divide. Guarantees: every original iteration runs exactly once
// (GuardWithIf, Predicate, PredicatedTail, ShortenLast) or at least once
// (ShiftInwards).
#include "ir/loop/simplify.h"
#include "ir/loop/visitor.h"
#include "kiln/error.h"
#include "passes/schedule/schedule.h"
#include "passes/schedule/schedule_internal.h"

namespace kiln::passes {

using namespace kiln::loop;  // NOLINT

namespace {

Stmt split_loop(const For* f, const Expr& fac, const std::string& loop_var,
                const std::string& outer_name, const std::string& inner_name, TailStrategy tail,
                std::string* why_not) {
  Expr outer = Var::make(i64_t(), outer_name), inner = Var::make(i64_t(), inner_name);
  int64_t factor = 0, extent = 0;
  bool const_factor = is_const_int(fac, &factor);
  bool divides = const_factor && is_const_int(f->extent, &extent) && extent % factor == 0;
  if (tail == TailStrategy::PredicatedTail) {
    // Full chunks unguarded, then the n % factor rest as one guarded chunk.
    Expr full = simplify(f->extent / fac);
    Stmt body = substitute(f->body, loop_var, simplify(f->min + outer * fac + inner));
    Stmt main = For::make(outer, make_int(0), full, f->for_kind,
                          For::make(inner, make_int(0), fac, ForKind::Serial, body));
    if (divides) return main;
    Expr start = simplify(full * fac);
    Stmt rest = IfThenElse::make(start + inner < f->extent,
                                 substitute(f->body, loop_var, simplify(f->min + start + inner)));
    return Block::make({main, For::make(inner, make_int(0), fac, ForKind::Serial, rest)});
  }
  Expr chunks = simplify((f->extent + simplify(fac - make_int(1))) / fac);
  Expr offset = outer * fac;
  if (tail == TailStrategy::ShiftInwards && !divides) {
    if (!const_factor) {
      *why_not = "split: ShiftInwards needs a constant factor (loop '" + loop_var + "')";
      return Stmt();
    }
    if (is_const_int(f->extent, &extent) && extent < factor) {
      *why_not = "split: ShiftInwards needs extent >= factor, loop '" + loop_var + "' has extent " +
                 std::to_string(extent);
      return Stmt();
    }
    offset = min(offset, f->extent - fac);
  }
  Expr inner_extent = fac;
  if (tail == TailStrategy::ShortenLast && !divides) {
    inner_extent = simplify(min(fac, f->extent - offset));
  }
  Stmt body = substitute(f->body, loop_var, simplify(f->min + offset + inner));
  if (!divides && (tail == TailStrategy::GuardWithIf || tail == TailStrategy::Predicate)) {
    body = IfThenElse::make(offset + inner < f->extent, body);
  }
  Stmt inner_loop = For::make(inner, make_int(0), inner_extent, ForKind::Serial, body);
  return For::make(outer, make_int(0), chunks, f->for_kind, inner_loop);
}

// Split with the factor's own preconditions; the loop's are split_loop's.
Stmt split_loops(const Stmt& s, const std::string& loop_var, const Expr& factor,
                 const std::string& outer_name, const std::string& inner_name, TailStrategy tail,
                 std::string* why_not) {
  int64_t c = 0;
  if (!factor.defined() || factor.type() != i64_t()) {
    *why_not = "split: factor must be an i64 scalar (loop '" + loop_var + "')";
    return Stmt();
  }
  if (is_const_int(factor, &c) && c < 1) {
    *why_not =
        "split: factor must be >= 1, got " + std::to_string(c) + " (loop '" + loop_var + "')";
    return Stmt();
  }
  return schedule_detail::rewrite_loop(
      s, loop_var, "split",
      [&](const For* f, std::string* why) {
        return split_loop(f, factor, loop_var, outer_name, inner_name, tail, why);
      },
      why_not);
}

}  // namespace

std::optional<std::string> why_not_split(const Stmt& s, const std::string& loop_var,
                                         const Expr& factor, TailStrategy tail) {
  std::string why_not;
  split_loops(s, loop_var, factor, "split_o", "split_i", tail, &why_not);
  return schedule_detail::reason(why_not);
}

std::optional<std::string> why_not_split(const Stmt& s, const std::string& loop_var, int64_t factor,
                                         TailStrategy tail) {
  return why_not_split(s, loop_var, make_int(factor), tail);
}

Stmt split(const Stmt& s, const std::string& loop_var, const Expr& factor,
           const std::string& outer_name, const std::string& inner_name, TailStrategy tail) {
  std::string why_not;
  Stmt out = split_loops(s, loop_var, factor, outer_name, inner_name, tail, &why_not);
  KILN_USER_CHECK(why_not.empty(), why_not);
  return simplify(out);
}

Stmt split(const Stmt& s, const std::string& loop_var, int64_t factor,
           const std::string& outer_name, const std::string& inner_name, TailStrategy tail) {
  return split(s, loop_var, make_int(factor), outer_name, inner_name, tail);
}

}  // namespace kiln::passes
