// Kiln's CUDA prelude: every type, function and macro the CUDA C emitter
// (codegen/cuda/cuda_emitter.h) prints besides CUDA's own names, with the
// semantics of loop IR (ir/loop/loop_eval.h). NVRTC compiles it as the header
// "kiln_prelude.cuh" of every program; it includes nothing (NVRTC 13 has no
// built-in cuda_fp16.h, and INFINITY is not defined there).
//
// It is also valid host C++ (without __CUDACC__ the functions are plain
// inline functions over <math.h>), so its semantics are unit-tested on the
// host (tests/unit/cuda_prelude_test.cpp), and an emulation header may
// include it instead of defining these names again. The names are listed in
// codegen/cuda/prelude.h and docs/cuda.md.
//
// Values in registers: bool, the integer types below, float for f32 and for
// f16/bf16 (holding a value already rounded to the 16-bit type: arithmetic
// runs in float and is rounded after every operation), double for f64. In
// memory, f16/bf16 are kiln_f16/kiln_bf16 (the 16-bit pattern) and bool is a
// kiln_u8 (0 or 1).
#pragma once

#if defined(__CUDACC__)
#define KILN_FN static __device__ __forceinline__
// A per-block array in shared memory, 16-byte aligned for 128-bit accesses.
#define KILN_SHARED(T, name, n) __shared__ __align__(16) T name[n]
#define KILN_ALIGN(n) __align__(n)
// Before a loop the schedule unrolled (a hint; the loop stays correct), and
// before every other loop: the schedule decides unrolling, not NVVM.
#define KILN_UNROLL _Pragma("unroll")
#define KILN_NO_UNROLL _Pragma("unroll 1")
#ifndef INFINITY
#define INFINITY __int_as_float(0x7f800000)
#endif
#ifndef NAN
#define NAN __int_as_float(0x7fffffff)
#endif
#else
#include <math.h>
#include <string.h>
#define KILN_FN static inline
#define KILN_ALIGN(n) alignas(n)
#define KILN_UNROLL
#define KILN_NO_UNROLL
#endif

typedef signed char kiln_i8;
typedef unsigned char kiln_u8;
typedef short kiln_i16;
typedef unsigned short kiln_u16;
typedef int kiln_i32;
typedef unsigned int kiln_u32;
typedef long long kiln_i64;
typedef unsigned long long kiln_u64;

// 16-bit floats in memory: the IEEE binary16 / bfloat16 bit pattern.
struct kiln_f16 {
  kiln_u16 bits;
};
struct kiln_bf16 {
  kiln_u16 bits;
};

// ------------------------------------------------------------------ bit casts

KILN_FN kiln_u32 kiln_f32_bits(float f) {
#if defined(__CUDACC__)
  return __float_as_uint(f);
#else
  kiln_u32 u;
  memcpy(&u, &f, sizeof u);
  return u;
#endif
}
KILN_FN float kiln_bits_f32(kiln_u32 u) {
#if defined(__CUDACC__)
  return __uint_as_float(u);
#else
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
#endif
}
KILN_FN double kiln_bits_f64(kiln_u64 u) {
#if defined(__CUDACC__)
  return __longlong_as_double((kiln_i64)u);
#else
  double d;
  memcpy(&d, &u, sizeof d);
  return d;
#endif
}
KILN_FN int kiln_clz64(kiln_u64 x) {  // x != 0
#if defined(__CUDACC__)
  return __clzll((kiln_i64)x);
#else
  return __builtin_clzll(x);
#endif
}

// ------------------------------------------------------------ f16 and bf16
// Round to nearest even (as kiln::float_to_half / float_to_bf16). On the
// device f32 -> f16 is the cvt instruction, which differs from the host's
// conversion only in the payload of a NaN.

KILN_FN float kiln_f16_to_f32(kiln_f16 h) {
#if defined(__CUDACC__)
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h.bits));
  return f;
