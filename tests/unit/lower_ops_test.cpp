// Every registry op lowers: walks OpRegistry::global().all(), lowers a one-node
// graph per case and runs it with loop_eval against the reference interpreter
// (exact for ints, bools and layout; 1e-5 relative for f32 elementwise; looser
// for reductions and contractions, which accumulate in f32). Reductions,
// normalizations, layout and contraction ops get their own cases here: odd
// sizes, keepdim, negative dims, non-contiguous views, symbolic dims.
#include <gtest/gtest.h>

#include <set>

#include "lower_test_util.h"
#include "op_test_util.h"

namespace kiln::test {
namespace {

using ir::Attrs;
using ir::AttrValue;
using Ints = std::vector<int64_t>;

struct Case {
  std::vector<In> ins;
  Attrs attrs;
  double rtol = -1;  // -1: by dtype
};

Tensor rnd(const Shape& s, DType t = DType::F32, uint64_t seed = 7) {
  return random_tensor(s, t, seed);
}
// A transposed (non-contiguous) view with the given final shape.
Tensor transposed(const Shape& s, DType t = DType::F32) {
  Tensor base = rnd({s[1], s[0]}, t, 99);
  return base.view_as_strided({s[0], s[1]}, {1, s[0]}, 0);
}

const double kLoose = 1e-4;

std::vector<Case> cases_for(const ir::OpDef& op) {
  const std::string& n = op.name;
  const In N = In::c(ir::NoneAttr{});
  // --- reductions
  if (n == "sum" || n == "prod" || n == "mean") {
    std::vector<Case> c = {
        {{rnd({33, 31})}, {{"dim", Ints{1}}}, kLoose},
        {{rnd({3, 5, 7})}, {{"dim", Ints{0, -1}}, {"keepdim", true}}, kLoose},
        {{rnd({1023})}, {}, kLoose},
        {{rnd({0, 4})}, {{"dim", Ints{0}}}, kLoose},
        {{transposed({6, 5})}, {{"dim", Ints{0}}}, kLoose},
        {{rnd({7}, DType::F16)}, {}, 2e-3},
        {{rnd({})}, {}, kLoose},
    };
    if (n != "mean") {
      c.push_back({{rnd({5, 7}, DType::I32)}, {{"dim", Ints{1}}}});
      c.push_back({{rnd({9}, DType::Bool)}, {}});
      c.push_back({{rnd({5, 3}, DType::I8)}, {{"dim", Ints{0}}, {"dtype", DType::I16}}});
    } else {
      c.push_back({{rnd({5, 7}, DType::I32)}, {{"dim", Ints{1}}, {"dtype", DType::F64}}});
    }
    return c;
  }
  if (n == "amax" || n == "amin") {
    Tensor x = make_tensor({2, 3}, {1, NAN, 3, -INFINITY, -INFINITY, -INFINITY});
    return {{{rnd({33, 31})}, {{"dim", Ints{0}}}},
            {{rnd({3, 5, 7}, DType::I8)}, {{"keepdim", true}}},
            {{x}, {{"dim", Ints{1}}}},
            {{rnd({7}, DType::Bool)}, {}},
            {{rnd({7}, DType::BF16)}, {}}};
  }
  if (n == "max" || n == "min" || n == "argmax" || n == "argmin") {
    Tensor ties = make_tensor({2, 4}, {1, 3, 3, NAN, 2, 2, 0, 2});
    std::vector<Case> c = {
        {{rnd({33, 31})}, {{"dim", int64_t{1}}}},
        {{rnd({3, 5, 7}, DType::I32)}, {{"dim", int64_t{-2}}, {"keepdim", true}}},
        {{ties}, {{"dim", int64_t{1}}}},
        {{transposed({4, 6})}, {{"dim", int64_t{0}}}}};
    if (n == "argmax" || n == "argmin") c.push_back({{rnd({3, 5, 7})}, {}});
    return c;
  }
  if (n == "var" || n == "std") {
    return {{{rnd({33, 31})}, {{"dim", Ints{1}}}, kLoose},
            {{rnd({3, 5, 7}, DType::F64)}, {{"dim", Ints{0, 2}}, {"correction", int64_t{0}}}},
            {{rnd({1, 4})}, {{"dim", Ints{0}}}, kLoose},  // N == correction: NaN / inf
            {{rnd({7}, DType::F16)}, {{"keepdim", true}}, 4e-3}};
  }
  if (n == "any" || n == "all") {
    Tensor x = make_tensor({3, 2}, {0, 0, 0, NAN, 1, 2});
    return {{{x}, {{"dim", Ints{1}}}},
            {{rnd({5, 7}, DType::Bool)}, {}},
            {{rnd({5, 7}, DType::I32)}, {{"dim", Ints{0}}, {"keepdim", true}}},
            {{rnd({0, 3})}, {{"dim", Ints{0}}}}};
  }
  // --- scans
  if (n == "cumsum" || n == "cumprod" || n == "logcumsumexp" || n == "cummax" || n == "cummin") {
    Tensor special = make_tensor({3, 4}, {1, NAN, 2, -1, INFINITY, 1, -INFINITY, 3, -INFINITY,
                                          -INFINITY, 5, 5});
    std::vector<Case> c = {
        {{rnd({33, 31})}, {{"dim", int64_t{1}}}, kLoose},
        {{rnd({3, 5, 7})}, {{"dim", int64_t{-2}}}, kLoose},
        {{rnd({1023})}, {{"dim", int64_t{0}}}, kLoose},
        {{rnd({0, 4})}, {{"dim", int64_t{1}}}, kLoose},
        {{rnd({4, 0})}, {{"dim", int64_t{1}}}, kLoose},
        {{transposed({6, 5})}, {{"dim", int64_t{0}}}, kLoose},
        {{rnd({7}, DType::F16)}, {{"dim", int64_t{0}}}, 2e-3},
        {{rnd({})}, {{"dim", int64_t{-1}}}, kLoose},
        {{special}, {{"dim", int64_t{1}}}, kLoose}};
    if (n != "logcumsumexp") {
      c.push_back({{rnd({5, 7}, DType::I32)}, {{"dim", int64_t{1}}}});
      c.push_back({{rnd({9}, DType::Bool)}, {{"dim", int64_t{0}}}});
    }
    if (n == "cumsum" || n == "cumprod") {
      c.push_back({{rnd({5, 3}, DType::I8)}, {{"dim", int64_t{0}}, {"dtype", DType::F64}}});
    }
    return c;
  }
  // --- selection: ties (stable order), NaN, empty rows, 0-dim, both topk paths
  if (n == "sort" || n == "topk" || n == "kthvalue" || n == "median" || n == "nanmedian") {
    Tensor ties = make_tensor({2, 6}, {1, 3, NAN, 3, -INFINITY, 1, 2, 2, 0, NAN, 2, NAN});
    auto k = [&](int64_t v) { return std::pair<std::string, ir::AttrValue>{"k", v}; };
    std::vector<Case> c;
    if (n == "sort") {
      c = {{{rnd({33, 31})}, {{"dim", int64_t{1}}}},
           {{ties}, {{"descending", true}}},
           {{ties}, {}},
           {{rnd({3, 5, 7}, DType::I32)}, {{"dim", int64_t{-2}}}},
           {{transposed({4, 6})}, {{"dim", int64_t{0}}, {"descending", true}}},
           {{rnd({7}, DType::F16)}, {}},
           {{rnd({0, 4})}, {}},
           {{rnd({})}, {{"dim", int64_t{0}}}}};
    } else if (n == "topk") {
      c = {{{rnd({33, 31})}, {k(5)}},
           {{rnd({33, 31})}, {k(20), {"largest", false}}},
           {{ties}, {k(4)}},
           {{ties}, {k(6), {"largest", false}}},
           {{rnd({5, 7}, DType::I32)}, {k(2), {"dim", int64_t{0}}}}};
    } else if (n == "kthvalue") {
      c = {{{rnd({33, 31})}, {k(31)}},
           {{ties}, {k(5), {"keepdim", true}}},
           {{rnd({3, 5, 7}, DType::I8)}, {k(2), {"dim", int64_t{1}}}}};
    } else {
      c = {{{rnd({33, 31})}, {{"dim", int64_t{1}}}},
           {{ties}, {{"dim", int64_t{1}}, {"keepdim", true}}},
           {{ties}, {{"dim", int64_t{0}}}},
           {{rnd({3, 5, 7}, DType::I32)}, {{"dim", int64_t{0}}}},
           {{rnd({0, 4})}, {{"dim", int64_t{1}}}}};
    }
    if (n == "nanmedian") {
      // All-NaN rows, odd and unit rows, narrow dtypes.
      Tensor nan_rows = make_tensor({3, 3}, {NAN, NAN, NAN, 2, NAN, 1, NAN, 5, NAN});
      c.push_back({{nan_rows}, {{"dim", int64_t{1}}}});
      c.push_back({{nan_rows}, {{"dim", int64_t{0}}, {"keepdim", true}}});
      c.push_back({{rnd({7, 1}, DType::F16)}, {{"dim", int64_t{1}}}});
      c.push_back({{rnd({7, 7}, DType::F64)}, {{"dim", int64_t{0}}}});
      c.push_back({{rnd({5, 7}, DType::I8)}, {{"dim", int64_t{-1}}}});
      c.push_back({{rnd({})}, {{"dim", int64_t{0}}}});
    }
    return c;
  }
  // --- normalization
  if (n == "softmax" || n == "log_softmax") {
    Tensor inf_row = make_tensor({2, 3}, {-INFINITY, -INFINITY, -INFINITY, 1000, 0, -1000});
    return {{{rnd({33, 31})}, {{"dim", int64_t{1}}}, kLoose},
            {{rnd({3, 5, 7})}, {{"dim", int64_t{0}}}, kLoose},
            {{inf_row}, {{"dim", int64_t{-1}}}, kLoose},
            {{rnd({4, 5}, DType::F16)}, {{"dim", int64_t{1}}}, 2e-3},
            {{rnd({4, 5}, DType::I32)}, {{"dim", int64_t{1}}, {"dtype", DType::F32}}, kLoose}};
  }
  if (n == "layer_norm") {
    return {{{rnd({5, 33}), rnd({33}, DType::F32, 1), rnd({33}, DType::F32, 2)},
             {{"normalized_shape", Ints{33}}},
             kLoose},
            {{rnd({2, 3, 4}), N, N}, {{"normalized_shape", Ints{3, 4}}, {"eps", 1e-3}}, kLoose},
            {{rnd({4, 8}, DType::BF16), rnd({8}, DType::BF16), N},
             {{"normalized_shape", Ints{8}}},
             2e-2}};
  }
  if (n == "rms_norm") {
    return {{{rnd({5, 33}), rnd({33}, DType::F32, 1)}, {{"normalized_shape", Ints{33}}}, kLoose},
            {{rnd({2, 3, 4}, DType::F64), N}, {{"normalized_shape", Ints{3, 4}}, {"eps", 1e-6}}}};
  }
  if (n == "batch_norm") {
    Tensor var = rnd({3}, DType::F32, 3).to(DType::F32);
    Tensor pos = make_tensor({3}, {0.5, 1.5, 4});
    return {{{rnd({2, 3, 4, 5}), rnd({3}), pos, rnd({3}, DType::F32, 5), rnd({3}, DType::F32, 6)},
             {},
             kLoose},
            {{rnd({4, 3}), rnd({3}), pos, N, N}, {{"eps", 0.1}}, kLoose}};
  }
  // --- contraction
  if (n == "matmul") {
    return {{{rnd({7}), rnd({7})}, {}, kLoose},
            {{rnd({3, 7}), rnd({7})}, {}, kLoose},
            {{rnd({7}), rnd({7, 5})}, {}, kLoose},
            {{rnd({2, 1, 3, 7}), rnd({4, 7, 5})}, {}, kLoose},
            {{rnd({7}), rnd({2, 7, 5})}, {}, kLoose},
            {{transposed({5, 6}), rnd({6, 3})}, {}, kLoose},
            {{rnd({3, 4}, DType::I32), rnd({4, 2}, DType::I32)}, {}},
            {{rnd({3, 0}), rnd({0, 2})}, {}, kLoose}};
  }
  if (n == "bmm") {
    return {{{rnd({2, 3, 7}), rnd({2, 7, 5})}, {}, kLoose},
            {{rnd({2, 3, 4}, DType::F16), rnd({2, 4, 5}, DType::F16)}, {}, 4e-3}};
  }
  if (n == "linear") {
    return {{{rnd({3, 7}), rnd({5, 7}), rnd({5})}, {}, kLoose},
            {{rnd({2, 3, 7}), rnd({5, 7}), N}, {}, kLoose},
            {{rnd({7}), rnd({7}), N}, {}, kLoose},
            {{rnd({3, 4}, DType::I64), rnd({2, 4}, DType::I64), rnd({2}, DType::I64)}, {}}};
  }
  if (n == "conv2d") {
    return {{{rnd({2, 3, 7, 6}), rnd({4, 3, 3, 3}), rnd({4})}, {}, kLoose},
            {{rnd({1, 4, 9, 8}), rnd({6, 2, 3, 2}), N},
             {{"stride", Ints{2, 1}},
              {"padding", Ints{1, 2}},
              {"dilation", Ints{2, 1}},
              {"groups", int64_t{2}}},
             kLoose},
            {{rnd({3, 5, 5}), rnd({2, 3, 2, 2}), N}, {{"padding", Ints{0, 1, 1, 0}}}, kLoose}};
  }
  if (n == "max_pool2d") {
    return {{{rnd({2, 3, 7, 6})},
             {{"kernel_size", Ints{3}}, {"stride", Ints{2}}, {"padding", Ints{1}}}},
            {{rnd({3, 8, 8}, DType::I32)}, {{"kernel_size", Ints{2, 3}}, {"dilation", Ints{2}}}},
            {{rnd({1, 2, 7, 7})}, {{"kernel_size", Ints{2}}, {"ceil_mode", true}}}};
  }
  if (n == "avg_pool2d") {
    return {
        {{rnd({2, 3, 7, 6})},
         {{"kernel_size", Ints{3}}, {"stride", Ints{2}}, {"padding", Ints{1}}},
         kLoose},
        {{rnd({2, 3, 7, 6})},
         {{"kernel_size", Ints{3}},
          {"padding", Ints{1}},
          {"count_include_pad", false},
          {"ceil_mode", true}},
         kLoose},
        {{rnd({3, 8, 8})}, {{"kernel_size", Ints{2}}, {"divisor_override", int64_t{3}}}, kLoose}};
  }
  // --- layout (exact)
  if (n == "reshape") {
    return {{{rnd({3, 4, 5})}, {{"shape", Ints{4, -1}}}},
            {{transposed({4, 6})}, {{"shape", Ints{2, 12}}}},
            {{rnd({6}, DType::I8)}, {{"shape", Ints{1, 6, 1}}}}};
  }
  if (n == "permute")
    return {{{rnd({2, 3, 4})}, {{"dims", Ints{2, 0, 1}}}},
            {{rnd({2, 3}, DType::Bool)}, {{"dims", Ints{-1, 0}}}}};
  if (n == "transpose") return {{{rnd({2, 3, 4})}, {{"dim0", int64_t{0}}, {"dim1", int64_t{-1}}}}};
  if (n == "expand")
    return {{{rnd({3, 1})}, {{"size", Ints{2, 3, 4}}}},
            {{rnd({1}, DType::I64)}, {{"size", Ints{-1}}}}};
  if (n == "squeeze") return {{{rnd({3, 1, 4, 1})}, {}}, {{rnd({1, 4})}, {{"dim", Ints{0}}}}};
  if (n == "unsqueeze")
    return {{{rnd({3, 4})}, {{"dim", int64_t{1}}}}, {{rnd({})}, {{"dim", int64_t{0}}}}};
  if (n == "flatten") {
    return {{{rnd({2, 3, 4})}, {{"start_dim", int64_t{1}}}},
            {{transposed({3, 5})}, {}},
            {{rnd({})}, {}}};
  }
  if (n == "contiguous" || n == "copy")
    return {{{transposed({3, 5})}, {}}, {{rnd({0, 2}, DType::F16)}, {}}};
  if (n == "slice") {
    return {
        {{rnd({7, 5})},
         {{"dim", int64_t{0}}, {"start", int64_t{1}}, {"end", int64_t{-1}}, {"step", int64_t{2}}}},
        {{transposed({6, 4})}, {{"dim", int64_t{1}}, {"start", int64_t{-3}}}},
        {{rnd({5})}, {{"dim", int64_t{0}}, {"start", int64_t{9}}}}};
  }
  if (n == "select") {
    return {{{rnd({7, 5})}, {{"dim", int64_t{1}}, {"index", int64_t{-2}}}},
            {{rnd({3})}, {{"dim", int64_t{0}}, {"index", int64_t{2}}}}};
  }
  if (n == "cat") {
    return {
        {{rnd({2, 3}), rnd({4, 3}, DType::F16), rnd({1, 3}, DType::I32)}, {{"dim", int64_t{0}}}},
        {{rnd({2, 3}), rnd({0}), transposed({2, 4})}, {{"dim", int64_t{-1}}}},
        {{rnd({0}), rnd({0})}, {}}};
  }
  if (n == "stack")
    return {{{rnd({2, 3}), rnd({2, 3}, DType::I32)}, {{"dim", int64_t{1}}}}, {{rnd({4})}, {}}};
  if (n == "split") {
    return {{{rnd({7, 3})}, {{"split_size", int64_t{3}}}},
            {{rnd({2, 6})}, {{"sizes", Ints{1, 0, 5}}, {"dim", int64_t{1}}}}};
  }
  if (n == "chunk")
    return {{{rnd({7, 3})}, {{"chunks", int64_t{3}}}},
            {{rnd({2, 6})}, {{"chunks", int64_t{4}}, {"dim", int64_t{-1}}}}};
  // --- indexing (index values in range; llvm_ops_test runs out-of-range ones)
  if (n == "gather") {
    return {
        {{rnd({5, 3}), make_tensor({2, 3}, {0, 4, 2, 1, 1, 3}, DType::I64)}, {{"dim", int64_t{0}}}},
        {{rnd({3, 5}, DType::I32), make_tensor({3, 2}, {4, 0, 1, 1, 2, 3}, DType::I32)},
         {{"dim", int64_t{-1}}}},
        {{transposed({6, 4}), make_tensor({1, 4}, {5, 0, 3, 2}, DType::I64)},
         {{"dim", int64_t{0}}}},
        {{rnd({}), make_tensor({}, {0}, DType::I64)}, {{"dim", int64_t{0}}}}};
  }
  if (n == "scatter") {
    Tensor dup = make_tensor({3, 2}, {0, 4, 2, 1, 0, 4}, DType::I64);
    Tensor uniq = make_tensor({2, 2}, {3, 4, 0, 1}, DType::I64);
    std::vector<Case> c = {
        {{rnd({5, 2}), dup, rnd({4, 2})}, {{"dim", int64_t{0}}}},
        {{rnd({5, 2}), dup, rnd({3, 2})}, {{"dim", int64_t{0}}, {"reduce", std::string("sum")}}},
        {{rnd({2, 5}, DType::I32), make_tensor({2, 1}, {4, 0}, DType::I32),
          rnd({2, 3}, DType::I32)},
         {{"dim", int64_t{-1}}, {"reduce", std::string("sum")}}}};
    for (const char* r : {"prod", "amax", "amin"}) {
      for (bool self : {true, false}) {
        c.push_back({{rnd({5, 2}), uniq, rnd({2, 2})},
                     {{"dim", int64_t{0}}, {"reduce", std::string(r)}, {"include_self", self}}});
      }
    }
    return c;
  }
  if (n == "flip") {
    return {{{rnd({7, 5})}, {{"dims", Ints{0, -1}}}},
            {{transposed({4, 6})}, {{"dims", Ints{1}}}},
            {{rnd({0, 3}, DType::I32)}, {{"dims", Ints{0}}}},
            {{rnd({}, DType::Bool)}, {{"dims", Ints{0}}}}};
  }
  if (n == "diagonal") {
    return {{{rnd({5, 7})}, {}},
            {{rnd({3, 4, 5}, DType::I64)},
             {{"offset", int64_t{-1}}, {"dim1", int64_t{2}}, {"dim2", int64_t{0}}}},
            {{transposed({4, 6})}, {{"offset", int64_t{2}}}},
            {{rnd({3, 3})}, {{"offset", int64_t{5}}}}};
  }
  if (n == "unfold") {
    return {{{rnd({7, 5})}, {{"dimension", int64_t{0}}, {"size", int64_t{3}}, {"step", int64_t{2}}}},
            {{transposed({4, 6}, DType::F16)},
             {{"dimension", int64_t{-1}}, {"size", int64_t{2}}, {"step", int64_t{1}}}},
            {{rnd({5})}, {{"dimension", int64_t{0}}, {"size", int64_t{0}}, {"step", int64_t{3}}}}};
  }
  // --- factories and constants
  if (n == "arange") return {{{}, {{"end", int64_t{7}}}}};
  if (n == "full") return {{{}, {{"size", Ints{2, 3}}, {"value", 1.5}}}};
  if (n == "constant") return {{{}, {{"value", AttrValue(make_tensor({2, 2}, {1, 2, 3, 4}))}}}};
  // --- elementwise defaults (lower_elementwise_test covers dtypes and values)
  if (n == "where") return {{{rnd({5, 1}, DType::Bool), rnd({7}), rnd({5, 7})}, {}}};
  if (n == "clamp") return {{{rnd({33}), In::c(AttrValue(-1.0)), N}, {}}};
  if (n == "masked_fill")
    return {{{rnd({3, 7}), rnd({7}, DType::Bool), In::c(AttrValue(2.0))}, {}}};
  if (n == "cast") return {{{rnd({33})}, {{"dtype", DType::I16}}}};
  if (n.rfind("bitwise_", 0) == 0 || n == "remainder") {
    std::vector<In> ins{rnd({5, 7}, DType::I32)};
    if (op.operands.size() == 2) ins.push_back(random_tensor({7}, DType::I32, 3, true));
    return {{ins, {}}};
  }
  if (op.category == ir::OpCategory::Elementwise && op.operands.size() == 3) {
    return {{{rnd({3, 7}), transposed({3, 7}), rnd({7})}, {}},
            {{rnd({33, 1}), rnd({31}), rnd({1, 31})}, {}}};
  }
  if (op.category == ir::OpCategory::Elementwise && op.operands.size() == 1) {
    return {{{rnd({1023})}, {}}, {{transposed({7, 9})}, {}}};
  }
  if (op.category == ir::OpCategory::Elementwise && op.operands.size() == 2) {
    return {{{rnd({3, 7}), transposed({3, 7})}, {}}, {{rnd({33, 1}), rnd({31})}, {}}};
  }
  return {};
}

TEST(LowerOps, EveryRegistryOpLowersAndMatchesTheInterpreter) {
  std::vector<std::string> missing;
  for (const ir::OpDef* op : ir::OpRegistry::global().all()) {
    if (!passes::has_lowering(op->name)) {
      missing.push_back(op->name + " (no lowering)");
      continue;
    }
    std::vector<Case> cases = cases_for(*op);
    if (cases.empty()) {
      missing.push_back(op->name + " (no test case)");
      continue;
    }
    for (size_t i = 0; i < cases.size(); ++i) {
      SCOPED_TRACE(op->name + " case " + std::to_string(i));
      try {
        compare(op->name, cases[i].ins, cases[i].attrs, cases[i].rtol);
      } catch (const Error& e) {
        ADD_FAILURE() << op->name << " case " << i << ": " << e.what();
      }
    }
  }
  EXPECT_TRUE(missing.empty()) << ::testing::PrintToString(missing);
}

// A scan is a serial loop along its dim inside the nest over the other dims
// (here dim 0 of a [N, 3] input: the row loop is the inner one).
TEST(LowerOps, ScanAlongASymbolicDim) {
  auto g = std::make_unique<ir::Graph>("scan");
  ir::Value* x = g->add_input("x", ir::Type::tensor(DType::I32, {ir::Dim::sym("N"), 3}));
  std::vector<ir::Value*> mx = g->apply("cummax", {x}, {{"dim", int64_t{0}}});
  g->set_outputs({g->apply1("cumsum", {x}, {{"dim", int64_t{0}}}), mx[1]});
  std::vector<passes::KernelPlan> plans;
  std::vector<loop::Kernel> ks = passes::lower_graph(*g, {}, &plans);
  ASSERT_EQ(ks.size(), 2u);
  EXPECT_EQ(loop::to_string(ks[1]),
            "kernel scan_1_cumsum(x: i32*, v2: i64*, N: i64, x_s0: i64, x_s1: i64) {\n"
            "  for (i0, 0, 3) {\n"
            "    allocate acc0[i64 * 1] in stack\n"
            "    acc0[0] = 0\n"
            "    for (j0, 0, N) {\n"
            "      acc0[0] = (acc0[0] + i64(x[((j0 * x_s0) + (i0 * x_s1))]))\n"
            "      v2[((j0 * 3) + i0)] = acc0[0]\n"
            "    }\n"
            "  }\n"
            "}\n");
  for (int64_t n : {5, 1, 0}) {
    std::vector<Tensor> in{rnd({n, 3}, DType::I32, uint64_t(n))};
    std::vector<Tensor> got = run_kernels(*g, ks, plans, in);
    std::vector<Tensor> want = ir::interpret(*g, in);
    EXPECT_TRUE(tensors_close(got[0], want[0], 0, 0));
    EXPECT_TRUE(tensors_close(got[1], want[1], 0, 0));
  }
}

TEST(LowerOps, ReductionWithSymbolicRows) {
  auto g = std::make_unique<ir::Graph>("rows");
  ir::Value* x = g->add_input("x", ir::Type::tensor(DType::F32, {ir::Dim::sym("N"), 5}));
  g->set_outputs({g->apply1("softmax", {x}, {{"dim", int64_t{1}}}),
                  g->apply1("sum", {x}, {{"dim", Ints{1}}})});
  std::vector<passes::KernelPlan> plans;
  std::vector<loop::Kernel> ks = passes::lower_graph(*g, {}, &plans);
  ASSERT_EQ(ks.size(), 2u);
  EXPECT_EQ(loop::to_string(ks[1]),
            "kernel rows_1_sum(x: f32*, v1: f32*, N: i64, x_s0: i64, x_s1: i64) {\n"
            "  for (i0, 0, N) {\n"
            "    allocate acc0[f32 * 1] in stack\n"
            "    acc0[0] = 0.0f\n"
            "    for (r0, 0, 5) {\n"
            "      acc0[0] = (acc0[0] + x[((i0 * x_s0) + (r0 * x_s1))])\n"
            "    }\n"
            "    v1[i0] = acc0[0]\n"
            "  }\n"
            "}\n");
  for (int64_t n : {3, 1}) {
    std::vector<Tensor> in{rnd({n, 5}, DType::F32, uint64_t(n))};
    std::vector<Tensor> got = run_kernels(*g, ks, plans, in);
    std::vector<Tensor> want = ir::interpret(*g, in);
    EXPECT_TRUE(tensors_close(got[0], want[0], 1e-5, 1e-6));
    EXPECT_TRUE(tensors_close(got[1], want[1], 1e-5, 1e-6));
  }
}

TEST(LowerOps, ProducersInlineIntoAReductionGroup) {
  auto g = std::make_unique<ir::Graph>("g");
  ir::Value* x = g->add_input("x", ir::Type::tensor(DType::F32, {4, 6}));
  ir::Value* e = g->apply1("exp", {x});
  ir::Value* t = g->apply1("transpose", {e}, {{"dim0", int64_t{0}}, {"dim1", int64_t{1}}});
  ir::Value* s = g->apply1("sum", {t}, {{"dim", Ints{1}}});
  ir::Value* r = g->apply1("relu", {s});
  g->set_outputs({r});
  std::vector<const ir::Node*> nodes;
  for (const auto& n : g->nodes()) nodes.push_back(n.get());
  passes::LoweredKernel k = passes::lower_group(*g, nodes, "g");
  std::vector<std::string> roles;
  for (const passes::BufferParam& p : k.plan.buffers) {
    roles.push_back(p.buf->name + ":" + passes::buffer_role_name(p.role));
  }
  // relu is the sum's epilogue: the sum's own value is never stored.
  EXPECT_EQ(roles, (std::vector<std::string>{"x:input", "v3:output"}));
  EXPECT_EQ(k.plan.category, ir::OpCategory::Reduction);
  std::vector<Tensor> in{rnd({4, 6})};
  EXPECT_TRUE(tensors_close(run_kernels(*g, {k.kernel}, {k.plan}, in)[0], ir::interpret(*g, in)[0],
                            1e-5, 1e-6));
}

}  // namespace
}  // namespace kiln::test
