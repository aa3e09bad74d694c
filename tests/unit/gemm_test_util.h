// Shared by the GEMM tests: lower a graph as one kernel with a chosen matmul
// algorithm, schedule it as compile() would, and run it compiled by the LLVM
// backend (or through the loop-IR evaluator), with inputs bound the way an
// executable binds them (symbolic dims, strides of non-contiguous inputs).
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "api/target.h"
#include "codegen/backend.h"
#include "codegen/llvm/llvm_backend.h"
#include "ir/graph.h"
#include "ir/interpreter.h"
#include "ir/loop/simplify.h"
#include "kiln/error.h"
#include "lower_test_util.h"
#include "passes/algorithms.h"
#include "passes/schedule/schedule.h"
#include "passes/target.h"
#include "runtime/kernel_status.h"

namespace kiln::test {

enum class Exec { Llvm, LoopEval };

// The buffers and scalars of one kernel launch, bound from graph inputs.
struct Launch {
  std::vector<Tensor> buffers;
  std::vector<int64_t> scalars;
  std::vector<Tensor> outputs;  // the graph's outputs, in order
};

inline Launch bind_launch(const ir::Graph& g, const passes::KernelPlan& plan,
                          const std::vector<Tensor>& inputs) {
  SymbolMap syms = bind_symbols(g, inputs);
  std::unordered_map<const ir::Value*, Tensor> values;
  for (size_t i = 0; i < inputs.size(); ++i) values[g.input(i)] = inputs[i];
  Launch l;
  for (const passes::BufferParam& b : plan.buffers) {
    switch (b.role) {
      case passes::BufferRole::Input: {
        Tensor t = values.at(b.value);
        l.buffers.push_back(b.strided ? t : t.contiguous());
        break;
      }
      case passes::BufferRole::Constant:
        l.buffers.push_back(b.constant);
        break;
      default: {
        Shape shape;
        for (const loop::Expr& e : b.shape) shape.push_back(loop::eval_int(e, syms));
        Tensor t = Tensor::zeros(shape, b.buf->dtype);
        if (b.role == passes::BufferRole::Output) values[b.value] = t;
        l.buffers.push_back(t);
      }
    }
  }
  for (const passes::ScalarParam& s : plan.scalars) {
    if (s.role == passes::ScalarRole::SymbolicDim) {
      l.scalars.push_back(syms.at(s.symbol));
    } else if (s.role == passes::ScalarRole::Stride) {
      l.scalars.push_back(l.buffers[size_t(s.buffer)].stride(s.dim));
    } else if (s.role == passes::ScalarRole::Offset) {
      l.scalars.push_back(s.offset);
    } else {
      ADD_FAILURE() << "scalar graph values are not used by these tests";
      l.scalars.push_back(0);
    }
  }
  for (const ir::Value* v : g.outputs()) l.outputs.push_back(values.at(v));
  return l;
}

#ifdef KILN_WITH_LLVM
inline codegen::Backend& llvm_backend() {
  static std::unique_ptr<codegen::Backend> b = codegen::make_llvm_backend();
  return *b;
}
#endif

// A kernel compiled (or evaluated) once and run on several feeds.
class Compiled {
 public:
  // Without the LLVM backend (scripts/gpu-check's build), Exec::Llvm falls
  // back to the loop-IR evaluator, like conv_test_util.h's run_native.
  Compiled(loop::Kernel kernel, Exec exec) : kernel_(std::move(kernel)), exec_(exec) {
#ifdef KILN_WITH_LLVM
    if (exec_ == Exec::Llvm) {
      module_ = llvm_backend().compile({kernel_}, codegen::CodegenOptions{});
      fn_ = module_->lookup(kernel_.name);
    }
#else
    exec_ = Exec::LoopEval;
#endif
  }
  void run(const Launch& l) const {
    if (exec_ == Exec::LoopEval) {
      loop::eval_kernel(kernel_, l.buffers, l.scalars);
      return;
    }
    std::vector<void*> ptrs;
    for (const Tensor& t : l.buffers) ptrs.push_back(t.data_ptr());
    int32_t status = 0;  // runtime/kernel_status.h
    ptrs.push_back(&status);
    fn_(ptrs.data(), l.scalars.data());
    if (status != 0) runtime::raise_kernel_status(status);
  }
  const loop::Kernel& kernel() const { return kernel_; }

