// GPU schedules: the cuda loop pipeline's passes that map a lowered kernel
// onto blocks and threads in a fast form, each for one shape of kernel, before
// gpu_map (schedule.h) maps whatever is left in its plain, correct form:
//
//   cuda:  gpu-pointwise -> gpu-reduce -> gpu-map -> loop-simplify
//
// Every result is GPU-mapped loop IR as gpu_map makes it, still a valid serial
// program: one gpu_block loop around gpu_thread loops (all of one extent), one
// per barrier phase, barriers between them; per-thread values that live across
// phases in GpuLocal scratch, per-block values in GpuShared scratch. The loop
// evaluator (the sim device) runs it as it is and the CUDA emitter prints it.
// A schedule that does not fit a kernel leaves it unchanged (and unmapped),
// so the next pass may take it. docs/schedules.md shows the nests.
#pragma once

#include <cstdint>

#include "ir/loop/loop_ir.h"
#include "ir/op_registry.h"
#include "passes/target.h"

namespace kiln::passes {

struct GpuScheduleOptions {
  // Threads per block of the pointwise grid and of row teams that share a
  // block; a reduction of a whole tensor runs in one block of
  // full_reduction_threads (both capped by the target's limit).
  int64_t threads = 256;
  int64_t full_reduction_threads = 1024;
  // Threads per row when the row length is only known at run time (a
  // power of two; constant lengths choose their own, from 32 to 1024).
  int64_t symbolic_row_threads = 256;
  // Elements one thread keeps of a row in GpuLocal registers: a row of at
  // most row_cache * threads-per-row elements is read from memory once.
  int64_t row_cache = 8;
  // Elements per thread of a pointwise kernel; stores to the buffers the
  // kernel writes are `vector_lanes`-lane dense accesses at indices that are
  // multiples of the lane count.
  int64_t vector_lanes = 4;
  // Inputs' runs along the innermost dim are read with dense vector loads on
  // the pointwise fast path (a version taken when their stride parameters
  // are 1 in the call; the CUDA C checks each access's alignment at run time,
  // kiln_vload, so a view at any offset is fine); true keeps scalar loads.
  bool scalar_input_loads = false;
  // Pointwise kernels get a second version with 32-bit coordinate math,
  // taken when every flat index of the kernel fits in int32.
  bool index32 = true;
};

// Elementwise and layout kernels (one perfect loop nest per output, or
// several writing disjoint buffers): the nest flattened, `vector_lanes`
// elements per thread, the grid ceil(elements / (threads * lanes)) from the
// symbolic dims, a guarded tail, dense vector stores, and 32-bit coordinate
// math when the sizes allow (gpu_pointwise.cpp).
loop::Kernel gpu_pointwise(const loop::Kernel& k, ir::OpCategory category, const GpuTarget& target,
                           const GpuScheduleOptions& options = {});

// Reductions and normalizations (gpu_reduce.cpp): a kernel that is one loop
// over rows (or several over the same rows, each row of one depending only
// on the same row of the one before), whose body reduces and writes along the
// row, runs one team of threads per row: each thread accumulates a strided
// partial, each warp combines its partials with shuffles (warp_reduce_<op>,
// ir/loop/warp.h) and a row of several warps folds one shared partial per
// warp after one barrier; columns meet in a fixed tree in shared memory. No
// atomics: the result does not depend on timing. Every thread reads the
// row's result, and the loops over the row are spread over the team. Rows along which memory is contiguous get a warp or more per row
// (several rows per block when short) and, when a row fits in row_cache
// elements per thread, keep it in GpuLocal registers; reductions over an
// outer dim (columns) give adjacent threads adjacent columns; a reduction of
// a whole tensor runs in one block of full_reduction_threads. The pipeline
// does not offer it Contraction kernels (their naive nests stay gpu_map's).
loop::Kernel gpu_reduce(const loop::Kernel& k, const GpuTarget& target,
                        const GpuScheduleOptions& options = {});

}  // namespace kiln::passes
