// The prelude's text and name list (see prelude.h). The text is
// kiln_prelude.cuh itself, turned into a string literal by the build
// (cmake/embed_text.cmake), so the file NVRTC compiles is the file the host
// tests include.
#include "codegen/cuda/prelude.h"

namespace kiln::codegen::cuda {

const std::string& prelude_text() {
  static const std::string text =
#include "codegen/cuda/kiln_prelude.cuh.inc"
      ;
  return text;
}

const std::vector<std::string>& prelude_names() {
  static const std::vector<std::string> names = {
      // CUDA
      "extern \"C\"", "__global__", "__launch_bounds__", "__restrict__", "blockIdx.x",
      "threadIdx.x", "__syncthreads",
      // macros
      "KILN_SHARED", "KILN_UNROLL", "KILN_NO_UNROLL", "INFINITY", "NAN",
      // types
      "kiln_i8", "kiln_u8", "kiln_i16", "kiln_u16", "kiln_i32", "kiln_u32", "kiln_i64", "kiln_u64",
      "kiln_f16", "kiln_bf16", "kiln_vec",
      // memory
      "kiln_vload", "kiln_vstore",
      // f16/bf16
      "kiln_f16_to_f32", "kiln_f32_to_f16", "kiln_bf16_to_f32", "kiln_f32_to_bf16",
      "kiln_round_f16", "kiln_round_bf16", "kiln_round_f16_f64", "kiln_round_bf16_f64",
      "kiln_round_f16_i64", "kiln_round_bf16_i64",
      // casts and scalar slots
      "kiln_f32_to_i64_sat", "kiln_f64_to_i64_sat", "kiln_slot_f32", "kiln_slot_f64",
      "kiln_slot_f16", "kiln_slot_bf16",
      // integers and floats
      "kiln_div", "kiln_mod", "kiln_add_wrap", "kiln_sub_wrap", "kiln_mul_wrap", "kiln_min",
      "kiln_max", "kiln_abs", "kiln_isnan",
      // tensor cores (the warp MMA, ir/loop/warp_mma.h)
      "kiln_mma_m16n8k16_f16", "kiln_mma_m16n8k16_bf16",
      // the loop-IR intrinsics
      "kiln_exp", "kiln_log", "kiln_log1p", "kiln_expm1", "kiln_sqrt", "kiln_rsqrt", "kiln_sin",
      "kiln_cos", "kiln_tanh", "kiln_sigmoid", "kiln_erf", "kiln_pow", "kiln_floor", "kiln_ceil",
      "kiln_round", "kiln_trunc", "kiln_fma",
      // the extra intrinsics (ir/loop/extra_math.h)
      "kiln_tan", "kiln_asin", "kiln_acos", "kiln_atan", "kiln_sinh", "kiln_cosh", "kiln_asinh",
      "kiln_acosh", "kiln_atanh", "kiln_log2", "kiln_log10", "kiln_exp2", "kiln_erfc",
      "kiln_lgamma", "kiln_digamma", "kiln_erfinv", "kiln_atan2", "kiln_copysign", "kiln_hypot"};
  return names;
}

}  // namespace kiln::codegen::cuda
