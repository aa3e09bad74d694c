// The FMA-peak kernels, one per ISA, each in its own file compiled with that
// ISA's flags (bench/CMakeLists.txt); fma_peak.cpp calls only the one the CPU
// supports, so the rest of kiln_bench stays baseline x86-64.
//
// Each kernel runs `chains` independent recurrences acc = acc * mul + add,
// each one vector register wide, `iters` times, and writes every lane of
// every accumulator to out[chains * lanes]. Chain j starts at 0.01 * (j + 1),
// so no two chains are the same computation and none can be merged away.
#pragma once

#include <cstdint>

namespace kiln::bench {

struct FmaKernel {
  const char* isa;  // "avx512f+fma", "avx2+fma", "sse2 (mul + add, no FMA)"
  int lanes;        // f32 lanes per register
  int chains;       // independent accumulators
  bool fused;       // one rounding per step (FMA) or two (mul, then add)
  void (*run)(int64_t iters, float mul, float add, float* out);
};

// Defined in fma_kernel_avx512.cpp, fma_kernel_avx2.cpp, fma_kernel_sse.cpp.
extern const FmaKernel kFmaAvx512;
extern const FmaKernel kFmaAvx2;
extern const FmaKernel kFmaSse;

}  // namespace kiln::bench