#else
  kiln_u32 sign = (kiln_u32)(h.bits & 0x8000u) << 16;
  kiln_u32 exp = (h.bits >> 10) & 0x1fu, mant = h.bits & 0x3ffu;
  if (exp == 0) {
    if (mant == 0) return kiln_bits_f32(sign);
    kiln_u32 e = 113;  // a subnormal half, normalised into a float exponent
    while (!(mant & 0x400u)) {
      mant <<= 1;
      --e;
    }
    return kiln_bits_f32(sign | (e << 23) | ((mant & 0x3ffu) << 13));
  }
  if (exp == 31) return kiln_bits_f32(sign | 0x7f800000u | (mant << 13));
  return kiln_bits_f32(sign | ((exp + 112) << 23) | (mant << 13));
#endif
}

KILN_FN kiln_f16 kiln_f32_to_f16(float f) {
  kiln_f16 h;
#if defined(__CUDACC__)
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h.bits) : "f"(f));
#else
  kiln_u32 x = kiln_f32_bits(f);
  kiln_u16 sign = (kiln_u16)((x >> 16) & 0x8000u);
  kiln_u32 ax = x & 0x7fffffffu;
  if (ax > 0x7f800000u) {  // NaN stays a quiet NaN
    h.bits = (kiln_u16)(sign | 0x7e00u | ((ax >> 13) & 0x3ffu));
  } else if (ax >= 0x477ff000u) {  // from halfway between 65504 and 2^16: inf
    h.bits = (kiln_u16)(sign | 0x7c00u);
  } else if (ax < 0x38800000u) {  // below 2^-14: subnormal or zero
    kiln_u32 exp = ax >> 23;
    if (exp < 102) {
      h.bits = sign;
    } else {
      kiln_u32 mant = (ax & 0x7fffffu) | 0x800000u, shift = 126 - exp;
      kiln_u32 r = mant >> shift, rem = mant & ((1u << shift) - 1), halfway = 1u << (shift - 1);
      if (rem > halfway || (rem == halfway && (r & 1u))) ++r;
      h.bits = (kiln_u16)(sign | r);
    }
  } else {
    kiln_u32 odd = (ax >> 13) & 1u;
    ax += 0xC8000000u + 0xfffu + odd;  // rebias 127 -> 15 and round the 13 dropped bits
    h.bits = (kiln_u16)(sign | (ax >> 13));
  }
#endif
  return h;
}

KILN_FN float kiln_bf16_to_f32(kiln_bf16 h) {
  return kiln_bits_f32((kiln_u32)h.bits << 16);
}

KILN_FN kiln_bf16 kiln_f32_to_bf16(float f) {
  kiln_u32 x = kiln_f32_bits(f);
  kiln_bf16 h;
  if ((x & 0x7fffffffu) > 0x7f800000u) {
    h.bits = (kiln_u16)((x >> 16) | 0x40u);
  } else {
    h.bits = (kiln_u16)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
  }
  return h;
}

// A float rounded to the 16-bit type (the value f16/bf16 registers hold).
KILN_FN float kiln_round_f16(float f) {
  return kiln_f16_to_f32(kiln_f32_to_f16(f));
}
KILN_FN float kiln_round_bf16(float f) {
  return kiln_bf16_to_f32(kiln_f32_to_bf16(f));
}

// double and int64 reach f16/bf16 through float rounded *to odd* (truncated,
// the last bit set when inexact), so the second rounding is the only one.
KILN_FN float kiln_f64_to_f32_odd(double d) {
  if (d != d) return NAN;
  float f = (float)d;
  if ((double)f == d) return f;  // exact, or an infinity
  kiln_u32 bits = kiln_f32_bits(f);
  if ((bits & 0x7fffffffu) == 0x7f800000u) return kiln_bits_f32((bits & 0x80000000u) | 0x7f7fffffu);
  if (fabs((double)f) > fabs(d)) --bits;  // rounded away from zero: step back
  return kiln_bits_f32(bits | 1u);
}
KILN_FN float kiln_i64_to_f32_odd(kiln_i64 v) {
  kiln_u64 mag = v < 0 ? 0ull - (kiln_u64)v : (kiln_u64)v;
  float r;
  if (mag < (1ull << 24)) {
    r = (float)mag;
  } else {
    int shift = 64 - kiln_clz64(mag) - 24;
    kiln_u64 kept = mag >> shift;
    if (mag & ((1ull << shift) - 1)) kept |= 1;
    r = (float)kept * kiln_bits_f32((kiln_u32)(127 + shift) << 23);  // exact: times 2^shift
  }
  return v < 0 ? -r : r;
}
KILN_FN float kiln_round_f16_f64(double d) {
  return kiln_round_f16(kiln_f64_to_f32_odd(d));
}
KILN_FN float kiln_round_bf16_f64(double d) {
  return kiln_round_bf16(kiln_f64_to_f32_odd(d));
}
KILN_FN float kiln_round_f16_i64(kiln_i64 v) {
  return kiln_round_f16(kiln_i64_to_f32_odd(v));
}
KILN_FN float kiln_round_bf16_i64(kiln_i64 v) {
  return kiln_round_bf16(kiln_i64_to_f32_odd(v));
}

