// A fake CUDA driver: the driver API entry points Kiln's CUDA runtime
// resolves (runtime/cuda_driver.cpp), implemented on host memory, so the
// runtime, its allocator, copies and launches are tested on machines without
// a GPU. Tests load it with KILN_CUDA_DRIVER=<path of this library> and steer
// it through fake_driver.h. It declares its own types and values from the
// published driver API, as a driver would, and includes nothing of Kiln's.
//
// What it models, because the runtime has to get it right:
// - Contexts: one primary context per device, current per thread. Calls that
//   need one fail with CUDA_ERROR_INVALID_CONTEXT when none is current, and
//   streams, functions and events work only with their own context current.
// - Memory: cuMemAlloc_v2 is aligned host memory filled with 0xff bytes (NaN
//   as f32), recorded with its size; copies, memsets and the built-in kernels
//   check that every device range lies in a live allocation. A per-device
//   limit makes out-of-memory reachable.
// - Streams: work queued on a stream runs only when something waits for it
//   (cuStreamSynchronize on it, cuEventSynchronize on an event recorded on
//   it; cuMemFree_v2, cuModuleUnload and cuEventDestroy_v2 wait for every
//   stream), so a runtime that reads a copy's result without waiting reads
//   stale bytes. cuMemcpyHtoDAsync_v2 stages its host source at the call, as
//   the driver does for pageable memory. The null stream runs work at once.
// - Modules: an image is text in this format (not a CUBIN), NUL-terminated
//   like PTX:
//     kiln-fake-cuda-module
//     <function> <builtin> <parameter count> [max_threads=N] [static_shared=N] [regs=N] [local=N]
//   one line per function, naming the host function run for its launches
//   (i = blockIdx.x * blockDim.x + threadIdx.x over the launch's x extents):
//     saxpy     (x f32*, y f32*, out f32*, n i64, a f32 in the low 32 bits):
//               out[i] = a * x[i] + y[i] for every thread i < n
//     scale_f64 (x f32*, out f32*, n i64, s f64 bits): out[i] = x[i] * s
//     record    (anything): nothing; the launch log has what was passed
//     fault     (anything): an illegal address, reported when waited for
//   A CUBIN (64-bit ELF) is accepted too: its ".text.<name>" sections are
//   functions run as `record`, their parameters not read (nparams -1).
//   Launches check grid, block and dynamic shared memory against the
//   device's and the function's limits as the driver does, and are logged.
// - Devices: KILN_FAKE_CUDA_DEVICES of them (default 2; 0 makes cuInit fail
//   with CUDA_ERROR_NO_DEVICE), each an H100 SXM by its attributes.
//
// Every entry point takes one lock, so the fake is thread-safe and its
// streams run one at a time.
#include "tests/cuda_fake_driver/fake_state.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

using namespace kiln_fake;

// ------------------------------------------------------------------------------- the driver API

FAKE_API CUresult cuInit(unsigned flags) {
  FAKE_ENTRY("cuInit");
  if (flags != 0) return kInvalidValue;
  const char* n = std::getenv("KILN_FAKE_CUDA_DEVICES");
  int devices = n && *n ? std::atoi(n) : 2;
  devices = std::clamp(devices, 0, kMaxDevices);
  if (devices == 0) return kNoDevice;
  s.devices = devices;
  for (int d = 0; d < devices; ++d) {
    s.contexts[d].device = d;
    if (s.limit[d] == 0) s.limit[d] = kTotalMemory;
  }
  s.initialized = true;
  return kOk;
}

