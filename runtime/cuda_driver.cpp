// Loading libcuda.so.1, resolving the entry points by name, and the driver's
// answers about devices. See cuda_driver.h.
#include "runtime/cuda_driver.h"

#include <dlfcn.h>

#include <cstdlib>
#include <initializer_list>

#include "kiln/error.h"

namespace kiln::runtime::cuda {
namespace {

struct Loaded {
  Driver api;
  std::string why;  // empty when api is usable
  int count = 0;
};

// Resolves the first of `symbols` the library exports; the last name is the
// one a missing entry point is reported by.
template <typename Fn>
bool resolve(void* lib, const std::string& lib_name, std::initializer_list<const char*> symbols,
             Fn*& out, std::string& why) {
  const char* e = nullptr;
  for (const char* symbol : symbols) {
    dlerror();
    out = reinterpret_cast<Fn*>(dlsym(lib, symbol));
    if (out) return true;
    e = dlerror();
  }
  why = lib_name + " has no " + *symbols.begin() + " (" + (e ? e : "no reason given") +
        "); the driver is too old";
  return false;
}

bool resolve_all(void* lib, const std::string& name, Driver& d, std::string& why) {
  return resolve(lib, name, {"cuInit"}, d.cuInit, why) &&
         resolve(lib, name, {"cuGetErrorName"}, d.cuGetErrorName, why) &&
         resolve(lib, name, {"cuDeviceGetCount"}, d.cuDeviceGetCount, why) &&
         resolve(lib, name, {"cuDeviceGet"}, d.cuDeviceGet, why) &&
         resolve(lib, name, {"cuDeviceGetName"}, d.cuDeviceGetName, why) &&
         resolve(lib, name, {"cuDeviceGetAttribute"}, d.cuDeviceGetAttribute, why) &&
         resolve(lib, name, {"cuDeviceTotalMem_v2"}, d.cuDeviceTotalMem, why) &&
         resolve(lib, name, {"cuDevicePrimaryCtxRetain"}, d.cuDevicePrimaryCtxRetain, why) &&
         resolve(lib, name, {"cuCtxGetCurrent"}, d.cuCtxGetCurrent, why) &&
         resolve(lib, name, {"cuCtxSetCurrent"}, d.cuCtxSetCurrent, why) &&
         resolve(lib, name, {"cuMemAlloc_v2"}, d.cuMemAlloc, why) &&
         resolve(lib, name, {"cuMemFree_v2"}, d.cuMemFree, why) &&
         resolve(lib, name, {"cuMemGetInfo_v2"}, d.cuMemGetInfo, why) &&
         resolve(lib, name, {"cuMemcpyHtoDAsync_v2"}, d.cuMemcpyHtoDAsync, why) &&
         resolve(lib, name, {"cuMemcpyDtoHAsync_v2"}, d.cuMemcpyDtoHAsync, why) &&
         resolve(lib, name, {"cuMemcpyDtoDAsync_v2"}, d.cuMemcpyDtoDAsync, why) &&
         resolve(lib, name, {"cuMemcpyPeerAsync"}, d.cuMemcpyPeerAsync, why) &&
         resolve(lib, name, {"cuMemsetD8Async"}, d.cuMemsetD8Async, why) &&
         resolve(lib, name, {"cuStreamCreate"}, d.cuStreamCreate, why) &&
         resolve(lib, name, {"cuStreamSynchronize"}, d.cuStreamSynchronize, why) &&
         resolve(lib, name, {"cuEventCreate"}, d.cuEventCreate, why) &&
         resolve(lib, name, {"cuEventRecord"}, d.cuEventRecord, why) &&
         resolve(lib, name, {"cuEventSynchronize"}, d.cuEventSynchronize, why) &&
         // Timing is the same in both; CUDA 13's cuda.h names _v2, older
         // drivers export only the plain symbol.
         resolve(lib, name, {"cuEventElapsedTime_v2", "cuEventElapsedTime"}, d.cuEventElapsedTime,
                 why) &&
         resolve(lib, name, {"cuEventDestroy_v2"}, d.cuEventDestroy, why) &&
         resolve(lib, name, {"cuModuleLoadData"}, d.cuModuleLoadData, why) &&
         resolve(lib, name, {"cuModuleUnload"}, d.cuModuleUnload, why) &&
         resolve(lib, name, {"cuModuleGetFunction"}, d.cuModuleGetFunction, why) &&
         resolve(lib, name, {"cuFuncGetAttribute"}, d.cuFuncGetAttribute, why) &&
         resolve(lib, name, {"cuFuncSetAttribute"}, d.cuFuncSetAttribute, why) &&
         resolve(lib, name, {"cuLaunchKernel"}, d.cuLaunchKernel, why);
}

Loaded* load() {
  auto* l = new Loaded;
  // KILN_CUDA_DRIVER names another library (the tests' fake driver).
  const char* override_path = std::getenv("KILN_CUDA_DRIVER");
  const bool overridden = override_path && *override_path;
  const std::string name = overridden ? std::string(override_path) : "libcuda.so.1";
  // Kept open for the life of the process: code and memory from it may be in
  // use until exit.
  void* lib = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* e = dlerror();
    l->why = (overridden ? "the CUDA driver library " + name + " named by KILN_CUDA_DRIVER"
                         : "the NVIDIA driver library " + name) +
             " was not found (" + (e ? e : "no reason given") + ")";
    return l;
  }
  Driver& d = l->api;
  if (!resolve_all(lib, name, d, l->why)) return l;
  CUresult r = d.cuInit(0);
  if (r == kErrorNoDevice) {
    l->why = "no CUDA device";
    return l;
  }
  if (r != kSuccess) {
    l->why = "cuInit failed: " + d.error_name(r);
    // The stub's cuGetErrorName fails too; say what the stub is.
    if (r == kErrorStubLibrary) {
      l->why =
          "cuInit failed: CUDA_ERROR_STUB_LIBRARY (the libcuda.so.1 found is the CUDA "
          "toolkit's stub, not an NVIDIA driver)";
    }
    return l;
  }
  r = d.cuDeviceGetCount(&l->count);
  if (r != kSuccess) {
    l->why = "cuDeviceGetCount failed: " + d.error_name(r);
    l->count = 0;
  } else if (l->count <= 0) {
    l->why = "no CUDA device";
    l->count = 0;
  }
  return l;
}

const Loaded& loaded() {
  static const Loaded* l = load();  // never freed: the library stays loaded
  return *l;
}

}  // namespace