// Float -> int64 saturating, NaN -> 0 (narrower ints then wrap by a cast).
KILN_FN kiln_i64 kiln_f64_to_i64_sat(double d) {
  if (d != d) return 0;
  if (d >= 9223372036854775808.0) return 0x7fffffffffffffffll;
  if (d < -9223372036854775808.0) return -0x7fffffffffffffffll - 1;
  return (kiln_i64)d;
}
KILN_FN kiln_i64 kiln_f32_to_i64_sat(float f) {
  return kiln_f64_to_i64_sat((double)f);
}

// Scalar kernel arguments arrive in 64-bit slots (codegen/backend.h): f64
// bit-cast, f32 in the low 32 bits, f16/bf16 in the low 16 bits.
KILN_FN double kiln_slot_f64(kiln_i64 s) {
  return kiln_bits_f64((kiln_u64)s);
}
KILN_FN float kiln_slot_f32(kiln_i64 s) {
  return kiln_bits_f32((kiln_u32)s);
}
KILN_FN float kiln_slot_f16(kiln_i64 s) {
  kiln_f16 h;
  h.bits = (kiln_u16)s;
  return kiln_f16_to_f32(h);
}
KILN_FN float kiln_slot_bf16(kiln_i64 s) {
  kiln_bf16 h;
  h.bits = (kiln_u16)s;
  return kiln_bf16_to_f32(h);
}

// ----------------------------------------------------------------- integers
// Division and modulo floor (Python's sign rule); x / 0 == x % 0 == 0; x / -1
// wraps. Arithmetic wraps: the emitter calls the *_wrap functions for i32
// and i64 arithmetic on data (narrower types compute in int and are cast
// back, which wraps).

#define KILN_INT_OPS(T, U)                                                   \
  KILN_FN T kiln_div(T a, T b) {                                             \
    if (b == 0) return 0;                                                    \
    if (b == -1) return (T)(0 - (U)a);                                       \
    T q = (T)(a / b), r = (T)(a % b);                                        \
    return (T)(q - ((r != 0) && ((r < 0) != (b < 0))));                      \
  }                                                                          \
  KILN_FN T kiln_mod(T a, T b) {                                             \
    if (b == 0 || b == -1) return 0;                                         \
    T r = (T)(a % b);                                                        \
    return (T)(r + ((r != 0) && ((r < 0) != (b < 0)) ? b : 0));              \
  }                                                                          \
  KILN_FN T kiln_abs(T a) { return a < 0 ? (T)(0 - (U)a) : a; }              \
  KILN_FN T kiln_min(T a, T b) { return a < b ? a : b; }                     \
  KILN_FN T kiln_max(T a, T b) { return a < b ? b : a; }
KILN_INT_OPS(kiln_i8, kiln_u32)
KILN_INT_OPS(kiln_i16, kiln_u32)
KILN_INT_OPS(kiln_i32, kiln_u32)
KILN_INT_OPS(kiln_i64, kiln_u64)
#undef KILN_INT_OPS

