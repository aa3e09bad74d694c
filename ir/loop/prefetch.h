// A software prefetch in loop IR: an ExternCall named kPrefetchCall, which
// the CPU schedule inserts (passes/schedule/prefetch_rows.cpp) and the LLVM
// backend emits as llvm.prefetch of one element's cache line:
//
//   call kiln_prefetch(B, index, level)
//     bufs: B (any buffer)
//     args: index (i64, an element of B; it may lie outside B: a prefetch
//           never faults and is never read), level (i64: 0 = to L1, 1 = to
//           L2, 2 = to the last level)
//
// It has no effect on values: the loop evaluator and the CUDA emitter skip it.
#pragma once

namespace kiln::loop {

inline constexpr const char* kPrefetchCall = "kiln_prefetch";

}  // namespace kiln::loop
