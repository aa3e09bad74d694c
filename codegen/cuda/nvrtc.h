// NVRTC, CUDA's run-time compiler: CUDA C (the emitter's program, with the
// prelude as its one header) to a CUBIN for an sm_XX, or to PTX for the
// newest architecture NVRTC knows when it does not know the device's (the
// driver then compiles the PTX for the device).
//
// libnvrtc is loaded with dlopen at first use (libnvrtc.so.13, then .12) and
// never linked, so Kiln builds and runs without the CUDA toolkit, and says
// what is missing. nvrtc.h is not included (it may be absent): the few
// entry points are declared here. Thread-safe.
//
// Errors: NVRTC not loadable, or an architecture it cannot compile for, is a
// kiln::Error (the environment); a program NVRTC rejects is a Kiln bug (the
// emitter's output), a kiln::InternalError carrying NVRTC's log and the
// numbered source.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kiln::codegen::cuda {

// Why NVRTC cannot be used in this process (every library tried, with
// dlerror's reason), or empty when it can. Loads it once.
std::string nvrtc_unavailable_reason();

// NVRTC's version, e.g. "13.0"; kiln::Error when it is unavailable.
std::string nvrtc_version();
// The real architectures NVRTC compiles CUBINs for (75, 80, ..., 121).
std::vector<int> nvrtc_supported_archs();

struct NvrtcOptions {
  int compute_capability = 90;  // the device's (major * 10 + minor)
  // false: PTX for the virtual architecture (compute_XX), e.g. for a dump;
  // true: a CUBIN when NVRTC knows sm_XX, else PTX (see above).
  bool cubin = true;
  // Contract a * b + c into fused multiply-adds (CompileOptions::fast_math).
  // Off by default: loop IR rounds every operation, and the loop evaluator
  // and the CPU do not contract; a schedule that wants an FMA says fma().
  bool fmad = false;
};

// What ptxas reported for one kernel (`--ptxas-options=-v`).
struct KernelResources {
  std::string symbol;        // the kernel's extern "C" name
  int registers = 0;         // per thread
  int barriers = 0;          // named barriers used
  int64_t stack_frame = 0;   // local memory per thread, bytes
  int64_t spill_stores = 0;  // bytes
  int64_t spill_loads = 0;   // bytes
  int64_t shared = 0;        // static shared memory per block, bytes
  int64_t constant = 0;      // constant bank 0 (parameters and literals), bytes
};

// One program compiled.
struct CudaImage {
  std::string arch;                        // "sm_90" (CUBIN) or "compute_90" (PTX)
  bool cubin = false;                      // image is a CUBIN (else PTX text)
  std::string image;                       // the CUBIN's bytes, or the PTX without its NUL
  std::string log;                         // NVRTC's log (ptxas' report for a CUBIN)
  std::vector<KernelResources> resources;  // from the log; empty for PTX
  double seconds = 0;                      // the NVRTC call
};

// The NVRTC options `options` turn into ("--gpu-architecture=sm_90", ...),
// deciding CUBIN or PTX from the architectures this NVRTC supports; what a
// cache key must hold. kiln::Error when NVRTC is unavailable or supports no
// architecture at or below the requested one.
std::vector<std::string> nvrtc_flags(const NvrtcOptions& options);

// Compiles `source` (a program that includes "kiln_prelude.cuh", named
// `name` in NVRTC's messages, e.g. "softmax.cu") with nvrtc_flags(options).
CudaImage nvrtc_compile(const std::string& source, const std::string& name,
                        const NvrtcOptions& options);

// The per-kernel lines of a ptxas -v report, in the order it lists entries.
std::vector<KernelResources> parse_ptxas_report(const std::string& log);

// `source` with its lines numbered (for error messages).
std::string numbered_source(const std::string& source);

}  // namespace kiln::codegen::cuda
