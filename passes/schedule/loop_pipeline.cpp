// The loop pipeline as one list per target kind, and its hooks for the pass
// runner (see loop_pipeline.h).
//
// Each pass rewrites every kernel of the program and reports a change when
// some kernel's body is no longer the same node (mutators return the node
// they were given when nothing changed).
#include "passes/schedule/loop_pipeline.h"

#include <algorithm>

#include "ir/loop/simplify.h"
#include "ir/loop/verifier.h"
#include "ir/loop/visitor.h"
#include "passes/schedule/gpu_schedule.h"
#include "passes/schedule/schedule.h"

namespace kiln::passes {

namespace {

// A pass that rewrites each kernel with `f`.
LoopPass per_kernel(std::string name,
                    std::function<loop::Kernel(const loop::Kernel&, ir::OpCategory)> f) {
  return {std::move(name), [f](LoopProgram& p) {
            bool changed = false;
            for (size_t i = 0; i < p.kernels.size(); ++i) {
              loop::Kernel k = f(p.kernels[i], p.categories.at(i));
              changed = changed || !k.body.same_as(p.kernels[i].body);
              p.kernels[i] = std::move(k);
            }
            return changed;
          }};
}

LoopPass loop_simplify() {
  return per_kernel("loop-simplify", [](const loop::Kernel& k, ir::OpCategory) {
    loop::Kernel out = k;
    out.body = loop::simplify(k.body);
    return out;
  });
}

}  // namespace

ScheduleTarget cpu_schedule_target(const LoopPipelineOptions& o) {
  ScheduleTarget st;
  st.parallel = o.parallel;
  // Vector loops as wide as the machine's f32 registers (16 lanes with
  // AVX-512: the elementwise chain runs ~1.8x faster than at 8 on Zen 5).
  st.vector_width = std::max(4, o.target.cpu.lanes(4));
  // Outputs at least as large as the last-level cache the kernel's cores
  // can count on are written with streaming stores: the L3, but no more
  // than 16 MiB per core used (a server part's L3 is shared with cores
  // and tenants beyond this process: ~5 MiB per core on Emerald Rapids,
  // 4 on Zen 5). Such an output is read back from DRAM anyway, and a
  // normal store first reads each line it writes (a third of a
  // streaming kernel's traffic).
  const int64_t per_core = int64_t(16) << 20;
  st.stream_store_bytes =
      std::min<int64_t>(o.target.cpu.l3_bytes, per_core * std::max(1, o.target.cpu.cores));
  // Row ops prefetch their next row while computing from cache (L2: see
  // docs/schedules.md, "Prefetching the next row").
  st.prefetch_rows_level = 1;
  st.version_unit_strides = !o.unit_inner_strides;
  return st;
}

std::vector<LoopPass> loop_pipeline(const LoopPipelineOptions& o) {
  std::vector<LoopPass> passes;
  switch (o.target.kind) {
    case TargetKind::CPU: {
      if (o.schedule) {
        const ScheduleTarget st = cpu_schedule_target(o);
        passes.push_back(per_kernel(
            "default-schedule",
            [st](const loop::Kernel& k, ir::OpCategory c) { return default_schedule(k, c, st); }));
      }
      break;
    }
    case TargetKind::CUDA: {
      // The fast forms first, each taking the kernels of its shape; gpu-map
      // maps whatever is left (and runs even unscheduled: a GPU kernel
      // cannot run unmapped).
      GpuTarget gpu = o.target.gpu;
      GpuScheduleOptions gs = o.gpu;
      if (o.schedule) {
        passes.push_back(
            per_kernel("gpu-pointwise", [gpu, gs](const loop::Kernel& k, ir::OpCategory c) {
              return gpu_pointwise(k, c, gpu, gs);
            }));
        // Contractions keep gpu-map's naive nest: their GPU schedules are
        // candidates of their own (the naive nest's dot products would
        // otherwise look like rows to gpu-reduce).
        passes.push_back(
            per_kernel("gpu-reduce", [gpu, gs](const loop::Kernel& k, ir::OpCategory c) {
              return c == ir::OpCategory::Contraction ? k : gpu_reduce(k, gpu, gs);
            }));
      }
      passes.push_back(per_kernel(
          "gpu-map", [gpu](const loop::Kernel& k, ir::OpCategory) { return gpu_map(k, gpu); }));
      break;
    }
  }
  passes.push_back(loop_simplify());
  return passes;
}

std::vector<std::string> loop_pass_names() {
  return {"default-schedule", "gpu-pointwise", "gpu-reduce", "gpu-map", "loop-simplify"};
}

std::string kernels_text(const std::vector<loop::Kernel>& kernels) {
  std::string s;
  for (const loop::Kernel& k : kernels) s += loop::to_string(k);
  return s;
}

const IRHooks<LoopProgram>& loop_hooks() {
  static const IRHooks<LoopProgram> hooks = {
      "loop pipeline",
      "kernel",
      [](const LoopProgram& p) { return kernels_text(p.kernels); },
      [](const LoopProgram& p) {
        for (const loop::Kernel& k : p.kernels) loop::verify_kernel(k);
      },
  };
  return hooks;
}

void run_loop_pipeline(LoopProgram& program, const LoopPipelineOptions& options,
                       const PipelineOptions& print) {
  KILN_INTERNAL_CHECK(program.categories.size() == program.kernels.size(),
                      "loop pipeline: " << program.kernels.size() << " kernels but "
                                        << program.categories.size() << " categories");
  run_passes<LoopProgram>(program, loop_pipeline(options), loop_hooks(), print);
}

}  // namespace kiln::passes
