// The test controls of Kiln's fake CUDA driver (fake_driver.cpp): what tests
// read back and steer. A test reaches them with dlsym on the library that
// KILN_CUDA_DRIVER names (fake_driver_control.h), so nothing links against
// the fake.
#pragma once

#ifdef __cplusplus
extern "C" {
#endif

// One cuLaunchKernel call, as the fake saw it when it was queued.
struct KilnFakeCudaLaunch {
  char function[64];  // the name the module gave it
  char builtin[32];   // the host function run for it
  unsigned grid[3];
  unsigned block[3];
  unsigned shared_bytes;
  void* stream;
  int device;                     // of the context current on the launching thread
  int nparams;                    // as the image declared
  unsigned long long params[16];  // the first 16 parameters, 8 bytes each
};

// Launches recorded so far (cleared by kiln_fake_cuda_clear_launches).
int kiln_fake_cuda_launch_count(void);
// Copies launch i to *out; 0 on success, -1 when there is no such launch.
int kiln_fake_cuda_launch(int i, struct KilnFakeCudaLaunch* out);
void kiln_fake_cuda_clear_launches(void);

// How often an entry point ("cuMemAlloc_v2", "cuModuleLoadData") was called.
int kiln_fake_cuda_calls(const char* entry_point);
// The next call of `entry_point` fails with `error` (a CUresult).
void kiln_fake_cuda_fail_next(const char* entry_point, int error);

// The bytes a device may hand out (default: its total memory, 80 GiB); past
// it cuMemAlloc_v2 fails with CUDA_ERROR_OUT_OF_MEMORY.
void kiln_fake_cuda_set_memory_limit(int device, unsigned long long bytes);
unsigned long long kiln_fake_cuda_live_bytes(int device);
int kiln_fake_cuda_live_allocations(int device);

// Operations queued on streams and not yet run (streams run their work when
// synchronized, never earlier).
int kiln_fake_cuda_pending(void);

// The device of the context current on the calling thread, or -1.
int kiln_fake_cuda_current_device(void);

// The flags a stream was created with, or -1 when it is not a live stream.
int kiln_fake_cuda_stream_flags(void* stream);

#ifdef __cplusplus
}
#endif
