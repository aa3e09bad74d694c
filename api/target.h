// The compile target of a function, built once here from the device it is
// compiled for and handed down to the passes (passes/target.h): the host CPU
// from runtime/cpu_info, a generic x86-64-v3 description when code is
// generated for another CPU, and (once the CUDA runtime queries devices) a
// GPU's description from its properties.
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

// The target `options` compile for: on the host, the host CPU (or the generic
// CPU when options.cpu names another one); on a GPU device (sim, cuda), that
// device's description. The device must be available.
passes::Target target_for(const CompileOptions& options);

}  // namespace kiln::api
