// Compile-time scalar arithmetic with Python's semantics (see scalar_ops.h).
// Integer results are computed in 128 bits and checked against int64.
#include "frontend/scalar_ops.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <vector>

namespace kiln::frontend {

namespace {

using i128 = __int128;

constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
// Folding keeps intermediate values below this (far from i128's limits, so a
// product of two of them cannot overflow).
constexpr i128 kFoldBound = i128(1) << 100;

bool is_intlike(const Val& v) {
  return v.kind == Val::Kind::Int || v.kind == Val::Kind::Bool;
}

bool fits(i128 v) {
  return v >= kMin && v <= kMax;
}

std::string str(i128 v) {
  if (v == 0) return "0";
  bool neg = v < 0;
  std::string s;
  while (v != 0) {
    int d = int(v % 10);
    s.insert(s.begin(), char('0' + (d < 0 ? -d : d)));
    v /= 10;
  }
  return neg ? "-" + s : s;
}

// The shortest text that reads back as v ("1e+300", not "1.0000000000000001e+300").
std::string float_str(double v) {
  char buf[64];
  for (int digits = 1; digits <= 17; ++digits) {
    std::snprintf(buf, sizeof buf, "%.*g", digits, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  return buf;
}

[[noreturn]] void overflow(Lowerer& L, const std::string& expr, const Span& at) {
  L.fail(at, "integer overflow: " + expr + " does not fit in int64");
}

// Python's floor division and modulo; b != 0.
i128 floor_div(i128 a, i128 b) {
  i128 q = a / b;
  if (a % b != 0 && ((a < 0) != (b < 0))) --q;
  return q;
}
i128 py_mod(i128 a, i128 b) {
  i128 r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

// x ** y for y >= 0, or nullopt when |result| would exceed `bound`.
std::optional<i128> int_pow(i128 x, i128 y, i128 bound) {
  if (y == 0 || x == 1) return 1;
  if (x == 0) return 0;
  if (x == -1) return y % 2 == 0 ? 1 : -1;
  i128 r = 1, ax = x < 0 ? -x : x;
  for (i128 k = 0; k < y; ++k) {  // |x| >= 2: at most ~100 steps before the bound
    if ((r < 0 ? -r : r) > bound / ax) return std::nullopt;
    r *= x;
  }
  return r;
}

// Python's float floor division and modulo (CPython's float_divmod); y != 0.
double float_floordiv(double x, double y, double* mod_out) {
  double mod = std::fmod(x, y);
  double div = (x - mod) / y;
  if (mod != 0) {
    if ((y < 0) != (mod < 0)) {
      mod += y;
      div -= 1.0;
    }
  } else {
    mod = std::copysign(0.0, y);
  }
  double floordiv;
  if (div != 0) {
    floordiv = std::floor(div);
    if (div - floordiv > 0.5) floordiv += 1.0;
  } else {
    floordiv = std::copysign(0.0, x / y);
  }
  if (mod_out) *mod_out = mod;
  return floordiv;
}

std::string op_text(const std::string& op, i128 x, i128 y) {
  return str(x) + " " + op + " " + str(y);
}

std::optional<i128> fold(const Expr& e) {
  if (e.kind == ExprKind::Int) return i128(e.ival);
  if (e.kind == ExprKind::UnaryOp && e.items.size() == 1) {
    std::optional<i128> a = fold(*e.items[0]);
    if (!a) return std::nullopt;
    if (e.op == "-") return -*a;
    if (e.op == "+") return *a;
    if (e.op == "~") return ~*a;
    return std::nullopt;
  }
  if (e.kind != ExprKind::BinOp || e.items.size() != 2) return std::nullopt;
  const std::string& op = e.op;
  if (op != "+" && op != "-" && op != "*" && op != "//" && op != "%" && op != "**") {
    return std::nullopt;
  }
  std::optional<i128> a = fold(*e.items[0]);
  if (!a) return std::nullopt;
  std::optional<i128> b = fold(*e.items[1]);
  if (!b) return std::nullopt;
  i128 x = *a, y = *b, r = 0;
  if (op == "+") {
    r = x + y;
  } else if (op == "-") {
    r = x - y;
  } else if (op == "*") {
    i128 ax = x < 0 ? -x : x, ay = y < 0 ? -y : y;
    if (ax != 0 && ay > kFoldBound / ax) return std::nullopt;
    r = x * y;
  } else if (op == "//" || op == "%") {
    if (y == 0) return std::nullopt;
    r = op == "//" ? floor_div(x, y) : py_mod(x, y);
  } else {
    if (y < 0) return std::nullopt;  // a float
    std::optional<i128> p = int_pow(x, y, kFoldBound);
    if (!p) return std::nullopt;
    r = *p;
  }
  if (r >= kFoldBound || r <= -kFoldBound) return std::nullopt;
  return r;
}

// The exact decimal digits of |v| (finite, nonzero) and how many of them are
// before the decimal point.
void exact_decimal(double v, std::string* digits, int* int_digits) {
  // 1100 fractional digits hold any double exactly (the smallest has 1074).
  std::vector<char> buf(1500);
  std::snprintf(buf.data(), buf.size(), "%.1100f", std::fabs(v));
  std::string s(buf.data());
  size_t dot = s.find('.');
  std::string whole = s.substr(0, dot), frac = s.substr(dot + 1);
  if (whole == "0") whole.clear();
  *int_digits = int(whole.size());
  *digits = whole + frac;
}

// round(v, n) on the exact decimal value of v, half to even (CPython's
// correctly rounded algorithm gives the same).
double round_float(Lowerer& L, double v, int64_t n, const Span& at) {
  if (!std::isfinite(v) || v == 0) return v;
  if (n > 400) return v;                       // beyond any double's digits
  if (n < -400) return std::copysign(0.0, v);  // beyond any double's magnitude
  std::string digits;
  int int_digits = 0;
  exact_decimal(v, &digits, &int_digits);
  int64_t keep = int_digits + n;  // digits kept; the last has weight 10^-n
  std::string kept;
  bool up = false;
  if (keep >= 0) {
    if (keep >= int64_t(digits.size())) return v;
    kept = digits.substr(0, size_t(keep));
    std::string rest = digits.substr(size_t(keep));
    size_t nonzero = rest.find_first_not_of('0', 1);
    if (rest[0] > '5') {
      up = true;
    } else if (rest[0] == '5') {
      bool tie = nonzero == std::string::npos;
      bool odd = !kept.empty() && (kept.back() - '0') % 2 == 1;
      up = !tie || odd;
    }
  }
  // keep < 0: |v| < 10^int_digits <= 10^-n / 10, which rounds to zero.
  if (kept.empty()) kept = "0";
  if (up) {
    size_t k = kept.size();
    while (k > 0 && kept[k - 1] == '9') kept[--k] = '0';
    if (k == 0) {
      kept.insert(kept.begin(), '1');
    } else {
      ++kept[k - 1];
    }
  }
  double r = std::strtod((kept + "e" + std::to_string(-n)).c_str(), nullptr);
  if (std::isinf(r)) L.fail(at, "rounded value too large to represent");
  return std::copysign(r, v);
}

// round(v, n) on an int, half to even; n < 0 rounds to a multiple of 10^-n.
int64_t round_int(Lowerer& L, int64_t v, int64_t n, const Span& at) {
  if (n >= 0) return v;
  if (n < -19) return 0;  // |v| < 10^19 / 2
  i128 m = 1;
  for (int64_t k = 0; k < -n; ++k) m *= 10;
  i128 q = floor_div(v, m), r = v - q * m;
  if (2 * r > m || (2 * r == m && q % 2 != 0)) ++q;
  i128 out = q * m;
  if (!fits(out)) overflow(L, "round(" + str(v) + ", " + str(n) + ")", at);
  return int64_t(out);
}

}  // namespace

int64_t int_binary(Lowerer& L, const std::string& op, int64_t x, int64_t y, const Span& at) {
  i128 a = x, b = y, r = 0;
  if (op == "+") {
    r = a + b;
  } else if (op == "-") {
    r = a - b;
  } else if (op == "*") {
    r = a * b;
  } else if (op == "//" || op == "%") {
    if (y == 0) L.fail(at, "integer division or modulo by zero");
    r = op == "//" ? floor_div(a, b) : py_mod(a, b);
  } else if (op == "**") {
    std::optional<i128> p = int_pow(a, b, i128(1) << 64);
    if (!p) overflow(L, op_text(op, a, b), at);
    r = *p;
  } else if (op == "<<" || op == ">>") {
    if (y < 0) L.fail(at, "negative shift count");
    if (op == ">>") {
      r = y >= 64 ? (x < 0 ? -1 : 0) : (a >> y);
    } else if (x == 0) {
      r = 0;
    } else {
      if (y >= 64) overflow(L, op_text(op, a, b), at);
      r = a * (i128(1) << y);
    }
  } else if (op == "&") {
    r = a & b;
  } else if (op == "|") {
    r = a | b;
  } else if (op == "^") {
    r = a ^ b;
  } else {
    L.fail(at, "operator '" + op + "' is not supported on numbers");
  }
  if (!fits(r)) overflow(L, op_text(op, a, b), at);
  return int64_t(r);
}

std::optional<Val> scalar_unary(Lowerer& L, const std::string& op, const Val& a, const Span& at) {
  if (is_intlike(a)) {
    if (op == "+") return Val::int_(a.i);
    if (op == "~") return Val::int_(~a.i);
    if (op == "-" || op == "abs") {
      if (a.i == kMin) overflow(L, (op == "-" ? "-(" : "abs(") + str(a.i) + ")", at);
      return Val::int_(op == "-" || a.i < 0 ? -a.i : a.i);
    }
  }
  if (a.kind == Val::Kind::Float) {
    if (op == "-") return Val::float_(-a.f);
    if (op == "+") return a;
    if (op == "abs") return Val::float_(std::fabs(a.f));
  }
  return std::nullopt;
}

int64_t float_to_int(Lowerer& L, double v, const std::string& what, const Span& at) {
  if (std::isnan(v)) L.fail(at, "cannot convert float NaN to integer");
  if (std::isinf(v)) L.fail(at, "cannot convert float infinity to integer");
  double t = std::trunc(v);
  // 2^63 is exact as a double; every double below it truncates into int64.
  if (t >= 9223372036854775808.0 || t < -9223372036854775808.0) {
    overflow(L, what + "(" + float_str(v) + ")", at);
  }
  return int64_t(t);
}

Val py_round(Lowerer& L, const Val& x, const Val* ndigits, const Span& at) {
  if (!x.is_number()) L.fail(at, "type " + kind_name(x) + " doesn't define __round__ method");
  if (ndigits && ndigits->kind == Val::Kind::None) ndigits = nullptr;
  if (ndigits && !is_intlike(*ndigits)) {
    L.fail(at, "'" + kind_name(*ndigits) + "' object cannot be interpreted as an integer");
  }
  if (is_intlike(x)) return Val::int_(ndigits ? round_int(L, x.i, ndigits->i, at) : x.i);
  if (ndigits) return Val::float_(round_float(L, x.f, ndigits->i, at));
  // round(x) of a float is an int: half to even (the default rounding mode).
  if (std::isfinite(x.f)) return Val::int_(float_to_int(L, std::nearbyint(x.f), "round", at));
  return Val::int_(float_to_int(L, x.f, "round", at));  // reports NaN / infinity
}

void check_int_tensor_pow(Lowerer& L, ir::Value* base, const Val& exponent, const Span& at) {
  if (!base || !is_intlike(exponent) || exponent.i >= 0) return;
  DType d = base->type().dtype();
  if (d == DType::F16 || d == DType::BF16 || d == DType::F32 || d == DType::F64) return;
  L.fail(at, "Integers to negative integer powers are not allowed.");
}

std::optional<int64_t> fold_int_literals(const Expr& e) {
  if (e.kind != ExprKind::BinOp && e.kind != ExprKind::UnaryOp) return std::nullopt;
  std::optional<i128> v = fold(e);
  if (!v || !fits(*v)) return std::nullopt;
  return int64_t(*v);
}

Val scalar_binary(Lowerer& L, const std::string& op, const Val& a, const Val& b, const Span& at) {
  // Sequences and strings: concatenation and repetition, as in Python, within
  // the sequence-length budget.
  if (a.is_seq() && b.is_seq() && op == "+") {
    L.check_sequence_length(i128(a.items.size()) + i128(b.items.size()), at);
    Val r = a;
    r.storage = 0;  // a new list
    r.items.insert(r.items.end(), b.items.begin(), b.items.end());
    return r;
  }
  if (a.kind == Val::Kind::Str && b.kind == Val::Kind::Str && op == "+") {
    L.check_sequence_length(i128(a.s.size()) + i128(b.s.size()), at);
    return Val::str(a.s + b.s);
  }
  bool a_seq = a.is_seq() || a.kind == Val::Kind::Str;
  bool b_seq = b.is_seq() || b.kind == Val::Kind::Str;
  if (op == "*" && ((a_seq && is_intlike(b)) || (b_seq && is_intlike(a)))) {
    const Val& seq = is_intlike(b) ? a : b;
    int64_t times = std::max<int64_t>(is_intlike(b) ? b.i : a.i, 0);
    bool is_str = seq.kind == Val::Kind::Str;
    i128 n = i128(is_str ? seq.s.size() : seq.items.size()) * times;
    L.check_sequence_length(n, at);
    Val r = seq;
    r.storage = 0;  // a new list
    r.items.clear();
    r.s.clear();
    for (int64_t k = 0; k < times; ++k) {
      if (is_str) {
        r.s += seq.s;
      } else {
        r.items.insert(r.items.end(), seq.items.begin(), seq.items.end());
      }
    }
    return r;
  }
  if (a.kind == Val::Kind::SymDim || b.kind == Val::Kind::SymDim) {
    const std::string& sym = a.kind == Val::Kind::SymDim ? a.s : b.s;
    L.fail(at, "arithmetic on the symbolic size '" + sym +
                   "' is not supported yet (its value is only known at run time)");
  }
  if (!a.is_number() || !b.is_number()) {
    L.fail(at, "unsupported operand types for " + op + ": '" + kind_name(a) + "' and '" +
                   kind_name(b) + "'");
  }
  bool ints = is_intlike(a) && is_intlike(b);
  if (op == "&" || op == "|" || op == "^" || op == "<<" || op == ">>") {
    if (!ints) {
      L.fail(at, "unsupported operand types for " + op + ": '" + kind_name(a) + "' and '" +
                     kind_name(b) + "'");
    }
    int64_t r = int_binary(L, op, a.i, b.i, at);
    bool bools = a.kind == Val::Kind::Bool && b.kind == Val::Kind::Bool;
    return bools && op != "<<" && op != ">>" ? Val::bool_(r != 0) : Val::int_(r);
  }
  if (ints) {
    if (op == "/") {
      if (b.i == 0) L.fail(at, "division by zero");
      return Val::float_(double(a.i) / double(b.i));
    }
    if (op == "**" && b.i < 0) {
      if (a.i == 0) L.fail(at, "0 cannot be raised to a negative power");
      return Val::float_(std::pow(double(a.i), double(b.i)));
    }
    if (op == "+" || op == "-" || op == "*" || op == "//" || op == "%" || op == "**") {
      return Val::int_(int_binary(L, op, a.i, b.i, at));
    }
  } else {
    double x = a.num(), y = b.num();
    if (op == "+") return Val::float_(x + y);
    if (op == "-") return Val::float_(x - y);
    if (op == "*") return Val::float_(x * y);
    if (op == "/" || op == "//" || op == "%") {
      if (y == 0) {
        L.fail(at, op == "/"    ? "float division by zero"
                   : op == "//" ? "float floor division by zero"
                                : "float modulo by zero");
      }
      if (op == "/") return Val::float_(x / y);
      double mod = 0;
      double q = float_floordiv(x, y, &mod);
      return Val::float_(op == "//" ? q : mod);
    }
    if (op == "**") {
      if (x == 0 && y < 0) L.fail(at, "0.0 cannot be raised to a negative power");
      double r = std::pow(x, y);
      if (x < 0 && std::isfinite(y) && y != std::floor(y)) {
        L.fail(at,
               "a negative number raised to a fractional power is complex, which is not "
               "supported");
      }
      if (std::isinf(r) && std::isfinite(x) && std::isfinite(y)) {
        L.fail(at, "float overflow: " + float_str(x) + " ** " + float_str(y) + " is out of range");
      }
      return Val::float_(r);
    }
  }
  L.fail(at, "operator '" + op + "' is not supported on numbers");
}

}  // namespace kiln::frontend