 private:
  loop::Kernel kernel_;
  Exec exec_;
  std::unique_ptr<codegen::CompiledModule> module_;
  codegen::KernelFn fn_ = nullptr;
};

// Every non-constant node of `g` as one kernel, lowered with matmul algorithm
// `algorithm` and scheduled like compile() schedules it.
// unit_inner: inputs' innermost strides are the constant 1, as compile()
// lowers for a CPU (LowerOptions::unit_inner_stride).
inline passes::LoweredKernel lower_as_one(const ir::Graph& g, const std::string& algorithm,
                                          const passes::CpuTarget& target,
                                          bool unit_inner = false) {
  std::vector<const ir::Node*> nodes;
  for (const auto& n : g.nodes()) {
    if (n->op() != "constant") nodes.push_back(n.get());
  }
  passes::LowerOptions o;
  o.target = passes::Target::for_cpu(target);
  o.algorithm = algorithm;
  o.unit_inner_stride = unit_inner;
  passes::LoweredKernel k = passes::lower_group(g, nodes, "gemm_test", o);
  k.kernel = passes::default_schedule(k.kernel, k.plan.category, passes::ScheduleTarget{});
  k.kernel.body = loop::simplify(k.kernel.body);
  return k;
}

// The one contraction node of `g`.
inline const ir::Node& contraction_node(const ir::Graph& g) {
  for (const auto& n : g.nodes()) {
    if (passes::has_algorithms(n->op())) return *n;
  }
  throw Error("test: no contraction node");
}

// Targets that take the generator's other paths on this machine: AVX2-sized
// vectors and registers, and caches so small that K is split into blocks
// (partial sums in scratch) and tiles are tiny.
inline passes::CpuTarget avx2_target() {
  passes::CpuTarget t = api::host_cpu_target();
  t.vector_bits = 256, t.vector_registers = 16;
  return t;
}
inline passes::CpuTarget tiny_cache_target() {
  passes::CpuTarget t = api::host_cpu_target();
  t.l1d_bytes = 8 << 10, t.l2_bytes = 64 << 10, t.l3_bytes = 1 << 20;
  return t;
}

// Within tolerance of the reference for a sum of K products of N(0, 2) values.
inline double gemm_atol(DType t, int64_t K) {
  double scale = 4.0 * double(std::max<int64_t>(K, 1));
  if (t == DType::F64) return 1e-12 * scale;
  if (t == DType::F32) return 2e-6 * scale;
  return 2e-3 * scale;
}
inline double gemm_rtol(DType t) {
  if (t == DType::BF16) return 1.6e-2;
  if (t == DType::F16) return 2e-3;
  if (t == DType::F32) return 1e-5;
  return 1e-12;
}

// Runs `g` with every algorithm that claims to apply to its contraction node
// (or just `only`), on each feed, against the interpreter.
inline void check_algorithms(const ir::Graph& g, const std::vector<std::vector<Tensor>>& feeds,
                             int64_t K, const std::vector<std::string>& only = {},
                             Exec exec = Exec::Llvm,
                             const passes::CpuTarget& target = api::host_cpu_target(),
                             bool unit_inner = false) {
  std::vector<std::string> algos =
      only.empty()
          ? passes::applicable_algorithms(contraction_node(g), passes::Target::for_cpu(target))
          : only;
  ASSERT_FALSE(algos.empty());
  for (const std::string& a : algos) {
    SCOPED_TRACE("algorithm " + a);
    passes::LoweredKernel k = lower_as_one(g, a, target, unit_inner);
    std::unique_ptr<Compiled> c;
    try {
      c = std::make_unique<Compiled>(k.kernel, exec);
    } catch (const Error& e) {
      ADD_FAILURE() << "compile: " << e.what() << "\n" << loop::to_string(k.kernel);
      continue;
    }
    for (const std::vector<Tensor>& feed : feeds) {
      std::vector<Tensor> want = ir::interpret(g, feed);
      Launch l = bind_launch(g, k.plan, feed);
      c->run(l);
      ASSERT_EQ(l.outputs.size(), want.size());
      for (size_t i = 0; i < want.size(); ++i) {
        DType t = want[i].dtype();
        EXPECT_TRUE(tensors_close(l.outputs[i], want[i], gemm_rtol(t), gemm_atol(t, K)))
            << a << " output " << i << " shape " << shape_str(want[i].sizes()) << "\n"
            << ir::print_graph(g);
      }
    }
  }
}

}  // namespace kiln::test
