// The loop-eval backend's compile step (api/backends.h): each scheduled kernel
// becomes a KernelFunction that runs it through the loop-IR evaluator. On the
// host it runs the CPU schedule; on a sim device it is that device's
// processor: it runs the GPU-mapped kernel after checking that the launch it
// was given (grid and block, computed by the plan from the input sizes) is the
// one the kernel's loops describe, so a plan that launches a kernel wrongly
// fails here as it would on a GPU, instead of computing something anyway.
#include <map>

#include "api/backends.h"
#include "ir/loop/loop_eval.h"
#include "ir/loop/visitor.h"
#include "kiln/error.h"

namespace kiln::api {

using compile_detail::KernelEntries;

namespace {

// A GPU-mapped kernel on a sim device.
class SimKernel final : public runtime::KernelFunction {
 public:
  SimKernel(loop::Kernel k, passes::GpuLaunchShape shape)
      : k_(std::move(k)), shape_(std::move(shape)) {}

  void launch(std::span<const Tensor> buffers, std::span<const int64_t> scalars,
              const runtime::LaunchConfig& config) const override {
    std::map<std::string, int64_t> vars;
    for (size_t i = 0; i < k_.scalars.size() && i < scalars.size(); ++i) {
      vars[k_.scalars[i].as<loop::Var>()->name] = scalars[i];
    }
    const int64_t grid = loop::eval_int(shape_.grid, vars);
    const int64_t block = loop::eval_int(shape_.block, vars);
    KILN_INTERNAL_CHECK(config.grid[0] == grid && config.block[0] == block && config.grid[1] == 1 &&
                            config.grid[2] == 1 && config.block[1] == 1 && config.block[2] == 1,
                        "sim: kernel " << k_.name << " launched with grid (" << config.grid[0]
                                       << ", " << config.grid[1] << ", " << config.grid[2]
                                       << ") block (" << config.block[0] << ", " << config.block[1]
                                       << ", " << config.block[2] << "); its loops need grid "
                                       << grid << ", block " << block);
    for (const Tensor& b : buffers) {
      KILN_INTERNAL_CHECK(
          !b.defined() || b.device().kind == Device::Kind::Sim,
          "sim: kernel " << k_.name << " was given a buffer on " << b.device().str());
    }
    loop::eval_kernel(k_, buffers, scalars);
  }

 private:
  loop::Kernel k_;
  passes::GpuLaunchShape shape_;
};

}  // namespace

KernelEntries compile_loop_eval(CompiledFunction::Impl& impl) {
  KernelEntries out;
  out.device = impl.device;
  const bool gpu = !impl.target.is_cpu();
  KILN_INTERNAL_CHECK(gpu == (impl.device.kind == Device::Kind::Sim),
                      "loop-eval: " << passes::target_kind_name(impl.target.kind) << " code on "
                                    << impl.device.str());
  for (const loop::Kernel& k : impl.scheduled) {
    if (gpu) {
      passes::GpuLaunchShape shape = passes::gpu_launch_shape(k);
      out.shapes.push_back(shape);
      out.kernels.push_back(std::make_shared<SimKernel>(k, shape));
      continue;
    }
    out.kernels.push_back(runtime::generic_kernel(
        [k](std::span<const Tensor> buffers, std::span<const int64_t> scalars,
            const runtime::LaunchConfig&) { loop::eval_kernel(k, buffers, scalars); }));
  }
  return out;
}

}  // namespace kiln::api
