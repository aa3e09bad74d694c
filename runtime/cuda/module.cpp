// Loading images, the per-device module cache, and launches through
// cuLaunchKernel. See module.h.
#include "runtime/cuda/module.h"

#include <atomic>
#include <cstring>
#include <map>
#include <tuple>
#include <vector>

#include "kiln/error.h"
#include "runtime/cuda/cuda_runtime.h"
#include "runtime/kernel_cache.h"

namespace kiln::runtime::cuda {
namespace {

std::string dims_text(const int64_t (&v)[3]) {
  return "[" + std::to_string(v[0]) + ", " + std::to_string(v[1]) + ", " + std::to_string(v[2]) +
         "]";
}

// Binary images are passed as they are; anything else is PTX text, which the
// driver reads up to a NUL (NVRTC's PTX carries one, text from elsewhere may
// not).
bool is_binary_image(std::string_view image) {
  static constexpr unsigned char kElf[4] = {0x7f, 'E', 'L', 'F'};
  static constexpr unsigned char kFatbin[4] = {0x50, 0xed, 0x55, 0xba};  // 0xBA55ED50, LE
  return image.size() >= 4 &&
         (std::memcmp(image.data(), kElf, 4) == 0 || std::memcmp(image.data(), kFatbin, 4) == 0);
}

struct ModuleCache {
  std::mutex mu;
  // (device, content hash, size) -> the module while anything holds it
  std::map<std::tuple<int, uint64_t, uint64_t, size_t>, std::weak_ptr<const Module>> loaded;
  int64_t loads = 0, hits = 0;
};

ModuleCache& module_cache() {
  static ModuleCache* c = new ModuleCache;  // modules may be dropped during exit
  return *c;
}

std::atomic<int64_t> live_modules{0};

}  // namespace

// ------------------------------------------------------------------------------- modules

std::shared_ptr<const Module> Module::load(Device device, std::string_view image) {
  KILN_INTERNAL_CHECK(device.kind == Device::Kind::CUDA, "a CUDA module on " << device.str());
  KILN_INTERNAL_CHECK(!image.empty(), "an empty CUDA image for " << device.str());
  CudaRuntime& rt = cuda_runtime(device.index);
  CacheKey hash = KeyHasher().add(image).key();
  auto key = std::make_tuple(device.index, hash.hi, hash.lo, image.size());
  ModuleCache& cache = module_cache();
  // Held while loading, so two threads loading one image load it once.
  std::lock_guard<std::mutex> lock(cache.mu);
  auto it = cache.loaded.find(key);
  if (it != cache.loaded.end()) {
    if (std::shared_ptr<const Module> m = it->second.lock()) {
      ++cache.hits;
      return m;
    }
  }
  std::string text;
  const void* data = image.data();
  if (!is_binary_image(image) && image.back() != '\0') {
    text.assign(image);  // std::string keeps a NUL after its end
    data = text.c_str();
  }
  rt.make_current();
  CUmodule handle = nullptr;
  CUresult r = rt.driver().cuModuleLoadData(&handle, data);
  if (r != kSuccess) {
    std::string msg = device.str() + ": cuModuleLoadData failed: " + rt.driver().error_name(r);
    KILN_USER_CHECK(r != kErrorUnsupportedPtxVersion,
                    msg << " (the PTX is newer than this NVIDIA driver understands; update the "
                           "driver, or compile for this device's architecture as a CUBIN)");
    throw InternalError("internal error: " + msg + " (a " + std::to_string(image.size()) +
                        "-byte " + (is_binary_image(image) ? "binary image" : "PTX image") + ")");
  }
  auto module = std::make_shared<const Module>(Private{}, rt, handle);
  ++cache.loads;
  // Forget modules nobody holds any more, then remember this one.
  for (auto e = cache.loaded.begin(); e != cache.loaded.end();) {
    e = e->second.expired() ? cache.loaded.erase(e) : std::next(e);
  }
  cache.loaded[key] = module;
  return module;
}

Module::Module(Private, CudaRuntime& runtime, CUmodule handle)
    : runtime_(runtime), handle_(handle) {
  live_modules.fetch_add(1, std::memory_order_relaxed);
}

Module::~Module() {
  live_modules.fetch_sub(1, std::memory_order_relaxed);
  // Kernels of this module may still be queued; unload after they ran. A
  // failure here (a context lost to a kernel fault, the driver shutting down
  // at exit) has already been reported where it happened, or cannot be.
  try {
    runtime_.synchronize();
  } catch (const Error&) {
  }
  runtime_.driver().cuModuleUnload(handle_);
}

Device Module::device() const {
  return runtime_.device();
}

std::shared_ptr<const CudaKernel> Module::kernel(const std::string& name) const {
  runtime_.make_current();
  CUfunction f = nullptr;
  CUresult r = runtime_.driver().cuModuleGetFunction(&f, handle_, name.c_str());
  KILN_INTERNAL_CHECK(r == kSuccess, device().str() << ": the loaded module has no kernel " << name
                                                    << " (cuModuleGetFunction: "
                                                    << runtime_.driver().error_name(r) << ")");
  return std::make_shared<const CudaKernel>(shared_from_this(), name, f);
}

ModuleCacheStats module_cache_stats() {
  ModuleCache& cache = module_cache();
  std::lock_guard<std::mutex> lock(cache.mu);
  ModuleCacheStats s;
  s.loads = cache.loads;
  s.hits = cache.hits;
  s.live = live_modules.load(std::memory_order_relaxed);
  return s;
}

// ------------------------------------------------------------------------------- kernels

CudaKernel::CudaKernel(std::shared_ptr<const Module> module, std::string name, CUfunction function)
    : module_(std::move(module)), name_(std::move(name)), function_(function) {
  const CudaRuntime& rt = module_->runtime();
  auto attribute = [&](int which) {
    int v = 0;
    rt.check(rt.driver().cuFuncGetAttribute(&v, which, function_),
             "cuFuncGetAttribute of kernel " + name_);
    return v;
  };
  attributes_.max_threads_per_block = attribute(kFuncMaxThreadsPerBlock);
  attributes_.registers = attribute(kFuncNumRegs);
  attributes_.static_shared_bytes = attribute(kFuncSharedSizeBytes);
  attributes_.local_bytes = attribute(kFuncLocalSizeBytes);
  // 48 KiB less the static shared memory until a launch opts in to more.
  dynamic_shared_limit_.store(attribute(kFuncMaxDynamicSharedSizeBytes));
}

void CudaKernel::allow_dynamic_shared(int64_t bytes) const {
  std::lock_guard<std::mutex> lock(shared_mu_);
  if (bytes <= dynamic_shared_limit_.load(std::memory_order_relaxed)) return;
  const CudaRuntime& rt = module_->runtime();
  CUresult r =
      rt.driver().cuFuncSetAttribute(function_, kFuncMaxDynamicSharedSizeBytes, int(bytes));
  if (r != kSuccess) {
    throw InternalError(
        "internal error: " + rt.device().str() + ": kernel " + name_ + " cannot opt in to " +
        std::to_string(bytes) +
        " bytes of dynamic shared memory (cuFuncSetAttribute: " + rt.driver().error_name(r) + ")");
  }
  dynamic_shared_limit_.store(bytes, std::memory_order_release);
}

void CudaKernel::launch(std::span<const Tensor> buffers, std::span<const int64_t> scalars,
                        const LaunchConfig& config) const {
  CudaRuntime& rt = module_->runtime();
  const Device device = rt.device();
  // The driver would refuse most of these with CUDA_ERROR_INVALID_VALUE;
  // checked here so the message says which limit.
  int64_t threads = 1;
  for (int d = 0; d < 3; ++d) {
    KILN_INTERNAL_CHECK(
        config.block[d] >= 1 && config.block[d] <= rt.max_block()[size_t(d)] && config.grid[d] >= 1,
        "kernel " << name_ << " on " << device.str() << ": grid " << dims_text(config.grid)
                  << ", block " << dims_text(config.block));
    threads *= config.block[d];
    // Grids grow with the inputs: a grid too large is the input's size.
    KILN_USER_CHECK(config.grid[d] <= rt.max_grid()[size_t(d)],
                    "kernel " << name_ << " on " << device.str() << " needs a grid of "
                              << dims_text(config.grid) << " blocks, more than the device allows ("
                              << rt.max_grid()[0] << ", " << rt.max_grid()[1] << ", "
                              << rt.max_grid()[2] << "); the inputs are too large for it");
  }
  KILN_INTERNAL_CHECK(threads <= attributes_.max_threads_per_block,
                      "kernel " << name_ << " on " << device.str() << ": a block of " << threads
                                << " threads, but the kernel allows at most "
                                << attributes_.max_threads_per_block);
  const int64_t optin = rt.properties().shared_memory_per_block_optin;
  KILN_INTERNAL_CHECK(
      config.shared_bytes >= 0 && attributes_.static_shared_bytes + config.shared_bytes <= optin,
      "kernel " << name_ << " on " << device.str() << ": " << config.shared_bytes
                << " bytes of dynamic and " << attributes_.static_shared_bytes
                << " of static shared memory, more than a block may have (" << optin << ")");
  rt.make_current();
  if (config.shared_bytes > dynamic_shared_limit_.load(std::memory_order_acquire)) {
    allow_dynamic_shared(config.shared_bytes);
  }

  // One pointer per parameter: to each buffer's device address, to each
  // scalar's slot. The driver copies the values before cuLaunchKernel returns.
  const size_t n = buffers.size() + scalars.size();
  constexpr size_t kInline = 32;
  CUdeviceptr inline_addresses[kInline];
  void* inline_params[kInline];
  std::vector<CUdeviceptr> many_addresses;
  std::vector<void*> many_params;
  CUdeviceptr* addresses = inline_addresses;
  void** params = inline_params;
  if (n > kInline) {
    many_addresses.resize(buffers.size());
    many_params.resize(n);
    addresses = many_addresses.data();
    params = many_params.data();
  }
  for (size_t i = 0; i < buffers.size(); ++i) {
    KILN_INTERNAL_CHECK(buffers[i].device() == device, "kernel " << name_ << " on " << device.str()
                                                                 << " gets buffer " << i << " on "
                                                                 << buffers[i].device().str());
    addresses[i] = CUdeviceptr(reinterpret_cast<uintptr_t>(buffers[i].data_ptr()));
    params[i] = &addresses[i];
  }
  for (size_t j = 0; j < scalars.size(); ++j) {
    params[buffers.size() + j] = const_cast<int64_t*>(&scalars[j]);
  }
  CUresult r = rt.driver().cuLaunchKernel(
      function_, unsigned(config.grid[0]), unsigned(config.grid[1]), unsigned(config.grid[2]),
      unsigned(config.block[0]), unsigned(config.block[1]), unsigned(config.block[2]),
      unsigned(config.shared_bytes), rt.stream_for(config.stream), n ? params : nullptr, nullptr);
  if (r != kSuccess) {
    throw InternalError("internal error: " + device.str() + ": launching kernel " + name_ +
                        " (grid " + dims_text(config.grid) + ", block " + dims_text(config.block) +
                        ", " + std::to_string(config.shared_bytes) +
                        " bytes of dynamic shared memory) failed: " + rt.driver().error_name(r));
  }
}

}  // namespace kiln::runtime::cuda
