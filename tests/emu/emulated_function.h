// A compiled function's kernels run by the CUDA emulator: the bridge from the
// emulation harness (harness.h) to Kiln's plan, for check 6b of issue 12. A
// function is compiled for a sim device (GPU-mapped kernels, the plan's
// copies and launches); each kernel's CUDA C is compiled by the harness; the
// plan then launches the emulated kernels instead of the loop evaluator, and
// its outputs are compared with the interpreter's like any backend's.
#pragma once

#include <memory>
#include <vector>

#include "api/compile_internal.h"
#include "runtime/executable.h"
#include "tests/emu/harness.h"

namespace kiln::emutest {

// A KernelFunction that launches `kernel` of `lib` for the loop-IR kernel `k`
// (same buffers and scalars, in the calling convention) on sim-device
// tensors, with the launch's grid and block. Each buffer reaches the kernel
// as an exact-size heap copy of the elements its view spans (so ASan sees an
// overrun); buffers `k` stores to but never loads start poisoned (NaN); the
// buffers it stores to are copied back. kiln::emu::Error carries the
// emulator's report.
std::shared_ptr<const runtime::KernelFunction> emulated_kernel(std::shared_ptr<const Library> lib,
                                                               const KernelInfo& kernel,
                                                               const loop::Kernel& k);

// Makes `impl` (compiled for a sim device) launch `kernels[i]` wherever its
// plan launches impl.scheduled[i]. InternalError when a launch has no kernel.
void use_kernels(CompiledFunction::Impl& impl,
                 const std::vector<std::shared_ptr<const runtime::KernelFunction>>& kernels);

}  // namespace kiln::emutest