FAKE_API CUresult cuGetErrorName(CUresult error, const char** name) {
  static const std::map<CUresult, const char*> names = {
      {kOk, "CUDA_SUCCESS"},
      {kInvalidValue, "CUDA_ERROR_INVALID_VALUE"},
      {kOutOfMemory, "CUDA_ERROR_OUT_OF_MEMORY"},
      {kNotInitialized, "CUDA_ERROR_NOT_INITIALIZED"},
      {kNoDevice, "CUDA_ERROR_NO_DEVICE"},
      {kInvalidDevice, "CUDA_ERROR_INVALID_DEVICE"},
      {kInvalidImage, "CUDA_ERROR_INVALID_IMAGE"},
      {kInvalidContext, "CUDA_ERROR_INVALID_CONTEXT"},
      {222, "CUDA_ERROR_UNSUPPORTED_PTX_VERSION"},
      {kInvalidHandle, "CUDA_ERROR_INVALID_HANDLE"},
      {kNotFound, "CUDA_ERROR_NOT_FOUND"},
      {kNotReady, "CUDA_ERROR_NOT_READY"},
      {kIllegalAddress, "CUDA_ERROR_ILLEGAL_ADDRESS"},
      {kLaunchOutOfResources, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES"},
      {kLaunchFailed, "CUDA_ERROR_LAUNCH_FAILED"},
  };
  auto it = names.find(error);
  if (!name) return kInvalidValue;
  *name = it == names.end() ? nullptr : it->second;
  return it == names.end() ? kInvalidValue : kOk;
}

FAKE_API CUresult cuDeviceGetCount(int* count) {
  FAKE_ENTRY("cuDeviceGetCount");
  *count = s.devices;
  return kOk;
}

FAKE_API CUresult cuDeviceGet(int* device, int ordinal) {
  FAKE_ENTRY("cuDeviceGet");
  if (ordinal < 0 || ordinal >= s.devices) return kInvalidDevice;
  *device = ordinal;
  return kOk;
}

FAKE_API CUresult cuDeviceGetName(char* name, int len, int device) {
  FAKE_ENTRY("cuDeviceGetName");
  if (device < 0 || device >= s.devices) return kInvalidDevice;
  if (!name || len <= 0) return kInvalidValue;
  std::snprintf(name, size_t(len), "NVIDIA H100 80GB HBM3 (Kiln fake driver)");
  return kOk;
}

FAKE_API CUresult cuDeviceGetAttribute(int* value, int attribute, int device) {
  FAKE_ENTRY("cuDeviceGetAttribute");
  if (device < 0 || device >= s.devices) return kInvalidDevice;
  int v = device_attribute(attribute);
  if (v < 0) return kInvalidValue;
  *value = v;
  return kOk;
}

FAKE_API CUresult cuDeviceTotalMem_v2(size_t* bytes, int device) {
  FAKE_ENTRY("cuDeviceTotalMem_v2");
  if (device < 0 || device >= s.devices) return kInvalidDevice;
  *bytes = kTotalMemory;
  return kOk;
}

FAKE_API CUresult cuDevicePrimaryCtxRetain(void** ctx, int device) {
  FAKE_ENTRY("cuDevicePrimaryCtxRetain");
  if (device < 0 || device >= s.devices) return kInvalidDevice;
  *ctx = &s.contexts[device];
  return kOk;
}

FAKE_API CUresult cuCtxGetCurrent(void** ctx) {
  FAKE_ENTRY("cuCtxGetCurrent");
  *ctx = current;
  return kOk;
}

FAKE_API CUresult cuCtxSetCurrent(void* ctx) {
  FAKE_ENTRY("cuCtxSetCurrent");
  auto* c = static_cast<Context*>(ctx);
  if (c && (c < s.contexts || c >= s.contexts + s.devices)) return kInvalidContext;
  current = c;
  return kOk;
}

FAKE_API CUresult cuMemAlloc_v2(CUdeviceptr* ptr, size_t bytes) {
  FAKE_ENTRY("cuMemAlloc_v2");
  NEED_CONTEXT();
  if (bytes == 0) return kInvalidValue;
  const int device = current->device;
  if (live_bytes(s, device) + bytes > s.limit[device]) return kOutOfMemory;
  const size_t rounded = (bytes + 255) / 256 * 256;
  void* p = std::aligned_alloc(256, rounded);
  if (!p) return kOutOfMemory;
  std::memset(p, 0xff, rounded);
  s.allocations[reinterpret_cast<uintptr_t>(p)] = {bytes, device};
  *ptr = CUdeviceptr(reinterpret_cast<uintptr_t>(p));
  return kOk;
}

FAKE_API CUresult cuMemFree_v2(CUdeviceptr ptr) {
  FAKE_ENTRY("cuMemFree_v2");
  NEED_CONTEXT();
  CUresult r = drain_all(s);  // frees wait for the device, as cudaFree does
  auto it = s.allocations.find(uintptr_t(ptr));
  if (it == s.allocations.end()) return kInvalidValue;
  std::free(reinterpret_cast<void*>(it->first));
  s.allocations.erase(it);
  return r;
}

FAKE_API CUresult cuMemGetInfo_v2(size_t* free_bytes, size_t* total_bytes) {
  FAKE_ENTRY("cuMemGetInfo_v2");
  NEED_CONTEXT();
  const int device = current->device;
  *total_bytes = kTotalMemory;
  *free_bytes = std::min(s.limit[device], kTotalMemory) - live_bytes(s, device);
  return kOk;
}

FAKE_API CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void* src, size_t bytes,
                                       void* stream) {
  FAKE_ENTRY("cuMemcpyHtoDAsync_v2");
  NEED_CONTEXT();
  Stream* st = nullptr;
  if (CUresult r = use_stream(s, stream, &st)) return r;
  if (!find_range(s, dst, bytes) || (!src && bytes)) return kInvalidValue;
  auto staged = std::make_shared<std::vector<char>>(static_cast<const char*>(src),
                                                    static_cast<const char*>(src) + bytes);
  return enqueue(st, [&s, dst, staged] {
    if (!find_range(s, dst, staged->size())) return kIllegalAddress;
    std::memcpy(reinterpret_cast<void*>(uintptr_t(dst)), staged->data(), staged->size());
    return kOk;
  });
}

