// Helpers for the convolution algorithm tests: one-conv graphs built from a
// ConvCase, and a runner that lowers a graph with a named algorithm, schedules
// it as compile() does and runs it natively through the LLVM backend (or the
// loop-IR evaluator), so each candidate can be compared with the interpreter.
#pragma once

#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "api/target.h"
#include "codegen/backend.h"
#include "ir/graph.h"
#include "ir/loop/simplify.h"
#include "lower_test_util.h"
#include "passes/schedule/schedule.h"
#include "passes/target.h"
#include "runtime/kernel_status.h"

namespace kiln::test {

struct ConvCase {
  int64_t n = 1, cin = 3, cout = 4, h = 7, w = 7, kh = 3, kw = 3;
  std::vector<int64_t> stride{1, 1}, padding{0, 0}, dilation{1, 1};
  int64_t groups = 1;
  bool bias = true;
  bool batched = true;
  bool constant_weight = false;  // the weight (and bias) as graph constants
  DType dtype = DType::F32;

  std::string str() const {
    std::ostringstream os;
    os << (batched ? std::to_string(n) + "x" : std::string()) << cin << "x" << h << "x" << w
       << " -> " << cout << " k" << kh << "x" << kw << " s" << stride[0] << "," << stride[1]
       << " p";
    for (size_t i = 0; i < padding.size(); ++i) os << (i ? "," : "") << padding[i];
    os << " d" << dilation[0] << "," << dilation[1] << " g" << groups << (bias ? " bias" : "")
       << " " << dtype_name(dtype) << (constant_weight ? " const-w" : "");
    return os.str();
  }
};

struct ConvGraph {
  std::unique_ptr<ir::Graph> g = std::make_unique<ir::Graph>("conv");
  std::vector<Tensor> feed;
};

inline ConvGraph conv_graph(const ConvCase& c, uint64_t seed) {
  ConvGraph b;
  Shape xs = c.batched ? Shape{c.n, c.cin, c.h, c.w} : Shape{c.cin, c.h, c.w};
  Shape ws{c.cout, c.cin / c.groups, c.kh, c.kw};
  b.feed.push_back(random_tensor(xs, c.dtype, seed));
  ir::Value* x = b.g->add_input("x", ir::Type::tensor(c.dtype, ir::dims_from_shape(xs)));
  auto param = [&](const std::string& name, const Shape& shape, uint64_t s) {
    Tensor t = random_tensor(shape, c.dtype, s);
    if (c.constant_weight) return b.g->constant(ir::AttrValue(t));
    b.feed.push_back(t);
    return b.g->add_input(name, ir::Type::tensor(c.dtype, ir::dims_from_shape(shape)));
  };
  ir::Value* w = param("w", ws, seed + 1);
  ir::Value* bias = nullptr;
  if (c.bias) {
    bias = param("b", {c.cout}, seed + 2);
  } else {
    bias = b.g->constant(ir::AttrValue());
  }
  ir::Attrs attrs{
      {"stride", c.stride}, {"padding", c.padding}, {"dilation", c.dilation}, {"groups", c.groups}};
  b.g->set_outputs(b.g->apply("conv2d", {x, w, bias}, attrs));
  return b;
}

// Schedules lowered kernels the way compile() does.
inline std::vector<loop::Kernel> schedule_all(const std::vector<loop::Kernel>& lowered,
                                              const std::vector<passes::KernelPlan>& plans,
                                              bool parallel = true) {
  passes::ScheduleTarget st;
  st.parallel = parallel;
  std::vector<loop::Kernel> out;
  for (size_t i = 0; i < lowered.size(); ++i) {
    loop::Kernel k = passes::default_schedule(lowered[i], plans[i].category, st);
    k.body = loop::simplify(k.body);
    out.push_back(std::move(k));
  }
  return out;
}

#ifdef KILN_WITH_LLVM
// Compiles scheduled kernels natively; run() calls them on buffers like run_kernels.
class NativeKernels {
 public:
  explicit NativeKernels(const std::vector<loop::Kernel>& kernels)
      : backend_(codegen::make_llvm_backend()) {
    module_ = backend_->compile(kernels, codegen::CodegenOptions{});
    for (const loop::Kernel& k : kernels) fns_.push_back(module_->lookup(k.name));
  }
  KernelRunner runner() const {
    return [this](size_t k, const std::vector<Tensor>& bufs, const std::vector<int64_t>& scalars) {
      std::vector<void*> ptrs;
      for (const Tensor& t : bufs) ptrs.push_back(t.data_ptr());
      int32_t status = 0;  // runtime/kernel_status.h
      ptrs.push_back(&status);
      fns_[k](ptrs.data(), scalars.data());
      if (status != 0) runtime::raise_kernel_status(status);
    };
  }

 private:
  std::unique_ptr<codegen::Backend> backend_;
  std::unique_ptr<codegen::CompiledModule> module_;
  std::vector<codegen::KernelFn> fns_;
};
#endif

// The graph lowered with `algorithm` for the host (threads cores), scheduled.
struct LoweredGraph {
  std::vector<loop::Kernel> kernels;
  std::vector<passes::KernelPlan> plans;
};
inline LoweredGraph lower_with(const ir::Graph& g, const std::string& algorithm, int threads = 0) {
  passes::LowerOptions o;
  o.target = api::host_target(threads);
  o.algorithm = algorithm;
  LoweredGraph l;
  std::vector<loop::Kernel> lowered = passes::lower_graph(g, o, &l.plans);
  l.kernels = schedule_all(lowered, l.plans, threads != 1);
  return l;
}

// Runs scheduled kernels natively (the loop-IR evaluator without LLVM).
inline std::vector<Tensor> run_native(const ir::Graph& g, const std::vector<loop::Kernel>& kernels,
                                      const std::vector<passes::KernelPlan>& plans,
                                      const std::vector<Tensor>& feed) {
#ifdef KILN_WITH_LLVM
  NativeKernels nk(kernels);
  return run_kernels(g, kernels, plans, feed, nk.runner());
#else
  return run_kernels(g, kernels, plans, feed);
#endif
}

// Runs `g` lowered with `algorithm` natively (or with the loop-IR evaluator, which
// is also the fallback of a build without LLVM).
inline std::vector<Tensor> run_algorithm(const ir::Graph& g, const std::vector<Tensor>& feed,
                                         const std::string& algorithm, bool native = true) {
  LoweredGraph l = lower_with(g, algorithm);
#ifdef KILN_WITH_LLVM
  if (native) {
    NativeKernels nk(l.kernels);
    return run_kernels(g, l.kernels, l.plans, feed, nk.runner());
  }
#else
  (void)native;
#endif
  return run_kernels(g, l.kernels, l.plans, feed);
}

}  // namespace kiln::test