KILN_FN kiln_u8 kiln_div(kiln_u8 a, kiln_u8 b) {
  return b == 0 ? (kiln_u8)0 : (kiln_u8)(a / b);
}
KILN_FN kiln_u8 kiln_mod(kiln_u8 a, kiln_u8 b) {
  return b == 0 ? (kiln_u8)0 : (kiln_u8)(a % b);
}
KILN_FN kiln_u8 kiln_abs(kiln_u8 a) {
  return a;
}
KILN_FN kiln_u8 kiln_min(kiln_u8 a, kiln_u8 b) {
  return a < b ? a : b;
}
KILN_FN kiln_u8 kiln_max(kiln_u8 a, kiln_u8 b) {
  return a < b ? b : a;
}
KILN_FN bool kiln_min(bool a, bool b) {
  return a && b;
}
KILN_FN bool kiln_max(bool a, bool b) {
  return a || b;
}

KILN_FN kiln_i32 kiln_add_wrap(kiln_i32 a, kiln_i32 b) {
  return (kiln_i32)((kiln_u32)a + (kiln_u32)b);
}
KILN_FN kiln_i32 kiln_sub_wrap(kiln_i32 a, kiln_i32 b) {
  return (kiln_i32)((kiln_u32)a - (kiln_u32)b);
}
KILN_FN kiln_i32 kiln_mul_wrap(kiln_i32 a, kiln_i32 b) {
  return (kiln_i32)((kiln_u32)a * (kiln_u32)b);
}
KILN_FN kiln_i64 kiln_add_wrap(kiln_i64 a, kiln_i64 b) {
  return (kiln_i64)((kiln_u64)a + (kiln_u64)b);
}
KILN_FN kiln_i64 kiln_sub_wrap(kiln_i64 a, kiln_i64 b) {
  return (kiln_i64)((kiln_u64)a - (kiln_u64)b);
}
KILN_FN kiln_i64 kiln_mul_wrap(kiln_i64 a, kiln_i64 b) {
  return (kiln_i64)((kiln_u64)a * (kiln_u64)b);
}

// ------------------------------------------------------------------- floats
// min/max propagate NaN and order -0 below +0; mod floors (the result takes
// the divisor's sign).

#define KILN_FLOAT_OPS(T, BITS, SIGN)                                    \
  KILN_FN T kiln_min(T a, T b) {                                         \
    if (a != a || b != b) return (T)NAN;                                 \
    if (a == b) return (BITS(a) & SIGN) ? a : b;                         \
    return a < b ? a : b;                                                \
  }                                                                      \
  KILN_FN T kiln_max(T a, T b) {                                         \
    if (a != a || b != b) return (T)NAN;                                 \
    if (a == b) return (BITS(a) & SIGN) ? b : a;                         \
    return a < b ? b : a;                                                \
  }                                                                      \
  KILN_FN bool kiln_isnan(T a) { return a != a; }
KILN_FLOAT_OPS(float, kiln_f32_bits, 0x80000000u)
KILN_FN kiln_u64 kiln_f64_bits(double d) {
#if defined(__CUDACC__)
  return (kiln_u64)__double_as_longlong(d);
#else
  kiln_u64 u;
  memcpy(&u, &d, sizeof u);
  return u;
#endif
}
KILN_FLOAT_OPS(double, kiln_f64_bits, 0x8000000000000000ull)
#undef KILN_FLOAT_OPS

KILN_FN float kiln_mod(float a, float b) {
  float m = fmodf(a, b);
  if (m != 0 && ((m < 0) != (b < 0))) m += b;
  return m;
}
KILN_FN double kiln_mod(double a, double b) {
  double m = fmod(a, b);
  if (m != 0 && ((m < 0) != (b < 0))) m += b;
  return m;
}

