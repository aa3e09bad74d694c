// The CUDA C emitter: GPU-mapped loop-IR kernels -> one CUDA C program (all
// kernels of a function), which NVRTC compiles after Kiln's prelude
// (kiln_prelude.cuh) and which also compiles as host C++ after an emulation
// header. A printer: passes/schedule/gpu_map already chose the mapping.
//
// Assumes kernels in the form the cuda loop pipeline makes and
// loop::verify_kernel accepts: one GpuBlock loop (possibly under LetStmts)
// whose body holds GpuThread loops of one extent B (one per barrier phase),
// barriers and GpuShared allocations at block level only; or a kernel with
// no GPU loops at all, launched as one thread. Guarantees:
//   - each kernel is `extern "C" __global__ void __launch_bounds__(B, 1)
//     name(T0* __restrict__ b0, ..., kiln_i64 s0, ...)`: buffers in
//     Kernel::buffers order (const when the kernel never stores to them),
//     then one 64-bit slot per scalar in Kernel::scalars order (i64 as is,
//     f64 bit-cast, f32 in the low 32 bits, f16/bf16 in the low 16, bool
//     0/1; codegen/backend.h), decoded at the top of the body;
//   - a GpuBlock loop `for (b, m, G)` is `b = m + blockIdx.x` (the grid is
//     its extent), a GpuThread loop `for (t, m, B)` is `t = m + threadIdx.x`
//     (the block is B), Barrier is __syncthreads(); a Stack allocation is a
//     local array, GpuShared is KILN_SHARED(T, name, n), both of a constant
//     size (kiln::Error naming the kernel otherwise, as for Heap scratch and
//     ExternCall, which GPU code cannot have);
//   - the semantics of ir/loop/loop_eval.h: integers wrap (i32/i64 data
//     arithmetic through kiln_*_wrap; index arithmetic of loop variables,
//     i64 parameters and constants is plain C, where overflow would be an
//     out-of-bounds access anyway), Div/Mod floor with x / 0 == 0, float
//     min/max propagate NaN, float -> int casts saturate, f16/bf16 compute
//     in float and round after every operation, masked lanes read 0 without
//     touching memory, loads and stores happen in the loop evaluator's order
//     (a vector store's value is complete before its first lane is written).
//     Transcendentals are CUDA's (within its documented ulps, not bit-equal
//     to the host's libm); no FMA contraction unless the caller asks NVRTC
//     for it;
//   - vector lanes are per-lane C values; a dense lane access (index a Ramp
//     of stride 1) to a kernel buffer or shared memory is one kiln_vload /
//     kiln_vstore: 128-bit (or 64-bit) instructions when the address is
//     aligned at run time, element by element otherwise, so a schedule never
//     has to prove alignment. Local (Stack) arrays are accessed per lane so
//     they stay in registers;
//   - names: loop-IR names (which may hold '.') become valid C identifiers,
//     unique within the kernel and never a keyword, a CUDA built-in or a
//     prelude name (kiln_*, KILN_*, __*); kernel names unique in the program.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/loop/loop_ir.h"

namespace kiln::codegen::cuda {

struct EmittedKernel {
  std::string name;    // the loop::Kernel's name
  std::string symbol;  // its extern "C" name in the program (what a loader looks up)
  int64_t block = 0;   // threads per block (its __launch_bounds__); 0 when not constant
};

struct CudaProgram {
  std::string kernels;                 // the kernels' text: what follows the prelude
  std::vector<EmittedKernel> entries;  // one per kernel, in order

  // The program NVRTC compiles: `#include "kiln_prelude.cuh"` then `kernels`.
  std::string source() const;
};

// Prints `kernels` as one program. Throws kiln::Error naming the kernel for
// what GPU code cannot do, kiln::InternalError for IR that is not in the
// mapped form above.
CudaProgram emit_cuda(const std::vector<loop::Kernel>& kernels);

}  // namespace kiln::codegen::cuda
