// CPU schedules: loop-IR transforms on a Stmt, one free function per
// transform (one file each), plus default_schedule, which picks them for a
// lowered kernel by its category. Each transform names its loop by the loop
// variable (names are unique in a lowered kernel) and returns a simplified
// statement computing the same values.
//
// Whether a transform applies is asked of its check, why_not_<transform>:
// std::nullopt when it applies, else the reason, which is the message the
// transform throws as kiln::Error when called anyway (a user's schedule, a
// test). The check runs the transform's own code path, so the two agree
// exactly, and it never throws for "does not apply". A caller that may try a
// transform speculatively calls the check first and never catches: an
// exception out of a transform or its check is then a bug (InternalError)
// and surfaces. docs/schedules.md shows the loop nests default_schedule
// produces for each kind of kernel.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ir/loop/loop_ir.h"
#include "ir/op_registry.h"
#include "passes/target.h"

namespace kiln::passes {

enum class TailStrategy : uint8_t {
  GuardWithIf,     // the last outer iteration runs a guarded partial inner loop
  ShiftInwards,    // the last inner run shifts back to end at the extent (recomputes;
                   // needs extent >= factor and an idempotent body)
  Predicate,       // like GuardWithIf; vectorize turns the guard into masked lanes
  PredicatedTail,  // full chunks run unguarded; the rest is one guarded chunk after
                   // them (vectorize masks only that chunk)
  ShortenLast,     // the last inner loop runs min(factor, what is left) iterations
};

// Splits loop `loop_var` by `factor`:
//   for (i, 0, n) { y[i] = x[i] }
// becomes (GuardWithIf / Predicate; the guard is dropped when factor divides n)
//   for (i.o, 0, (n + 7) / 8) {
//     for (i.i, 0, 8) {
//       if (((i.o * 8) + i.i) < n) { y[((i.o * 8) + i.i)] = x[((i.o * 8) + i.i)] }
//     }
//   }
// PredicatedTail (both inner loops are named i.i; vectorize/unroll treat both):
//   for (i.o, 0, n / 8) {
//     for (i.i, 0, 8) { y[((i.o * 8) + i.i)] = x[((i.o * 8) + i.i)] }
//   }
//   for (i.i, 0, 8) {
//     if ((((n / 8) * 8) + i.i) < n) { y[(((n / 8) * 8) + i.i)] = x[(((n / 8) * 8) + i.i)] }
//   }
// ShortenLast (the factor may be a run-time expression >= 1, e.g. rows per task):
//   for (i.o, 0, (n + f - 1) / f) {
//     for (i.i, 0, min(f, n - i.o * f)) { y[((i.o * f) + i.i)] = x[((i.o * f) + i.i)] }
//   }
loop::Stmt split(const loop::Stmt& s, const std::string& loop_var, int64_t factor,
                 const std::string& outer_name, const std::string& inner_name,
                 TailStrategy tail = TailStrategy::GuardWithIf);
loop::Stmt split(const loop::Stmt& s, const std::string& loop_var, const loop::Expr& factor,
                 const std::string& outer_name, const std::string& inner_name,
                 TailStrategy tail = TailStrategy::GuardWithIf);
// Why split does not apply, or std::nullopt: no loop `loop_var`; a factor that
// is not an i64 scalar or is a constant < 1; ShiftInwards with a factor that
// does not divide the extent, when the factor is not constant or the extent is
// a constant below it. (The outer and inner names do not matter.)
std::optional<std::string> why_not_split(const loop::Stmt& s, const std::string& loop_var,
                                         int64_t factor,
                                         TailStrategy tail = TailStrategy::GuardWithIf);
std::optional<std::string> why_not_split(const loop::Stmt& s, const std::string& loop_var,
                                         const loop::Expr& factor,
                                         TailStrategy tail = TailStrategy::GuardWithIf);

// Swaps two directly nested loops (the inner's bounds must not use the outer's var):
//   for (i, 0, n) { for (j, 0, m) { S } }   ->   for (j, 0, m) { for (i, 0, n) { S } }
loop::Stmt reorder(const loop::Stmt& s, const std::string& outer_var, const std::string& inner_var);
// Why reorder does not apply, or std::nullopt: no loop `outer_var`; loop
// `inner_var` is not its body; the inner loop's bounds use `outer_var`.
std::optional<std::string> why_not_reorder(const loop::Stmt& s, const std::string& outer_var,
                                           const std::string& inner_var);

// Turns every loop named `loop_var` (each of constant extent) into vector
// lanes: the variable becomes ramp(min, 1, lanes), scalars broadcast where they
// meet vectors, a guard that depends on the lanes becomes the predicate of the
// loads and stores under it (and-ed with their own), and scratch allocated
// inside gets one slot per lane (separate accumulators).
//   for (i, 0, 8) vectorized { if (i < n) { y[i] = x[i] * 2.0f } }
// becomes
//   y[ramp(0, 1, 8)] = x[ramp(0, 1, 8)] if (ramp(0, 1, 8) < x8(n)) * x8(2.0f) if (...)
loop::Stmt vectorize(const loop::Stmt& s, const std::string& loop_var);
// Why vectorize does not apply, or std::nullopt: no loop `loop_var`; one whose
// extent is not a constant in [1, 64]; a body that already holds vector lanes
// or an extern call, stores a value that differs by lane to one location,
// indexes its scratch by the lanes, or has an inner loop whose bounds use them.
std::optional<std::string> why_not_vectorize(const loop::Stmt& s, const std::string& loop_var);

// Vectorizes a loop that accumulates into scalars, with `accumulators`
// independent vector partial results of `lanes` lanes each (so consecutive
// updates do not wait on each other), a predicated last chunk, and a fold of
// the lanes into the scalar at the end. Other stores in the loop (each
// iteration writing its own element) are vectorized alongside. With lanes 8,
// accumulators 2:
//   for (r, 0, n) { acc[0] = (acc[0] + x[r]) }
// becomes
//   let r_n = max(n, 0)
//   allocate acc_v[f32 * 16] in stack
//   acc_v[ramp(0, 1, 8)] = x8(0.0f)
//   acc_v[ramp(8, 1, 8)] = x8(0.0f)
//   for (r_o, 0, (r_n / 16)) {
//     acc_v[ramp(0, 1, 8)] = (acc_v[ramp(0, 1, 8)] + x[ramp((r_o * 16), 1, 8)])
//     acc_v[ramp(8, 1, 8)] = (acc_v[ramp(8, 1, 8)] + x[ramp(((r_o * 16) + 8), 1, 8)])
//   }
//   for (r_t, 0, (((r_n - ((r_n / 16) * 16)) + 7) / 8)) {   // p: the lanes still in range
//     acc_v[ramp(0, 1, 8)] = select(p, (acc_v[ramp(0, 1, 8)] + x[ramp(...) if p]), acc_v[...])
//   }
//   acc_v[ramp(0, 1, 8)] = (acc_v[ramp(0, 1, 8)] + acc_v[ramp(8, 1, 8)])
//   acc_v[ramp(0, 1, 4)] = (acc_v[ramp(0, 1, 4)] + acc_v[ramp(4, 1, 4)])   // then 2, 1
//   acc[0] = (acc[0] + acc_v[0])
// The accumulator ops are + * min max && ||; min/max/&&/|| and integer results
// are exact, float sums and products are reassociated.
loop::Stmt vectorize_reduction(const loop::Stmt& s, const std::string& loop_var, int lanes,
                               int accumulators);
// Why vectorize_reduction does not apply, or std::nullopt: lanes outside
// [1, 64] or accumulators outside [1, 16]; no loop `loop_var`; a loop that is
// not innermost straight-line code of the shape above (an inner loop, a
// branch, an allocation, an extern call, vector lanes; a store at a fixed
// index that is not an accumulation, or one accumulator updated twice or read
// elsewhere; an element written at two indices or read at another than the
// one written); a body vectorize's lanes cannot be formed for.
std::optional<std::string> why_not_vectorize_reduction(const loop::Stmt& s,
                                                       const std::string& loop_var, int lanes,
                                                       int accumulators);

// Replaces a loop of constant extent by copies of its body (every loop named
// `loop_var`):
//   for (i, 0, 2) { y[i] = x[i] }   ->   y[0] = x[0]; y[1] = x[1]
loop::Stmt unroll(const loop::Stmt& s, const std::string& loop_var);
// Why unroll does not apply, or std::nullopt: no loop `loop_var`; one whose min
// or extent is not constant, or whose extent is over 1024.
std::optional<std::string> why_not_unroll(const loop::Stmt& s, const std::string& loop_var);

// Marks the loop parallel (the backend outlines it onto the thread pool):
//   for (i, 0, n) { S }   ->   for (i, 0, n) parallel { S }
loop::Stmt parallelize(const loop::Stmt& s, const std::string& loop_var);
// Why parallelize does not apply, or std::nullopt: no loop `loop_var`.
std::optional<std::string> why_not_parallelize(const loop::Stmt& s, const std::string& loop_var);

// Versions `s` on scalar parameters: a copy with the values substituted (and
// simplified) runs when they all hold, the original otherwise.
//   S   ->   if (((x_s1 == 1) && (w_s0 == 1))) { S[x_s1 := 1, w_s0 := 1] } else { S }
loop::Stmt specialize(const loop::Stmt& s,
                      const std::vector<std::pair<std::string, int64_t>>& values);

// Runs adjacent loops over the same range as one loop (Halide's compute_at of
// a whole nest), at the top level of block `s` and again inside each fused
// body, when every buffer one loop writes and the other touches is accessed
// row by row: at index i * S + base + h, the same S and base in both, with
// 0 <= h < S over the loops inside (so iteration i of the second loop reads
// only what iteration i of the first wrote):
//   for (i0, 0, n) { m[i0] = max over x[i0 * 33 + r] }
//   for (i1, 0, n) { for (i2, 0, 33) { y[i1 * 33 + i2] = x[i1 * 33 + i2] - m[i1] } }
// becomes
//   for (i0, 0, n) {
//     m[i0] = max over x[i0 * 33 + r]
//     for (i2, 0, 33) { y[i0 * 33 + i2] = x[i0 * 33 + i2] - m[i0] }
//   }
loop::Stmt fuse_loops(const loop::Stmt& s);

// Storage folding: each buffer of `candidates` (a kernel's intermediates)
// that only one top-level loop of `s` touches, always row by row with base 0
// (see fuse_loops), becomes scratch of one row allocated inside that loop:
//   for (i0, 0, n) { m[i0] = ...; y[...] = ... m[i0] ... }
// becomes
//   for (i0, 0, n) { allocate m_row[f32 * 1] in stack { m_row[0] = ...; ... m_row[0] ... } }
// `folded` receives the buffers that no longer exist.
loop::Stmt fold_storage(const loop::Stmt& s, const std::vector<loop::Buf>& candidates,
                        std::vector<loop::Buf>* folded);

struct ScheduleTarget {
  int vector_width = 8;  // lanes (compile() sets the host's f32 lanes: 8 on AVX2, 16 on AVX-512)
  int accumulators = 4;  // independent vector partial results per reduction loop
  bool parallel = true;  // mark outer loops parallel
  // The least work (stored elements) one parallel task gets: outer loops with
  // less per iteration are blocked so that waking a thread pays off.
  int64_t parallel_grain = 32768;
  // Stores that write a kernel buffer for the last time are marked
  // `stream(value, big)` (mark_stream_stores) when the kernel writes at least
  // this many bytes through them; 0 never marks.
  int64_t stream_store_bytes = 0;
  // prefetch_next_rows's cache level for row loops (0 = L1, 1 = L2, 2 = last
  // level); -1 inserts no prefetches.
  int prefetch_rows_level = -1;
  // Nests reading an input through a stride parameter of its last dim are
  // versioned on that stride being 1 (unit_stride_guesses). Off when the
  // lowering already made every input's innermost stride the constant 1
  // (LowerOptions::unit_inner_stride): the guess would then pick an outer
  // stride, and its version would never run.
  bool version_unit_strides = true;
};

// Streaming stores: each Store of `s` to one of `kernel_buffers` that no later
// statement of `s`, none of `later` (the kernel's statements after `s`) and
// nothing in a loop around the store reads back (a later trip could), and
// whose loops have extents independent of the loops around them, gets the
// value `stream(value, big)`, big = (bytes these stores write >= min_bytes)
// over the kernel's parameters (folded to a constant when known; constant
// false marks nothing). The CPU backend writes a dense, unmasked vector store
// of such a value with a non-temporal store when big holds and the address is
// aligned to the vector; everything else ignores the mark (the loop evaluator
// returns the value).
loop::Stmt mark_stream_stores(const loop::Stmt& s, const std::vector<loop::Buf>& kernel_buffers,
                              const std::vector<loop::Stmt>& later, int64_t min_bytes);

// Software prefetch of the next row (prefetch_rows.cpp): in each loop R
// (not vectorized) whose body holds two or more loops in sequence (the passes
// of a row op over one row), the innermost loops of a later pass that call an
// intrinsic (exp, log, ...) and load a kernel buffer contiguously
// (ramp(base, 1, lanes)) that an earlier pass of the same iteration of R
// already loaded get, first in their body, one
// `call kiln_prefetch(buf, base[R := R + 1], level)` per such load
// (ir/loop/prefetch.h): the next row is fetched while this one computes
// from cache. Values are unchanged; level < 0 returns `s` as it is.
loop::Stmt prefetch_next_rows(const loop::Stmt& s, const std::vector<loop::Buf>& kernel_buffers,
                              int level);

// The schedule a lowered kernel gets unless a tuned one replaces it (see
// docs/schedules.md for the nests it produces):
//  - every kernel runs in two versions when it reads strided inputs: one for
//    the common case where each buffer's last-dim stride parameter
//    (`<buffer>_s<last dim>`, as lower_graph names them) is 1, one general;
//  - Elementwise and layout nests: the innermost loop is split by the vector
//    width into an unmasked vector main loop and one masked vector tail;
//  - Reduction nests (reductions and normalizations): each innermost loop that
//    walks memory contiguously is vectorized, with vectorize_reduction when it
//    accumulates; a loop over an outer dim of the input vectorizes across the
//    kept loop around it instead (its accumulators get one slot per lane);
//  - the outermost loop left runs parallel, blocked so each task gets at least
//    parallel_grain elements of work; contraction nests are only parallelized;
//  - a nest that already holds a vectorized, parallel or unrolled loop was
//    scheduled by its lowering (packed GEMM, direct convolution) and is kept
//    as it is.
// Nests a transform does not apply to keep their loops.
loop::Kernel default_schedule(const loop::Kernel& k, ir::OpCategory category,
                              const ScheduleTarget& target = {});

// The GPU mapping of a lowered kernel (gpu_map.cpp): its loops onto blocks
// and threads, as a valid serial program (each barrier phase is its own
// thread loop, so the loop evaluator runs it as it is). A kernel that is one
// loop whose bounds are kernel parameters gets one thread per iteration:
//   for (i, 0, n) { S(i) }
// becomes
//   for (i_blk, 0, (n + 255) / 256) gpu_block {
//     for (i_thr, 0, 256) gpu_thread {
//       if (((i_blk * 256) + i_thr) < n) { S((i_blk * 256) + i_thr) }
//     }
//   }
// Any other kernel runs in one block, each top-level statement a barrier
// phase: a loop spreads its iterations over the threads (t, t + 256, ...),
// anything else runs on thread 0. Threads per block: 256, or the target's
// limit when lower. A kernel that already holds GPU loops is left alone.
loop::Kernel gpu_map(const loop::Kernel& k, const GpuTarget& target);

// How a kernel gpu_map made is launched: the extent of its block loop (the
// grid) and of its thread loops (the block), as expressions of the kernel's
// scalar parameters (x only; y and z are 1). InternalError for a kernel that
// is not in that form.
struct GpuLaunchShape {
  loop::Expr grid, block;
};
GpuLaunchShape gpu_launch_shape(const loop::Kernel& k);

}  // namespace kiln::passes
