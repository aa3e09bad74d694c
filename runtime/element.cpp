// Scalar element conversions: f16/bf16 bit patterns and the load/store helpers
// that read and write one element of any DType through double or int64.
//
// Assumes IEEE-754 float/double. Rounding to f16/bf16 is done on bit patterns
// (round to nearest, ties to even) so it never depends on the FPU rounding mode.
// Conversions from double and int64 first round to float *to odd*, which makes
// the second rounding to f16/bf16 exact-once (no double-rounding errors).
// Float -> int conversions never invoke undefined behaviour: NaN becomes 0 and
// out-of-range values saturate to the int64 range before wrapping narrower.
#include "kiln/element.h"

#include <bit>
#include <cmath>
#include <limits>

#include "kiln/error.h"

namespace kiln {
namespace {

uint32_t float_bits(float f) {
  return std::bit_cast<uint32_t>(f);
}
float bits_float(uint32_t u) {
  return std::bit_cast<float>(u);
}

// Rounds `d` to float by truncation and sets the last mantissa bit when the
// result is inexact ("round to odd"). A later round-to-nearest to a format with
// at least two fewer mantissa bits then equals a direct rounding of `d`.
float double_to_float_odd(double d) {
  if (std::isnan(d)) return std::numeric_limits<float>::quiet_NaN();
  constexpr double kMax = std::numeric_limits<float>::max();
  if (std::isinf(d)) return static_cast<float>(d);
  if (d > kMax) return std::numeric_limits<float>::max();  // odd bit pattern already
  if (d < -kMax) return -std::numeric_limits<float>::max();
  float f = static_cast<float>(d);
  if (static_cast<double>(f) == d) return f;
  if (std::fabs(static_cast<double>(f)) > std::fabs(d)) f = std::nextafter(f, 0.0f);
  return bits_float(float_bits(f) | 1u);
}

// Same idea for int64: keep the top 24 significant bits, OR the rest into the
// lowest kept bit, and scale back (exact in float).
float int_to_float_odd(int64_t v) {
  uint64_t mag = v < 0 ? 0 - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
  float r;
  if (mag < (uint64_t{1} << 24)) {
    r = static_cast<float>(mag);
  } else {
    int shift = 64 - std::countl_zero(mag) - 24;
    uint64_t kept = mag >> shift;
    if (mag & ((uint64_t{1} << shift) - 1)) kept |= 1;
    r = std::ldexp(static_cast<float>(kept), shift);
  }
  return v < 0 ? -r : r;
}

// Double -> int64 as a C cast truncates, but defined for every input.
int64_t double_to_int64(double v) {
  if (std::isnan(v)) return 0;
  if (v >= 9223372036854775808.0) return std::numeric_limits<int64_t>::max();
  if (v < -9223372036854775808.0) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(v);  // truncates toward zero
}

template <typename T>
T load(const void* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

template <typename T>
void store(void* p, T v) {
  std::memcpy(p, &v, sizeof(T));
}

}  // namespace

float half_to_float(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  if (exp == 0) {
    if (mant == 0) return bits_float(sign);
    // Subnormal half: normalise into a float exponent.
    uint32_t e = 113;  // 127 - 14
    while (!(mant & 0x400u)) {
      mant <<= 1;
      --e;
    }
    return bits_float(sign | (e << 23) | ((mant & 0x3ffu) << 13));
  }
  if (exp == 31) return bits_float(sign | 0x7f800000u | (mant << 13));
  return bits_float(sign | ((exp + 112) << 23) | (mant << 13));
}

uint16_t float_to_half(float f) {
  uint32_t x = float_bits(f);
  auto sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  uint32_t ax = x & 0x7fffffffu;
  if (ax > 0x7f800000u) {  // NaN: keep it a (quiet) NaN
    return static_cast<uint16_t>(sign | 0x7e00u | ((ax >> 13) & 0x3ffu));
  }
  // 65520 is halfway between 65504 (max half, odd mantissa) and 2^16: ties go to inf.
  if (ax >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);
  if (ax < 0x38800000u) {  // below 2^-14: half subnormal or zero
    uint32_t exp = ax >> 23;
    if (exp < 102) return sign;  // below 2^-25 rounds to zero
    uint32_t mant = (ax & 0x7fffffu) | 0x800000u;
    uint32_t shift = 126 - exp;  // 14..24
    uint32_t result = mant >> shift;
    uint32_t rem = mant & ((1u << shift) - 1);
    uint32_t halfway = 1u << (shift - 1);
    if (rem > halfway || (rem == halfway && (result & 1u))) ++result;
    return static_cast<uint16_t>(sign | result);
  }
  // Normal: rebias exponent (127 -> 15) and round the 13 dropped bits to even.
  uint32_t odd = (ax >> 13) & 1u;
  ax += 0xC8000000u + 0xfffu + odd;  // 0xC8000000 == -(112 << 23) mod 2^32
  return static_cast<uint16_t>(sign | (ax >> 13));
}

float bf16_to_float(uint16_t h) {
  return bits_float(static_cast<uint32_t>(h) << 16);
}

uint16_t float_to_bf16(float f) {
  uint32_t x = float_bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);
  x += 0x7fffu + ((x >> 16) & 1u);  // ties to even; carries into exponent (to inf) correctly
  return static_cast<uint16_t>(x >> 16);
}

uint16_t double_to_half(double d) {
  return float_to_half(double_to_float_odd(d));
}
uint16_t double_to_bf16(double d) {
  return float_to_bf16(double_to_float_odd(d));
}

double load_as_double(DType t, const void* p) {
  switch (t) {
    case DType::Bool:
      return load<uint8_t>(p) != 0 ? 1.0 : 0.0;
    case DType::I8:
      return load<int8_t>(p);
    case DType::U8:
      return load<uint8_t>(p);
    case DType::I16:
      return load<int16_t>(p);
    case DType::I32:
      return load<int32_t>(p);
    case DType::I64:
      return static_cast<double>(load<int64_t>(p));
    case DType::F16:
      return half_to_float(load<uint16_t>(p));
    case DType::BF16:
      return bf16_to_float(load<uint16_t>(p));
    case DType::F32:
      return load<float>(p);
    case DType::F64:
      return load<double>(p);
  }
  KILN_INTERNAL_CHECK(false, "load_as_double: bad dtype " << int(t));
}

int64_t load_as_int(DType t, const void* p) {
  switch (t) {
    case DType::Bool:
      return load<uint8_t>(p) != 0 ? 1 : 0;
    case DType::I8:
      return load<int8_t>(p);
    case DType::U8:
      return load<uint8_t>(p);
    case DType::I16:
      return load<int16_t>(p);
    case DType::I32:
      return load<int32_t>(p);
    case DType::I64:
      return load<int64_t>(p);
    case DType::F16:
    case DType::BF16:
    case DType::F32:
    case DType::F64:
      return double_to_int64(load_as_double(t, p));
  }
  KILN_INTERNAL_CHECK(false, "load_as_int: bad dtype " << int(t));
}

void store_double(DType t, void* p, double v) {
  switch (t) {
    case DType::Bool:
      store<uint8_t>(p, v != 0 ? 1 : 0);
      return;  // NaN != 0 -> true
    case DType::I8:
    case DType::U8:
    case DType::I16:
    case DType::I32:
    case DType::I64:
      store_int(t, p, double_to_int64(v));
      return;
    case DType::F16:
      store<uint16_t>(p, double_to_half(v));
      return;
    case DType::BF16:
      store<uint16_t>(p, double_to_bf16(v));
      return;
    case DType::F32:
      store<float>(p, static_cast<float>(v));
      return;
    case DType::F64:
      store<double>(p, v);
      return;
  }
  KILN_INTERNAL_CHECK(false, "store_double: bad dtype " << int(t));
}

void store_int(DType t, void* p, int64_t v) {
  // Narrowing int conversions wrap modulo 2^N (defined since C++20).
  switch (t) {
    case DType::Bool:
      store<uint8_t>(p, v != 0 ? 1 : 0);
      return;
    case DType::I8:
      store<int8_t>(p, static_cast<int8_t>(v));
      return;
    case DType::U8:
      store<uint8_t>(p, static_cast<uint8_t>(v));
      return;
    case DType::I16:
      store<int16_t>(p, static_cast<int16_t>(v));
      return;
    case DType::I32:
      store<int32_t>(p, static_cast<int32_t>(v));
      return;
    case DType::I64:
      store<int64_t>(p, v);
      return;
    case DType::F16:
      store<uint16_t>(p, float_to_half(int_to_float_odd(v)));
      return;
    case DType::BF16:
      store<uint16_t>(p, float_to_bf16(int_to_float_odd(v)));
      return;
    case DType::F32:
      store<float>(p, static_cast<float>(v));
      return;
    case DType::F64:
      store<double>(p, static_cast<double>(v));
      return;
  }
  KILN_INTERNAL_CHECK(false, "store_int: bad dtype " << int(t));
}

}  // namespace kiln
