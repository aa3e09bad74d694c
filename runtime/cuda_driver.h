// The CUDA driver API, loaded with dlopen("libcuda.so.1") at first use and
// never linked: the toolkit's stub libcuda makes a binary fail before main
// where no driver is installed, and a Kiln build must run on CPU anywhere.
//
// cuda.h is not included (it may be absent, and CUDA 13's maps entry points
// to versioned symbols by macro): the few types are declared here and every
// entry point is resolved by its exported name, versioned where the driver
// versions it (cuDeviceTotalMem_v2). The next step (a CUDA DeviceRuntime)
// adds its entry points to Driver.
#pragma once

#include <cstddef>
#include <string>

#include "runtime/device.h"

namespace kiln::runtime::cuda {

using CUresult = int;  // 0 is CUDA_SUCCESS
using CUdevice = int;

// Entry points, all non-null once loaded.
struct Driver {
  CUresult (*cuInit)(unsigned flags) = nullptr;
  CUresult (*cuGetErrorName)(CUresult error, const char** name) = nullptr;
  CUresult (*cuDeviceGetCount)(int* count) = nullptr;
  CUresult (*cuDeviceGet)(CUdevice* device, int ordinal) = nullptr;
  CUresult (*cuDeviceGetName)(char* name, int len, CUdevice device) = nullptr;
  CUresult (*cuDeviceGetAttribute)(int* value, int attribute, CUdevice device) = nullptr;
  CUresult (*cuDeviceTotalMem)(size_t* bytes, CUdevice device) = nullptr;  // _v2

  // "CUDA_ERROR_INVALID_VALUE", or "CUresult 7" when the driver has no name.
  std::string error_name(CUresult r) const;
};

// The loaded and initialized (cuInit) driver with at least one device, or
// null with `*why` set: "the NVIDIA driver library libcuda.so.1 was not
// found (<dlerror>)", "libcuda.so.1 has no <symbol> (...)", "cuInit failed:
// <error name>", "no CUDA device". Loads once; thread-safe.
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
