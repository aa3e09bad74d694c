// Warp collectives in loop IR. A GPU warp reduces a value across its lanes
// with shuffles (no shared memory, no barrier); a serial evaluation of a
// gpu_thread loop cannot run such an exchange within one loop, so the value a
// warp reduces is one each thread stored, in an earlier thread loop, into its
// own copy of a GpuLocal buffer, which the evaluator keeps per thread:
//
//   for (t, 0, B) gpu_thread { p[0] = ...partial... }   // thread t's copy
//   for (t, 0, B) gpu_thread {                           // no barrier needed
//     acc[0] = acc[0] + warp_reduce_add(p[0], 32)
//   }
//
// warp_reduce_<op>(buf[i], W), op one of add mul min max and or: the lanes of
// thread t's group of W (t - t % W ... + W) combine their copies of buf[i]
// in the butterfly order of `W/2, W/4, ..., 1` xor shuffles: v[l] = v[l] op
// v[l ^ s]. The operations are commutative, so every lane ends with the same
// bits, which is the call's value in each of them. The CUDA emitter prints
// the butterfly as __shfl_xor_sync steps; the loop evaluator computes it over
// the group's copies. Every thread of the group must reach the call together
// (a uniform condition around it), which the GPU schedules guarantee.
#pragma once

#include <optional>
#include <string>

#include "ir/loop/loop_ir.h"

namespace kiln::loop {

// The op of a "warp_reduce_<op>" call name, or nullopt for any other name.
std::optional<BinOp> warp_reduce_op(const std::string& call_name);
// "warp_reduce_add", ... (op one of Add Mul Min Max And Or).
std::string warp_reduce_name(BinOp op);
// warp_reduce_<op>(Load(local, index), width); width a power of two.
Expr make_warp_reduce(BinOp op, const Buf& local, Expr index, int64_t width);

}  // namespace kiln::loop
