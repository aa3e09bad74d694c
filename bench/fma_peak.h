// The machine's f32 FMA peak, measured: the widest FMA kernel the CPU runs
// (AVX-512, else AVX2 + FMA, else SSE2 mul + add; bench/fma_kernels.h), with
// enough independent chains to fill both FMA pipes, on 1 thread and on N.
// Every "% of peak" of the contraction rows divides by the N-thread best.
#pragma once

#include <string>

#include "bench/bench_util.h"

namespace kiln::bench {

struct FmaPeakResult {
  std::string isa;   // the kernel measured
  int lanes = 0;     // f32 lanes per register
  int chains = 0;    // independent accumulators per thread
  int threads = 0;   // threads of this measurement
  double flops = 0;  // flops per timed call (all threads)
  Samples samples;   // one per call
  bool ok = false;   // every lane matches a scalar recurrence bit for bit
};

// `iters` steps per chain per thread and call; timed calls under `budget`
// after two untimed warm-ups.
FmaPeakResult run_fma_peak(int threads, int64_t iters, const Budget& budget);

}  // namespace kiln::bench
