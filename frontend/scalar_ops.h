// Compile-time arithmetic on script numbers with Python's semantics.
//
// Python's int is exact; a script's compile-time int is an int64. Every
// operation here either gives Python's exact result or, when that result
// leaves int64, reports a located "integer overflow: <expr> does not fit in
// int64" -- never a silently wrapped value or a SIGFPE. Division is floor
// division, % takes the divisor's sign, shifts and powers are checked, and
// round() rounds half to even (with ndigits, on the exact decimal value of
// the float, like CPython). Pure integer-literal expressions such as
// `-2**63` are folded in 128 bits first, so an intermediate value outside
// int64 is fine when the result fits.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "frontend/lower.h"

namespace kiln::frontend {

// x <op> y on ints (+ - * // % ** << >> & | ^), exact or a located error.
// `**` with a negative exponent is a float and handled by scalar_binary.
int64_t int_binary(Lowerer& L, const std::string& op, int64_t x, int64_t y, const Span& at);

// -x, +x, ~x, abs(x) on numbers (Int, Bool, Float); other kinds give nullopt.
std::optional<Val> scalar_unary(Lowerer& L, const std::string& op, const Val& a, const Span& at);

// int(v) of a float: truncation, or a located error for NaN, infinity and
// values outside int64 (`what` names the conversion in the overflow message).
int64_t float_to_int(Lowerer& L, double v, const std::string& what, const Span& at);

// Python's round(x) (ndigits == nullptr or None) and round(x, ndigits).
Val py_round(Lowerer& L, const Val& x, const Val* ndigits, const Span& at);

// The value of an expression built only of int literals and + - * // % **
// and unary - + ~, when every step is defined and the result fits in int64;
// nullopt otherwise (the caller then evaluates it step by step, which
// reports the failing step).
std::optional<int64_t> fold_int_literals(const Expr& e);

// PyTorch rejects an integer (or bool) tensor raised to a negative integer
// constant: "Integers to negative integer powers are not allowed."
void check_int_tensor_pow(Lowerer& L, ir::Value* base, const Val& exponent, const Span& at);

}  // namespace kiln::frontend
