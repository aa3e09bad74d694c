// The machine's memory bandwidth: a STREAM-style triad a[i] = b[i] + s * c[i]
// over f32 arrays much larger than the last-level cache, on `threads` threads.
//
// Bytes counted per element: 3 x 4 (read b, read c, write a), as STREAM counts
// (it ignores the write-allocate read of a). Each thread owns one contiguous
// slice and touches it first at initialisation, so pages sit where they are
// used. This file is compiled with -O3 (bench/CMakeLists.txt) so the loop is
// vectorised like a tuned STREAM build; plain stores, no non-temporal hints,
// as GCC emits for STREAM's source.
#include "bench/stream_triad.h"

#include <cstdlib>
#include <thread>
#include <vector>

namespace kiln::bench {

namespace {

struct FreeDeleter {
  void operator()(float* p) const { std::free(p); }
};
using Array = std::unique_ptr<float[], FreeDeleter>;

Array alloc_array(int64_t n) {
  size_t bytes = (static_cast<size_t>(n) * sizeof(float) + 4095) / 4096 * 4096;
  return Array(static_cast<float*>(std::aligned_alloc(4096, bytes)));
}

// Calls fn(begin, end) on `threads` threads over equal slices of [0, n).
// Spawning two threads costs tens of microseconds against a pass of tens of
// milliseconds, so no persistent team is needed.
template <typename F>
void split(int threads, int64_t n, const F& fn) {
  std::vector<std::thread> team;
  for (int t = 1; t < threads; ++t) {
    team.emplace_back([&, t] { fn(n * t / threads, n * (t + 1) / threads); });
  }
  fn(0, n / threads);
  for (std::thread& th : team) th.join();
}

}  // namespace

struct Triad::Arrays {
  Array a, b, c;
};

Triad::Triad(int64_t n, int threads) : n_(n), threads_(threads), arrays_(new Arrays) {
  arrays_->a = alloc_array(n);
  arrays_->b = alloc_array(n);
  arrays_->c = alloc_array(n);
  float* pa = arrays_->a.get();
  float* pb = arrays_->b.get();
  float* pc = arrays_->c.get();
  split(threads_, n_, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) {
      pa[i] = 0.0f;
      pb[i] = 1.0f;
      pc[i] = 2.0f;
    }
  });
}

Triad::~Triad() = default;

void Triad::pass() {
  float* __restrict__ pa = arrays_->a.get();
  const float* __restrict__ pb = arrays_->b.get();
  const float* __restrict__ pc = arrays_->c.get();
  const float s = 3.0f;
  split(threads_, n_, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) pa[i] = pb[i] + s * pc[i];
  });
}

bool Triad::ok() const {
  // Every element must be 1 + 3 * 2; checking a spread of them keeps the
  // compiler honest and the row meaningful.
  const float* pa = arrays_->a.get();
  bool good = pa[n_ - 1] == 7.0f;
  for (int64_t i = 0; i < n_; i += 4099) good = good && pa[i] == 7.0f;
  return good;
}

double Triad::bytes() const {
  return 3.0 * sizeof(float) * static_cast<double>(n_);
}

}  // namespace kiln::bench
