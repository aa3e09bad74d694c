// The fake CUDA driver's test controls (fake_driver.h), reached through the
// library KILN_CUDA_DRIVER names, as the runtime reaches its entry points.
#pragma once

#include <dlfcn.h>

#include <cstdlib>
#include <type_traits>

#include "tests/cuda_fake_driver/fake_driver.h"

namespace kiln::testing {

struct FakeCudaDriver {
  int (*launch_count)();
  int (*launch)(int i, KilnFakeCudaLaunch* out);
  void (*clear_launches)();
  int (*calls)(const char* entry_point);
  void (*fail_next)(const char* entry_point, int error);
  void (*set_memory_limit)(int device, unsigned long long bytes);
  unsigned long long (*live_bytes)(int device);
  int (*live_allocations)(int device);
  int (*pending)();
  int (*current_device)();
  int (*stream_flags)(void* stream);

  // The last launch the fake saw.
  KilnFakeCudaLaunch last_launch() const {
    KilnFakeCudaLaunch l{};
    launch(launch_count() - 1, &l);
    return l;
  }
};

// The controls, or null when KILN_CUDA_DRIVER does not name the fake.
inline const FakeCudaDriver* fake_cuda_driver() {
  static const FakeCudaDriver* fake = []() -> const FakeCudaDriver* {
    const char* path = std::getenv("KILN_CUDA_DRIVER");
    if (!path || !*path) return nullptr;
    // The same handle the runtime gets (or got) for this path.
    void* lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!lib || !dlsym(lib, "kiln_fake_cuda_launch_count")) return nullptr;
    auto* f = new FakeCudaDriver;
    auto get = [&](auto& fn, const char* name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib, name));
    };
    get(f->launch_count, "kiln_fake_cuda_launch_count");
    get(f->launch, "kiln_fake_cuda_launch");
    get(f->clear_launches, "kiln_fake_cuda_clear_launches");
    get(f->calls, "kiln_fake_cuda_calls");
    get(f->fail_next, "kiln_fake_cuda_fail_next");
    get(f->set_memory_limit, "kiln_fake_cuda_set_memory_limit");
    get(f->live_bytes, "kiln_fake_cuda_live_bytes");
    get(f->live_allocations, "kiln_fake_cuda_live_allocations");
    get(f->pending, "kiln_fake_cuda_pending");
    get(f->current_device, "kiln_fake_cuda_current_device");
    get(f->stream_flags, "kiln_fake_cuda_stream_flags");
    return f;
  }();
  return fake;
}

}  // namespace kiln::testing
