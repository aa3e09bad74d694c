// Loading libcuda.so.1, resolving the entry points by name, and the driver's
// answers about devices. See cuda_driver.h.
#include "runtime/cuda_driver.h"

#include <dlfcn.h>

#include "kiln/error.h"

namespace kiln::runtime::cuda {
namespace {

// The few CUresult and CUdevice_attribute values used here (from the driver
// API's published enums).
constexpr CUresult kSuccess = 0;
constexpr CUresult kErrorStubLibrary = 34;
constexpr CUresult kErrorNoDevice = 100;
constexpr int kMaxThreadsPerBlock = 1;
constexpr int kMaxSharedMemoryPerBlock = 8;
constexpr int kWarpSize = 10;
constexpr int kMultiprocessorCount = 16;
constexpr int kComputeCapabilityMajor = 75;
constexpr int kComputeCapabilityMinor = 76;
constexpr int kMaxRegistersPerMultiprocessor = 82;

struct Loaded {
  Driver api;
  std::string why;  // empty when api is usable
  int count = 0;
};

template <typename Fn>
bool resolve(void* lib, const char* symbol, Fn*& out, std::string& why) {
  out = reinterpret_cast<Fn*>(dlsym(lib, symbol));
  if (!out) {
    const char* e = dlerror();
    why = std::string("libcuda.so.1 has no ") + symbol + " (" + (e ? e : "no reason given") +
          "); the driver is too old";
  }
  return out != nullptr;
}

Loaded* load() {
  auto* l = new Loaded;
  // Kept open for the life of the process: code and memory from it may be in
  // use until exit.
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* e = dlerror();
    l->why = std::string("the NVIDIA driver library libcuda.so.1 was not found (") +
             (e ? e : "no reason given") + ")";
    return l;
  }
  Driver& d = l->api;
  if (!resolve(lib, "cuInit", d.cuInit, l->why) ||
      !resolve(lib, "cuGetErrorName", d.cuGetErrorName, l->why) ||
      !resolve(lib, "cuDeviceGetCount", d.cuDeviceGetCount, l->why) ||
      !resolve(lib, "cuDeviceGet", d.cuDeviceGet, l->why) ||
      !resolve(lib, "cuDeviceGetName", d.cuDeviceGetName, l->why) ||
      !resolve(lib, "cuDeviceGetAttribute", d.cuDeviceGetAttribute, l->why) ||
      !resolve(lib, "cuDeviceTotalMem_v2", d.cuDeviceTotalMem, l->why)) {
    return l;
  }
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
  p.max_threads_per_block = attribute(kMaxThreadsPerBlock);
  p.registers_per_sm = attribute(kMaxRegistersPerMultiprocessor);
  size_t total = 0;
  check(d.cuDeviceTotalMem(&total, dev), "cuDeviceTotalMem");
  p.total_memory = int64_t(total);
  return p;
}

}  // namespace kiln::runtime::cuda
