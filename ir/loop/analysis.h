// Small analyses over loop IR that the lowerings and the schedule share:
// whether an expression or statement refers to a variable, and the
// coefficient of a variable in an affine integer index (how far an access
// moves per step of that variable).
#pragma once

#include <string>

#include "ir/loop/loop_ir.h"

namespace kiln::loop {

// Whether `e` / `s` refers to variable `var` (as a Var, or as a loop's
// variable in `s`).
bool uses_var(const Expr& e, const std::string& var);
bool uses_var(const Stmt& s, const std::string& var);

// The coefficient of `var` in `e` when `e` is a scalar integer expression
// affine in it (sums and differences of terms, products with a factor free
// of `var`), 0 when `e` does not use it; undefined otherwise.
Expr linear_coefficient(const Expr& e, const std::string& var);

}  // namespace kiln::loop
