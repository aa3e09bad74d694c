// The simulated GPU: a DeviceRuntime whose memory is a caching pool of its own
// (not CachingAllocator::global(), so host and device memory never mix) and
// whose properties are a fixed Hopper-like GPU's, so GPU schedules get the
// numbers a real device would give them.
//
// Its memory is host memory underneath: kernels (the loop-IR evaluator) reach
// it through raw pointers, as a GPU kernel reaches device memory, while a host
// Tensor refuses element access to it. Everything runs synchronously, so
// streams order nothing and synchronize() returns at once. There are
// kNumSimDevices of them, and each reaches every other directly (peer copies),
// so cross-device plans are testable too.
#pragma once

#include "runtime/device.h"

namespace kiln::runtime {

inline constexpr int kNumSimDevices = 2;
// Each sim device's memory size: large enough for any test, small enough that
// "out of memory on sim:N" is reachable without exhausting the host.
inline constexpr uint64_t kSimMemoryBytes = uint64_t(16) << 30;

// The runtime of sim:index; requires 0 <= index < kNumSimDevices.
DeviceRuntime& sim_runtime(int index);

}  // namespace kiln::runtime
