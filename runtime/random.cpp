// Tensor::rand and Tensor::randn: counter-based random numbers.
//
// Element i of a tensor is Philox4x32-10 applied to counter (i, 0) under the
// key `seed`, so its value depends only on (seed, i): never on thread count,
// chunking or the order elements are produced in. rand takes as many top bits
// of the output as the dtype's mantissa holds, so the result is exactly
// representable and strictly below 1. randn is Box-Muller over two 53-bit
// uniforms made from the same four output words.
#include <cmath>
#include <numbers>

#include "kiln/element.h"
#include "kiln/error.h"
#include "kiln/tensor.h"

namespace kiln {
namespace {

struct Philox4x32 {
  uint32_t w[4];
};

// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3").
Philox4x32 philox(uint64_t counter, uint64_t seed) {
  constexpr uint32_t kMul0 = 0xD2511F53u, kMul1 = 0xCD9E8D57u;
  constexpr uint32_t kWeyl0 = 0x9E3779B9u, kWeyl1 = 0xBB67AE85u;
  uint32_t c0 = static_cast<uint32_t>(counter), c1 = static_cast<uint32_t>(counter >> 32);
  uint32_t c2 = 0, c3 = 0;
  uint32_t k0 = static_cast<uint32_t>(seed), k1 = static_cast<uint32_t>(seed >> 32);
  for (int round = 0; round < 10; ++round) {
    uint64_t p0 = uint64_t{kMul0} * c0, p1 = uint64_t{kMul1} * c2;
    auto hi0 = static_cast<uint32_t>(p0 >> 32), lo0 = static_cast<uint32_t>(p0);
    auto hi1 = static_cast<uint32_t>(p1 >> 32), lo1 = static_cast<uint32_t>(p1);
    c0 = hi1 ^ c1 ^ k0;
    c1 = lo1;
    c2 = hi0 ^ c3 ^ k1;
    c3 = lo0;
    k0 += kWeyl0;
    k1 += kWeyl1;
  }
  return {{c0, c1, c2, c3}};
}

// Uniform in [0, 1) with `bits` random bits (bits <= 53), exact in any float
// type whose mantissa holds `bits` bits.
double uniform_bits(uint32_t hi, uint32_t lo, int bits) {
  uint64_t x = (uint64_t{hi} << 32 | lo) >> (64 - bits);
  return std::ldexp(static_cast<double>(x), -bits);
}

int mantissa_bits(DType t) {
  switch (t) {
    case DType::F16:
      return 11;
    case DType::BF16:
      return 8;
    case DType::F32:
      return 24;
    default:
      return 53;
  }
}

template <typename Fn>
Tensor fill_random(const Shape& sizes, DType dtype, const char* op, Fn&& value_at) {
  KILN_USER_CHECK(is_floating(dtype), op << ": dtype " << dtype_name(dtype)
                                         << " is not a floating type (use f16, bf16, f32 or f64)");
  Tensor t = Tensor::empty(sizes, dtype);
  auto* p = static_cast<char*>(t.data_ptr());
  const int64_t n = t.numel(), es = static_cast<int64_t>(t.element_size());
  for (int64_t i = 0; i < n; ++i) store_double(dtype, p + i * es, value_at(uint64_t(i)));
  return t;
}

}  // namespace

Tensor Tensor::rand(const Shape& sizes, uint64_t seed, DType dtype) {
  const int bits = mantissa_bits(dtype);
  return fill_random(sizes, dtype, "rand", [&](uint64_t i) {
    Philox4x32 r = philox(i, seed);
    return uniform_bits(r.w[0], r.w[1], bits);
  });
}

Tensor Tensor::randn(const Shape& sizes, uint64_t seed, DType dtype) {
  return fill_random(sizes, dtype, "randn", [&](uint64_t i) {
    Philox4x32 r = philox(i, seed);
    // u1 in (0, 1] keeps log() finite; u2 in [0, 1).
    double u1 = 1.0 - uniform_bits(r.w[0], r.w[1], 53);
    double u2 = uniform_bits(r.w[2], r.w[3], 53);
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
  });
}

}  // namespace kiln