FAKE_API CUresult cuMemcpyDtoHAsync_v2(void* dst, CUdeviceptr src, size_t bytes, void* stream) {
  FAKE_ENTRY("cuMemcpyDtoHAsync_v2");
  NEED_CONTEXT();
  Stream* st = nullptr;
  if (CUresult r = use_stream(s, stream, &st)) return r;
  if (!find_range(s, src, bytes) || (!dst && bytes)) return kInvalidValue;
  return enqueue(st, [&s, dst, src, bytes] {
    if (!find_range(s, src, bytes)) return kIllegalAddress;
    std::memcpy(dst, reinterpret_cast<const void*>(uintptr_t(src)), bytes);
    return kOk;
  });
}

FAKE_API CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t bytes,
                                       void* stream) {
  FAKE_ENTRY("cuMemcpyDtoDAsync_v2");
  NEED_CONTEXT();
  Stream* st = nullptr;
  if (CUresult r = use_stream(s, stream, &st)) return r;
  if (!find_range(s, dst, bytes) || !find_range(s, src, bytes)) return kInvalidValue;
  return enqueue(st, [&s, dst, src, bytes] {
    if (!find_range(s, dst, bytes) || !find_range(s, src, bytes)) return kIllegalAddress;
    std::memmove(reinterpret_cast<void*>(uintptr_t(dst)),
                 reinterpret_cast<const void*>(uintptr_t(src)), bytes);
    return kOk;
  });
}

FAKE_API CUresult cuMemcpyPeerAsync(CUdeviceptr dst, void* dst_ctx, CUdeviceptr src, void* src_ctx,
                                    size_t bytes, void* stream) {
  FAKE_ENTRY("cuMemcpyPeerAsync");
  NEED_CONTEXT();
  Stream* st = nullptr;
  if (CUresult r = use_stream(s, stream, &st)) return r;
  auto* dc = static_cast<Context*>(dst_ctx);
  auto* sc = static_cast<Context*>(src_ctx);
  for (Context* c : {dc, sc}) {
    if (!c || c < s.contexts || c >= s.contexts + s.devices) return kInvalidContext;
  }
  const Allocation* d = find_range(s, dst, bytes);
  const Allocation* from = find_range(s, src, bytes);
  if (!d || !from || d->device != dc->device || from->device != sc->device) return kInvalidValue;
  return enqueue(st, [&s, dst, src, bytes] {
    if (!find_range(s, dst, bytes) || !find_range(s, src, bytes)) return kIllegalAddress;
    std::memmove(reinterpret_cast<void*>(uintptr_t(dst)),
                 reinterpret_cast<const void*>(uintptr_t(src)), bytes);
    return kOk;
  });
}

FAKE_API CUresult cuMemsetD8Async(CUdeviceptr dst, unsigned char value, size_t bytes,
                                  void* stream) {
  FAKE_ENTRY("cuMemsetD8Async");
  NEED_CONTEXT();
  Stream* st = nullptr;
  if (CUresult r = use_stream(s, stream, &st)) return r;
  if (!find_range(s, dst, bytes)) return kInvalidValue;
  return enqueue(st, [&s, dst, value, bytes] {
    if (!find_range(s, dst, bytes)) return kIllegalAddress;
    std::memset(reinterpret_cast<void*>(uintptr_t(dst)), value, bytes);
    return kOk;
  });
}

FAKE_API CUresult cuStreamCreate(void** stream, unsigned flags) {
  FAKE_ENTRY("cuStreamCreate");
  NEED_CONTEXT();
  if (flags > 1) return kInvalidValue;
  auto* st = new Stream;
  st->ctx = current;
  st->flags = flags;
  s.streams.push_back(st);
  *stream = st;
  return kOk;
}