// The math intrinsics of loop IR (loop::Call). rsqrt and sigmoid are spelled
// out as loop_eval computes them (correctly rounded steps, not the fast
// approximations); round is half to even.
#define KILN_MATH(T, S)                                                          \
  KILN_FN T kiln_exp(T x) { return exp##S(x); }                                  \
  KILN_FN T kiln_log(T x) { return log##S(x); }                                  \
  KILN_FN T kiln_log1p(T x) { return log1p##S(x); }                              \
  KILN_FN T kiln_expm1(T x) { return expm1##S(x); }                              \
  KILN_FN T kiln_sqrt(T x) { return sqrt##S(x); }                                \
  KILN_FN T kiln_rsqrt(T x) { return (T)1 / sqrt##S(x); }                        \
  KILN_FN T kiln_sin(T x) { return sin##S(x); }                                  \
  KILN_FN T kiln_cos(T x) { return cos##S(x); }                                  \
  KILN_FN T kiln_tanh(T x) { return tanh##S(x); }                                \
  KILN_FN T kiln_sigmoid(T x) { return (T)1 / ((T)1 + exp##S(-x)); }            \
  KILN_FN T kiln_erf(T x) { return erf##S(x); }                                  \
  KILN_FN T kiln_pow(T x, T y) { return pow##S(x, y); }                          \
  KILN_FN T kiln_floor(T x) { return floor##S(x); }                              \
  KILN_FN T kiln_ceil(T x) { return ceil##S(x); }                                \
  KILN_FN T kiln_round(T x) { return rint##S(x); }                               \
  KILN_FN T kiln_trunc(T x) { return trunc##S(x); }                              \
  KILN_FN T kiln_abs(T x) { return fabs##S(x); }                                 \
  KILN_FN T kiln_fma(T x, T y, T z) { return fma##S(x, y, z); }
KILN_MATH(float, f)
KILN_MATH(double, )
#undef KILN_MATH

// The extra intrinsics (ir/loop/extra_math.h): computed in double and, for
// float, rounded once, as the other backends do. digamma and erfinv are
// Kiln's own (the host has no erfinv, neither side has digamma), the same
// algorithms as ir/loop/extra_math.cpp.
KILN_FN double kiln_digamma(double x) {
  if (x == 0) return (kiln_f64_bits(x) >> 63) ? INFINITY : -INFINITY;  // psi(+-0) = -+inf
  double reflection = 0;  // psi(x) = psi(1 - x) - pi / tan(pi frac(x)) for x < 0
  if (x < 0) {
    if (x == trunc(x)) return NAN;
    const double pi = 3.14159265358979323846;
    reflection = pi / tan(pi * (x - trunc(x)));
    x = 1 - x;
  }
  double acc = 0;
  while (x < 10) {
    acc -= 1 / x;
    x += 1;
  }
  if (isinf(x)) return x;  // x < 0 never gets here
  double z = 1 / (x * x);
  double s = 1.0 / 12.0;
  s = s * z - 691.0 / 32760.0;
  s = s * z + 1.0 / 132.0;
  s = s * z - 1.0 / 240.0;
  s = s * z + 1.0 / 252.0;
  s = s * z - 1.0 / 120.0;
  s = s * z + 1.0 / 12.0;
  return (acc + log(x) - 0.5 / x - z * s) - reflection;
}
KILN_FN double kiln_erfinv(double y) {
  if (isnan(y) || y == 0) return y;
  double a = fabs(y);
  if (a > 1) return NAN;
  if (a == 1) return copysign((double)INFINITY, y);
  const double pi = 3.14159265358979323846, k = 0.147;
  double l = log((1 - a) * (1 + a));
  double t = 2 / (pi * k) + l / 2;
  double x = sqrt(sqrt(t * t - l / k) - t);
  const double two_over_sqrt_pi = 1.12837916709551257390;
  const bool tail = a > 0.5;
  const double r = 1 - a;
  for (int i = 0; i < 3; ++i) {
    double d = two_over_sqrt_pi * exp(-x * x);
    double f = tail ? -(erfc(x) - r) : erf(x) - a;
    double step = f / d;
    x -= step / (1 + x * step);
  }
  return copysign(x, y);
}
KILN_FN double kiln_lgamma(double x) {
#if defined(__CUDACC__)
  return lgamma(x);
#else
  int sign;
  return lgamma_r(x, &sign);
#endif
}
KILN_FN double kiln_tan(double x) { return tan(x); }
KILN_FN float kiln_tan(float x) { return (float)tan((double)x); }
KILN_FN double kiln_asin(double x) { return asin(x); }
KILN_FN float kiln_asin(float x) { return (float)asin((double)x); }
KILN_FN double kiln_acos(double x) { return acos(x); }
KILN_FN float kiln_acos(float x) { return (float)acos((double)x); }
KILN_FN double kiln_atan(double x) { return atan(x); }
KILN_FN float kiln_atan(float x) { return (float)atan((double)x); }
KILN_FN double kiln_sinh(double x) { return sinh(x); }
KILN_FN float kiln_sinh(float x) { return (float)sinh((double)x); }
KILN_FN double kiln_cosh(double x) { return cosh(x); }
KILN_FN float kiln_cosh(float x) { return (float)cosh((double)x); }
KILN_FN double kiln_asinh(double x) { return asinh(x); }
KILN_FN float kiln_asinh(float x) { return (float)asinh((double)x); }
KILN_FN double kiln_acosh(double x) { return acosh(x); }
KILN_FN float kiln_acosh(float x) { return (float)acosh((double)x); }
KILN_FN double kiln_atanh(double x) { return atanh(x); }
KILN_FN float kiln_atanh(float x) { return (float)atanh((double)x); }
KILN_FN double kiln_log2(double x) { return log2(x); }
KILN_FN float kiln_log2(float x) { return (float)log2((double)x); }
KILN_FN double kiln_log10(double x) { return log10(x); }
KILN_FN float kiln_log10(float x) { return (float)log10((double)x); }
KILN_FN double kiln_exp2(double x) { return exp2(x); }
KILN_FN float kiln_exp2(float x) { return (float)exp2((double)x); }
KILN_FN double kiln_erfc(double x) { return erfc(x); }
KILN_FN float kiln_erfc(float x) { return (float)erfc((double)x); }
KILN_FN float kiln_lgamma(float x) { return (float)kiln_lgamma((double)x); }
KILN_FN float kiln_digamma(float x) { return (float)kiln_digamma((double)x); }
KILN_FN float kiln_erfinv(float x) { return (float)kiln_erfinv((double)x); }
KILN_FN double kiln_atan2(double x, double y) { return atan2(x, y); }
KILN_FN float kiln_atan2(float x, float y) { return (float)atan2((double)x, (double)y); }
KILN_FN double kiln_copysign(double x, double y) { return copysign(x, y); }
KILN_FN float kiln_copysign(float x, float y) { return (float)copysign((double)x, (double)y); }
KILN_FN double kiln_hypot(double x, double y) { return hypot(x, y); }
KILN_FN float kiln_hypot(float x, float y) { return (float)hypot((double)x, (double)y); }

// ------------------------------------------------------------ vector access
// N lanes of T as one value; a dense access of N lanes (a Ramp of stride 1)
// moves them with 128-bit (or 64-bit) instructions when the address is
// aligned to the vector's size at run time, element by element otherwise.

template <typename T, int N>
struct KILN_ALIGN((sizeof(T) * N) % 16 == 0  ? 16
                  : (sizeof(T) * N) % 8 == 0 ? 8
                  : (sizeof(T) * N) % 4 == 0 ? 4
                                             : sizeof(T)) kiln_vec {
  T v[N];
};

template <typename T, int N>
KILN_FN kiln_vec<T, N> kiln_vload(const T* p) {
  kiln_vec<T, N> r;
  if (((kiln_u64)p & (alignof(kiln_vec<T, N>) - 1)) == 0) {
#if defined(__CUDACC__)
    r = *reinterpret_cast<const kiln_vec<T, N>*>(p);
#else
    memcpy(&r, p, sizeof r);
#endif
  } else {
    for (int i = 0; i < N; ++i) r.v[i] = p[i];
  }
  return r;
}

template <typename T, int N>
KILN_FN void kiln_vstore(T* p, const kiln_vec<T, N>& x) {
  if (((kiln_u64)p & (alignof(kiln_vec<T, N>) - 1)) == 0) {
#if defined(__CUDACC__)
    *reinterpret_cast<kiln_vec<T, N>*>(p) = x;
#else
    memcpy(p, &x, sizeof x);
#endif
  } else {
    for (int i = 0; i < N; ++i) p[i] = x.v[i];
  }
}

// ---------------------------------------------------------------- tensor cores
// The warp MMA of loop IR (ir/loop/warp_mma.h): every lane of a warp calls
// kiln_mma_m16n8k16_{f16,bf16} together with the same tiles; lane `lane`
// gathers its fragments of the 16x16 A tile (row-major, k contiguous, row
// stride lda) and of the 16x8 B tile (column-major, k contiguous, column
// stride ldb) in PTX's layout for mma.m16n8k16 (g = lane / 4, q = lane % 4:
// A rows g and g + 8, columns 2q, 2q + 1 and those + 8; B columns g, rows 2q,
// 2q + 1 and those + 8), and its four accumulators c[c_off..+3] (rows g and
// g + 8, columns 2q, 2q + 1) take the product. On the device that is one
// mma.sync instruction; the CUDA emulator (codegen/cuda/emulation.h) defines
// kiln_mma_sync_f16/bf16 as a warp collective computing the same product from
// the 32 lanes' fragments.
#if defined(__CUDACC__)
KILN_FN void kiln_mma_sync_f16(float* c, const kiln_u32* a, const kiln_u32* b) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%0, %1, %2, %3};"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
KILN_FN void kiln_mma_sync_bf16(float* c, const kiln_u32* a, const kiln_u32* b) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%0, %1, %2, %3};"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
#elif !defined(KILN_EMU_MMA)
// Host C++ has no warps: only the emulator defines these.
void kiln_mma_sync_f16(float* c, const kiln_u32* a, const kiln_u32* b);
void kiln_mma_sync_bf16(float* c, const kiln_u32* a, const kiln_u32* b);
#endif

// Elements i and i + 1 of p (16-bit patterns, i even) as one 32-bit register,
// element i in the low half.
template <typename T, typename P>
KILN_FN kiln_u32 kiln_mma_pair(P p, kiln_i64 i) {
#if defined(__CUDACC__)
  return *reinterpret_cast<const kiln_u32*>(&p[i]);
#else
  const T lo = p[i], hi = p[i + 1];
  return (kiln_u32)lo.bits | ((kiln_u32)hi.bits << 16);
#endif
}

template <typename T, typename PA, typename PB>
KILN_FN void kiln_mma_fragments(PA a, kiln_i64 a_off, kiln_i64 lda, PB b, kiln_i64 b_off,
                                kiln_i64 ldb, kiln_i64 lane, kiln_u32* ra, kiln_u32* rb) {
  const kiln_i64 g = lane >> 2, q2 = (lane & 3) * 2;
  ra[0] = kiln_mma_pair<T>(a, a_off + g * lda + q2);
  ra[1] = kiln_mma_pair<T>(a, a_off + (g + 8) * lda + q2);
  ra[2] = kiln_mma_pair<T>(a, a_off + g * lda + q2 + 8);
  ra[3] = kiln_mma_pair<T>(a, a_off + (g + 8) * lda + q2 + 8);
  rb[0] = kiln_mma_pair<T>(b, b_off + g * ldb + q2);
  rb[1] = kiln_mma_pair<T>(b, b_off + g * ldb + q2 + 8);
}

template <typename PA, typename PB>
KILN_FN void kiln_mma_m16n8k16_f16(float* c, PA a, PB b, kiln_i64 c_off, kiln_i64 a_off,
                                   kiln_i64 lda, kiln_i64 b_off, kiln_i64 ldb, kiln_i64 lane) {
  kiln_u32 ra[4], rb[2];
  kiln_mma_fragments<kiln_f16>(a, a_off, lda, b, b_off, ldb, lane, ra, rb);
  kiln_mma_sync_f16(c + c_off, ra, rb);
}

template <typename PA, typename PB>
KILN_FN void kiln_mma_m16n8k16_bf16(float* c, PA a, PB b, kiln_i64 c_off, kiln_i64 a_off,
                                    kiln_i64 lda, kiln_i64 b_off, kiln_i64 ldb, kiln_i64 lane) {
  kiln_u32 ra[4], rb[2];
  kiln_mma_fragments<kiln_bf16>(a, a_off, lda, b, b_off, ldb, lane, ra, rb);
  kiln_mma_sync_bf16(c + c_off, ra, rb);
}
