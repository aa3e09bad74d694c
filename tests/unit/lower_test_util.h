// Helpers for lowering tests: run a graph through lower_graph and loop_eval (the
// way an executable would: bind symbolic dims from the inputs, allocate output
// buffers, pass strides of non-contiguous inputs), build test inputs of any
// dtype, and compare tensors within a tolerance.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "ir/interpreter.h"
#include "ir/loop/loop_eval.h"
#include "ir/loop/visitor.h"
#include "passes/lower/lower_graph.h"

namespace kiln::test {

using SymbolMap = std::map<std::string, int64_t>;

inline SymbolMap bind_symbols(const ir::Graph& g, const std::vector<Tensor>& inputs) {
  SymbolMap syms;
  for (size_t i = 0; i < g.inputs().size() && i < inputs.size(); ++i) {
    const ir::Type& t = g.input(i)->type();
    if (!t.is_tensor()) continue;
    for (size_t d = 0; d < t.dims().size(); ++d) {
      if (!t.dims()[d].is_static()) syms[t.dims()[d].symbol] = inputs[i].size(int64_t(d));
    }
  }
  return syms;
}

// Runs kernel `k` on its buffers and scalars (the loop-IR evaluator by default).
using KernelRunner = std::function<void(size_t k, const std::vector<Tensor>& bufs,
                                        const std::vector<int64_t>& scalars)>;

// Runs already lowered kernels on `inputs` (graph input order).
inline std::vector<Tensor> run_kernels(const ir::Graph& g, const std::vector<loop::Kernel>& kernels,
                                       const std::vector<passes::KernelPlan>& plans,
                                       const std::vector<Tensor>& inputs,
                                       const KernelRunner& runner = {}) {
  SymbolMap syms = bind_symbols(g, inputs);
  std::unordered_map<const ir::Value*, Tensor> values;
  for (size_t i = 0; i < inputs.size(); ++i) values[g.input(i)] = inputs[i];
  for (size_t k = 0; k < kernels.size(); ++k) {
    const passes::KernelPlan& plan = plans[k];
    std::vector<Tensor> bufs;
    for (const passes::BufferParam& b : plan.buffers) {
      switch (b.role) {
        case passes::BufferRole::Input: {
          Tensor t = values.at(b.value);
          bufs.push_back(b.strided ? t : t.contiguous());
          break;
        }
        case passes::BufferRole::Constant:
          bufs.push_back(b.constant);
          break;
        default: {
          Shape shape;
          for (const loop::Expr& e : b.shape) shape.push_back(loop::eval_int(e, syms));
          Tensor t = Tensor::zeros(shape, b.buf->dtype);
          if (b.role == passes::BufferRole::Output) values[b.value] = t;
          bufs.push_back(t);
        }
      }
    }
    std::vector<int64_t> scalars;
    for (const passes::ScalarParam& s : plan.scalars) {
      switch (s.role) {
        case passes::ScalarRole::SymbolicDim:
          scalars.push_back(syms.at(s.symbol));
          break;
        case passes::ScalarRole::Stride:
          scalars.push_back(bufs[size_t(s.buffer)].stride(s.dim));
          break;
        case passes::ScalarRole::Value: {
          const Tensor& t = values.at(s.value);
          DType dt = s.var.type().dtype;
          scalars.push_back(is_floating(dt) ? loop::pack_scalar(dt, t.item())
                                            : t.get_int(std::vector<int64_t>{}));
          break;
        }
        case passes::ScalarRole::Offset:
          scalars.push_back(s.offset);
          break;
      }
    }
    if (runner) {
      runner(k, bufs, scalars);
    } else {
      loop::eval_kernel(kernels[k], bufs, scalars);
    }
  }
  std::vector<Tensor> outs;
  for (const ir::Value* v : g.outputs()) outs.push_back(values.at(v));
  return outs;
}

inline std::vector<Tensor> run_lowered(const ir::Graph& g, const std::vector<Tensor>& inputs,
                                       const passes::LowerOptions& options = {}) {
  std::vector<passes::KernelPlan> plans;
  std::vector<loop::Kernel> kernels = passes::lower_graph(g, options, &plans);
  return run_kernels(g, kernels, plans, inputs);
}

// Random test data: floats ~ N(0, 2), ints in a small range (positive for u8),
// bools half true. `nonzero` keeps integers away from 0 (divisors).
inline Tensor random_tensor(const Shape& shape, DType dtype, uint64_t seed, bool nonzero = false) {
  std::mt19937_64 rng(seed);
  Tensor t = Tensor::empty(shape, dtype);
  Tensor flat = t.view_as_strided({t.numel()}, {1}, 0);
  for (int64_t i = 0; i < t.numel(); ++i) {
    std::vector<int64_t> idx{i};
    if (is_floating(dtype)) {
      std::normal_distribution<double> nd(0.0, 2.0);
      flat.set(idx, nd(rng));
    } else if (dtype == DType::Bool) {
      flat.set_int(idx, int64_t(rng() % 2));
    } else {
      int64_t lo = dtype == DType::U8 ? 0 : -9;
      int64_t v = lo + int64_t(rng() % 19);
      if (nonzero && v == 0) v = 3;
      flat.set_int(idx, v);
    }
  }
  return t;
}

// Same dtype and shape, and every element within atol + rtol * |expected|
// (NaN matches NaN, infinities match exactly). Reports the first few misses.
inline ::testing::AssertionResult tensors_close(const Tensor& actual, const Tensor& expected,
                                                double rtol, double atol) {
  if (actual.dtype() != expected.dtype()) {
    return ::testing::AssertionFailure()
           << "dtype " << dtype_name(actual.dtype()) << " vs " << dtype_name(expected.dtype());
  }
  if (actual.sizes() != expected.sizes()) {
    return ::testing::AssertionFailure()
           << "shape " << shape_str(actual.sizes()) << " vs " << shape_str(expected.sizes());
  }
  Tensor a = actual.contiguous(), e = expected.contiguous();
  Tensor fa = a.view_as_strided({a.numel()}, {1}, a.storage_offset());
  Tensor fe = e.view_as_strided({e.numel()}, {1}, e.storage_offset());
  int misses = 0;
  std::ostringstream os;
  for (int64_t i = 0; i < a.numel(); ++i) {
    std::vector<int64_t> idx{i};
    bool ok;
    double x, y;
    if (is_floating(a.dtype())) {
      x = fa.get(idx), y = fe.get(idx);
      ok = (std::isnan(x) && std::isnan(y)) || x == y ||
           (std::isfinite(y) && std::fabs(x - y) <= atol + rtol * std::fabs(y));
    } else {
      int64_t xi = fa.get_int(idx), yi = fe.get_int(idx);
      x = double(xi), y = double(yi);
      ok = xi == yi;
    }
    if (!ok && misses++ < 5) os << " [" << i << "] " << x << " vs " << y << ";";
  }
  if (misses) return ::testing::AssertionFailure() << misses << " mismatches:" << os.str();
  return ::testing::AssertionSuccess();
}

inline double default_rtol(DType t) {
  if (t == DType::F16) return 2e-3;
  if (t == DType::BF16) return 1.6e-2;
  if (t == DType::F32) return 1e-5;
  return 1e-12;
}

// --- one-node graphs compared against the interpreter ---------------------------------------

// One operand of the node under test.
struct In {
  Tensor t;                               // a graph input (when defined)
  std::optional<ir::AttrValue> constant;  // else a constant node (scalar or none)
  ir::Dims dims;                          // overrides t's dims (symbolic)

