// Scalar conversions between raw element memory and double / int64, used by
// Tensor element access and by the reference interpreter's plain loops.
#pragma once

#include <cstdint>
#include <cstring>

#include "kiln/dtype.h"

namespace kiln {

float half_to_float(uint16_t h);
uint16_t float_to_half(float f);  // round to nearest even, overflow to inf
float bf16_to_float(uint16_t h);
uint16_t float_to_bf16(float f);  // round to nearest even; NaN stays NaN
// Direct roundings from double (no double-rounding through float).
uint16_t double_to_half(double d);
uint16_t double_to_bf16(double d);

// Reads one element of type `t` at `p`.
double load_as_double(DType t, const void* p);
int64_t load_as_int(DType t, const void* p);  // floats truncate toward zero
// Writes `v` converted to `t` (float -> int truncates toward zero, like a C cast;
// int -> narrower int wraps; anything -> bool is v != 0).
void store_double(DType t, void* p, double v);
void store_int(DType t, void* p, int64_t v);

}  // namespace kiln
