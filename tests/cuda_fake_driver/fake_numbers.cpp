// Element loads and stores of the fake libraries (fake_state.h): f32, f64,
// and f16/bf16 bit patterns converted with one rounding to nearest even.
#include <cmath>
#include <cstring>

#include "tests/cuda_fake_driver/fake_state.h"

namespace kiln_fake {
namespace {

float f16_to_f32(uint16_t h) {
  const uint32_t sign = uint32_t(h >> 15) << 31;
  const int exp = (h >> 10) & 0x1f;
  const uint32_t man = h & 0x3ff;
  float f;
  if (exp == 0) {
    f = std::ldexp(float(man), -24);
  } else if (exp == 31) {
    f = man ? NAN : INFINITY;
  } else {
    f = std::ldexp(float(man | 0x400), exp - 25);
  }
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  bits |= sign;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t f32_to_f16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  const uint16_t sign = uint16_t((bits >> 16) & 0x8000);
  const float a = std::fabs(f);
  if (std::isnan(f)) return uint16_t(sign | 0x7e00);
  if (a >= 65520.0f) return uint16_t(sign | 0x7c00);
  if (a < std::ldexp(1.0f, -14)) {  // subnormal: units of 2^-24
    return uint16_t(sign | uint16_t(std::nearbyint(std::ldexp(a, 24))));
  }
  int e = 0;
  std::frexp(a, &e);  // a = m * 2^e, m in [0.5, 1)
  const float scaled = std::nearbyint(std::ldexp(a, 11 - e));  // 11 significant bits
  uint32_t man = uint32_t(scaled);
  int exp = e - 1 + 15;
  if (man >= 2048) man >>= 1, ++exp;
  if (exp >= 31) return uint16_t(sign | 0x7c00);
  return uint16_t(sign | uint16_t(exp << 10) | uint16_t(man & 0x3ff));
}

float bf16_to_f32(uint16_t b) {
  const uint32_t bits = uint32_t(b) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t f32_to_bf16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  if (std::isnan(f)) return uint16_t((bits >> 16) | 0x40);
  bits += 0x7fff + ((bits >> 16) & 1);
  return uint16_t(bits >> 16);
}

}  // namespace

size_t elem_size(Elem e) {
  return e == Elem::F64 ? 8 : e == Elem::F32 ? 4 : 2;
}

double load_elem(Elem e, const void* base, int64_t i) {
  switch (e) {
    case Elem::F32: return static_cast<const float*>(base)[i];
    case Elem::F64: return static_cast<const double*>(base)[i];
    case Elem::F16: return f16_to_f32(static_cast<const uint16_t*>(base)[i]);
    case Elem::BF16: return bf16_to_f32(static_cast<const uint16_t*>(base)[i]);
  }
  return 0;
}

void store_elem(Elem e, void* base, int64_t i, double v) {
  switch (e) {
    case Elem::F32: static_cast<float*>(base)[i] = float(v); return;
    case Elem::F64: static_cast<double*>(base)[i] = v; return;
    // Through f32: double rounding, negligible next to the tolerances used.
    case Elem::F16: static_cast<uint16_t*>(base)[i] = f32_to_f16(float(v)); return;
    case Elem::BF16: static_cast<uint16_t*>(base)[i] = f32_to_bf16(float(v)); return;
  }
}

}  // namespace kiln_fake
