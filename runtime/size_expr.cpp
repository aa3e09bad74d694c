// SizeExpr: evaluation on a small fixed stack (it runs per call for every
// planned buffer's dim), validation, and printing. See size_expr.h.
#include "runtime/size_expr.h"

#include <algorithm>

#include "kiln/error.h"

namespace kiln::runtime {

namespace {

int64_t floor_div(int64_t a, int64_t b) {
  if (b == 0) return 0;
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

int64_t floor_mod(int64_t a, int64_t b) {
  if (b == 0) return 0;
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

int arity(SizeExpr::Op op) {
  switch (op) {
    case SizeExpr::Op::Const:
    case SizeExpr::Op::Symbol:
      return 0;
    case SizeExpr::Op::Select:
      return 3;
    default:
      return 2;
  }
}

const char* op_text(SizeExpr::Op op) {
  switch (op) {
    case SizeExpr::Op::Add:
      return "+";
    case SizeExpr::Op::Sub:
      return "-";
    case SizeExpr::Op::Mul:
      return "*";
    case SizeExpr::Op::Div:
      return "/";
    case SizeExpr::Op::Mod:
      return "%";
    case SizeExpr::Op::Min:
      return "min";
    case SizeExpr::Op::Max:
      return "max";
    case SizeExpr::Op::LT:
      return "<";
    case SizeExpr::Op::LE:
      return "<=";
    case SizeExpr::Op::EQ:
      return "==";
    default:
      return "?";
  }
}

}  // namespace

void SizeExpr::validate(size_t num_symbols) const {
  int64_t depth = 0;
  for (const Term& t : terms) {
    if (t.op == Op::Symbol) {
      KILN_INTERNAL_CHECK(
          t.value >= 0 && size_t(t.value) < num_symbols,
          "size expression refers to symbol slot " << t.value << " of " << num_symbols);
    }
    int n = arity(t.op);
    KILN_INTERNAL_CHECK(depth >= n, "size expression: operator without operands");
    depth += 1 - n;
  }
  KILN_INTERNAL_CHECK(depth == 1, "size expression leaves " << depth << " values");
}

int64_t SizeExpr::eval(std::span<const int64_t> symbols) const {
  // Sizes are shallow (a few terms); a small fixed stack avoids allocating per call.
  int64_t stack[32];
  int top = 0;
  for (const Term& t : terms) {
    KILN_INTERNAL_CHECK(top < 32, "size expression deeper than 32");
    switch (t.op) {
      case Op::Const:
        stack[top++] = t.value;
        continue;
      case Op::Symbol:
        stack[top++] = symbols[size_t(t.value)];
        continue;
      case Op::Select: {
        int64_t f = stack[--top], tv = stack[--top], c = stack[--top];
        stack[top++] = c ? tv : f;
        continue;
      }
      default:
        break;
    }
    int64_t b = stack[--top], a = stack[--top];
    int64_t r = 0;
    switch (t.op) {
      case Op::Add:
        r = a + b;
        break;
      case Op::Sub:
        r = a - b;
        break;
      case Op::Mul:
        r = a * b;
        break;
      case Op::Div:
        r = floor_div(a, b);
        break;
      case Op::Mod:
        r = floor_mod(a, b);
        break;
      case Op::Min:
        r = std::min(a, b);
        break;
      case Op::Max:
        r = std::max(a, b);
        break;
      case Op::LT:
        r = a < b;
        break;
      case Op::LE:
        r = a <= b;
        break;
      case Op::EQ:
        r = a == b;
        break;
      default:
        KILN_INTERNAL_CHECK(false, "size expression: bad operator");
    }
    stack[top++] = r;
  }
  KILN_INTERNAL_CHECK(top == 1, "size expression leaves " << top << " values");
  return stack[0];
}

std::string SizeExpr::str(std::span<const std::string> symbol_names) const {
  std::vector<std::string> stack;
  for (const Term& t : terms) {
    if (t.op == Op::Const) {
      stack.push_back(std::to_string(t.value));
    } else if (t.op == Op::Symbol) {
      stack.push_back(size_t(t.value) < symbol_names.size() ? symbol_names[size_t(t.value)]
                                                            : "$" + std::to_string(t.value));
    } else if (t.op == Op::Select && stack.size() >= 3) {
      std::string f = stack.back();
      stack.pop_back();
      std::string tv = stack.back();
      stack.pop_back();
      stack.back() = "select(" + stack.back() + ", " + tv + ", " + f + ")";
    } else if (stack.size() >= 2) {
      std::string b = stack.back();
      stack.pop_back();
      std::string& a = stack.back();
      if (t.op == Op::Min || t.op == Op::Max) {
        a = std::string(op_text(t.op)) + "(" + a + ", " + b + ")";
      } else {
        a = "(" + a + " " + op_text(t.op) + " " + b + ")";
      }
    } else {
      return "<malformed>";
    }
  }
  return stack.size() == 1 ? stack[0] : "<malformed>";
}

}  // namespace kiln::runtime
