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

}  // namespace kiln

extern "C" {
// body(chunk_begin, chunk_end, closure) over [0, n).
void kiln_parallel_for(void (*body)(int64_t, int64_t, void*), void* closure, int64_t n,
                       int64_t grain);
}