FAKE_API CUresult cuStreamSynchronize(void* stream) {
  FAKE_ENTRY("cuStreamSynchronize");
  NEED_CONTEXT();
  Stream* st = nullptr;
  if (CUresult r = use_stream(s, stream, &st)) return r;
  return st ? drain(st) : drain_all(s);
}

FAKE_API CUresult cuEventCreate(void** event, unsigned flags) {
  FAKE_ENTRY("cuEventCreate");
  NEED_CONTEXT();
  if (flags != 0) return kInvalidValue;  // Kiln times with its events
  auto* e = new Event;
  e->ctx = current;
  s.events.insert(e);
  *event = e;
  return kOk;
}

FAKE_API CUresult cuEventRecord(void* event, void* stream) {
  FAKE_ENTRY("cuEventRecord");
  NEED_CONTEXT();
  auto* e = static_cast<Event*>(event);
  if (!s.events.count(e)) return kInvalidHandle;
  if (e->ctx != current) return kInvalidContext;
  Stream* st = nullptr;
  if (CUresult r = use_stream(s, stream, &st)) return r;
  e->recorded = true;
  e->done = false;
  e->stream = st;
  return enqueue(st, [e] {
    e->done = true;
    e->at = std::chrono::steady_clock::now();
    return kOk;
  });
}

FAKE_API CUresult cuEventSynchronize(void* event) {
  FAKE_ENTRY("cuEventSynchronize");
  auto* e = static_cast<Event*>(event);
  if (!s.events.count(e)) return kInvalidHandle;
  return e->stream ? drain(e->stream) : kOk;
}

FAKE_API CUresult cuEventElapsedTime_v2(float* ms, void* start, void* end) {
  FAKE_ENTRY("cuEventElapsedTime_v2");
  auto* a = static_cast<Event*>(start);
  auto* b = static_cast<Event*>(end);
  if (!s.events.count(a) || !s.events.count(b) || !a->recorded || !b->recorded) {
    return kInvalidHandle;
  }
  if (!a->done || !b->done) return kNotReady;
  *ms = std::chrono::duration<float, std::milli>(b->at - a->at).count();
  return kOk;
}

FAKE_API CUresult cuEventDestroy_v2(void* event) {
  FAKE_ENTRY("cuEventDestroy_v2");
  auto* e = static_cast<Event*>(event);
  if (!s.events.count(e)) return kInvalidHandle;
  CUresult r = drain_all(s);  // queued records point at it
  s.events.erase(e);
  delete e;
  return r;
}

FAKE_API CUresult cuModuleLoadData(void** module, const void* image) {
  FAKE_ENTRY("cuModuleLoadData");
  NEED_CONTEXT();
  if (!image) return kInvalidValue;
  std::unique_ptr<Module> m = parse_module(static_cast<const char*>(image));
  if (!m) return kInvalidImage;
  m->ctx = current;
  for (auto& f : m->functions) s.functions.insert(f.get());
  *module = m.get();
  s.modules.insert(m.release());
  return kOk;
}

FAKE_API CUresult cuModuleUnload(void* module) {
  FAKE_ENTRY("cuModuleUnload");
  auto* m = static_cast<Module*>(module);
  if (!s.modules.count(m)) return kInvalidHandle;
  CUresult r = drain_all(s);  // queued launches run its functions
  for (auto& f : m->functions) s.functions.erase(f.get());
  s.modules.erase(m);
  delete m;
  return r;
}

FAKE_API CUresult cuModuleGetFunction(void** function, void* module, const char* name) {
  FAKE_ENTRY("cuModuleGetFunction");
  NEED_CONTEXT();
  auto* m = static_cast<Module*>(module);
  if (!s.modules.count(m) || !name) return kInvalidHandle;
  for (auto& f : m->functions) {
    if (f->name == name) {
      *function = f.get();
      return kOk;
    }
  }
  return kNotFound;
}

FAKE_API CUresult cuFuncGetAttribute(int* value, int attribute, void* function) {
  FAKE_ENTRY("cuFuncGetAttribute");
  auto* f = static_cast<Function*>(function);
  if (!s.functions.count(f)) return kInvalidHandle;
  switch (attribute) {
    case 0:
      *value = f->max_threads;
      return kOk;
    case 1:
      *value = f->static_shared;
      return kOk;
    case 3:
      *value = f->local;
      return kOk;
    case 4:
      *value = f->regs;
      return kOk;
    case 8:
      *value = f->max_dynamic_shared;
      return kOk;
    default:
      return kInvalidValue;
  }
}

