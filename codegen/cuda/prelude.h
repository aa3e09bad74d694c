// Kiln's CUDA prelude (kiln_prelude.cuh) as the text NVRTC receives, and the
// one list of the names emitted CUDA C uses besides its own locals and
// kernel names. The same kernel text compiles as host C++ after an emulation
// header, which must define the same names (it may include
// kiln_prelude.cuh, which is host C++ too, and add the CUDA ones):
//
//   CUDA:      extern "C", __global__, __launch_bounds__(B, 1), __restrict__,
//              blockIdx.x, threadIdx.x, __syncthreads()
//   macros:    KILN_SHARED(T, name, n)   a per-block array, 16-byte aligned
//              KILN_UNROLL               before an unrolled loop (a hint)
//              KILN_NO_UNROLL            before every other loop (not unrolled)
//              INFINITY, NAN             float constants
//   types:     kiln_i8 kiln_u8 kiln_i16 kiln_u16 kiln_i32 kiln_u32 kiln_i64
//              kiln_u64; kiln_f16 kiln_bf16 (16-bit patterns in memory);
//              kiln_vec<T, N> (N lanes, member v[N])
//   memory:    kiln_vload<T, N>(const T*), kiln_vstore<T, N>(T*, kiln_vec)
//   f16/bf16:  kiln_f16_to_f32 kiln_f32_to_f16 kiln_bf16_to_f32
//              kiln_f32_to_bf16 (memory <-> register); kiln_round_f16
//              kiln_round_bf16 (a float rounded to the type);
//              kiln_round_f16_f64 kiln_round_bf16_f64 kiln_round_f16_i64
//              kiln_round_bf16_i64 (one rounding from double / int64)
//   casts:     kiln_f32_to_i64_sat kiln_f64_to_i64_sat (NaN -> 0)
//   scalars:   kiln_slot_f32 kiln_slot_f64 kiln_slot_f16 kiln_slot_bf16
//              (a 64-bit argument slot to its value)
//   integers:  kiln_div kiln_mod (floor; x / 0 == 0), kiln_add_wrap
//              kiln_sub_wrap kiln_mul_wrap (i32, i64), kiln_min kiln_max
//              kiln_abs (every integer type; min/max also bool)
//   floats:    kiln_min kiln_max (NaN-propagating, -0 < +0), kiln_mod
//              (floor), kiln_isnan, and the loop-IR intrinsics kiln_exp
//              kiln_log kiln_log1p kiln_expm1 kiln_sqrt kiln_rsqrt kiln_sin
//              kiln_cos kiln_tanh kiln_sigmoid kiln_erf kiln_pow kiln_floor
//              kiln_ceil kiln_round kiln_trunc kiln_abs kiln_fma (float and
//              double overloads)
//   tensor:    kiln_mma_m16n8k16_f16 kiln_mma_m16n8k16_bf16 (the warp MMA
//              of ir/loop/warp_mma.h; a warp collective)
//
// prelude_names() holds the same list for tests; docs/cuda.md repeats it.
#pragma once

#include <string>
#include <vector>

namespace kiln::codegen::cuda {

// The name programs include the prelude by (`#include "kiln_prelude.cuh"`).
inline constexpr const char* kPreludeHeader = "kiln_prelude.cuh";

// The prelude's text (embedded at build time from kiln_prelude.cuh).
const std::string& prelude_text();

// Every name of the list above (CUDA's included), one entry each.
const std::vector<std::string>& prelude_names();

}  // namespace kiln::codegen::cuda
