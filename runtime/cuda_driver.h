// The CUDA driver API, loaded with dlopen("libcuda.so.1") at first use and
// never linked: the toolkit's stub libcuda makes a binary fail before main
// where no driver is installed, and a Kiln build must run on CPU anywhere.
// KILN_CUDA_DRIVER=<path> loads another library instead (the tests' fake
// driver, tests/cuda_fake_driver/).
//
// cuda.h is not included (it may be absent, and CUDA 13's maps entry points
// to versioned symbols by macro): the few types are declared here and every
// entry point is resolved by its exported name, versioned where cuda.h maps
// the plain name to a versioned one (cuMemAlloc -> cuMemAlloc_v2). The CUDA
// device runtime on top of it is runtime/cuda/cuda_runtime.h.
#pragma once

#include <cstddef>
#include <string>

#include "runtime/device.h"

namespace kiln::runtime::cuda {

using CUresult = int;  // 0 is CUDA_SUCCESS
using CUdevice = int;
using CUdeviceptr = unsigned long long;
// Opaque driver handles (cuda.h's are pointers to undefined structs, too).
using CUcontext = struct CUctx_st*;
using CUstream = struct CUstream_st*;
using CUevent = struct CUevent_st*;
using CUmodule = struct CUmod_st*;
using CUfunction = struct CUfunc_st*;

// The CUresult values Kiln tells apart (cuda.h's CUDA_ERROR_*).
inline constexpr CUresult kSuccess = 0;
inline constexpr CUresult kErrorInvalidValue = 1;
inline constexpr CUresult kErrorOutOfMemory = 2;
inline constexpr CUresult kErrorStubLibrary = 34;
inline constexpr CUresult kErrorNoDevice = 100;
inline constexpr CUresult kErrorUnsupportedPtxVersion = 222;
inline constexpr CUresult kErrorNotFound = 500;

// cuStreamCreate's CU_STREAM_NON_BLOCKING: no implicit ordering with the
// legacy default stream, which other libraries in the process may use.
inline constexpr unsigned kStreamNonBlocking = 0x1;

// The CUdevice_attribute values Kiln reads.
enum DeviceAttribute : int {
  kMaxThreadsPerBlock = 1,
  kMaxBlockDimX = 2,
  kMaxBlockDimY = 3,
  kMaxBlockDimZ = 4,
  kMaxGridDimX = 5,
  kMaxGridDimY = 6,
  kMaxGridDimZ = 7,
  kMaxSharedMemoryPerBlock = 8,
  kWarpSize = 10,
  kMultiprocessorCount = 16,
  kComputeCapabilityMajor = 75,
  kComputeCapabilityMinor = 76,
  kMaxRegistersPerMultiprocessor = 82,
  kMaxSharedMemoryPerBlockOptin = 97,
};

// The CUfunction_attribute values Kiln reads or sets.
enum FunctionAttribute : int {
  kFuncMaxThreadsPerBlock = 0,
  kFuncSharedSizeBytes = 1,  // static shared memory
  kFuncLocalSizeBytes = 3,
  kFuncNumRegs = 4,
  kFuncMaxDynamicSharedSizeBytes = 8,
};

// Entry points, all non-null once loaded. The comment names the exported
// symbol where it differs from the member's name.
struct Driver {
  CUresult (*cuInit)(unsigned flags) = nullptr;
  CUresult (*cuGetErrorName)(CUresult error, const char** name) = nullptr;
  CUresult (*cuDeviceGetCount)(int* count) = nullptr;
  CUresult (*cuDeviceGet)(CUdevice* device, int ordinal) = nullptr;
  CUresult (*cuDeviceGetName)(char* name, int len, CUdevice device) = nullptr;
  CUresult (*cuDeviceGetAttribute)(int* value, int attribute, CUdevice device) = nullptr;
  CUresult (*cuDeviceTotalMem)(size_t* bytes, CUdevice device) = nullptr;  // _v2

