// loop_eval — a tree-walking evaluator of loop IR on the CPU. It executes a
// loop::Kernel on raw buffer memory (from Tensors) so lowering and schedules can
// be tested without a backend, and GPU-mapped loop IR can be checked on the CPU.
//
// Semantics are those of the LLVM backend (codegen/llvm), one dtype at a time:
//   - f32 math runs in float, f64 in double; f16/bf16 compute in float and round
//     to the 16-bit type after every operation;
//   - integers wrap to their width; Div/Mod floor, x / 0 and x % 0 give 0 and,
//     in a lane no predicate masks off, make the run raise the interpreter's
//     error at its end (the kernel status word, runtime/kernel_status.h);
//   - float Min/Max propagate NaN (llvm.minimum/maximum), float Mod is floor mod;
//   - casts: float -> int saturates to i64 (NaN -> 0) then wraps; x -> bool is x != 0;
//   - parallel, vectorized-but-scalar and GPU loops run serially; Barrier is a no-op
//     (each barrier phase of GPU-mapped loop IR is its own gpu_thread loop);
//   - a GpuLocal buffer has one copy per thread: an access inside a gpu_thread
//     loop sees the copy of that loop's current iteration (its thread index),
//     kept across the phases of the block; fresh scratch of every scope reads 0.
//   - warp_reduce_<op>(p[i], W) (ir/loop/warp.h) reads the copies of p[i] of
//     the thread's group of W threads, which earlier thread loops stored;
// Every unmasked Load and Store is bounds-checked against the buffer's storage,
// so an indexing bug is an InternalError here instead of silent corruption.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "ir/loop/loop_ir.h"
#include "kiln/tensor.h"

namespace kiln::loop {

// Runs `k` with `buffers` following k.buffers (each a CPU tensor of the buffer's
// dtype; its data_ptr() is element 0, strides are the kernel's business) and
// `scalars` following k.scalars in the backends' calling convention (one int64
// slot each; floating scalars bit-cast, see pack_scalar). Throws kiln::Error on
// a count or dtype mismatch, InternalError on an out-of-bounds access.
void eval_kernel(const Kernel& k, std::span<const Tensor> buffers,
                 std::span<const int64_t> scalars);

// Runs a statement with buffers bound by identity and integer scalar Vars by name.
void eval_stmt(const Stmt& s, const std::vector<std::pair<Buf, Tensor>>& buffers,
               const std::map<std::string, int64_t>& vars = {});

// Value of a scalar integer (or bool) expression without loads, e.g. an output
// shape expression of symbolic dims.
int64_t eval_int(const Expr& e, const std::map<std::string, int64_t>& vars);

// The 64-bit slot a scalar parameter of dtype `t` travels in: integers as is,
// f64 bit-cast, f32 bit-cast into the low 32 bits.
int64_t pack_scalar(DType t, double value);

}  // namespace kiln::loop
