// The CUDA device runtime: cuda:N as a DeviceRuntime (runtime/device.h) over
// the driver API that runtime/cuda_driver.h loads at run time.
//
// Per device, made at first use and kept for the whole process (storages and
// modules may be released during exit):
// - the device's primary context (the one the CUDA runtime API, and so
//   PyTorch, uses too), made current on whichever thread calls in: every
//   entry point here does that itself, so any thread may use any device;
// - one non-blocking stream. It is what a null Stream means on this device,
//   so the plan's copies and launches (which pass null) run in order on it.
//   That order is also what makes the caching allocator safe without stream
//   bookkeeping: a block freed on the host while a queued kernel still reads
//   it is handed out again only to work queued after that kernel;
// - a caching allocator (runtime/allocator.h's size classes) over
//   cuMemAlloc, bounded by the device's memory; out of memory after giving
//   the cache back is a kiln::Error naming the size and the device.
//
// Copies are asynchronous on the stream, except that a copy to the host has
// finished when copy() returns. A host source is pageable memory, which the
// driver stages before cuMemcpyHtoDAsync returns, so the caller may reuse it
// at once (memory pinned by someone else would not be staged: Kiln never
// pins). Copies between two CUDA devices wait for both devices' streams.
//
// Driver failures are kiln::Error naming the device, the call and the
// driver's error name; a fault of a kernel (an illegal address, say, which
// the driver reports at the next call that waits) is kiln::InternalError,
// since Kiln generated the kernel.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>

#include "runtime/allocator.h"
#include "runtime/cuda_driver.h"
#include "runtime/device.h"

namespace kiln::runtime::cuda {

struct MemoryInfo {
  int64_t free_bytes = 0;
  int64_t total_bytes = 0;
};

class CudaRuntime final : public DeviceRuntime {
 public:
  // Retains cuda:index's primary context and creates the stream; requires
  // unavailable_reason(index) to be empty. Use cuda_runtime(index) instead.
  explicit CudaRuntime(int index);
  ~CudaRuntime() override;

  Device device() const override { return device_; }
  const DeviceProperties& properties() const override { return properties_; }
  std::shared_ptr<Storage> allocate(size_t nbytes) override;
  void copy(Storage& dst, size_t dst_offset, const Storage& src, size_t src_offset, size_t nbytes,
            Stream stream = nullptr) override;
  void synchronize(Stream stream = nullptr) override;
  void release_cached() override;

  // Sets `nbytes` bytes of `dst` from `offset` on to `value`, ordered on `stream`.
  void fill(Storage& dst, size_t offset, unsigned char value, size_t nbytes,
            Stream stream = nullptr);

  // What the driver says is free and in total on this device.
  MemoryInfo memory_info() const;
  AllocatorStats allocator_stats() const { return pool_->stats(); }

  int index() const { return device_.index; }
  const Driver& driver() const { return driver_; }
  CUcontext context() const { return context_; }
  // The device's stream, which a null Stream stands for.
  Stream stream() const { return reinterpret_cast<Stream>(stream_); }
  CUstream stream_for(Stream s) const { return s ? static_cast<CUstream>(s) : stream_; }
  // Grid and block extents the device accepts, per dimension (x, y, z).
  const std::array<int64_t, 3>& max_grid() const { return max_grid_; }
  const std::array<int64_t, 3>& max_block() const { return max_block_; }

  // Makes this device's primary context current on the calling thread (a
  // no-op when it is already).
  void make_current() const;
  // Throws for r != CUDA_SUCCESS: "cuda:0: <what> failed: <error name>" (see
  // the top comment for which exception).
  void check(CUresult r, const std::string& what) const {
    if (r != kSuccess) fail(r, what);
  }
  [[noreturn]] void fail(CUresult r, const std::string& what) const;

 private:
  class DriverBlocks;

  Device device_;
  const Driver& driver_;
  CUcontext context_ = nullptr;
  CUstream stream_ = nullptr;
  DeviceProperties properties_;
  std::array<int64_t, 3> max_grid_{}, max_block_{};
  std::unique_ptr<CachingAllocator> pool_;
};

// The runtime of cuda:index, made at first use and never destroyed.
// kiln::Error "cannot use cuda:N: <why>" when the device is unavailable
// (unavailable_reason) or its context cannot be made. After the first use a
// lookup takes no lock.
CudaRuntime& cuda_runtime(int index);

// A point on a CUDA device's stream, for timing (the benchmarks): record()
// marks it behind the work queued so far, elapsed_ms() measures between two
// marks on the device's clock.
class Event {
 public:
  explicit Event(Device device);  // a cuda device; kiln::Error when it is unavailable
  ~Event();
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  void record(Stream stream = nullptr);
  // Waits until the work queued before record() has finished.
  void synchronize() const;
  Device device() const { return runtime_.device(); }

 private:
  friend double elapsed_ms(const Event& start, const Event& end);
  CudaRuntime& runtime_;
  CUevent event_ = nullptr;
};

// Milliseconds between two recorded events of one device (about half a
// microsecond resolution); waits for `end`.
double elapsed_ms(const Event& start, const Event& end);

}  // namespace kiln::runtime::cuda