FAKE_API CUresult cuFuncSetAttribute(void* function, int attribute, int value) {
  FAKE_ENTRY("cuFuncSetAttribute");
  NEED_CONTEXT();
  auto* f = static_cast<Function*>(function);
  if (!s.functions.count(f)) return kInvalidHandle;
  if (f->module->ctx != current) return kInvalidContext;
  if (attribute != 8 || value < 0 || value > kSharedOptin - f->static_shared) return kInvalidValue;
  f->max_dynamic_shared = value;
  return kOk;
}

FAKE_API CUresult cuLaunchKernel(void* function, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                                 unsigned by, unsigned bz, unsigned shared, void* stream,
                                 void** params, void** extra) {
  FAKE_ENTRY("cuLaunchKernel");
  NEED_CONTEXT();
  auto* f = static_cast<Function*>(function);
  if (!s.functions.count(f)) return kInvalidHandle;
  if (f->module->ctx != current) return kInvalidContext;
  Stream* st = nullptr;
  if (CUresult r = use_stream(s, stream, &st)) return r;
  const unsigned grid[3] = {gx, gy, gz}, block[3] = {bx, by, bz};
  unsigned long long threads = 1;
  for (int d = 0; d < 3; ++d) {
    if (grid[d] < 1 || grid[d] > unsigned(kMaxGrid[d])) return kInvalidValue;
    if (block[d] < 1 || block[d] > unsigned(kMaxBlock[d])) return kInvalidValue;
    threads *= block[d];
  }
  if (threads > unsigned(f->max_threads)) return kInvalidValue;
  if (shared > unsigned(f->max_dynamic_shared)) return kInvalidValue;
  if (extra || (f->nparams > 0 && !params)) return kInvalidValue;
  // The driver reads every parameter now; Kiln's are all 8 bytes.
  std::vector<uint64_t> values(size_t(std::max(f->nparams, 0)));
  for (int i = 0; i < f->nparams; ++i) {
    if (!params[i]) return kInvalidValue;
    std::memcpy(&values[size_t(i)], params[i], 8);
  }
  KilnFakeCudaLaunch log{};
  std::snprintf(log.function, sizeof log.function, "%s", f->name.c_str());
  std::snprintf(log.builtin, sizeof log.builtin, "%s", f->builtin.c_str());
  std::copy(grid, grid + 3, log.grid);
  std::copy(block, block + 3, log.block);
  log.shared_bytes = shared;
  log.stream = stream;
  log.device = current->device;
  log.nparams = f->nparams;
  for (int i = 0; i < std::min(f->nparams, 16); ++i) log.params[i] = values[size_t(i)];
  s.launches.push_back(log);
  Builtin fn = find_builtin(f->builtin)->fn;
  Geometry g{{gx, gy, gz}, {bx, by, bz}, shared};
  return enqueue(st, [&s, fn, g, values] { return fn(s, g, values); });
}

// ------------------------------------------------------------------------------- test controls

FAKE_API int kiln_fake_cuda_launch_count(void) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  return int(s.launches.size());
}

FAKE_API int kiln_fake_cuda_launch(int i, KilnFakeCudaLaunch* out) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  if (i < 0 || size_t(i) >= s.launches.size()) return -1;
  *out = s.launches[size_t(i)];
  return 0;
}

FAKE_API void kiln_fake_cuda_clear_launches(void) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  s.launches.clear();
}

FAKE_API int kiln_fake_cuda_calls(const char* entry_point) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  auto it = s.calls.find(entry_point);
  return it == s.calls.end() ? 0 : it->second;
}

FAKE_API void kiln_fake_cuda_fail_next(const char* entry_point, int error) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  s.failures[entry_point] = error;
}

FAKE_API void kiln_fake_cuda_set_memory_limit(int device, unsigned long long bytes) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  if (device >= 0 && device < kMaxDevices) s.limit[device] = bytes;
}

FAKE_API unsigned long long kiln_fake_cuda_live_bytes(int device) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  return live_bytes(s, device);
}

FAKE_API int kiln_fake_cuda_live_allocations(int device) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  int n = 0;
  for (auto& [p, a] : s.allocations) n += a.device == device;
  return n;
}

FAKE_API int kiln_fake_cuda_pending(void) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  size_t n = 0;
  for (Stream* st : s.streams) n += st->work.size();
  return int(n);
}

FAKE_API int kiln_fake_cuda_current_device(void) {
  return current ? current->device : -1;
}

FAKE_API int kiln_fake_cuda_stream_flags(void* stream) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  auto* st = static_cast<Stream*>(stream);
  if (std::find(s.streams.begin(), s.streams.end(), st) == s.streams.end()) return -1;
  return int(st->flags);
}
