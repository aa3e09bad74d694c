// cuda:N's runtime: context, stream, the driver-backed caching pool, copies,
// events, and the registry of runtimes. See cuda_runtime.h.
#include "runtime/cuda/cuda_runtime.h"

#include <atomic>
#include <mutex>

#include "kiln/error.h"

namespace kiln::runtime::cuda {
namespace {

CUdeviceptr device_address(const Storage& s, size_t offset) {
  return CUdeviceptr(reinterpret_cast<uintptr_t>(s.data()) + offset);
}

// Errors a faulting kernel leaves behind (cuda.h: CUDA_ERROR_ILLEGAL_ADDRESS,
// _ASSERT, _HARDWARE_STACK_ERROR through _LAUNCH_FAILED). They are sticky:
// the context is unusable afterwards.
bool kernel_fault(CUresult r) {
  return r == 700 || r == 710 || (r >= 714 && r <= 719);
}

const Driver& usable_driver(int index) {
  std::string why;
  const Driver* d = cuda::driver(&why);
  KILN_USER_CHECK(d, "cannot use cuda:" << index << ": " << why);
  return *d;
}

std::string bytes_text(int64_t n) {
  constexpr int64_t kMiB = int64_t(1) << 20;
  if (n >= 10 * kMiB) return std::to_string(n / kMiB) + " MiB";
  return std::to_string(n) + " bytes";
}

}  // namespace

// ------------------------------------------------------------------------------- memory

// Blocks of the caching pool, straight from the driver.
class CudaRuntime::DriverBlocks final : public BlockSource {
 public:
  explicit DriverBlocks(CudaRuntime& runtime) : rt_(runtime) {}

  void* allocate(size_t bytes) override {
    rt_.make_current();
    CUdeviceptr p = 0;
    CUresult r = rt_.driver_.cuMemAlloc(&p, bytes);
    if (r == kErrorOutOfMemory) return nullptr;
    rt_.check(r, "cuMemAlloc of " + std::to_string(bytes) + " bytes");
    return reinterpret_cast<void*>(uintptr_t(p));
  }

  void free(void* block, size_t) override {
    // A cached block may still be read by work queued before it went back to
    // the pool; wait for that before the memory can change hands.
    rt_.synchronize();
    rt_.check(rt_.driver_.cuMemFree(CUdeviceptr(reinterpret_cast<uintptr_t>(block))), "cuMemFree");
  }

  std::string exhausted_note() override {
    MemoryInfo m = rt_.memory_info();
    return "; the driver reports " + bytes_text(m.free_bytes) + " free of " +
           bytes_text(m.total_bytes) + " (other processes may hold the rest)";
  }

