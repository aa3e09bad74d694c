// Drives the FMA-peak kernels (see fma_peak.h, fma_kernels.h).
//
// The kernel is picked with __builtin_cpu_supports, which also checks that the
// OS saves the wide registers. Each call runs the kernel on `threads` threads
// at once and is timed from the start signal to the last thread's finish, so
// the two-thread figure is what both cores deliver together. Calls are short
// (~0.5 ms): on a shared machine only a short call finds both cores free, and
// the best of many is the peak. So the team is persistent and spins between
// calls (a start costs ~1 us where spawning threads would cost tens).
//
// Check: one short run's every lane is compared with the same recurrence done
// in scalar code (std::fma, or a rounded multiply then add for SSE2), which
// must agree bit for bit since each step is one IEEE-rounded operation.
#include "bench/fma_peak.h"

#include <emmintrin.h>  // _mm_pause (SSE2, baseline x86-64)

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "bench/fma_kernels.h"

namespace kiln::bench {

namespace {

// acc converges to add / (1 - mul) = 1: values stay normal, never overflow.
constexpr float kMul = 0.999f, kAdd = 0.001f;

// The widest kernel the CPU runs. KILN_BENCH_FMA_ISA=avx2 or sse asks for a
// narrower one (to check those kernels on a wider machine); a kernel the CPU
// lacks is never picked.
const FmaKernel& pick_kernel() {
  __builtin_cpu_init();
  const char* env = std::getenv("KILN_BENCH_FMA_ISA");
  const std::string cap = env ? env : "";
  const bool avx512 = __builtin_cpu_supports("avx512f");
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  if (avx512 && cap != "avx2" && cap != "sse") return kFmaAvx512;
  if (avx2 && cap != "sse") return kFmaAvx2;
  return kFmaSse;
}

bool check(const FmaKernel& k) {
  constexpr int64_t kIters = 1000;
  std::vector<float> out(size_t(k.chains * k.lanes));
  k.run(kIters, kMul, kAdd, out.data());
  for (int j = 0; j < k.chains; ++j) {
    volatile float acc = 0.01f * float(j + 1);  // volatile: no contraction, no folding
    for (int64_t i = 0; i < kIters; ++i) {
      if (k.fused) {
        acc = std::fma(float(acc), kMul, kAdd);
      } else {
        volatile float prod = acc * kMul;
        acc = prod + kAdd;
      }
    }
    for (int l = 0; l < k.lanes; ++l) {
      if (out[size_t(j * k.lanes + l)] != acc) return false;
    }
  }
  return true;
}

}  // namespace

FmaPeakResult run_fma_peak(int threads, int64_t iters, const Budget& budget) {
  const FmaKernel& k = pick_kernel();
  FmaPeakResult r;
  r.isa = k.isa;
  r.lanes = k.lanes;
  r.chains = k.chains;
  r.threads = threads;
  r.flops = 2.0 * double(k.lanes) * double(k.chains) * double(iters) * double(threads);
  r.ok = check(k);
  std::vector<std::vector<float>> outs(size_t(threads),
                                       std::vector<float>(size_t(k.chains * k.lanes)));
  // Workers 1..threads-1 wait (spinning) for `start` to move past the call
  // they last ran, run the kernel, and count themselves into `finished`;
  // start = -1 sends them home.
  std::atomic<int64_t> start{0}, finished{0};
  std::vector<std::thread> team;
  for (int t = 1; t < threads; ++t) {
    team.emplace_back([&, t] {
      for (int64_t seen = 0;;) {
        int64_t s;
        while ((s = start.load(std::memory_order_acquire)) == seen) _mm_pause();
        if (s < 0) return;
        seen = s;
        k.run(iters, kMul, kAdd, outs[size_t(t)].data());
        finished.fetch_add(1, std::memory_order_acq_rel);
      }
    });
  }
  int64_t calls = 0;
  auto call = [&] {
    finished.store(0, std::memory_order_relaxed);
    start.store(++calls, std::memory_order_release);
    k.run(iters, kMul, kAdd, outs[0].data());
    while (finished.load(std::memory_order_acquire) < threads - 1) _mm_pause();
  };
  r.samples = time_budget(budget, /*first_call_s=*/0, call);
  start.store(-1, std::memory_order_release);
  for (std::thread& th : team) th.join();
  // The timed runs converge to 1; anything else means a kernel went wrong.
  for (const auto& o : outs) {
    for (float v : o) r.ok = r.ok && std::abs(v - 1.0f) < 1e-3f;
  }
  return r;
}

}  // namespace kiln::bench
