// FMA-peak kernel for AVX-512 (compiled -O3 -mavx512f -mfma; see fma_kernels.h).
//
// 16 chains of 16 lanes: Zen 4/5 and Skylake-X have two 512-bit FMA pipes with
// a 4-cycle latency, so 2 x 4 = 8 chains keep both busy and 16 leave slack for
// a longer latency; AVX-512's 32 registers hold the 16 accumulators and the
// two constants with room to spare, so the loop touches no memory.
#include <immintrin.h>

#include "bench/fma_kernels.h"

namespace kiln::bench {

namespace {

constexpr int kChains = 16;

void run(int64_t iters, float mul, float add, float* out) {
  const __m512 m = _mm512_set1_ps(mul), a = _mm512_set1_ps(add);
  __m512 acc[kChains];
#pragma GCC unroll 16
  for (int j = 0; j < kChains; ++j) acc[j] = _mm512_set1_ps(0.01f * float(j + 1));
  for (int64_t i = 0; i < iters; ++i) {
#pragma GCC unroll 16
    for (int j = 0; j < kChains; ++j) acc[j] = _mm512_fmadd_ps(acc[j], m, a);
  }
#pragma GCC unroll 16
  for (int j = 0; j < kChains; ++j) _mm512_storeu_ps(out + 16 * j, acc[j]);
}

}  // namespace

const FmaKernel kFmaAvx512{"avx512f+fma", 16, kChains, true, run};

}  // namespace kiln::bench
