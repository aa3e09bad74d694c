// Small analyses over loop IR that the lowerings and the schedule share:
// whether an expression or statement refers to a variable, the coefficient
// of a variable in an affine integer index (how far an access moves per step
// of that variable), and which integer divisions need a zero-divisor check.
#pragma once

#include <string>
#include <vector>

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

// Whether `op` is an integer Div or Mod whose divisor is not a nonzero
// constant: it may divide by zero at run time, which the interpreter rejects,
// so backends check it (see runtime/kernel_status.h).
bool divisor_needs_check(const Binary* op);

// Whether `s` contains such a division or a checked_index call (an index
// tensor's value checked against its dim; see runtime/kernel_status.h).
bool has_checked_division(const Stmt& s);

// The predicates of the Loads in `e` with `e`'s lane count: a lane where
// one is false read no memory (it holds 0), so a zero divisor there is no
// error.
std::vector<Expr> load_predicates(const Expr& e);

}  // namespace kiln::loop
