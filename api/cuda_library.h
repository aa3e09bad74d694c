// The cuda backend's library launches: a scheduled kernel whose body is one
// vendor-library ExternCall (passes/lower/gpu/vendor_candidates.h) is not
// emitted as CUDA C; the plan launches a KernelFunction that evaluates the
// call's size and stride arguments from the kernel's scalars per call and
// queues cuBLASLt or cuDNN on the device's stream
// (runtime/cuda/vendor_libs.h).
#pragma once

#include <memory>
#include <string>

#include "ir/loop/loop_ir.h"
#include "runtime/executable.h"

namespace kiln::api {

// The library call kernel `k` consists of, or null for a kernel to emit.
const loop::ExternCall* library_call(const loop::Kernel& k);

// The launcher of a library kernel on `device` (a cuda device).
std::shared_ptr<const runtime::KernelFunction> library_kernel(const loop::Kernel& k,
                                                              Device device);

// "cublasLt (matmul)" / "cudnn (conv2d)": what a library kernel calls, for dumps.
std::string library_call_text(const loop::ExternCall& call);

}  // namespace kiln::api
