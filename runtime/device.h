// Devices in the runtime: one DeviceRuntime per device (its memory pool,
// copies to and from it, stream synchronization, what it is), and the
// registry that finds them.
//
// The host is a device too (memory from CachingAllocator::global(), copies
// are memcpy). `sim:0` and `sim:1` are simulated GPUs (runtime/sim_device.h):
// memory of their own that Tensor refuses to read from the host, so a plan
// that runs kernels there exercises the whole device path without a GPU.
// CUDA devices are found through the driver (runtime/cuda_driver.h) and run
// by runtime/cuda/cuda_runtime.h.
//
// Registry lookups are cheap (no allocation, no lock after the first use of a
// device) and runtimes live for the whole process: storages they hand out may
// outlive everything else.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "kiln/dtype.h"
#include "kiln/tensor.h"

namespace kiln::runtime {

// A device's queue of work, opaque to the plan (a CUstream for CUDA). Null is
// the device's default stream; work on one stream runs in order.
using Stream = void*;

// What a device is, for the compiler's Target and for messages. The GPU fields
// are zero for the host.
struct DeviceProperties {
  std::string name;  // "cpu", "sim (simulated GPU)", "NVIDIA H100 80GB HBM3"
  bool gpu = false;  // the fields below describe a GPU
  int compute_capability_major = 0, compute_capability_minor = 0;
  int sm_count = 0;
  int warp_size = 0;
  int64_t shared_memory_per_block = 0;  // bytes a block may use without opting in
  // The most a block may use after opting in (a kernel attribute set at
  // launch); shared_memory_per_block where there is no opt-in.
  int64_t shared_memory_per_block_optin = 0;
  int max_threads_per_block = 0;
  int registers_per_sm = 0;  // 32-bit registers
  int64_t total_memory = 0;  // bytes
};

class DeviceRuntime {
 public:
  virtual ~DeviceRuntime() = default;

  virtual Device device() const = 0;
  virtual const DeviceProperties& properties() const = 0;

  // A storage of at least `nbytes` on this device from its caching pool; it
  // goes back to the pool when its last reference drops. kiln::Error naming
  // the size and the device when the device is out of memory.
  virtual std::shared_ptr<Storage> allocate(size_t nbytes) = 0;

  // Copies `nbytes` from `src` at byte `src_offset` to `dst` at `dst_offset`.
  // One side lives on this device; the other on the host, on this device, or
  // (where the device reaches it, as every sim device reaches every other) on
  // a peer of the same kind. The copy is ordered on `stream`; a copy to the
  // host has finished when this returns. Ranges outside a storage, or a side
  // this device cannot reach, are kiln::InternalError (a caller's bug).
  virtual void copy(Storage& dst, size_t dst_offset, const Storage& src, size_t src_offset,
                    size_t nbytes, Stream stream = nullptr) = 0;

  // Waits until all work queued on `stream` has finished.
  virtual void synchronize(Stream stream = nullptr) = 0;

  // Returns the pool's cached (unused) blocks to the system.
  virtual void release_cached() = 0;
};

// The runtime of `device`; kiln::Error saying what is missing when the device
// is unavailable (the message of device_unavailable_reason).
DeviceRuntime& device_runtime(Device device);

// Empty when `device` is usable (device_runtime(device) succeeds); otherwise
// why not, e.g. "sim:3 does not exist (2 sim devices)" or, for CUDA, what is
// missing ("the NVIDIA driver library libcuda.so.1 was not found (...)").
std::string device_unavailable_reason(Device device);

// Copies bytes between any two storages, through the runtime of the device
// side (the destination's when both are devices). Same contract as
// DeviceRuntime::copy; devices of different kinds are a kiln::Error (copy
// through the host).
void copy_bytes(Storage& dst, size_t dst_offset, const Storage& src, size_t src_offset,
                size_t nbytes, Stream stream = nullptr);

// Checks that [offset, offset + nbytes) lies inside `s` (kiln::InternalError
// naming `what` otherwise); for DeviceRuntime::copy implementations.
void check_copy_range(const Storage& s, size_t offset, size_t nbytes, const char* what);

// Throws kiln::Error when `t` does not live on the host, naming `op`, the
// device and the fix (.to(kiln::Device::cpu())): host code never reads device
// memory through a Tensor, even where (as for sim) it could.
void check_host_readable(const Tensor& t, const char* op);

}  // namespace kiln::runtime
