// The caching allocator behind compiled functions' outputs and intermediates.
//
// Fresh memory is expensive here: the first touch of a 4 KiB page costs about
// 11 us (a 64 MiB buffer ~180 ms), against ~4 ms with transparent huge pages.
// So blocks are kept and reused across calls, sizes are rounded to size
// classes so reuse is likely, and blocks of 2 MiB or more are 2 MiB aligned
// and madvise(MADV_HUGEPAGE)'d. A second call of a compiled function therefore
// asks the OS for nothing new. Thread-safe.
//
// The host's pool is global(); a device runtime (runtime/device.h) owns one
// per device, bounded by the device's memory size. Where blocks come from is
// a BlockSource: host memory by default, the driver's for a CUDA device.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>

#include "kiln/tensor.h"

namespace kiln {

struct AllocatorStats {
  uint64_t os_allocations = 0;  // blocks obtained from the OS
  uint64_t cache_hits = 0;      // requests served from cached blocks
  uint64_t bytes_cached = 0;    // bytes in free blocks held by the cache
  uint64_t bytes_in_use = 0;
};

// Where a pool's blocks come from and go back to. Called without the pool's
// lock held, possibly from several threads at once.
class BlockSource {
 public:
  virtual ~BlockSource() = default;
  // A block of `bytes` (a size class), or null when the memory is exhausted;
  // any other failure throws.
  virtual void* allocate(size_t bytes) = 0;
  virtual void free(void* block, size_t bytes) = 0;
  // Appended to an out-of-memory message (what the device says it has left).
  virtual std::string exhausted_note() { return ""; }
};

class CachingAllocator {
 public:
  static CachingAllocator& global();

  // A storage of at least `nbytes`, 64-byte aligned; returns to the cache when
  // its last reference is dropped. Throws kiln::Error when the OS refuses.
  // Throws kiln::Error naming the size and the device when the pool's capacity
  // is exhausted (after releasing cached blocks) or the OS refuses.
  std::shared_ptr<Storage> allocate(size_t nbytes);
  // Frees every cached block back to the OS.
  void release_cached();
  AllocatorStats stats() const;

  // The size class a request is rounded to (exposed for tests).
  static size_t size_class(size_t nbytes);

  // A pool whose storages report `device` and which holds at most `capacity`
  // bytes (in use plus cached, in size classes). Blocks come from `source`,
  // host memory when it is null (the simulated device's memory is host memory
  // that Tensor refuses to read).
  explicit CachingAllocator(Device device = Device::cpu(),
                            uint64_t capacity = std::numeric_limits<uint64_t>::max(),
                            std::unique_ptr<BlockSource> source = nullptr);
  ~CachingAllocator();
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::unique_ptr<BlockSource> source_;
  Device device_;
  uint64_t capacity_;
};

// A tensor whose storage comes from the global caching allocator.
Tensor empty_cached(const Shape& sizes, DType dtype);

}  // namespace kiln

extern "C" {
// Heap scratch of compiled kernels (loop IR's MemoryScope::Heap): blocks of
// the global caching allocator, so a kernel called again gets warm pages back
// instead of faulting in fresh ones (a GEMM's packed panels are megabytes).
// 64-byte aligned; aborts with a message when memory runs out (kernel code
// cannot unwind).
void* kiln_scratch_alloc(int64_t bytes);
void kiln_scratch_free(void* p);
}
