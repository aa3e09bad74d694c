// The op-test cases of llvm_ops_test (and of emu_ops_test, which runs the
// same cases' emitted CUDA C in the CUDA emulator): every registry op x every
// dtype it accepts (inference decides) x odd sizes (0, 1, 7, 33, 1023
// elements via one symbolic dim, compiled once), non-contiguous and
// broadcast (stride-0) views, broadcasting between operands, and the
// tolerances a backend's outputs must meet against ir::interpret. A
// generator: each case goes to an OpCaseSink, which compiles and runs it its
// own way.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "ir/graph.h"
#include "tests/unit/lower_test_util.h"
#include "tests/unit/op_test_util.h"

namespace kiln::test::op_cases {

using ir::Attrs;
using ir::AttrValue;
using ir::Dim;
using Ints = std::vector<int64_t>;

inline const DType kDTypes[] = {DType::Bool, DType::I8,  DType::U8,   DType::I16, DType::I32,
                                DType::I64,  DType::F16, DType::BF16, DType::F32, DType::F64};

struct Tol {
  double rtol = 0, atol = 0;
};

inline bool transcendental(const std::string& op) {
  static const std::set<std::string> names = {
      "exp",        "log",        "log1p",       "expm1", "sqrt", "rsqrt", "sin",
      "cos",        "tanh",       "sigmoid",     "silu",  "erf",  "gelu",  "pow",
      "reciprocal", "softmax",    "log_softmax", "elu",   "selu", "celu",  "softplus",
      "mish",       "logsigmoid", "logit",       "xlogy"};
  return names.count(op) > 0;
}

inline Tol tolerance(const ir::OpDef& op, DType out) {
  if (!is_floating(out) || op.category == ir::OpCategory::Layout ||
      op.category == ir::OpCategory::Other) {
    return {};
  }
  Tol t;
  if (op.category == ir::OpCategory::Reduction || op.category == ir::OpCategory::Contraction) {
    t = {1e-3, 1e-3};
  } else if (transcendental(op.name)) {
    t = {5e-4, 5e-5};
  } else {
    t = {out == DType::F64 ? 1e-12 : 1e-5, 1e-6};
  }
  if (out == DType::F16) t = {std::max(t.rtol, 4e-3), std::max(t.atol, 4e-3)};
  if (out == DType::BF16) t = {std::max(t.rtol, 3.2e-2), std::max(t.atol, 3.2e-2)};
  return t;
}

// --- one compiled graph, several runs -------------------------------------------------------

struct Run {
  std::string what;
  std::vector<Tensor> feed;
};

// Receives the cases: `g` compiled once and run on every feed of `runs`.
class OpCaseSink {
 public:
  virtual ~OpCaseSink() = default;
  virtual void check(const ir::OpDef& op, const std::string& label, const ir::Graph& g,
                     const std::vector<Run>& runs) = 0;
};

// Every case of `op`.
inline void check_other(OpCaseSink& c, const ir::OpDef& op);
inline void check_elementwise(OpCaseSink& c, const ir::OpDef& op);
inline void generate(OpCaseSink& c, const ir::OpDef& op) {
  if (op.category == ir::OpCategory::Elementwise) {
    check_elementwise(c, op);
  } else {
    check_other(c, op);
  }
}

// --- inputs ---------------------------------------------------------------------------------

inline Tensor rnd(const Shape& s, DType t, uint64_t seed, bool nonzero = false) {
  return random_tensor(s, t, seed, nonzero);
}
// n elements read with stride 2 (non-contiguous).
inline Tensor strided(int64_t n, DType t, uint64_t seed, bool nonzero = false) {
  return rnd({2 * n + 1}, t, seed, nonzero).view_as_strided({n}, {2}, 1);
}
// n elements that are all one element (stride 0, like expand).
inline Tensor broadcast(int64_t n, DType t, uint64_t seed, bool nonzero = false) {
  return rnd({1}, t, seed, nonzero).view_as_strided({n}, {0}, 0);
}

inline const int64_t kSizes[] = {0, 1, 7, 33, 1023};

// Builds `op` over graph inputs of the given types (plus constants), or returns
// null when inference rejects the operands (the op does not take this dtype).
struct Operand {
  std::optional<ir::Type> input;
  std::optional<AttrValue> constant;
};
inline std::unique_ptr<ir::Graph> try_build(const std::string& op,
                                            const std::vector<std::vector<Operand>>& calls,
                                            const std::vector<Attrs>& attrs) {
  auto g = std::make_unique<ir::Graph>("t");
  std::vector<ir::Value*> outs;
  int next = 0;
  try {
    for (size_t c = 0; c < calls.size(); ++c) {
      std::vector<ir::Value*> vals;
      for (const Operand& o : calls[c]) {
        if (o.constant) {
          vals.push_back(g->constant(*o.constant));
        } else {
          vals.push_back(g->add_input("in" + std::to_string(next++), *o.input));
        }
      }
      for (ir::Value* v : g->apply(op, vals, attrs[c])) outs.push_back(v);
    }
  } catch (const Error&) {
    return nullptr;
  }
  g->set_outputs(outs);
  return g;
}

inline Operand in(DType t, ir::Dims dims) {
  return {ir::Type::tensor(t, std::move(dims)), {}};
}
inline Operand cst(AttrValue v) {
  return {{}, std::move(v)};
}
inline const Dim N = Dim::sym("N");

// --- elementwise: one symbolic graph per (op, dtype, attrs) ---------------------------------

inline bool needs_nonzero(const std::string& op) {
  return op == "div" || op == "remainder" || op == "pow" || op == "fmod";
}

inline void check_unary(OpCaseSink& c, const ir::OpDef& op, DType t, const Attrs& attrs,
                        const std::string& label) {
  auto g = try_build(op.name, {{in(t, {N})}}, {attrs});
  if (!g) return;
  std::vector<Run> runs;
  for (int64_t n : kSizes) runs.push_back({"N=" + std::to_string(n), {rnd({n}, t, uint64_t(n))}});
  runs.push_back({"strided N=33", {strided(33, t, 5)}});
  runs.push_back({"stride-0 N=7", {broadcast(7, t, 6)}});
  c.check(op, label + " " + dtype_name(t), *g, runs);
}

inline void check_binary(OpCaseSink& c, const ir::OpDef& op, DType ta, DType tb, const Attrs& attrs,
                         const std::string& label) {
  // out0 = op(a[N], b[N]); out1 = op(c[M, 1], d[K]) broadcasts to [M, K].
  Dim M = Dim::sym("M"), K = Dim::sym("K");
  auto g = try_build(op.name, {{in(ta, {N}), in(tb, {N})}, {in(ta, {M, 1}), in(tb, {K})}},
                     {attrs, attrs});
  if (!g) return;
  bool nz = needs_nonzero(op.name);
  std::vector<Run> runs;
  for (int64_t n : kSizes) {
    runs.push_back({"N=" + std::to_string(n),
                    {rnd({n}, ta, uint64_t(n)), rnd({n}, tb, uint64_t(n + 50), nz),
                     rnd({3, 1}, ta, 1), rnd({5}, tb, 2, nz)}});
  }
  runs.push_back(
      {"strided/stride-0 N=33, M=7, K=33",
       {strided(33, ta, 3), broadcast(33, tb, 4, nz), rnd({7, 1}, ta, 5), strided(33, tb, 6, nz)}});
  runs.push_back(
      {"M=0", {rnd({1}, ta, 7), rnd({1}, tb, 8, nz), rnd({0, 1}, ta, 9), rnd({4}, tb, 10, nz)}});
  if (nz && op.name != "pow" && op.name != "fmod" && is_integral(ta) && is_integral(tb)) {
    // The interpreter raises "div/remainder: integer division by zero": so must the backend,
    // for a zero in the last element of a vector tail and in a broadcast operand.
    auto with_zero = [](Tensor t, int64_t k) {
      t.set_int(std::vector<int64_t>{k}, 0);
      return t;
    };
    runs.push_back({"zero divisor N=33",
                    {rnd({33}, ta, 11), with_zero(rnd({33}, tb, 12, true), 32), rnd({3, 1}, ta, 1),
                     rnd({5}, tb, 2, true)}});
    runs.push_back({"zero divisor K=5",
                    {rnd({7}, ta, 13), rnd({7}, tb, 14, true), rnd({3, 1}, ta, 15),
                     with_zero(rnd({5}, tb, 16, true), 1)}});
  }
  c.check(op, label + " " + dtype_name(ta) + "," + dtype_name(tb), *g, runs);
}

// addcmul, addcdiv, lerp: out0 = op(a[N], b[N], c[N]); out1 = op(a[M, 1], b[K], c[1])
// broadcasts to [M, K]; lerp also with a number weight.
inline void check_ternary(OpCaseSink& c, const ir::OpDef& op, DType t) {
  Dim M = Dim::sym("M"), K = Dim::sym("K");
  bool nz = op.name == "addcdiv";
  auto g = try_build(
      op.name, {{in(t, {N}), in(t, {N}), in(t, {N})}, {in(t, {M, 1}), in(t, {K}), in(t, {1})}},
      {{}, {}});
  if (g) {
    std::vector<Run> runs;
    for (int64_t n : kSizes) {
      runs.push_back({"N=" + std::to_string(n),
                      {rnd({n}, t, uint64_t(n)), rnd({n}, t, uint64_t(n + 50)),
                       rnd({n}, t, uint64_t(n + 90), nz), rnd({3, 1}, t, 1), rnd({5}, t, 2),
                       rnd({1}, t, 3, nz)}});
    }
    runs.push_back({"strided/stride-0 N=33",
                    {strided(33, t, 3), broadcast(33, t, 4), strided(33, t, 5, nz),
                     rnd({7, 1}, t, 5), rnd({0}, t, 6), rnd({1}, t, 7, nz)}});
    c.check(op, std::string(dtype_name(t)), *g, runs);
  }
  if (op.name != "lerp") return;
  for (double w : {0.25, 0.75}) {
    auto gw = try_build(op.name, {{in(t, {N}), in(t, {N}), cst(AttrValue(w))}}, {{}});
    if (!gw) continue;
    std::vector<Run> runs;
    for (int64_t n : kSizes) {
      runs.push_back({"N=" + std::to_string(n), {rnd({n}, t, uint64_t(n)), rnd({n}, t, 9)}});
    }
    c.check(op, "weight=" + std::to_string(w) + " " + dtype_name(t), *gw, runs);
  }
}

inline void check_elementwise(OpCaseSink& c, const ir::OpDef& op) {
  const std::string& n = op.name;
  for (DType t : kDTypes) {
    if (n == "cast") {
      for (DType to : kDTypes)
        check_unary(c, op, t, {{"dtype", to}}, std::string("->") + dtype_name(to));
    } else if (n == "where") {
      auto g = try_build(n, {{in(DType::Bool, {N}), in(t, {N}), in(t, {1})}}, {{}});
      if (!g) continue;
      std::vector<Run> runs;
      for (int64_t s : kSizes) {
        runs.push_back(
            {"N=" + std::to_string(s), {rnd({s}, DType::Bool, 1), rnd({s}, t, 2), rnd({1}, t, 3)}});
      }
      runs.push_back({"strided", {strided(33, DType::Bool, 4), strided(33, t, 5), rnd({1}, t, 6)}});
      c.check(op, dtype_name(t), *g, runs);
    } else if (n == "masked_fill") {
      auto g = try_build(n, {{in(t, {N}), in(DType::Bool, {N}), cst(AttrValue(int64_t{2}))}}, {{}});
      if (!g) continue;
      std::vector<Run> runs;
      for (int64_t s : kSizes) {
        runs.push_back({"N=" + std::to_string(s), {rnd({s}, t, 1), rnd({s}, DType::Bool, 2)}});
      }
      c.check(op, dtype_name(t), *g, runs);
    } else if (n == "clamp") {
      AttrValue lo = is_floating(t) ? AttrValue(-1.5) : AttrValue(int64_t{-2});
      AttrValue hi = is_floating(t) ? AttrValue(1.0) : AttrValue(int64_t{3});
      for (auto [l, h, label] : {std::tuple{cst(lo), cst(hi), "min,max"},
                                 std::tuple{cst(lo), cst(ir::NoneAttr{}), "min"},
                                 std::tuple{cst(ir::NoneAttr{}), cst(hi), "max"}}) {
        auto g = try_build(n, {{in(t, {N}), l, h}}, {{}});
        if (!g) continue;
        std::vector<Run> runs;
        for (int64_t s : kSizes) runs.push_back({"N=" + std::to_string(s), {rnd({s}, t, 1)}});
        c.check(op, std::string(label) + " " + dtype_name(t), *g, runs);
      }
    } else if (n == "addcmul" || n == "addcdiv" || n == "lerp") {
      check_ternary(c, op, t);
    } else if (op.operands.size() == 1) {
      check_unary(c, op, t, {}, "");
      if (n == "gelu") check_unary(c, op, t, {{"approximate", std::string("tanh")}}, "tanh");
    } else if (op.operands.size() == 2) {
      check_binary(c, op, t, t, {}, "");
      if (n == "div") {
        for (const char* mode : {"trunc", "floor"}) {
          check_binary(c, op, t, t, {{"rounding_mode", std::string(mode)}}, mode);
        }
      }
      if (n == "add" || n == "sub") check_binary(c, op, t, t, {{"alpha", 2.0}}, "alpha=2");
    }
  }
  // Mixed dtypes (promotion inside the kernel).
  if (op.operands.size() == 2 && n != "where") {
    check_binary(c, op, DType::I32, DType::F32, {}, "mixed");
    check_binary(c, op, DType::U8, DType::I8, {}, "mixed");
    check_binary(c, op, DType::F16, DType::BF16, {}, "mixed");
  }
}

// --- gather and scatter: index values in [0, n) (unique where duplicates would race in
// PyTorch), and runs with an out-of-range index the backend must report as the interpreter does.

// k indices in [0, n) of dtype t; unique ones are a shuffled prefix of 0..n-1 (k <= n).
inline Tensor index_tensor(int64_t k, int64_t n, DType t, uint64_t seed, bool unique) {
  std::mt19937_64 rng(seed);
  std::vector<double> v;
  std::vector<int64_t> perm(size_t(std::max<int64_t>(n, 0)));
  for (int64_t i = 0; i < n; ++i) perm[size_t(i)] = i;
  std::shuffle(perm.begin(), perm.end(), rng);
  for (int64_t i = 0; i < k; ++i) {
    v.push_back(double(unique ? perm[size_t(i)] : int64_t(rng() % uint64_t(n))));
  }
  return make_tensor({k}, v, t);
}

inline void check_indexing(OpCaseSink& c, const ir::OpDef& op) {
  const bool gather = op.name == "gather";
  const Dim K = Dim::sym("K");
  std::vector<Attrs> variants;
  if (gather) {
    variants = {{{"dim", int64_t{0}}}};
  } else {
    variants = {{{"dim", int64_t{0}}}, {{"dim", int64_t{0}}, {"reduce", std::string("sum")}}};
    for (const char* r : {"prod", "amax", "amin"}) {
      for (bool self : {true, false}) {
        variants.push_back(
            {{"dim", int64_t{0}}, {"reduce", std::string(r)}, {"include_self", self}});
      }
    }
  }
  for (DType t : kDTypes) {
    for (DType it : {DType::I64, DType::I32}) {
      for (const Attrs& a : variants) {
        std::vector<Operand> ops = {in(t, {N}), in(it, {K})};
        if (!gather) ops.push_back(in(t, {K}));
        auto g = try_build(op.name, {ops}, {a});
        if (!g) continue;
        const bool unique = !gather && (!a.has("reduce") || a.get_string("reduce") != "sum");
        std::vector<Run> runs;
        for (int64_t n : kSizes) {
          int64_t k = n == 0 ? 0 : unique ? std::max<int64_t>(1, n / 2) : n + 3;
          std::vector<Tensor> feed = {rnd({n}, t, uint64_t(n)),
                                      index_tensor(k, n, it, uint64_t(n + 1), unique)};
          if (!gather) feed.push_back(rnd({k}, t, uint64_t(n + 2)));
          runs.push_back({"N=" + std::to_string(n) + ", K=" + std::to_string(k), feed});
        }
        for (double bad : {7.0, -1.0}) {
          std::vector<Tensor> feed = {rnd({7}, t, 3), make_tensor({2}, {1, bad}, it)};
          if (!gather) feed.push_back(rnd({2}, t, 4));
          runs.push_back({"index " + std::to_string(int64_t(bad)) + " out of range", feed});
        }
        std::string label = std::string(dtype_name(t)) + " index " + dtype_name(it);
        if (a.has("reduce")) label += " " + a.get_string("reduce");
        if (a.has("include_self")) label += a.get_bool("include_self") ? " self" : " no-self";
        c.check(op, label, *g, runs);
      }
    }
  }
  // Along the last dim of a 2-D tensor, the index narrower than x in dim 0.
  for (DType t : {DType::F32, DType::I8}) {
    std::vector<Operand> ops = {in(t, {7, 5}), in(DType::I64, {3, 4})};
    if (!gather) ops.push_back(in(t, {3, 6}));
    auto g = try_build(op.name, {ops}, {{{"dim", int64_t{1}}}});
    if (!g) continue;
    std::vector<double> v;
    for (int64_t r = 0; r < 3; ++r) {
      for (int64_t q : {4, 0, 2, 3}) v.push_back(double(r == 1 ? 4 - q : q));
    }
    std::vector<Tensor> feed = {rnd({7, 5}, t, 1), make_tensor({3, 4}, v, DType::I64)};
    if (!gather) feed.push_back(rnd({3, 6}, t, 2));
    c.check(op, std::string("2-D ") + dtype_name(t), *g, {{"dim 1", feed}});
  }
}

// --- the other categories: a few shapes per op, every accepted dtype ------------------------

struct Case {
  std::vector<std::vector<Shape>> shapes;  // per run: one shape per tensor input
  std::vector<Operand> operands;           // types (dims symbolic or static) and constants
  Attrs attrs;
};

inline void check_cases(OpCaseSink& c, const ir::OpDef& op, const std::vector<Case>& cases,
                        const std::vector<DType>& dtypes) {
  for (DType t : dtypes) {
    for (size_t i = 0; i < cases.size(); ++i) {
      const Case& cs = cases[i];
      std::vector<Operand> ops = cs.operands;
      for (Operand& o : ops) {
        if (o.input && o.input->is_tensor() && o.input->dtype() == DType::F32) {
          o.input = ir::Type::tensor(t, o.input->dims());  // F32 marks "the swept dtype"
        }
      }
      auto g = try_build(op.name, {ops}, {cs.attrs});
      if (!g) continue;
      std::vector<Run> runs;
      for (size_t r = 0; r < cs.shapes.size(); ++r) {
        std::vector<Tensor> feed;
        size_t k = 0;
        for (const Operand& o : ops) {
          if (!o.input) continue;
          const Shape& s = cs.shapes[r].at(k++);
          DType dt = o.input->dtype();
          Tensor x = rnd(s, dt, 11 * r + k);
          // Variances must be positive.
          if (op.name == "batch_norm" && k == 3) x = Tensor::rand(s, 5, dt);
          feed.push_back(x);
        }
        runs.push_back({"shapes#" + std::to_string(r), feed});
      }
      c.check(op, "case " + std::to_string(i) + " " + dtype_name(t), *g, runs);
    }
  }
}

inline std::vector<DType> all_dtypes() {
  return std::vector<DType>(std::begin(kDTypes), std::end(kDTypes));
}

inline void check_other(OpCaseSink& c, const ir::OpDef& op) {
  const std::string& n = op.name;
  const DType S = DType::F32;  // placeholder for the swept dtype
  const Operand none = cst(ir::NoneAttr{});
  std::vector<Case> cases;
  std::vector<Shape> rows = {{0, 7}, {1, 7}, {7, 7}, {33, 7}};
  std::vector<std::vector<Shape>> row_runs;  // x: [N, 7] for N = 0, 1, 7, 33
  for (const Shape& s : rows) row_runs.push_back({s});
  if (n == "sum" || n == "prod" || n == "mean" || n == "amax" || n == "amin" || n == "any" ||
      n == "all" || n == "var" || n == "std") {
    for (Attrs a : {Attrs{{"dim", Ints{1}}}, Attrs{{"dim", Ints{0}}, {"keepdim", true}}, Attrs{}}) {
      cases.push_back({row_runs, {in(S, {N, 7})}, a});
    }
  } else if (n == "max" || n == "min" || n == "argmax" || n == "argmin") {
    cases.push_back({row_runs, {in(S, {N, 7})}, {{"dim", int64_t{1}}}});
    cases.push_back({row_runs, {in(S, {N, 7})}, {{"dim", int64_t{0}}, {"keepdim", true}}});
  } else if (n == "cumsum" || n == "cumprod" || n == "logcumsumexp" || n == "cummax" ||
             n == "cummin") {
    cases.push_back({row_runs, {in(S, {N, 7})}, {{"dim", int64_t{1}}}});
    cases.push_back({row_runs, {in(S, {N, 7})}, {{"dim", int64_t{0}}}});
  } else if (n == "sort" || n == "topk" || n == "kthvalue" || n == "median" || n == "nanmedian") {
    // Along the static dim only: a GPU thread sorts a row in local memory of a
    // constant size (a run-time size is refused for cuda).
    Attrs a{{"dim", int64_t{1}}};
    if (n == "sort") a.set("descending", true);
    if (n == "topk") a.set("k", int64_t{3});
    if (n == "kthvalue") a.set("k", int64_t{4});
    if (n == "kthvalue" || n == "median" || n == "nanmedian") a.set("keepdim", true);
    cases.push_back({row_runs, {in(S, {N, 7})}, a});
  } else if (n == "softmax" || n == "log_softmax") {
    cases.push_back({row_runs, {in(S, {N, 7})}, {{"dim", int64_t{1}}}});
    cases.push_back({row_runs, {in(S, {N, 7})}, {{"dim", int64_t{0}}}});
  } else if (n == "layer_norm") {
    cases.push_back({{{{1, 33}, {33}, {33}}, {{7, 33}, {33}, {33}}},
                     {in(S, {N, 33}), in(S, {33}), in(S, {33})},
                     {{"normalized_shape", Ints{33}}}});
    cases.push_back(
        {{{{2, 3, 4}}}, {in(S, {2, 3, 4}), none, none}, {{"normalized_shape", Ints{3, 4}}}});
  } else if (n == "rms_norm") {
    cases.push_back({{{{1, 33}, {33}}, {{7, 33}, {33}}},
                     {in(S, {N, 33}), in(S, {33})},
                     {{"normalized_shape", Ints{33}}}});
  } else if (n == "batch_norm") {
    cases.push_back({{{{2, 3, 4, 5}, {3}, {3}, {3}, {3}}},
                     {in(S, {2, 3, 4, 5}), in(S, {3}), in(S, {3}), in(S, {3}), in(S, {3})},
                     {}});
  } else if (n == "matmul") {
    cases.push_back({{{{1, 7}, {7, 5}}, {{33, 7}, {7, 5}}}, {in(S, {N, 7}), in(S, {7, 5})}, {}});
    cases.push_back({{{{7}, {7}}}, {in(S, {7}), in(S, {7})}, {}});
    cases.push_back({{{{2, 1, 3, 7}, {4, 7, 5}}}, {in(S, {2, 1, 3, 7}), in(S, {4, 7, 5})}, {}});
  } else if (n == "bmm") {
    cases.push_back({{{{2, 3, 7}, {2, 7, 5}}}, {in(S, {2, 3, 7}), in(S, {2, 7, 5})}, {}});
  } else if (n == "linear") {
    cases.push_back({{{{1, 7}, {5, 7}, {5}}, {{33, 7}, {5, 7}, {5}}},
                     {in(S, {N, 7}), in(S, {5, 7}), in(S, {5})},
                     {}});
  } else if (n == "conv2d") {
    cases.push_back({{{{2, 3, 7, 6}, {4, 3, 3, 3}, {4}}},
                     {in(S, {2, 3, 7, 6}), in(S, {4, 3, 3, 3}), in(S, {4})},
                     {}});
    cases.push_back({{{{1, 4, 9, 8}, {6, 2, 3, 2}}},
                     {in(S, {1, 4, 9, 8}), in(S, {6, 2, 3, 2}), none},
                     {{"stride", Ints{2, 1}}, {"padding", Ints{1, 2}}, {"groups", int64_t{2}}}});
  } else if (n == "max_pool2d" || n == "avg_pool2d") {
    cases.push_back({{{{2, 3, 7, 6}}},
                     {in(S, {2, 3, 7, 6})},
                     {{"kernel_size", Ints{3}}, {"stride", Ints{2}}, {"padding", Ints{1}}}});
    cases.push_back(
        {{{{1, 2, 7, 7}}}, {in(S, {1, 2, 7, 7})}, {{"kernel_size", Ints{2}}, {"ceil_mode", true}}});
  } else if (n == "gather" || n == "scatter") {
    check_indexing(c, op);
    return;
  } else if (n == "reshape") {
    cases.push_back({{{{3, 4, 5}}}, {in(S, {3, 4, 5})}, {{"shape", Ints{4, -1}}}});
  } else if (n == "permute") {
    cases.push_back({{{{2, 3, 4}}}, {in(S, {2, 3, 4})}, {{"dims", Ints{2, 0, 1}}}});
  } else if (n == "transpose") {
    cases.push_back({row_runs, {in(S, {N, 7})}, {{"dim0", int64_t{0}}, {"dim1", int64_t{1}}}});
  } else if (n == "expand") {
    cases.push_back({{{{3, 1}}}, {in(S, {3, 1})}, {{"size", Ints{2, 3, 4}}}});
  } else if (n == "squeeze") {
    cases.push_back({{{{3, 1, 4, 1}}}, {in(S, {3, 1, 4, 1})}, {}});
  } else if (n == "unsqueeze") {
    cases.push_back({row_runs, {in(S, {N, 7})}, {{"dim", int64_t{1}}}});
  } else if (n == "flatten") {
    cases.push_back({{{{2, 3, 4}}}, {in(S, {2, 3, 4})}, {{"start_dim", int64_t{1}}}});
  } else if (n == "contiguous" || n == "copy") {
    cases.push_back({row_runs, {in(S, {N, 7})}, {}});
  } else if (n == "slice") {
    cases.push_back(
        {row_runs,
         {in(S, {N, 7})},
         {{"dim", int64_t{1}}, {"start", int64_t{1}}, {"end", int64_t{-1}}, {"step", int64_t{2}}}});
    cases.push_back({{{{7, 5}}}, {in(S, {7, 5})}, {{"dim", int64_t{0}}, {"start", int64_t{-3}}}});
  } else if (n == "select") {
    cases.push_back({row_runs, {in(S, {N, 7})}, {{"dim", int64_t{1}}, {"index", int64_t{-2}}}});
  } else if (n == "cat" || n == "stack") {
    cases.push_back({{{{1, 7}, {1, 7}}, {{7, 7}, {7, 7}}},
                     {in(S, {N, 7}), in(S, {N, 7})},
                     {{"dim", int64_t{1}}}});
  } else if (n == "split") {
    cases.push_back({{{{7, 3}}}, {in(S, {7, 3})}, {{"split_size", int64_t{3}}}});
  } else if (n == "chunk") {
    cases.push_back({{{{2, 6}}}, {in(S, {2, 6})}, {{"chunks", int64_t{4}}, {"dim", int64_t{-1}}}});
  } else if (n == "flip") {
    cases.push_back({row_runs, {in(S, {N, 7})}, {{"dims", Ints{0, 1}}}});
  } else if (n == "diagonal") {
    cases.push_back({{{{7, 5}}}, {in(S, {7, 5})}, {{"offset", int64_t{-2}}}});
    cases.push_back({{{{2, 3, 4}}}, {in(S, {2, 3, 4})}, {{"dim1", int64_t{2}}, {"dim2", int64_t{1}}}});
  } else if (n == "unfold") {
    cases.push_back({row_runs,
                     {in(S, {N, 7})},
                     {{"dimension", int64_t{1}}, {"size", int64_t{3}}, {"step", int64_t{2}}}});
  } else if (n == "arange" || n == "full" || n == "constant") {
    std::vector<Attrs> as;
    if (n == "arange")
      as = {{{"end", 7.0}}, {{"start", 1.0}, {"end", 2.0}, {"step", 0.25}, {"dtype", DType::F32}}};
    if (n == "full")
      as = {{{"size", Ints{2, 3}}, {"value", 1.5}}, {{"size", Ints{0}}, {"value", 1.0}}};
    if (n == "constant") as = {{{"value", AttrValue(make_tensor({2, 2}, {1, 2, 3, 4}))}}};
    for (const Attrs& a : as) {
      auto g = try_build(n, {{}}, {a});
      if (g) c.check(op, "attrs", *g, {{"", {}}});
    }
    return;
  }
  if (cases.empty()) {
    ADD_FAILURE() << "no llvm_ops_test case for op " << n;
    return;
  }
  check_cases(c, op, cases, all_dtypes());
}

}  // namespace kiln::test::op_cases
