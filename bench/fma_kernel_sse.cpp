// Peak kernel for baseline x86-64 (SSE2, no FMA; compiled -O3; see
// fma_kernels.h): each step is a multiply then an add, 2 flops like one FMA.
// 12 chains of 4 lanes keep two multiply and two add pipes busy through their
// 3-4 cycle latencies; with the two constants they fit the 16 XMM registers.
#include <emmintrin.h>

#include "bench/fma_kernels.h"

namespace kiln::bench {

namespace {

constexpr int kChains = 12;

void run(int64_t iters, float mul, float add, float* out) {
  const __m128 m = _mm_set1_ps(mul), a = _mm_set1_ps(add);
  __m128 acc[kChains];
#pragma GCC unroll 12
  for (int j = 0; j < kChains; ++j) acc[j] = _mm_set1_ps(0.01f * float(j + 1));
  for (int64_t i = 0; i < iters; ++i) {
#pragma GCC unroll 12
    for (int j = 0; j < kChains; ++j) acc[j] = _mm_add_ps(_mm_mul_ps(acc[j], m), a);
  }
#pragma GCC unroll 12
  for (int j = 0; j < kChains; ++j) _mm_storeu_ps(out + 4 * j, acc[j]);
}

}  // namespace

const FmaKernel kFmaSse{"sse2 (mul + add, no FMA)", 4, kChains, false, run};

}  // namespace kiln::bench
