// The loop-IR simplifier: constant folding, algebraic identities, and min/max,
// div/mod and comparison simplification using the known bounds of loop
// variables. Assumes: integer index arithmetic does not overflow i64.
// Guarantees: the result computes the same values; it never introduces loads.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "ir/loop/loop_ir.h"

namespace kiln::loop {

// Inclusive integer bounds; nullopt on a side means unbounded.
struct Interval {
  std::optional<int64_t> lo, hi;
  bool is_point() const { return lo && hi && *lo == *hi; }
};

using BoundsMap = std::map<std::string, Interval>;

Expr simplify(const Expr& e, const BoundsMap& bounds = {});
Stmt simplify(const Stmt& s, const BoundsMap& bounds = {});

// The bounds of an integer expression given bounds of its Vars.
Interval bounds_of(const Expr& e, const BoundsMap& bounds);

}  // namespace kiln::loop
