// The special functions Kiln implements itself (ir/loop/extra_math.cpp:
// digamma, erfinv) against identities and known values, their CUDA prelude
// copies (kiln_prelude.cuh, compiled here as host C++) against them, and the
// registry math ops' dtype rules.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <numbers>
#include <random>

#include "codegen/cuda/kiln_prelude.cuh"
#include "ir/graph.h"
#include "ir/loop/extra_math.h"
#include "tests/unit/op_test_util.h"

namespace kiln::test {
namespace {

constexpr double kEulerGamma = 0.57721566490153286061;

double ulps(double got, double want) {
  return std::fabs(got - want) / std::fabs(std::nextafter(want, INFINITY) - want);
}

TEST(MathOps, DigammaKnownValuesAndIdentities) {
  // The recurrence sums -1/x terms that largely cancel log x near the root
  // (x ~ 1.46), as PyTorch's does: a few ulp there, exact-er elsewhere.
  EXPECT_LE(ulps(loop::digamma(1), -kEulerGamma), 6);
  EXPECT_NEAR(loop::digamma(0.5), -kEulerGamma - 2 * std::numbers::ln2, 1e-15);
  double harmonic = 0;
  for (int n = 1; n < 40; ++n) {
    harmonic += 1.0 / n;
    EXPECT_LE(ulps(loop::digamma(n + 1), harmonic - kEulerGamma), 8) << n;
  }
  // psi(x + 1) = psi(x) + 1 / x; psi(1 - x) - psi(x) = pi / tan(pi x).
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> u(-30, 30);
  for (int k = 0; k < 2000; ++k) {
    double x = u(rng);
    double a = loop::digamma(x + 1), b = loop::digamma(x) + 1 / x;
    EXPECT_NEAR(a, b, 1e-12 * std::max(1.0, std::fabs(a))) << x;
    double r = loop::digamma(1 - x) - loop::digamma(x);
    double want = std::numbers::pi / std::tan(std::numbers::pi * x);
    EXPECT_NEAR(r, want, 1e-9 * std::max(1.0, std::fabs(want))) << x;
  }
  // Large arguments: log x - 1 / (2x) - 1 / (12 x^2) + 1 / (120 x^4).
  for (double x : {1e3, 1e8, 1e15, 1e300}) {
    double z = 1 / (x * x);
    EXPECT_LE(ulps(loop::digamma(x), std::log(x) - 0.5 / x - z / 12 + z * z / 120), 2) << x;
  }
  EXPECT_EQ(loop::digamma(0.0), -INFINITY);
  EXPECT_EQ(loop::digamma(-0.0), INFINITY);
  EXPECT_TRUE(std::isnan(loop::digamma(-4)));
  EXPECT_TRUE(std::isnan(loop::digamma(-INFINITY)));
  EXPECT_EQ(loop::digamma(INFINITY), INFINITY);
  EXPECT_TRUE(std::isnan(loop::digamma(NAN)));
}

TEST(MathOps, ErfinvInvertsErfToTheLastBits) {
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<double> u(-1, 1);
  for (int k = 0; k < 20000; ++k) {
    double y =
        k < 10000 ? u(rng) : std::copysign(1 - std::ldexp(u(rng) * u(rng), -(k % 50)), u(rng));
    if (std::fabs(y) >= 1) continue;
    double x = loop::erfinv(y);
    // x is within 2 ulp of the root: the residual is at most what 2 ulp of x
    // move erf (or erfc, in the tail, where 1 - |y| is exact) by, plus the
    // rounding of erf itself.
    double slope = 2 / std::sqrt(std::numbers::pi) * std::exp(-x * x);
    double two_ulp = 2 * std::fabs(std::nextafter(x, INFINITY) - x);
    if (std::fabs(y) <= 0.5) {
      EXPECT_LE(std::fabs(std::erf(x) - y), slope * two_ulp + 2.5e-16 * std::fabs(y)) << y;
    } else {
      double r = 1 - std::fabs(y);
      EXPECT_LE(std::fabs(std::erfc(std::fabs(x)) - r), slope * two_ulp + 4e-16 * r) << y;
    }
  }
  EXPECT_EQ(loop::erfinv(1), INFINITY);
  EXPECT_EQ(loop::erfinv(-1), -INFINITY);
  EXPECT_TRUE(std::isnan(loop::erfinv(1.0000001)));
  EXPECT_TRUE(std::isnan(loop::erfinv(NAN)));
  EXPECT_TRUE(std::signbit(loop::erfinv(-0.0)));
  EXPECT_EQ(loop::erfinv(1e-300), 1e-300 * std::sqrt(std::numbers::pi) / 2);
}

TEST(MathOps, CudaPreludeComputesTheSameFunctions) {
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> u(-40, 40), v(-1, 1);
  for (int k = 0; k < 5000; ++k) {
    double x = u(rng), y = v(rng);
    ASSERT_EQ(kiln_digamma(x), loop::digamma(x)) << x;
    ASSERT_EQ(kiln_erfinv(y), loop::erfinv(y)) << y;
    ASSERT_EQ(kiln_lgamma(x), std::lgamma(x)) << x;
    ASSERT_EQ(kiln_digamma(float(x)), float(loop::digamma(double(float(x))))) << x;
  }
  for (double x : {0.0, -0.0, -3.0, double(INFINITY), -double(INFINITY), 1.0, -1.0}) {
    double a = kiln_digamma(x), b = loop::digamma(x);
    EXPECT_TRUE((std::isnan(a) && std::isnan(b)) || a == b) << x;
    a = kiln_erfinv(x), b = loop::erfinv(x);
    EXPECT_TRUE((std::isnan(a) && std::isnan(b)) || a == b) << x;
  }
  EXPECT_EQ(kiln_atan2(-0.0f, -0.0f), float(-M_PI));
  EXPECT_EQ(kiln_copysign(3.0, -0.0), -3.0);
}

TEST(MathOps, DtypeRules) {
  ir::Graph g("t");
  auto* i = g.add_input("i", ir::Type::tensor(DType::I64, {3}));
  auto* h = g.add_input("h", ir::Type::tensor(DType::F16, {3}));
  auto* d = g.add_input("d", ir::Type::tensor(DType::F64, {2, 1}));
  EXPECT_EQ(g.apply("lgamma", {i}, {})[0]->type().dtype(), DType::F32);
  EXPECT_EQ(g.apply("erfinv", {h}, {})[0]->type().dtype(), DType::F16);
  EXPECT_EQ(g.apply("trunc", {i}, {})[0]->type().dtype(), DType::I64);
  EXPECT_EQ(g.apply("atan2", {i, i}, {})[0]->type().dtype(), DType::F32);
  ir::Value* c = g.apply("copysign", {h, d}, {})[0];
  EXPECT_EQ(c->type().dtype(), DType::F64);
  EXPECT_EQ(c->type().dims().size(), 2u);
  EXPECT_THROW(g.apply("hypot", {i, i}, {}), Error);
  auto* b = g.add_input("b", ir::Type::tensor(DType::Bool, {3}));
  EXPECT_THROW(g.apply("trunc", {b}, {}), Error);
}

}  // namespace
}  // namespace kiln::test
