// Loaded CUDA code: a Module is one CUBIN or PTX image loaded on one device
// (cuModuleLoadData); kernel(name) is a runtime::KernelFunction that launches
// one of its functions with cuLaunchKernel, through the launch interface of
// runtime/executable.h.
//
// Calling convention (codegen/backend.h, the same for every backend): a
// kernel's parameters are its buffers' device pointers in Kernel::buffers
// order, then its scalars as 64-bit slots; cuLaunchKernel gets one pointer
// per parameter (to a device address, to an int64 slot). A launch runs on the
// stream of the LaunchConfig (null: the device's stream) with its grid, block
// and dynamic shared memory; a launch asking for more dynamic shared memory
// than the function allows by default (48 KiB less its static shared memory)
// opts the function in first (cuFuncSetAttribute), up to the device's limit.
//
// Modules are cached per device by the image's content: loading an image
// that is loaded on that device already (a function compiled twice) returns
// the loaded module while anything still holds it. A module is unloaded, its
// device's stream drained first, when the last holder (the module itself or
// one of its kernels) drops it.
//
// Errors: a load or a launch the driver refuses is kiln::InternalError with
// the driver's error name (Kiln made the code and the launch), except PTX
// newer than the driver understands, which is a kiln::Error naming the fix.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "runtime/cuda_driver.h"
#include "runtime/executable.h"

namespace kiln::runtime::cuda {

class CudaRuntime;

// What the driver says about one compiled function.
struct KernelAttributes {
  int max_threads_per_block = 0;  // the most a launch's block may have
  int registers = 0;              // per thread
  int static_shared_bytes = 0;
  int local_bytes = 0;  // per thread (spills and local arrays)
};

class Module;

class CudaKernel final : public KernelFunction {
 public:
  // Use Module::kernel.
  CudaKernel(std::shared_ptr<const Module> module, std::string name, CUfunction function);

  void launch(std::span<const Tensor> buffers, std::span<const int64_t> scalars,
              const LaunchConfig& config) const override;

  const std::string& name() const { return name_; }
  const KernelAttributes& attributes() const { return attributes_; }
  const Module& module() const { return *module_; }

 private:
  void allow_dynamic_shared(int64_t bytes) const;

  std::shared_ptr<const Module> module_;
  std::string name_;
  CUfunction function_;
  KernelAttributes attributes_;
  // The function's current limit on dynamic shared memory; raised (under
  // shared_mu_) by the first launch that needs more.
  mutable std::mutex shared_mu_;
  mutable std::atomic<int64_t> dynamic_shared_limit_{0};
};

class Module : public std::enable_shared_from_this<Module> {
  struct Private {};

 public:
  // The module of `image` (a CUBIN, a fatbinary, or PTX text; PTX needs no
  // trailing NUL) on `device`, loaded or found in the cache.
  static std::shared_ptr<const Module> load(Device device, std::string_view image);

  Module(Private, CudaRuntime& runtime, CUmodule handle);
  ~Module();
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  Device device() const;
  CudaRuntime& runtime() const { return runtime_; }
  // A function of this module as a KernelFunction; kiln::InternalError
  // naming the kernel when the module has no such function.
  std::shared_ptr<const CudaKernel> kernel(const std::string& name) const;

 private:
  CudaRuntime& runtime_;
  CUmodule handle_;
};

struct ModuleCacheStats {
  int64_t loads = 0;  // images loaded through the driver
  int64_t hits = 0;   // loads answered by a module already loaded
  int64_t live = 0;   // modules loaded now
};
ModuleCacheStats module_cache_stats();

}  // namespace kiln::runtime::cuda
