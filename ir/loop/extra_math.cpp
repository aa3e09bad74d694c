// The extra loop-IR math intrinsics (extra_math.h): libm where it has the
// function, Kiln's own digamma and erfinv where it does not.
#include "ir/loop/extra_math.h"

#include <cmath>
#include <limits>
#include <numbers>

namespace kiln::loop {

double digamma(double x) {
  if (x == 0) return std::copysign(std::numeric_limits<double>::infinity(), -x);
  if (x < 0) {
    if (x == std::trunc(x)) return std::numeric_limits<double>::quiet_NaN();
    // Reflection psi(x) = psi(1 - x) - pi / tan(pi x), with x reduced to its
    // fractional part first: tan has period pi and pi * frac(x) is exact-er.
    double frac = x - std::trunc(x);
    return digamma(1 - x) - std::numbers::pi / std::tan(std::numbers::pi * frac);
  }
  // psi(x) = psi(x + n) - sum 1 / (x + k); then the asymptotic series at x >= 10:
  // log x - 1/(2x) - sum_k B_2k / (2k x^2k).
  double acc = 0;
  while (x < 10) {
    acc -= 1 / x;
    x += 1;
  }
  if (std::isinf(x)) return x;
  double z = 1 / (x * x);
  // B_2k / 2k for k = 7..1 (Bernoulli numbers), highest power first.
  const double c[] = {1.0 / 12.0,  -691.0 / 32760.0, 1.0 / 132.0, -1.0 / 240.0,
                      1.0 / 252.0, -1.0 / 120.0,     1.0 / 12.0};
  double series = 0;
  for (double ck : c) series = series * z + ck;
  return acc + std::log(x) - 0.5 / x - z * series;
}

double erfinv(double y) {
  if (std::isnan(y) || y == 0) return y;
  double a = std::fabs(y);
  if (a > 1) return std::numeric_limits<double>::quiet_NaN();
  if (a == 1) return std::copysign(std::numeric_limits<double>::infinity(), y);
  // Start within ~2e-3 relative (a closed-form approximation by Winitzki,
  // a = 0.147), then three Halley steps on erf(x) = a, or on erfc(x) = 1 - a
  // where a > 0.5 (1 - a is exact there and erfc keeps relative accuracy in
  // the tail).
  constexpr double k = 0.147;
  double l = std::log((1 - a) * (1 + a));
  double t = 2 / (std::numbers::pi * k) + l / 2;
  double x = std::sqrt(std::sqrt(t * t - l / k) - t);
  const double two_over_sqrt_pi = 2 / std::sqrt(std::numbers::pi);
  const bool tail = a > 0.5;
  const double r = 1 - a;
  for (int i = 0; i < 3; ++i) {
    double d = two_over_sqrt_pi * std::exp(-x * x);  // erf'(x)
    double f = tail ? -(std::erfc(x) - r) : std::erf(x) - a;
    double step = f / d;
    x -= step / (1 + x * step);
  }
  return std::copysign(x, y);
}

namespace {

double lgamma_threadsafe(double x) {
  int sign = 0;
  return ::lgamma_r(x, &sign);
}

}  // namespace

const std::vector<ExtraMath>& extra_math() {
  static const std::vector<ExtraMath> table = [] {
    using D1 = double (*)(double);
    using D2 = double (*)(double, double);
    auto u = [](const char* name, D1 f, const char* symbol) {
      return ExtraMath{name, 1, f, nullptr, symbol};
    };
    auto b = [](const char* name, D2 f, const char* symbol) {
      return ExtraMath{name, 2, nullptr, f, symbol};
    };
    return std::vector<ExtraMath>{
        u("tan", static_cast<D1>(&::tan), "kiln_m_tan"),
        u("asin", static_cast<D1>(&::asin), "kiln_m_asin"),
        u("acos", static_cast<D1>(&::acos), "kiln_m_acos"),
        u("atan", static_cast<D1>(&::atan), "kiln_m_atan"),
        u("sinh", static_cast<D1>(&::sinh), "kiln_m_sinh"),
        u("cosh", static_cast<D1>(&::cosh), "kiln_m_cosh"),
        u("asinh", static_cast<D1>(&::asinh), "kiln_m_asinh"),
        u("acosh", static_cast<D1>(&::acosh), "kiln_m_acosh"),
        u("atanh", static_cast<D1>(&::atanh), "kiln_m_atanh"),
        u("log2", static_cast<D1>(&::log2), "kiln_m_log2"),
        u("log10", static_cast<D1>(&::log10), "kiln_m_log10"),
        u("exp2", static_cast<D1>(&::exp2), "kiln_m_exp2"),
        u("erfc", static_cast<D1>(&::erfc), "kiln_m_erfc"),
        u("lgamma", &lgamma_threadsafe, "kiln_m_lgamma"),
        u("digamma", &digamma, "kiln_m_digamma"),
        u("erfinv", &erfinv, "kiln_m_erfinv"),
        b("atan2", static_cast<D2>(&::atan2), "kiln_m_atan2"),
        b("copysign", static_cast<D2>(&::copysign), "kiln_m_copysign"),
        b("hypot", static_cast<D2>(&::hypot), "kiln_m_hypot"),
    };
  }();
  return table;
}

const ExtraMath* find_extra_math(std::string_view name) {
  for (const ExtraMath& m : extra_math()) {
    if (name == m.name) return &m;
  }
  return nullptr;
}

}  // namespace kiln::loop
