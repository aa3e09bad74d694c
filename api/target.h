// The compile target of a function, built once here from the device it is
// compiled for and handed down to the passes (passes/target.h): the host CPU
// from runtime/cpu_info, a generic x86-64-v3 description when code is
// generated for another CPU, a GPU's description from its properties, or a
// named architecture's when a cuda function is generated without its device.
#pragma once

#include "kiln/compile.h"
#include "passes/target.h"
#include "runtime/device.h"

namespace kiln::api {

// The host CPU, from runtime::host_cpu_info(); `threads` caps cores (0: all).
passes::CpuTarget host_cpu_target(int threads = 0);
// A generic AVX2+FMA machine (x86-64-v3) with typical caches: the target when
// code is compiled for a CPU other than the host.
passes::CpuTarget generic_cpu_target(int threads = 0);
// Target::for_cpu(host_cpu_target(threads)).
passes::Target host_target(int threads = 0);

// A GPU's description from its device properties (sim or CUDA).
passes::GpuTarget gpu_target(const runtime::DeviceProperties& properties);

// A GPU of architecture `arch` ("sm_90": GpuTarget's defaults with that
// compute capability), for code generated without the device; kiln::Error
// for a malformed name.
passes::GpuTarget gpu_target_for_arch(const std::string& arch);
// "sm_90" -> 90, "sm_120" -> 120; false for anything else.
bool parse_cuda_arch(const std::string& arch, int* compute_capability);

// The target `options` compile for: on the host, the host CPU (or the generic
// CPU when options.cpu names another one); on a GPU device (sim, cuda), that
// device's description, which must be available; for a cuda device with
// options.load false (code only), gpu_target_for_arch(options.cuda_arch).
passes::Target target_for(const CompileOptions& options);

}  // namespace kiln::api