  // Contexts: the device's primary context (the one the CUDA runtime API and
  // PyTorch use too), made current per thread.
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext* ctx, CUdevice device) = nullptr;
  CUresult (*cuCtxGetCurrent)(CUcontext* ctx) = nullptr;
  CUresult (*cuCtxSetCurrent)(CUcontext ctx) = nullptr;

  // Memory.
  CUresult (*cuMemAlloc)(CUdeviceptr* ptr, size_t bytes) = nullptr;             // _v2
  CUresult (*cuMemFree)(CUdeviceptr ptr) = nullptr;                             // _v2
  CUresult (*cuMemGetInfo)(size_t* free_bytes, size_t* total_bytes) = nullptr;  // _v2
  CUresult (*cuMemcpyHtoDAsync)(CUdeviceptr dst, const void* src, size_t bytes,
                                CUstream stream) = nullptr;  // _v2
  CUresult (*cuMemcpyDtoHAsync)(void* dst, CUdeviceptr src, size_t bytes,
                                CUstream stream) = nullptr;  // _v2
  CUresult (*cuMemcpyDtoDAsync)(CUdeviceptr dst, CUdeviceptr src, size_t bytes,
                                CUstream stream) = nullptr;  // _v2
  CUresult (*cuMemcpyPeerAsync)(CUdeviceptr dst, CUcontext dst_ctx, CUdeviceptr src,
                                CUcontext src_ctx, size_t bytes, CUstream stream) = nullptr;
  CUresult (*cuMemsetD8Async)(CUdeviceptr dst, unsigned char value, size_t bytes,
                              CUstream stream) = nullptr;

  // Streams and events.
  CUresult (*cuStreamCreate)(CUstream* stream, unsigned flags) = nullptr;
  CUresult (*cuStreamSynchronize)(CUstream stream) = nullptr;
  CUresult (*cuEventCreate)(CUevent* event, unsigned flags) = nullptr;
  CUresult (*cuEventRecord)(CUevent event, CUstream stream) = nullptr;
  CUresult (*cuEventSynchronize)(CUevent event) = nullptr;
  // _v2 (CUDA 12.8 and later drivers), else the unversioned symbol.
  CUresult (*cuEventElapsedTime)(float* ms, CUevent start, CUevent end) = nullptr;
  CUresult (*cuEventDestroy)(CUevent event) = nullptr;  // _v2

  // Modules and launches.
  CUresult (*cuModuleLoadData)(CUmodule* module, const void* image) = nullptr;
  CUresult (*cuModuleUnload)(CUmodule module) = nullptr;
  CUresult (*cuModuleGetFunction)(CUfunction* function, CUmodule module,
                                  const char* name) = nullptr;
  CUresult (*cuFuncGetAttribute)(int* value, int attribute, CUfunction function) = nullptr;
  CUresult (*cuFuncSetAttribute)(CUfunction function, int attribute, int value) = nullptr;
  CUresult (*cuLaunchKernel)(CUfunction function, unsigned grid_x, unsigned grid_y, unsigned grid_z,
                             unsigned block_x, unsigned block_y, unsigned block_z,
                             unsigned shared_bytes, CUstream stream, void** params,
                             void** extra) = nullptr;

  // "CUDA_ERROR_INVALID_VALUE", or "CUresult 7" when the driver has no name.
  std::string error_name(CUresult r) const;
};

// The loaded and initialized (cuInit) driver with at least one device, or
// null with `*why` set: "the NVIDIA driver library libcuda.so.1 was not
// found (<dlerror>)", "libcuda.so.1 has no <symbol> (...)", "cuInit failed:
// <error name>", "no CUDA device" (with KILN_CUDA_DRIVER set, the messages
// name that library). Loads once; thread-safe.
const Driver* driver(std::string* why);

// Devices the driver sees (0 when it is unusable).
int device_count();

// Why cuda:index cannot be used as far as the driver goes (empty when it
// can): driver()'s reason, or "cuda:3 does not exist (2 devices)".
std::string unavailable_reason(int index);

// What cuda:index is, read through cuDeviceGetAttribute; requires
// unavailable_reason(index) to be empty (kiln::Error otherwise).
DeviceProperties device_properties(int index);

}  // namespace kiln::runtime::cuda
