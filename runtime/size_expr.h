// SizeExpr: the executable's integers that depend on symbolic dims (a
// buffer's dim, a launch's grid size), computed per call.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace kiln::runtime {

// An integer computed from symbolic dims at call time, as a postfix program: `N * 5` is {Symbol 0,
// Const 5, Mul}. Div/Mod are floor division and modulo, and x / 0 and x % 0 give 0 (as in loop IR).
struct SizeExpr {
  enum class Op : uint8_t { Const, Symbol, Add, Sub, Mul, Div, Mod, Min, Max, LT, LE, EQ, Select };
  struct Term {
    Op op = Op::Const;
    int64_t value = 0;  // Const: the value; Symbol: the symbol slot
  };
  std::vector<Term> terms;

  static SizeExpr constant(int64_t v) { return {{{Op::Const, v}}}; }
  static SizeExpr symbol(int slot) { return {{{Op::Symbol, slot}}}; }
  // Appends `op` (arity 2, or 3 for Select: cond, true, false) after the operands.
  int64_t eval(std::span<const int64_t> symbols) const;
  // Text with symbol names: "(N * 5)".
  std::string str(std::span<const std::string> symbol_names) const;
  // Throws InternalError when the program is malformed (stack depth, slots).
  void validate(size_t num_symbols) const;
};

}  // namespace kiln::runtime
