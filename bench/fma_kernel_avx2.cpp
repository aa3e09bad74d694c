// FMA-peak kernel for AVX2 + FMA (compiled -O3 -mavx2 -mfma; see fma_kernels.h).
//
// 12 chains of 8 lanes: two FMA pipes with a 4-5 cycle latency need 8-10 in
// flight; 12 accumulators and the two constants fit AVX2's 16 registers, so
// the loop touches no memory.
#include <immintrin.h>

#include "bench/fma_kernels.h"

namespace kiln::bench {

namespace {

constexpr int kChains = 12;

void run(int64_t iters, float mul, float add, float* out) {
  const __m256 m = _mm256_set1_ps(mul), a = _mm256_set1_ps(add);
  __m256 acc[kChains];
#pragma GCC unroll 12
  for (int j = 0; j < kChains; ++j) acc[j] = _mm256_set1_ps(0.01f * float(j + 1));
  for (int64_t i = 0; i < iters; ++i) {
#pragma GCC unroll 12
    for (int j = 0; j < kChains; ++j) acc[j] = _mm256_fmadd_ps(acc[j], m, a);
  }
#pragma GCC unroll 12
  for (int j = 0; j < kChains; ++j) _mm256_storeu_ps(out + 8 * j, acc[j]);
}

}  // namespace

const FmaKernel kFmaAvx2{"avx2+fma", 8, kChains, true, run};

}  // namespace kiln::bench
