// RunProfile — what Executable::run records when asked to profile one call:
// the call's span, each launch's span and the buffer bytes it read and wrote,
// and the chunks of parallel loops the pool ran for it (per thread). It only
// records; the api layer (api/profile.cpp) turns it into a report and a trace.
//
// Cost: run() takes a RunProfile pointer; when it is null each launch pays one
// pointer test and nothing is timed. When set, each launch is timed with
// steady_clock around the kernel (a device launch is followed by a
// synchronize of its device, so its time is the kernel's and not the queueing
// of it), and the thread pool is given this profile as its chunk observer for
// the call (runtime/thread_pool.h).
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <vector>

#include "runtime/thread_pool.h"

namespace kiln::runtime {

// steady_clock now, in nanoseconds.
int64_t now_ns();

struct LaunchTiming {
  int launch = 0;        // index into Executable::launches()
  bool skipped = false;  // everything it writes was empty: not run
  int64_t begin_ns = 0, end_ns = 0;
  // Bytes of the buffer arguments as passed (a packed copy of a strided input
  // counts at its packed size): read ones, and written ones (outputs, scratch).
  int64_t bytes_read = 0, bytes_written = 0;
};

struct ChunkTiming {
  int launch = 0;  // the launch running when the chunk ran
  int thread = 0;  // 0: the calling thread; 1..: a pool worker
  int64_t begin_ns = 0, end_ns = 0;
  int64_t begin = 0, end = 0;  // the iterations
};

class RunProfile final : public ChunkObserver {
 public:
  int64_t begin_ns = 0, end_ns = 0;  // the whole call (input checks to outputs)
  std::vector<LaunchTiming> launches;
  std::vector<ChunkTiming> chunks;

  // Called by run(): chunks from now on belong to launch `k`.
  void set_launch(int k) { current_launch_ = k; }
  void chunk(int thread, int64_t begin_ns, int64_t end_ns, int64_t begin, int64_t end) override;

 private:
  std::mutex mu_;
  std::atomic<int> current_launch_{-1};
};

}  // namespace kiln::runtime