  In(const Tensor& x) : t(x) {}  // NOLINT
  static In c(ir::AttrValue v) {
    In i{Tensor()};
    i.constant = std::move(v);
    return i;
  }
  static In sym(const Tensor& x, ir::Dims d) {
    In i{x};
    i.dims = std::move(d);
    return i;
  }
};

struct Built {
  std::unique_ptr<ir::Graph> g = std::make_unique<ir::Graph>("t");
  std::vector<Tensor> feed;
};

inline Built build(const std::string& op, const std::vector<In>& ins, const ir::Attrs& attrs) {
  Built b;
  std::vector<ir::Value*> vals;
  for (size_t i = 0; i < ins.size(); ++i) {
    const In& in = ins[i];
    if (in.constant) {
      vals.push_back(b.g->constant(*in.constant));
      continue;
    }
    ir::Dims dims = in.dims.empty() ? ir::dims_from_shape(in.t.sizes()) : in.dims;
    vals.push_back(b.g->add_input("in" + std::to_string(i), ir::Type::tensor(in.t.dtype(), dims)));
    b.feed.push_back(in.t);
  }
  b.g->set_outputs(b.g->apply(op, vals, attrs));
  return b;
}

inline void compare(const std::string& op, const std::vector<In>& ins, const ir::Attrs& attrs = {},
                    double rtol = -1, double atol = 0) {
  Built b = build(op, ins, attrs);
  std::vector<Tensor> expected = ir::interpret(*b.g, b.feed);
  std::vector<Tensor> actual = run_lowered(*b.g, b.feed);
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    double r = rtol >= 0 ? rtol : default_rtol(expected[i].dtype());
    double a = atol > 0 ? atol : (is_floating(expected[i].dtype()) ? r : 0);
    EXPECT_TRUE(tensors_close(actual[i], expected[i], r, a)) << op << " output " << i << "\n"
                                                             << ir::print_graph(*b.g);
  }
}

}  // namespace kiln::test
