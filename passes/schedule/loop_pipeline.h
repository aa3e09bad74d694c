// The loop pipeline: the loop-IR passes between lowering (passes/lower) and
// code generation, as one list per target kind, run by the same runner as the
// graph pipeline (passes/pass_runner.h: the loop verifier between passes,
// --print-after-all, --print-after=NAME, --time-passes).
//
//   cpu:   default-schedule -> loop-simplify
//   cuda:  gpu-pointwise -> gpu-reduce -> gpu-map -> loop-simplify
//
// default-schedule vectorizes, parallelizes and versions each kernel by its
// category (schedule.h, docs/schedules.md); gpu-pointwise and gpu-reduce map
// elementwise and reduction kernels onto GPU blocks and threads in their fast
// forms (gpu_schedule.h), gpu-map maps the others in its plain one
// (gpu_map.cpp); loop-simplify folds what they left. Without scheduling
// (CompileOptions::schedule = false) a CPU kernel runs as lowered,
// simplified; a GPU kernel is still mapped by gpu-map, since it cannot run
// otherwise.
#pragma once

#include <string>
#include <vector>

#include "ir/loop/loop_ir.h"
#include "ir/op_registry.h"
#include "passes/pass_runner.h"
#include "passes/schedule/gpu_schedule.h"
#include "passes/schedule/schedule.h"
#include "passes/target.h"

namespace kiln::passes {

// The kernels of one compiled function, in launch order.
struct LoopProgram {
  std::vector<loop::Kernel> kernels;
  std::vector<ir::OpCategory> categories;  // of each kernel (its plan's main node)
};

struct LoopPipelineOptions {
  Target target;
  bool schedule = true;  // false: kernels keep their lowered loops (CPU)
  bool parallel = true;  // CPU: outer loops may run on the thread pool
  // CPU: the kernels were lowered with LowerOptions::unit_inner_stride (no
  // input has a last-dim stride parameter to version on).
  bool unit_inner_strides = false;
  GpuScheduleOptions gpu;  // CUDA: the GPU schedules' choices
};

using LoopPass = Pass<LoopProgram>;

// The passes for `options.target`'s kind, in order.
std::vector<LoopPass> loop_pipeline(const LoopPipelineOptions& options);
// The ScheduleTarget the CPU pipeline's default-schedule pass uses for
// `options` (vector width, parallelism, the streaming-store threshold).
ScheduleTarget cpu_schedule_target(const LoopPipelineOptions& options);
// Every loop pass name of every target kind (for --print-after).
std::vector<std::string> loop_pass_names();
// How the runner prints (kernels as `kiln dump --stage=loops-scheduled` does)
// and verifies (loop::verify_kernel on each kernel) a program.
const IRHooks<LoopProgram>& loop_hooks();

// Runs loop_pipeline(options) on `program` (options.print_after may name a
// graph pass: it is then simply not printed here).
void run_loop_pipeline(LoopProgram& program, const LoopPipelineOptions& options,
                       const PipelineOptions& print = {});

// The kernels as text, one after another.
std::string kernels_text(const std::vector<loop::Kernel>& kernels);

}  // namespace kiln::passes
