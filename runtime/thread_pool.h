// Kiln's thread pool and parallel_for. Compiled kernels call kiln_parallel_for
// (C ABI) for their outlined parallel loops; C++ code calls parallel_for.
//
// Work is split into chunks of at least `grain` iterations; the calling thread
// takes chunks too. A parallel_for inside a parallel_for body runs serially on
// the calling thread (no oversubscription, no deadlock). The pool size is
// KILN_NUM_THREADS when set (1 to 2^20, at most 256 used; an invalid value is
// warned about and ignored), else the number of hardware threads.
#pragma once

#include <cstdint>
#include <functional>

namespace kiln {

int num_threads();

// Calls fn(begin, end) over disjoint sub-ranges covering [begin, end).
void parallel_for(int64_t begin, int64_t end, int64_t grain,
                  const std::function<void(int64_t, int64_t)>& fn);

// Profiling (runtime/profile.h): told about every chunk of the parallel loops
// that the thread which installed it starts, on whichever thread runs the
// chunk (so it must be thread-safe). `thread` is 0 for the calling thread and
// 1.. for the pool's workers; times are steady_clock nanoseconds. Loops that
// run serially (nested, one thread, too small) report nothing. Without an
// observer a parallel loop pays one thread-local load.
class ChunkObserver {
 public:
  virtual ~ChunkObserver() = default;
  virtual void chunk(int thread, int64_t begin_ns, int64_t end_ns, int64_t begin,
                     int64_t end) = 0;
};
// Installs `observer` (null: none) for parallel loops started by this thread;
// returns the previous one.
ChunkObserver* set_chunk_observer(ChunkObserver* observer);
// 0 on a thread outside the pool, else the worker's number (1..num_threads()-1).
int pool_thread_index();

}  // namespace kiln

extern "C" {
// body(chunk_begin, chunk_end, closure) over [0, n).
void kiln_parallel_for(void (*body)(int64_t, int64_t, void*), void* closure, int64_t n,
                       int64_t grain);
}