 private:
  CudaRuntime& rt_;
};

// ------------------------------------------------------------------------------- runtime

CudaRuntime::CudaRuntime(int index) : device_(Device::cuda(index)), driver_(usable_driver(index)) {
  properties_ = device_properties(index);
  CUdevice dev = 0;
  check(driver_.cuDeviceGet(&dev, index), "cuDeviceGet");
  for (int d = 0; d < 3; ++d) {
    int grid = 0, block = 0;
    check(driver_.cuDeviceGetAttribute(&grid, kMaxGridDimX + d, dev), "cuDeviceGetAttribute");
    check(driver_.cuDeviceGetAttribute(&block, kMaxBlockDimX + d, dev), "cuDeviceGetAttribute");
    max_grid_[size_t(d)] = grid;
    max_block_[size_t(d)] = block;
  }
  // Released never: the runtime lives as long as the process.
  check(driver_.cuDevicePrimaryCtxRetain(&context_, dev), "cuDevicePrimaryCtxRetain");
  make_current();
  check(driver_.cuStreamCreate(&stream_, kStreamNonBlocking), "cuStreamCreate");
  pool_ = std::make_unique<CachingAllocator>(device_, uint64_t(properties_.total_memory),
                                             std::make_unique<DriverBlocks>(*this));
}

CudaRuntime::~CudaRuntime() = default;

void CudaRuntime::fail(CUresult r, const std::string& what) const {
  std::string msg = device_.str() + ": " + what + " failed: " + driver_.error_name(r);
  if (kernel_fault(r)) {
    throw InternalError("internal error: " + msg +
                        " (a kernel faulted; this device cannot be used again in this process)");
  }
  throw Error(msg);
}

void CudaRuntime::make_current() const {
  CUcontext current = nullptr;
  if (driver_.cuCtxGetCurrent(&current) == kSuccess && current == context_) return;
  check(driver_.cuCtxSetCurrent(context_), "cuCtxSetCurrent");
}

std::shared_ptr<Storage> CudaRuntime::allocate(size_t nbytes) {
  return pool_->allocate(nbytes);
}

void CudaRuntime::release_cached() {
  pool_->release_cached();
}

void CudaRuntime::synchronize(Stream stream) {
  make_current();
  check(driver_.cuStreamSynchronize(stream_for(stream)), "cuStreamSynchronize");
}

MemoryInfo CudaRuntime::memory_info() const {
  make_current();
  size_t free_bytes = 0, total_bytes = 0;
  check(driver_.cuMemGetInfo(&free_bytes, &total_bytes), "cuMemGetInfo");
  return {int64_t(free_bytes), int64_t(total_bytes)};
}

void CudaRuntime::copy(Storage& dst, size_t dst_offset, const Storage& src, size_t src_offset,
                       size_t nbytes, Stream stream) {
  const Device to = dst.device(), from = src.device();
  auto reachable = [](Device d) { return d.is_cpu() || d.kind == Device::Kind::CUDA; };
  KILN_INTERNAL_CHECK((to == device_ || from == device_) && reachable(to) && reachable(from),
                      device_.str() << " cannot copy from " << from.str() << " to " << to.str());
  check_copy_range(dst, dst_offset, nbytes, "copy destination");
  check_copy_range(src, src_offset, nbytes, "copy source");
  if (nbytes == 0) return;
  make_current();
  const CUstream s = stream_for(stream);
  if (from.is_cpu()) {
    const void* host = static_cast<const char*>(src.data()) + src_offset;
    check(driver_.cuMemcpyHtoDAsync(device_address(dst, dst_offset), host, nbytes, s),
          "cuMemcpyHtoDAsync");
    return;
  }
  if (to.is_cpu()) {
    void* host = static_cast<char*>(dst.data()) + dst_offset;
    check(driver_.cuMemcpyDtoHAsync(host, device_address(src, src_offset), nbytes, s),
          "cuMemcpyDtoHAsync");
    check(driver_.cuStreamSynchronize(s), "cuStreamSynchronize");
    return;
  }
  if (to == from) {
    check(driver_.cuMemcpyDtoDAsync(device_address(dst, dst_offset),
                                    device_address(src, src_offset), nbytes, s),
          "cuMemcpyDtoDAsync");
    return;
  }
  // Between two devices: the other device's stream may still write the
  // source or read the destination, and may reuse either block as soon as
  // this returns. Rare enough to wait on both sides.
  CudaRuntime& other = cuda_runtime(to == device_ ? from.index : to.index);
  other.synchronize();
  make_current();
  check(driver_.cuMemcpyPeerAsync(device_address(dst, dst_offset), cuda_runtime(to.index).context_,
                                  device_address(src, src_offset),
                                  cuda_runtime(from.index).context_, nbytes, s),
        "cuMemcpyPeerAsync from " + from.str() + " to " + to.str());
  check(driver_.cuStreamSynchronize(s), "cuStreamSynchronize");
}

void CudaRuntime::fill(Storage& dst, size_t offset, unsigned char value, size_t nbytes,
                       Stream stream) {
  KILN_INTERNAL_CHECK(dst.device() == device_,
                      device_.str() << " cannot fill memory on " << dst.device().str());
  check_copy_range(dst, offset, nbytes, "fill destination");
  if (nbytes == 0) return;
  make_current();
  check(driver_.cuMemsetD8Async(device_address(dst, offset), value, nbytes, stream_for(stream)),
        "cuMemsetD8Async");
}

// ------------------------------------------------------------------------------- registry

CudaRuntime& cuda_runtime(int index) {
  // Device ordinals beyond this are refused; no machine has that many GPUs.
  constexpr int kMaxDevices = 64;
  static std::atomic<CudaRuntime*> runtimes[kMaxDevices];
  static std::mutex mu;
  if (index >= 0 && index < kMaxDevices) {
    if (CudaRuntime* r = runtimes[index].load(std::memory_order_acquire)) return *r;
  }
  std::string why = unavailable_reason(index);
  KILN_USER_CHECK(why.empty(), "cannot use cuda:" << index << ": " << why);
  KILN_USER_CHECK(index < kMaxDevices, "cannot use cuda:" << index << ": Kiln drives at most "
                                                          << kMaxDevices << " CUDA devices");
  std::lock_guard<std::mutex> lock(mu);
  if (CudaRuntime* r = runtimes[index].load(std::memory_order_acquire)) return *r;
  // Never destroyed: storages may outlive everything else. A failure (the
  // context cannot be made) names the device and is retried on the next use.
  CudaRuntime* r = new CudaRuntime(index);
  runtimes[index].store(r, std::memory_order_release);
  return *r;
}

// ------------------------------------------------------------------------------- events

namespace {
CudaRuntime& runtime_of(Device device) {
  KILN_INTERNAL_CHECK(device.kind == Device::Kind::CUDA, "a CUDA event on " << device.str());
  return cuda_runtime(device.index);
}
}  // namespace

Event::Event(Device device) : runtime_(runtime_of(device)) {
  runtime_.make_current();
  runtime_.check(runtime_.driver().cuEventCreate(&event_, 0), "cuEventCreate");
}

Event::~Event() {
  // Destroying a recorded event before it completes is allowed: the driver
  // frees it once it has.
  try {
    runtime_.make_current();
  } catch (const Error&) {
  }
  runtime_.driver().cuEventDestroy(event_);
}

void Event::record(Stream stream) {
  runtime_.make_current();
  runtime_.check(runtime_.driver().cuEventRecord(event_, runtime_.stream_for(stream)),
                 "cuEventRecord");
}

void Event::synchronize() const {
  runtime_.make_current();
  runtime_.check(runtime_.driver().cuEventSynchronize(event_), "cuEventSynchronize");
}

double elapsed_ms(const Event& start, const Event& end) {
  KILN_INTERNAL_CHECK(&start.runtime_ == &end.runtime_, "timing between events of "
                                                            << start.device().str() << " and "
                                                            << end.device().str());
  end.synchronize();
  float ms = 0;
  end.runtime_.check(end.runtime_.driver().cuEventElapsedTime(&ms, start.event_, end.event_),
                     "cuEventElapsedTime");
  return double(ms);
}

}  // namespace kiln::runtime::cuda
