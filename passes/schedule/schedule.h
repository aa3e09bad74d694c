// CPU schedules: loop-IR transforms on a Stmt, one free function per
// transform (one file each), plus default_schedule, which picks them for a
// lowered kernel by its category. Each transform names its loop by the loop
// variable (names are unique in a lowered kernel), throws kiln::Error naming
// the loop when it is absent or the transform does not apply, and returns a
// simplified statement computing the same values.
#pragma once

#include <string>

#include "ir/loop/loop_ir.h"
#include "ir/op_registry.h"

namespace kiln::passes {

enum class TailStrategy : uint8_t {
  GuardWithIf,   // the last outer iteration runs a guarded partial inner loop
  ShiftInwards,  // the last inner run shifts back to end at the extent (recomputes;
                 // needs extent >= factor and an idempotent body)
  Predicate,     // like GuardWithIf; vectorize turns the guard into masked lanes
};

// Splits loop `loop_var` by `factor`:
//   for (i, 0, n) { y[i] = x[i] }
// becomes (GuardWithIf / Predicate; the guard is dropped when factor divides n)
//   for (i.o, 0, (n + 7) / 8) {
//     for (i.i, 0, 8) {
//       if (((i.o * 8) + i.i) < n) { y[((i.o * 8) + i.i)] = x[((i.o * 8) + i.i)] }
//     }
//   }
loop::Stmt split(const loop::Stmt& s, const std::string& loop_var, int64_t factor,
                 const std::string& outer_name, const std::string& inner_name,
                 TailStrategy tail = TailStrategy::GuardWithIf);

// Swaps two directly nested loops (the inner's bounds must not use the outer's var):
//   for (i, 0, n) { for (j, 0, m) { S } }   ->   for (j, 0, m) { for (i, 0, n) { S } }
loop::Stmt reorder(const loop::Stmt& s, const std::string& outer_var, const std::string& inner_var);

// Turns a loop of constant extent into vector lanes: the variable becomes
// ramp(min, 1, lanes), scalars broadcast where they meet vectors, a guard that
// depends on the lanes becomes the predicate of the loads and stores under it,
// and scratch allocated inside gets one slot per lane (separate accumulators).
//   for (i, 0, 8) vectorized { if (i < n) { y[i] = x[i] * 2.0f } }
// becomes
//   y[ramp(0, 1, 8)] = x[ramp(0, 1, 8)] if (ramp(0, 1, 8) < x8(n)) * x8(2.0f) if (...)
// Throws kiln::Error when a lane-dependent value is stored to one location.
loop::Stmt vectorize(const loop::Stmt& s, const std::string& loop_var);

// Replaces a loop of constant extent by copies of its body:
//   for (i, 0, 2) { y[i] = x[i] }   ->   y[0] = x[0]; y[1] = x[1]
loop::Stmt unroll(const loop::Stmt& s, const std::string& loop_var);

// Marks the loop parallel (the backend outlines it onto the thread pool):
//   for (i, 0, n) { S }   ->   for (i, 0, n) parallel { S }
loop::Stmt parallelize(const loop::Stmt& s, const std::string& loop_var);

struct ScheduleTarget {
  int vector_width = 8;  // lanes (8 f32 lanes on AVX2)
  bool parallel = true;  // mark outer loops parallel
};

// Elementwise and layout kernels: each loop nest's innermost loop is split by
// the vector width with a predicated tail and vectorized, the outermost loop
// runs parallel. Reductions and contractions: the outermost (row / output)
// loop runs parallel. Nests a transform does not apply to are left as they are.
loop::Kernel default_schedule(const loop::Kernel& k, ir::OpCategory category,
                              const ScheduleTarget& target = {});

}  // namespace kiln::passes
