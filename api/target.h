// The compile target of a function, built once here from the device it is
// compiled for and handed down to the passes (passes/target.h): the host CPU
// from runtime/cpu_info, a generic x86-64-v3 description when code is
// generated for another CPU, and (once the CUDA runtime queries devices) a
// GPU's description from its properties.
#pragma once

#include "kiln/compile.h"
#include "passes/target.h"

namespace kiln::api {

// The host CPU, from runtime::host_cpu_info(); `threads` caps cores (0: all).
passes::CpuTarget host_cpu_target(int threads = 0);
// A generic AVX2+FMA machine (x86-64-v3) with typical caches: the target when
// code is compiled for a CPU other than the host.
passes::CpuTarget generic_cpu_target(int threads = 0);
// Target::for_cpu(host_cpu_target(threads)).
passes::Target host_target(int threads = 0);

// The target `options` compile for: the host, or the generic CPU when
// options.cpu names another one.
passes::Target target_for(const CompileOptions& options);

}  // namespace kiln::api
