// The GPU bench's compile rows (see gpu_rows.h): how long NVRTC takes for
// one function's program, and how long its image takes to come back from the
// disk cache. Neither needs a GPU: the function is compiled for cuda:N with
// `load` off (code only, the target from CompileOptions::cuda_arch), and its
// "sass-resources" dump asks for the image, which comes from the in-memory
// cache, the disk cache ($KILN_CACHE_DIR, a temporary directory main() made)
// or NVRTC, in that order.
//
//   cold:  in-memory cache cleared, disk cache off -> NVRTC (min of 3)
//   disk:  in-memory cache cleared, disk cache on and holding the image (min of 5)
// The first NVRTC call of the process (loading libnvrtc) is made before the
// rows, on a function of its own, and reported as row nvrtc_first.
#include <cstdio>
#include <functional>

#include "bench/gpu/gpu_rows.h"
#include "bench/kiln_rows.h"
#include "bench/model_rows.h"
#include "codegen/cuda/nvrtc.h"
#include "kiln/kiln.h"
#include "runtime/kernel_cache.h"

namespace kiln::bench::gpu {

namespace {

kiln::CompileOptions code_only(const Options& o, bool disk) {
  kiln::CompileOptions co;
  co.device = kiln::Device::cuda(o.device);
  co.load = false;
  co.disk_cache = disk;
  return co;
}

// Seconds for the image of `cf` (the sass-resources dump), in-memory cache cleared.
double image_seconds(const kiln::CompiledFunction& cf) {
  runtime::KernelCache::global().clear();
  const int64_t t0 = monotonic_ns();
  const std::string text = cf.dump("sass-resources");
  const double s = static_cast<double>(monotonic_ns() - t0) * 1e-9;
  if (text.find("kernel ") == std::string::npos && text.find("no kernels") == std::string::npos)
    throw kiln::Error("unexpected sass-resources dump: " + text);
  return s;
}

double min_of(int n, const std::function<double()>& f) {
  double best = 1e30;
  for (int i = 0; i < n; ++i) best = std::min(best, f());
  return best;
}

GpuRow compile_row(const Options& o, const std::string& name, const std::string& what,
                   const kiln::Function& f) {
  GpuRow r;
  r.name = "nvrtc_" + name;
  r.what = what;
  try {
    const kiln::CompiledFunction cold = kiln::compile(f, code_only(o, false));
    r.kernels = cold.num_kernels();
    r.nvrtc_cold_s = min_of(3, [&] { return image_seconds(cold); });
    const kiln::CompiledFunction disk = kiln::compile(f, code_only(o, true));
    image_seconds(disk);  // NVRTC, then stored on disk
    r.disk_load_s = min_of(5, [&] { return image_seconds(disk); });
    r.max_err = 0;
  } catch (const std::exception& e) {
    r.error = e.what();
  }
  return r;
}

}  // namespace

std::vector<GpuRow> compile_rows(const Options& o) {
  std::vector<GpuRow> rows;
  const std::string why = codegen::cuda::nvrtc_unavailable_reason();
  struct Case {
    std::string name, what;
    std::function<kiln::Function()> make;
  };
  const std::vector<Case> cases = {
      {"chain", "the chain row's function (1 kernel)", [] { return chain_function(1 << 20); }},
      {"softmax", "softmax 8192x8192", [] { return softmax_function(8192, 8192); }},
      {"layer_norm", "layer norm 8192x8192", [] { return layer_norm_function(8192, 8192); }},
      {"mlp_issue6", "examples/mlp.kiln", [&] { return model_case("mlp_issue6", o.smoke).fn; }},
      {"transformer", "examples/transformer.kiln",
       [&] { return model_case("transformer", o.smoke).fn; }},
      {"conv_block", "examples/conv_block.kiln",
       [&] { return model_case("conv_block", o.smoke).fn; }},
  };
  if (!why.empty()) {
    for (const Case& c : cases) {
      GpuRow r;
      r.name = "nvrtc_" + c.name;
      r.not_measured = "NVRTC unavailable: " + why;
      rows.push_back(r);
    }
    return rows;
  }
  // Loads libnvrtc and warms its first-call paths, on a function of its own.
  {
    GpuRow first;
    first.name = "nvrtc_first";
    first.what = "the process's first NVRTC compile (loads libnvrtc), y = x * 2";
    kiln::Builder b("first");
    kiln::Var x = b.input("x", kiln::DType::F32, {7});
    try {
      const kiln::CompiledFunction cf = kiln::compile(b.build({x * 2.0}), code_only(o, false));
      first.nvrtc_cold_s = image_seconds(cf);
      first.kernels = cf.num_kernels();
      first.max_err = 0;
    } catch (const std::exception& e) {
      first.error = e.what();
    }
    rows.push_back(first);
  }
  for (const Case& c : cases) {
    kiln::Function f;
    try {
      f = c.make();
    } catch (const std::exception& e) {
      GpuRow r;
      r.name = "nvrtc_" + c.name;
      r.error = e.what();
      rows.push_back(r);
      continue;
    }
    rows.push_back(compile_row(o, c.name, c.what, f));
    std::fprintf(stderr, "kiln_gpu_bench: nvrtc_%s done\n", c.name.c_str());
  }
  return rows;
}

}  // namespace kiln::bench::gpu