std::string Driver::error_name(CUresult r) const {
  const char* name = nullptr;
  if (cuGetErrorName && cuGetErrorName(r, &name) == kSuccess && name) return name;
  return "CUresult " + std::to_string(r);
}

const Driver* driver(std::string* why) {
  const Loaded& l = loaded();
  if (why) *why = l.why;
  return l.why.empty() ? &l.api : nullptr;
}

int device_count() {
  return loaded().count;
}

std::string unavailable_reason(int index) {
  const Loaded& l = loaded();
  if (!l.why.empty()) return l.why;
  if (index < 0 || index >= l.count) {
    return "cuda:" + std::to_string(index) + " does not exist (" + std::to_string(l.count) +
           (l.count == 1 ? " device)" : " devices)");
  }
  return "";
}

DeviceProperties device_properties(int index) {
  std::string why = unavailable_reason(index);
  KILN_USER_CHECK(why.empty(), "cannot use cuda:" << index << ": " << why);
  const Driver& d = loaded().api;
  auto check = [&](CUresult r, const char* call) {
    KILN_USER_CHECK(r == kSuccess,
                    "cuda:" << index << ": " << call << " failed: " << d.error_name(r));
  };
  CUdevice dev = 0;
  check(d.cuDeviceGet(&dev, index), "cuDeviceGet");
  DeviceProperties p;
  char name[256] = {};
  check(d.cuDeviceGetName(name, int(sizeof name) - 1, dev), "cuDeviceGetName");
  p.name = name;
  p.gpu = true;
  auto attribute = [&](int which) {
    int v = 0;
    check(d.cuDeviceGetAttribute(&v, which, dev), "cuDeviceGetAttribute");
    return v;
  };
  p.compute_capability_major = attribute(kComputeCapabilityMajor);
  p.compute_capability_minor = attribute(kComputeCapabilityMinor);
  p.sm_count = attribute(kMultiprocessorCount);
  p.warp_size = attribute(kWarpSize);
  p.shared_memory_per_block = attribute(kMaxSharedMemoryPerBlock);
  p.shared_memory_per_block_optin = attribute(kMaxSharedMemoryPerBlockOptin);
  p.max_threads_per_block = attribute(kMaxThreadsPerBlock);
  p.registers_per_sm = attribute(kMaxRegistersPerMultiprocessor);
  size_t total = 0;
  check(d.cuDeviceTotalMem(&total, dev), "cuDeviceTotalMem");
  p.total_memory = int64_t(total);
  return p;
}

}  // namespace kiln::runtime::cuda
