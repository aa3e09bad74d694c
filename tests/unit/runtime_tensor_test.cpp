// Tensor and Storage: factories, views and strides, element conversions
// (f16/bf16 rounding, float->int truncation, large int64), equality, random
// factories, printing, and the errors user mistakes must raise.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "kiln/element.h"
#include "kiln/error.h"
#include "kiln/tensor.h"

namespace kiln {
namespace {

using Idx = std::vector<int64_t>;

// Row-major contents through get(), for any rank.
std::vector<double> values(const Tensor& t) {
  Tensor c = t.contiguous();
  Tensor flat = c.view_as_strided({c.numel()}, {1}, c.storage_offset());
  std::vector<double> out;
  for (int64_t i = 0; i < flat.numel(); ++i) out.push_back(flat.get(Idx{i}));
  return out;
}

Tensor make(const Shape& sizes, const std::vector<double>& vals, DType dtype = DType::F32) {
  Tensor t = Tensor::empty(sizes, dtype);
  Tensor flat = t.view_as_strided({t.numel()}, {1}, 0);
  for (size_t i = 0; i < vals.size(); ++i) flat.set(Idx{int64_t(i)}, vals[i]);
  return t;
}

// Runs `fn`, expects a kiln::Error whose message contains `needle`.
template <typename Fn>
void expect_error(Fn&& fn, const std::string& needle) {
  try {
    fn();
    ADD_FAILURE() << "expected kiln::Error containing '" << needle << "'";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos)
        << "message: " << e.what() << "\nexpected to contain: " << needle;
  }
}

// --- Storage ---------------------------------------------------------------------

TEST(Storage, AlignedAndZeroSizeAllowed) {
  for (size_t n : {size_t(0), size_t(1), size_t(63), size_t(64), size_t(1000)}) {
    auto s = Storage::allocate(n);
    EXPECT_EQ(s->nbytes(), n);
    EXPECT_NE(s->data(), nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(s->data()) % 64, 0u) << n;
  }
}

TEST(Storage, AbsurdSizesAreUserErrors) {
  expect_error([] { Storage::allocate(size_t{1} << 60); }, "1152921504606846976 bytes");
  const int64_t big = int64_t{1} << 40;
  expect_error([&] { Tensor::empty({big, big}); }, "(f32) needs 2^82 bytes");
  expect_error([] { Tensor::empty({int64_t{1} << 62}, DType::F64); }, "needs 2^65 bytes");
  expect_error([] { Tensor::empty({2, -1}); }, "negative size in shape [2, -1]");
  expect_error([] { Tensor::empty({2}, DType::F32, Device::cuda()); }, "cuda:0");
}

TEST(Storage, WrapRunsDeleter) {
  int calls = 0;
  std::vector<float> buf(4);
  {
    auto s = Storage::wrap(buf.data(), 16, Device::cpu(), [&](void*) { ++calls; });
    Tensor t(s, DType::F32, {4}, {1});
    EXPECT_EQ(calls, 0);
  }
  EXPECT_EQ(calls, 1);
}

// --- factories -------------------------------------------------------------------

TEST(Tensor, Factories) {
  Tensor z = Tensor::zeros({2, 3}, DType::I32);
  EXPECT_EQ(z.sizes(), (Shape{2, 3}));
  EXPECT_EQ(z.strides(), (Shape{3, 1}));
  EXPECT_EQ(z.dtype(), DType::I32);
  EXPECT_EQ(values(z), std::vector<double>(6, 0.0));
  EXPECT_EQ(values(Tensor::ones({7}, DType::BF16)), std::vector<double>(7, 1.0));
  EXPECT_EQ(values(Tensor::full({2, 2}, -2.5, DType::F64)), std::vector<double>(4, -2.5));
  EXPECT_EQ(values(Tensor::full({3}, 7.9, DType::I8)), std::vector<double>(3, 7.0));

  EXPECT_EQ(values(Tensor::arange(0, 5)), (std::vector<double>{0, 1, 2, 3, 4}));
  EXPECT_EQ(values(Tensor::arange(1, 2, 0.25, DType::F32)),
            (std::vector<double>{1, 1.25, 1.5, 1.75}));
  EXPECT_EQ(values(Tensor::arange(5, 0, -2)), (std::vector<double>{5, 3, 1}));
  EXPECT_EQ(Tensor::arange(0, 1023).numel(), 1023);
  EXPECT_EQ(Tensor::arange(3, 3).numel(), 0);
  expect_error([] { Tensor::arange(0, 5, 0); }, "step must be nonzero");
  expect_error([] { Tensor::arange(0, 5, -1); }, "not reachable");

  Tensor s = Tensor::scalar(3.5);
  EXPECT_EQ(s.dim(), 0);
  EXPECT_EQ(s.numel(), 1);
  EXPECT_EQ(s.item(), 3.5);
  EXPECT_EQ(s.get(Idx{}), 3.5);

  Tensor e = Tensor::empty({0, 5});
  EXPECT_EQ(e.numel(), 0);
  EXPECT_TRUE(e.is_contiguous());
  EXPECT_EQ(Tensor::zeros({0}).clone().numel(), 0);
  EXPECT_NE(e.data_ptr(), nullptr);
}

TEST(Tensor, FromBlobSharesMemory) {
  float buf[6] = {1, 2, 3, 4, 5, 6};
  Tensor t = Tensor::from_blob(buf, {2, 3}, DType::F32);
  EXPECT_EQ(t.strides(), (Shape{3, 1}));
  EXPECT_EQ(t.get(Idx{1, 2}), 6.0);
  t.set(Idx{0, 0}, 10);
  EXPECT_EQ(buf[0], 10.0f);
  // Column view with explicit strides.
  Tensor col = Tensor::from_blob(buf + 1, {2}, DType::F32, {3});
  EXPECT_EQ(values(col), (std::vector<double>{2, 5}));
  expect_error([] { Tensor::from_blob(nullptr, {2}, DType::F32); }, "null data");
}

// --- metadata, views ----------------------------------------------------------------

TEST(Tensor, NegativeDimsAndErrors) {
  Tensor t = Tensor::zeros({2, 3, 4});
  EXPECT_EQ(t.size(-1), 4);
  EXPECT_EQ(t.size(-3), 2);
  EXPECT_EQ(t.stride(-2), 4);
  expect_error([&] { t.size(3); }, "dim 3 out of range for a 3-D tensor");
  expect_error([&] { t.stride(-4); }, "dim -4 out of range");
  expect_error([&] { t.get(Idx{0, 0}); }, "got 2 indices for a 3-D tensor");
  expect_error([&] { t.get(Idx{0, 3, 0}); }, "index 3 out of range for dim 1 of size 3");
  expect_error([&] { t.set(Idx{-3, 0, 0}, 1); }, "index -3 out of range for dim 0");
  t.set(Idx{-1, -1, -1}, 9);
  EXPECT_EQ(t.get(Idx{1, 2, 3}), 9.0);
  expect_error([&] { t.item(); }, "has 24 elements, expected exactly 1");
  expect_error([] { Tensor::zeros({0}).item(); }, "has 0 elements");
  EXPECT_EQ(Tensor::ones({1, 1}).item(), 1.0);
  expect_error([] { Tensor().item(); }, "undefined");
}

TEST(Tensor, TransposedViewAndContiguous) {
  Tensor a = make({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor t = a.view_as_strided({3, 2}, {1, 3}, 0);
  EXPECT_FALSE(t.is_contiguous());
  EXPECT_EQ(t.get(Idx{2, 1}), 6.0);
  EXPECT_EQ(t.get(Idx{0, 1}), 4.0);
  Tensor c = t.contiguous();
  EXPECT_TRUE(c.is_contiguous());
  EXPECT_EQ(c.strides(), (Shape{2, 1}));
  EXPECT_EQ(values(c), (std::vector<double>{1, 4, 2, 5, 3, 6}));
  EXPECT_NE(c.storage(), a.storage());
  // A contiguous tensor is returned as is (shares storage).
  EXPECT_EQ(a.contiguous().storage(), a.storage());
  // Views share storage; clones do not.
  t.set(Idx{0, 0}, 100);
  EXPECT_EQ(a.get(Idx{0, 0}), 100.0);
  Tensor cl = a.clone();
  cl.set(Idx{0, 0}, -1);
  EXPECT_EQ(a.get(Idx{0, 0}), 100.0);
}

TEST(Tensor, ViewsWithOffsetAndBroadcastStrides) {
  Tensor a = Tensor::arange(0, 12, 1, DType::F32);
  Tensor row = a.view_as_strided({4}, {1}, 8);
  EXPECT_EQ(row.storage_offset(), 8);
  EXPECT_EQ(values(row), (std::vector<double>{8, 9, 10, 11}));
  EXPECT_EQ(row.data<float>()[0], 8.0f);
  Tensor bcast = a.view_as_strided({3, 2}, {0, 1}, 5);  // stride 0: a repeated row
  EXPECT_EQ(values(bcast), (std::vector<double>{5, 6, 5, 6, 5, 6}));
  EXPECT_FALSE(bcast.is_contiguous());
  // Size-1 dims may carry any stride and still be contiguous.
  EXPECT_TRUE(a.view_as_strided({1, 4}, {99, 1}, 0).is_contiguous());
  expect_error([&] { a.view_as_strided({4}, {1}, 9); }, "reaches outside its storage of 12");
  expect_error([&] { a.view_as_strided({2, 2}, {1}, 0); }, "different ranks");
  expect_error([&] { a.view_as_strided({2}, {1}, -1); }, "negative storage offset");
}

// --- conversions -------------------------------------------------------------------

TEST(Element, HalfExactCases) {
  EXPECT_EQ(float_to_half(1.0f), 0x3c00);
  EXPECT_EQ(float_to_half(-2.0f), 0xc000);
  EXPECT_EQ(float_to_half(65504.0f), 0x7bff);
  EXPECT_EQ(float_to_half(65519.0f), 0x7bff);
  EXPECT_EQ(float_to_half(65520.0f), 0x7c00);  // tie rounds to even: inf
  EXPECT_EQ(float_to_half(1e10f), 0x7c00);
  EXPECT_EQ(float_to_half(-INFINITY), 0xfc00);
  EXPECT_EQ(float_to_half(-0.0f), 0x8000);
  EXPECT_EQ(float_to_half(std::ldexp(1.0f, -24)), 0x0001);         // smallest subnormal
  EXPECT_EQ(float_to_half(std::ldexp(1.0f, -25)), 0x0000);         // tie to even: 0
  EXPECT_EQ(float_to_half(std::ldexp(1.5f, -25)), 0x0001);         // above the tie
  EXPECT_EQ(float_to_half(std::ldexp(3.0f, -25)), 0x0002);         // tie, 1 is odd: up
  EXPECT_EQ(float_to_half(std::ldexp(1023.0f, -24)), 0x03ff);      // largest subnormal
  EXPECT_EQ(float_to_half(std::ldexp(2047.0f, -25)), 0x0400);      // rounds up to normal
  EXPECT_EQ(float_to_half(1.0f + std::ldexp(1.0f, -11)), 0x3c00);  // tie, even stays
  EXPECT_EQ(float_to_half(1.0f + std::ldexp(3.0f, -11)), 0x3c02);  // tie, odd goes up
  uint16_t nan = float_to_half(std::numeric_limits<float>::quiet_NaN());
  EXPECT_EQ(nan & 0x7c00, 0x7c00);
  EXPECT_NE(nan & 0x03ff, 0);
  EXPECT_EQ(half_to_float(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(half_to_float(0x7bff), 65504.0f);
  EXPECT_EQ(half_to_float(0xfc00), -INFINITY);
  EXPECT_TRUE(std::isnan(half_to_float(0x7e00)));
}

TEST(Element, HalfAndBf16RoundTripEveryPattern) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    auto bits = static_cast<uint16_t>(h);
    float hf = half_to_float(bits);
    if (std::isnan(hf)) {
      EXPECT_TRUE(std::isnan(half_to_float(float_to_half(hf)))) << h;
    } else {
      ASSERT_EQ(float_to_half(hf), bits) << h;
      ASSERT_EQ(double_to_half(double(hf)), bits) << h;
    }
    float bf = bf16_to_float(bits);
    if (std::isnan(bf)) {
      EXPECT_TRUE(std::isnan(bf16_to_float(float_to_bf16(bf)))) << h;
    } else {
      ASSERT_EQ(float_to_bf16(bf), bits) << h;
    }
  }
}

TEST(Element, Bf16ExactCases) {
  EXPECT_EQ(float_to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(float_to_bf16(1.0f + std::ldexp(1.0f, -8)), 0x3f80);  // tie, even stays
  EXPECT_EQ(float_to_bf16(1.0f + std::ldexp(3.0f, -8)), 0x3f82);  // tie, odd goes up
  EXPECT_EQ(float_to_bf16(std::numeric_limits<float>::max()), 0x7f80);
  EXPECT_EQ(float_to_bf16(-INFINITY), 0xff80);
  EXPECT_EQ(float_to_bf16(std::ldexp(1.0f, -133)), 0x0001);  // bf16 subnormal
  uint16_t nan = float_to_bf16(std::numeric_limits<float>::quiet_NaN());
  EXPECT_TRUE(std::isnan(bf16_to_float(nan)));
  // A signalling-NaN pattern whose payload lives only in the low bits must not become inf.
  EXPECT_TRUE(std::isnan(bf16_to_float(float_to_bf16(std::bit_cast<float>(0x7f800001u)))));
}

TEST(Element, NoDoubleRoundingFromDouble) {
  // Just above a half tie, by less than a float ulp: float rounding alone
  // lands on the tie and would round down.
  double d = 1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40);
  EXPECT_EQ(double_to_half(d), 0x3c01);
  EXPECT_EQ(Tensor::full({1}, d, DType::F16).get(Idx{0}), 1.0 + std::ldexp(1.0, -10));
  double b = 1.0 + std::ldexp(1.0, -8) + std::ldexp(1.0, -40);
  EXPECT_EQ(double_to_bf16(b), 0x3f81);
  // int64 -> bf16: 2^24 + 2^16 + 1 is just above a bf16 tie.
  Tensor t = Tensor::empty({1}, DType::BF16);
  t.set_int(Idx{0}, (int64_t{1} << 24) + (int64_t{1} << 16) + 1);
  EXPECT_EQ(t.get(Idx{0}), double((int64_t{1} << 24) + (int64_t{1} << 17)));
}

TEST(Tensor, FloatToIntTruncatesTowardZero) {
  Tensor f = make({6}, {-2.7, -0.5, 0.5, 2.7, 127.9, -128.9}, DType::F64);
  EXPECT_EQ(values(f.to(DType::I32)), (std::vector<double>{-2, 0, 0, 2, 127, -128}));
  EXPECT_EQ(values(f.to(DType::I8)), (std::vector<double>{-2, 0, 0, 2, 127, -128}));
  EXPECT_EQ(values(f.to(DType::Bool)), (std::vector<double>{1, 1, 1, 1, 1, 1}));
  Tensor g = make({3}, {0.0, -0.0, std::nan("")}, DType::F32);
  EXPECT_EQ(values(g.to(DType::Bool)), (std::vector<double>{0, 0, 1}));
  EXPECT_EQ(g.to(DType::I64).get_int(Idx{2}), 0);  // NaN: defined, no UB
  EXPECT_EQ(make({1}, {-3.99}, DType::F16).get_int(Idx{0}), -3);
}

TEST(Tensor, IntConversionsStayExact) {
  const int64_t big = (int64_t{1} << 62) + 1;  // not representable in double
  Tensor t = Tensor::empty({3}, DType::I64);
  t.set_int(Idx{0}, big);
  t.set_int(Idx{1}, std::numeric_limits<int64_t>::min());
  t.set_int(Idx{2}, -7);
  EXPECT_EQ(t.get_int(Idx{0}), big);
  EXPECT_EQ(t.clone().get_int(Idx{0}), big);
  Tensor back = t.to(DType::I32).to(DType::I64);
  EXPECT_EQ(back.get_int(Idx{0}), 1);  // wraps modulo 2^32
  EXPECT_EQ(back.get_int(Idx{2}), -7);
  EXPECT_EQ(t.to(DType::F64).get(Idx{0}), std::ldexp(1.0, 62));
  Tensor i32 = Tensor::full({1}, 16777217, DType::I32);
  EXPECT_EQ(i32.to(DType::F32).get(Idx{0}), 16777216.0);  // round to nearest even
  EXPECT_EQ(i32.to(DType::I64).get_int(Idx{0}), 16777217);
  Tensor u8 = make({3}, {200, 0, 255}, DType::U8);
  EXPECT_EQ(values(u8.to(DType::I8)), (std::vector<double>{-56, 0, -1}));
  Tensor i8 = make({3}, {-1, 0, 2}, DType::I8);
  EXPECT_EQ(values(i8.to(DType::U8)), (std::vector<double>{255, 0, 2}));
  EXPECT_EQ(values(i8.to(DType::Bool)), (std::vector<double>{1, 0, 1}));
  EXPECT_EQ(values(make({2}, {1, 0}, DType::Bool).to(DType::F16)), (std::vector<double>{1, 0}));
}

TEST(Tensor, ToSameDtypeSharesAndConvertsStridedViews) {
  Tensor a = make({2, 2}, {1.5, 2.5, 3.5, 4.5});
  EXPECT_EQ(a.to(DType::F32).storage(), a.storage());
  Tensor t = a.view_as_strided({2, 2}, {1, 2}, 0);
  EXPECT_EQ(values(t.to(DType::I64)), (std::vector<double>{1, 3, 2, 4}));
  EXPECT_EQ(values(t.to(DType::BF16)), (std::vector<double>{1.5, 3.5, 2.5, 4.5}));
}

TEST(Tensor, Equal) {
  double nan = std::nan("");
  Tensor a = make({3}, {1, nan, 0.0});
  Tensor b = make({3}, {1, nan, -0.0});
  EXPECT_TRUE(a.equal(b));
  EXPECT_FALSE(a.equal(make({3}, {1, 2, 0})));
  EXPECT_FALSE(a.equal(a.to(DType::F64)));
  EXPECT_FALSE(a.equal(make({1, 3}, {1, nan, 0})));
  Tensor m = make({2, 2}, {1, 2, 3, 4});
  EXPECT_TRUE(m.view_as_strided({2, 2}, {1, 2}, 0).equal(make({2, 2}, {1, 3, 2, 4})));
  EXPECT_TRUE(Tensor().equal(Tensor()));
  EXPECT_FALSE(Tensor().equal(a));
  EXPECT_TRUE(Tensor::zeros({0, 3}).equal(Tensor::ones({0, 3})));
}

TEST(Shape, Helpers) {
  EXPECT_EQ(contiguous_strides({2, 3, 4}), (Shape{12, 4, 1}));
  EXPECT_EQ(contiguous_strides({}), Shape{});
  EXPECT_EQ(contiguous_strides({2, 0, 3}), (Shape{3, 3, 1}));
  EXPECT_EQ(shape_numel({}), 1);
  EXPECT_EQ(shape_numel({2, 0}), 0);
  EXPECT_EQ(shape_str({2, 3}), "[2, 3]");
  EXPECT_EQ(shape_str({}), "[]");
}

// --- random ------------------------------------------------------------------------

TEST(Random, RandIsReproducibleAndIndexDetermined) {
  Tensor a = Tensor::rand({1023}, 42);
  EXPECT_TRUE(a.equal(Tensor::rand({1023}, 42)));
  EXPECT_FALSE(a.equal(Tensor::rand({1023}, 43)));
  // Element i depends only on (seed, i), not on the shape.
  Tensor small = Tensor::rand({3, 7}, 42);
  for (int64_t i = 0; i < 21; ++i) {
    EXPECT_EQ(small.get(Idx{i / 7, i % 7}), a.get(Idx{i})) << i;
  }
  // Known first values pin the generator (a change would silently alter every
  // seeded test in the project). Computed from an independent Philox4x32-10
  // implementation checked against the Random123 known-answer vectors: element
  // i is the top 24 bits of words 0..1 of philox(counter=(i, 0, 0, 0), key=seed).
  Tensor pinned = Tensor::rand({4}, 0);
  const double kFirst[4] = {6694888, 16311500, 326307, 13209839};
  for (int64_t i = 0; i < 4; ++i) EXPECT_EQ(pinned.get(Idx{i}), std::ldexp(kFirst[i], -24)) << i;
}

TEST(Random, RandMoments) {
  for (DType t : {DType::F16, DType::BF16, DType::F32, DType::F64}) {
    Tensor r = Tensor::rand({100000}, 7, t);
    double sum = 0, sq = 0, lo = 1, hi = 0;
    for (int64_t i = 0; i < r.numel(); ++i) {
      double v = r.get(Idx{i});
      sum += v;
      sq += v * v;
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
    double mean = sum / 1e5, var = sq / 1e5 - mean * mean;
    EXPECT_NEAR(mean, 0.5, 0.01) << dtype_name(t);
    EXPECT_NEAR(var, 1.0 / 12, 0.005) << dtype_name(t);
    EXPECT_GE(lo, 0.0);
    EXPECT_LT(hi, 1.0) << dtype_name(t);  // never rounds up to 1
  }
  expect_error([] { Tensor::rand({2}, 0, DType::I32); }, "rand: dtype i32 is not a floating");
}

TEST(Random, RandnMoments) {
  Tensor r = Tensor::randn({200000}, 123);
  EXPECT_TRUE(r.equal(Tensor::randn({200000}, 123)));
  double sum = 0, sq = 0, q4 = 0;
  for (int64_t i = 0; i < r.numel(); ++i) {
    double v = r.get(Idx{i});
    ASSERT_TRUE(std::isfinite(v));
    sum += v;
    sq += v * v;
    q4 += v * v * v * v;
  }
  double n = 200000, mean = sum / n, var = sq / n - mean * mean;
  EXPECT_NEAR(mean, 0.0, 0.01);
  EXPECT_NEAR(var, 1.0, 0.02);
  EXPECT_NEAR(q4 / n, 3.0, 0.1);  // normal kurtosis
  EXPECT_EQ(Tensor::randn({0, 4}, 1).numel(), 0);
  // Lower precisions are the f64 stream rounded once.
  Tensor h = Tensor::randn({5}, 9, DType::F16), d = Tensor::randn({5}, 9, DType::F64);
  for (int64_t i = 0; i < 5; ++i) {
    EXPECT_EQ(h.get(Idx{i}), double(half_to_float(double_to_half(d.get(Idx{i}))))) << i;
  }
}

// --- printing ----------------------------------------------------------------------

TEST(Print, TorchStyle) {
  EXPECT_EQ(make({2, 2}, {1, 2, 3, 4}).to_string(),
            "tensor([[1., 2.],\n        [3., 4.]], dtype=f32)");
  EXPECT_EQ(make({2}, {1.5, 2.25}).to_string(), "tensor([1.5000, 2.2500], dtype=f32)");
  EXPECT_EQ(make({3}, {-0.5, 10, 2}, DType::F64).to_string(),
            "tensor([-0.5000, 10.0000,  2.0000], dtype=f64)");
  EXPECT_EQ(Tensor::scalar(2.5).to_string(), "tensor(2.5000, dtype=f32)");
  EXPECT_EQ(Tensor::scalar(3, DType::I64).to_string(), "tensor(3, dtype=i64)");
  EXPECT_EQ(Tensor::zeros({0, 5}).to_string(), "tensor([], size=(0, 5), dtype=f32)");
  EXPECT_EQ(Tensor::zeros({0}, DType::I32).to_string(), "tensor([], dtype=i32)");
  EXPECT_EQ(make({2}, {1, 0}, DType::Bool).to_string(), "tensor([ True, False], dtype=bool)");
  EXPECT_EQ(make({3}, {1, -20, 300}, DType::I64).to_string(), "tensor([  1, -20, 300], dtype=i64)");
  EXPECT_EQ(make({2}, {1e-5, 1}).to_string(), "tensor([1.0000e-05, 1.0000e+00], dtype=f32)");
  EXPECT_EQ(make({2}, {std::nan(""), 1.5}).to_string(), "tensor([   nan, 1.5000], dtype=f32)");
  EXPECT_EQ(make({3}, {-INFINITY, 1, 0}).to_string(), "tensor([-inf,   1.,   0.], dtype=f32)");
  Tensor cube = Tensor::arange(0, 8).view_as_strided({2, 2, 2}, {4, 2, 1}, 0);
  EXPECT_EQ(cube.to_string(),
            "tensor([[[0, 1],\n         [2, 3]],\n\n        [[4, 5],\n         [6, 7]]], "
            "dtype=i64)");
  EXPECT_EQ(Tensor().to_string(), "tensor(undefined)");
}

TEST(Print, WrapsLongRowsAt80Columns) {
  // Width 7 + ", " = 9 columns per element; (80 - 7) / 9 = 8 per line, as torch.
  Tensor t = Tensor::arange(-3.5, -0.75, 0.25, DType::F32);
  EXPECT_EQ(t.to_string(),
            "tensor([-3.5000, -3.2500, -3.0000, -2.7500, -2.5000, -2.2500, -2.0000, -1.7500,\n"
            "        -1.5000, -1.2500, -1.0000], dtype=f32)");
  std::string big = Tensor::arange(0, 1000).view_as_strided({2, 500}, {500, 1}, 0).to_string(2000);
  size_t start = 0;
  while (start < big.size()) {
    size_t end = big.find('\n', start);
    if (end == std::string::npos) end = big.size();
    // The last line also carries the ", dtype=..." suffix, which torch does not count.
    if (big.find("dtype", start) > end) {
      EXPECT_LE(end - start, 80u) << big.substr(start, end - start);
    }
    start = end + 1;
  }
}

TEST(Print, ElidesLargeTensors) {
  EXPECT_EQ(Tensor::arange(0, 100).to_string(),
            "tensor([ 0,  1,  2,  ..., 97, 98, 99], dtype=i64)");
  std::string full = Tensor::arange(0, 100).to_string(100);
  EXPECT_NE(full.find("[ 0,  1,  2,  3,"), std::string::npos) << full;
  EXPECT_NE(full.find("49, 50,"), std::string::npos) << full;
  EXPECT_EQ(full.find("..."), std::string::npos) << full;
  Tensor m = Tensor::arange(0, 100).view_as_strided({10, 10}, {10, 1}, 0);
  EXPECT_EQ(m.to_string(),
            "tensor([[ 0,  1,  2,  ...,  7,  8,  9],\n"
            "        [10, 11, 12,  ..., 17, 18, 19],\n"
            "        [20, 21, 22,  ..., 27, 28, 29],\n"
            "        ...,\n"
            "        [70, 71, 72,  ..., 77, 78, 79],\n"
            "        [80, 81, 82,  ..., 87, 88, 89],\n"
            "        [90, 91, 92,  ..., 97, 98, 99]], dtype=i64)");
}

}  // namespace
}  // namespace kiln
