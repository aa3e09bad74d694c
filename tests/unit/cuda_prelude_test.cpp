// Kiln's CUDA prelude (codegen/cuda/kiln_prelude.cuh) compiled as host C++:
// every function the emitter calls has the loop evaluator's semantics
// (ir/loop/loop_eval.h), checked value by value against the evaluator and
// against kiln's own conversions (kiln/element.h): f16/bf16 rounding (every
// f16 pattern, float edge cases, single rounding from double and int64),
// saturating float -> int casts, floor division and modulo of every integer
// type with 0 and -1 divisors, wrapping arithmetic, NaN-propagating min/max
// with signed zeros, floor float modulo, argument slots, and vector access.
// (On the device f32 -> f16 is the cvt instruction instead; the GPU check
// covers it.)
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "codegen/cuda/kiln_prelude.cuh"
#include "codegen/cuda/prelude.h"
#include "ir/loop/loop_eval.h"
#include "kiln/element.h"

namespace kiln::test {
namespace {

using loop::Expr;

Expr imm(DType t, double v) {
  return loop::make_const({t, 1}, v);
}
Expr int_imm(DType t, int64_t v) {
  return loop::IntImm::make({t, 1}, v);
}
// A floating expression's value as loop_eval computes it (stored to a buffer).
double eval_float(const Expr& e) {
  loop::Buf out = loop::make_buf("out", e.type().dtype);
  Tensor t = Tensor::zeros({1}, e.type().dtype);
  loop::eval_stmt(loop::Store::make(out, loop::make_int(0), e), {{out, t}});
  return t.get(std::vector<int64_t>{0});
}

bool same_float(double a, double b) {
  return (std::isnan(a) && std::isnan(b)) || (a == b && std::signbit(a) == std::signbit(b));
}

// Floats that stress rounding: specials, boundaries of f16/bf16, halfway
// points, subnormals, and random bit patterns.
std::vector<float> edge_floats() {
  std::vector<float> v = {0.0f,
                          -0.0f,
                          1.0f,
                          -1.0f,
                          65504.0f,
                          65519.99f,
                          65520.0f,
                          -65520.0f,
                          65536.0f,
                          6.1e-5f,
                          5.96e-8f,
                          2.98e-8f,
                          2.99e-8f,
                          1e-10f,
                          3.4e38f,
                          -3.4e38f,
                          1.0009765625f,
                          std::numeric_limits<float>::infinity(),
                          -std::numeric_limits<float>::infinity(),
                          std::numeric_limits<float>::quiet_NaN(),
                          std::numeric_limits<float>::denorm_min(),
                          std::numeric_limits<float>::max(),
                          std::numeric_limits<float>::min()};
  std::mt19937 rng(7);
  for (int i = 0; i < 20000; ++i) v.push_back(std::bit_cast<float>(uint32_t(rng())));
  // Exactly halfway between neighbouring halves and bfloat16s (ties to even).
  for (uint32_t h = 0x3c00; h < 0x3c40; ++h) {
    v.push_back(std::bit_cast<float>(std::bit_cast<uint32_t>(half_to_float(uint16_t(h))) + 0x1000));
  }
  for (uint32_t b = 0x3f80; b < 0x3fc0; ++b) v.push_back(std::bit_cast<float>((b << 16) | 0x8000));
  return v;
}

TEST(CudaPrelude, HalfToFloatMatchesKilnForEveryPattern) {
  for (uint32_t h = 0; h < 65536; ++h) {
    kiln_f16 x{uint16_t(h)};
    ASSERT_TRUE(same_float(kiln_f16_to_f32(x), half_to_float(uint16_t(h)))) << std::hex << h;
    kiln_bf16 y{uint16_t(h)};
    ASSERT_TRUE(same_float(kiln_bf16_to_f32(y), bf16_to_float(uint16_t(h)))) << std::hex << h;
  }
}

TEST(CudaPrelude, FloatToHalfRoundsToNearestEvenLikeKiln) {
  for (float f : edge_floats()) {
    ASSERT_EQ(kiln_f32_to_f16(f).bits, float_to_half(f)) << f;
    ASSERT_EQ(kiln_f32_to_bf16(f).bits, float_to_bf16(f)) << f;
    // What f16 / bf16 registers hold: loop_eval's value of a cast.
    ASSERT_TRUE(same_float(kiln_round_f16(f),
                           eval_float(loop::Cast::make({DType::F16, 1}, imm(DType::F32, f)))))
        << f;
    ASSERT_TRUE(same_float(kiln_round_bf16(f),
                           eval_float(loop::Cast::make({DType::BF16, 1}, imm(DType::F32, f)))))
        << f;
  }
}

TEST(CudaPrelude, DoubleAndInt64RoundOnceToHalf) {
  std::mt19937_64 rng(11);
  std::vector<double> ds = {1.0 + 1.0 / 2048 + 1e-12,  // just above a half tie: rounds up
                            1.0 + 1.0 / 2048,          // the tie itself: to even (down)
                            65519.999999999,
                            65520.0,
                            1e300,
                            -1e300,
                            1e-300,
                            std::numeric_limits<double>::infinity(),
                            std::numeric_limits<double>::quiet_NaN()};
  for (int i = 0; i < 10000; ++i) {
    ds.push_back(std::bit_cast<double>(rng()));                               // any magnitude
    ds.push_back(std::ldexp(double(int64_t(rng())), int(rng() % 80) - 100));  // around 1
  }
  for (double d : ds) {
    ASSERT_TRUE(same_float(kiln_round_f16_f64(d), half_to_float(double_to_half(d)))) << d;
    ASSERT_TRUE(same_float(kiln_round_bf16_f64(d), bf16_to_float(double_to_bf16(d)))) << d;
  }
  std::vector<int64_t> is = {0,
                             1,
                             -1,
                             2049,
                             65519,
                             65520,
                             (int64_t(1) << 30) + (1 << 22) + 1,
                             std::numeric_limits<int64_t>::min(),
                             std::numeric_limits<int64_t>::max()};
  for (int i = 0; i < 20000; ++i) is.push_back(int64_t(rng()) >> (rng() % 64));
  for (int64_t v : is) {
    for (DType t : {DType::F16, DType::BF16}) {
      double want = eval_float(loop::Cast::make({t, 1}, int_imm(DType::I64, v)));
      double got = t == DType::F16 ? kiln_round_f16_i64(v) : kiln_round_bf16_i64(v);
      ASSERT_TRUE(same_float(got, want)) << v << " to " << dtype_name(t);
    }
  }
}

TEST(CudaPrelude, FloatToIntSaturatesLikeTheEvaluator) {
  const double big = 9.3e18, nan = std::numeric_limits<double>::quiet_NaN();
  for (double d : {0.0, -0.5, 2.9, -2.9, 1e10, -1e10, big, -big, nan, 9.2233720368547758e18,
                   -9.2233720368547758e18, std::numeric_limits<double>::infinity()}) {
    int64_t want = loop::eval_int(loop::Cast::make(loop::i64_t(), imm(DType::F64, d)), {});
    EXPECT_EQ(kiln_f64_to_i64_sat(d), want) << d;
    int64_t want32 = loop::eval_int(loop::Cast::make(loop::i64_t(), imm(DType::F32, d)), {});
    EXPECT_EQ(kiln_f32_to_i64_sat(float(d)), want32) << d;
    // Narrower ints wrap the saturated value, as the emitter's cast does.
    int64_t want_i32 = loop::eval_int(loop::Cast::make({DType::I32, 1}, imm(DType::F64, d)), {});
    EXPECT_EQ(kiln_i32(kiln_f64_to_i64_sat(d)), want_i32) << d;
  }
}

template <typename T>
void check_int_ops(DType t, std::vector<int64_t> values) {
  for (int64_t a : values) {
    for (int64_t b : values) {
      auto want = [&](loop::BinOp op) {
        return loop::eval_int(loop::Binary::make(op, int_imm(t, a), int_imm(t, b)), {});
      };
      const T x = T(a), y = T(b);
      ASSERT_EQ(int64_t(kiln_div(x, y)), want(loop::BinOp::Div)) << a << " / " << b;
      ASSERT_EQ(int64_t(kiln_mod(x, y)), want(loop::BinOp::Mod)) << a << " % " << b;
      ASSERT_EQ(int64_t(kiln_min(x, y)), want(loop::BinOp::Min)) << a << " min " << b;
      ASSERT_EQ(int64_t(kiln_max(x, y)), want(loop::BinOp::Max)) << a << " max " << b;
    }
    ASSERT_EQ(int64_t(kiln_abs(T(a))),
              loop::eval_int(loop::Call::make({t, 1}, "abs", {int_imm(t, a)}), {}))
        << "abs " << a;
  }
}

TEST(CudaPrelude, IntegerDivisionFloorsWithoutTrappingForEveryType) {
  const std::vector<int64_t> common = {0, 1, -1, 2, -2, 3, -3, 7, -7, 100, -100};
  auto with = [&](std::vector<int64_t> extra) {
    extra.insert(extra.end(), common.begin(), common.end());
    return extra;
  };
  check_int_ops<kiln_i8>(DType::I8, with({127, -128}));
  check_int_ops<kiln_i16>(DType::I16, with({32767, -32768}));
  check_int_ops<kiln_i32>(DType::I32, with({2147483647, -2147483648LL}));
  check_int_ops<kiln_i64>(
      DType::I64, with({std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::min()}));
  check_int_ops<kiln_u8>(DType::U8, {0, 1, 2, 3, 7, 100, 200, 255});
}

TEST(CudaPrelude, WrappingArithmeticWraps) {
  const int64_t i64max = std::numeric_limits<int64_t>::max();
  EXPECT_EQ(kiln_add_wrap(kiln_i64(i64max), kiln_i64(1)), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(kiln_mul_wrap(kiln_i64(i64max), kiln_i64(2)), -2);
  EXPECT_EQ(kiln_sub_wrap(kiln_i64(std::numeric_limits<int64_t>::min()), kiln_i64(1)), i64max);
  EXPECT_EQ(kiln_add_wrap(kiln_i32(2147483647), kiln_i32(1)), -2147483647 - 1);
  EXPECT_EQ(kiln_mul_wrap(kiln_i32(65536), kiln_i32(65536)), 0);
  EXPECT_EQ(kiln_mul_wrap(kiln_i32(-3), kiln_i32(5)), -15);
  EXPECT_EQ(loop::eval_int(loop::Binary::make(loop::BinOp::Mul, int_imm(DType::I32, 65536),
                                              int_imm(DType::I32, 65536)),
                           {}),
            0);
}

TEST(CudaPrelude, FloatMinMaxModMatchTheEvaluator) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const std::vector<double> values = {0.0,
                                      -0.0,
                                      1.5,
                                      -1.5,
                                      2.0,
                                      -7.0,
                                      1e30,
                                      nan,
                                      std::numeric_limits<double>::infinity(),
                                      -std::numeric_limits<double>::infinity()};
  for (double a : values) {
    for (double b : values) {
      for (DType t : {DType::F32, DType::F64}) {
        auto want = [&](loop::BinOp op) {
          return eval_float(loop::Binary::make(op, imm(t, a), imm(t, b)));
        };
        double mn = t == DType::F32 ? double(kiln_min(float(a), float(b))) : kiln_min(a, b);
        double mx = t == DType::F32 ? double(kiln_max(float(a), float(b))) : kiln_max(a, b);
        double md = t == DType::F32 ? double(kiln_mod(float(a), float(b))) : kiln_mod(a, b);
        EXPECT_TRUE(same_float(mn, want(loop::BinOp::Min))) << a << " min " << b;
        EXPECT_TRUE(same_float(mx, want(loop::BinOp::Max))) << a << " max " << b;
        EXPECT_TRUE(same_float(md, want(loop::BinOp::Mod))) << a << " mod " << b;
      }
    }
  }
  EXPECT_TRUE(std::signbit(kiln_min(0.0f, -0.0f)));
  EXPECT_FALSE(std::signbit(kiln_max(-0.0f, 0.0f)));
}

TEST(CudaPrelude, IntrinsicsFollowTheEvaluatorsFormulas) {
  for (double x : {0.25, 1.0, 2.0, 3.5, -2.5, 0.5, 1.5, 2.5, -0.5, 100.0}) {
    auto want = [&](const char* f) {
      return eval_float(loop::Call::make({DType::F32, 1}, f, {imm(DType::F32, x)}));
    };
    const float f = float(x);
    if (x > 0) {
      EXPECT_TRUE(same_float(kiln_rsqrt(f), want("rsqrt"))) << x;
      EXPECT_TRUE(same_float(kiln_sqrt(f), want("sqrt"))) << x;
    }
    EXPECT_TRUE(same_float(kiln_sigmoid(f), want("sigmoid"))) << x;
    EXPECT_TRUE(same_float(kiln_round(f), want("round"))) << x;  // half to even
    EXPECT_TRUE(same_float(kiln_floor(f), want("floor"))) << x;
    EXPECT_TRUE(same_float(kiln_trunc(f), want("trunc"))) << x;
    EXPECT_TRUE(same_float(kiln_abs(f), want("abs"))) << x;
  }
  EXPECT_TRUE(kiln_isnan(std::numeric_limits<float>::quiet_NaN()));
  EXPECT_FALSE(kiln_isnan(INFINITY));
}

TEST(CudaPrelude, ScalarSlotsDecodeTheCallingConvention) {
  EXPECT_EQ(kiln_slot_f32(loop::pack_scalar(DType::F32, 1.5)), 1.5f);
  EXPECT_EQ(kiln_slot_f64(loop::pack_scalar(DType::F64, -0.1)), -0.1);
  EXPECT_EQ(kiln_slot_f16(loop::pack_scalar(DType::F16, 0.333)),
            half_to_float(float_to_half(0.333f)));
  EXPECT_EQ(kiln_slot_bf16(loop::pack_scalar(DType::BF16, 3.0)), 3.0f);
}

TEST(CudaPrelude, VectorAccessMovesEveryLaneAlignedOrNot) {
  alignas(16) float buf[12] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
  kiln_vec<float, 4> a = kiln_vload<float, 4>(buf + 4);  // aligned
  kiln_vec<float, 4> b = kiln_vload<float, 4>(buf + 1);  // not
  for (int k = 0; k < 4; ++k) {
    EXPECT_EQ(a.v[k], 4 + k);
    EXPECT_EQ(b.v[k], 1 + k);
  }
  kiln_vstore<float, 4>(buf + 7, a);
  EXPECT_EQ(buf[6], 6);
  EXPECT_EQ(buf[7], 4);
  EXPECT_EQ(buf[10], 7);
  EXPECT_EQ(buf[11], 11);
  EXPECT_EQ(alignof(kiln_vec<float, 4>), 16u);
  EXPECT_EQ(alignof(kiln_vec<kiln_f16, 8>), 16u);
  EXPECT_EQ(alignof(kiln_vec<double, 2>), 16u);
  EXPECT_EQ(alignof(kiln_vec<float, 3>), 4u);
}

TEST(CudaPrelude, TheEmbeddedTextIsThisFile) {
  const std::string& text = codegen::cuda::prelude_text();
  EXPECT_NE(text.find("KILN_FN float kiln_round_f16(float f)"), std::string::npos);
  EXPECT_NE(text.find("#define KILN_SHARED(T, name, n)"), std::string::npos);
  // Every listed name appears in the prelude (CUDA's own names aside).
  for (const std::string& name : codegen::cuda::prelude_names()) {
    if (name.rfind("kiln_", 0) != 0 && name.rfind("KILN_", 0) != 0) continue;
    EXPECT_NE(text.find(name), std::string::npos) << name;
  }
}

}  // namespace
}  // namespace kiln::test
