// RunProfile: the chunk observer's record (see profile.h).
#include "runtime/profile.h"

#include <chrono>

namespace kiln::runtime {

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void RunProfile::chunk(int thread, int64_t chunk_begin_ns, int64_t chunk_end_ns, int64_t begin,
                       int64_t end) {
  std::lock_guard<std::mutex> lock(mu_);
  chunks.push_back(ChunkTiming{current_launch_, thread, chunk_begin_ns, chunk_end_ns, begin, end});
}

}  // namespace kiln::runtime
