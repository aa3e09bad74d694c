// Every conv2d candidate against the reference interpreter on a grid of
// shapes: images 1x1, 7x7, 56x56; channel counts that are not a multiple of
// the vector width (3, 17); stride 2; symmetric and asymmetric padding;
// dilation; groups and depthwise; batch > 1 and unbatched input; f32, f64,
// f16 and bf16 (which accumulate in f32); with and without bias. Each case
// stays under ~1e7 multiply-adds so the sanitizer build runs it in seconds.
#include <gtest/gtest.h>

#include "api/target.h"
#include "conv_test_util.h"
#include "ir/loop/verifier.h"
#include "kiln/compile.h"
#include "passes/algorithms.h"

namespace kiln::test {
namespace {

// Error bound: f32 sums of K products of N(0, 2) values grow like sqrt(K);
// the bound scales with K to cover reassociation; 16-bit outputs are
// dominated by their own rounding.
struct Tolerance {
  double rtol, atol;
};
Tolerance tolerance(const ConvCase& c, double factor) {
  const double k = double(c.cin / c.groups * c.kh * c.kw);
  switch (c.dtype) {
    case DType::F64:
      return {1e-10 * factor, 1e-10 * k * factor};
    case DType::F16:
      return {4e-3, 4e-3 * (1 + k * 1e-2) * factor};
    case DType::BF16:
      return {3.2e-2, 3.2e-2 * (1 + k * 1e-2) * factor};
    default:
      return {1e-5 * factor, 2e-5 * k * factor};
  }
}

// Runs `algorithm` on `c` (when it applies) and compares with the interpreter.
// Returns false when the candidate does not apply.
bool check(const std::string& algorithm, const ConvCase& c, double factor = 1) {
  ConvGraph b = conv_graph(c, 7);
  const ir::Node* conv = nullptr;
  for (const auto& n : b.g->nodes()) {
    if (n->op() == "conv2d") conv = n.get();
  }
  passes::AlgorithmChoice choice = passes::choose_algorithm(*conv, api::host_target());
  bool applies = false;
  for (const passes::AlgorithmCandidate& cand : choice.candidates) {
    if (cand.name == algorithm) applies = cand.applies;
  }
  if (!applies) return false;
  std::vector<Tensor> want = ir::interpret(*b.g, b.feed);
  std::vector<Tensor> got = run_algorithm(*b.g, b.feed, algorithm);
  Tolerance t = tolerance(c, factor);
  EXPECT_TRUE(tensors_close(got.at(0), want.at(0), t.rtol, t.atol))
      << algorithm << " on " << c.str();
  return true;
}

ConvCase make(int64_t n, int64_t cin, int64_t cout, int64_t hw, int64_t k) {
  ConvCase c;
  c.n = n, c.cin = cin, c.cout = cout, c.h = c.w = hw, c.kh = c.kw = k;
  return c;
}

// The shared grid: every candidate runs every case it applies to.
std::vector<ConvCase> grid() {
  std::vector<ConvCase> cases;
  auto add = [&](ConvCase c) { cases.push_back(c); };
  ConvCase c = make(1, 3, 4, 7, 3);
  add(c);
  c.padding = {1, 1};
  add(c);
  c = make(2, 17, 19, 7, 3);  // odd channels, batch 2, padding 1
  c.padding = {1};
  add(c);
  c.bias = false;
  add(c);
  c = make(1, 8, 8, 56, 3);  // a 56x56 image (~3.6e6 MACs)
  c.padding = {1};
  add(c);
  c = make(1, 3, 5, 1, 1);  // 1x1 image, 1x1 kernel
  add(c);
  c = make(1, 3, 5, 1, 3);  // 1x1 image, 3x3 kernel, all padding
  c.padding = {1};
  add(c);
  c = make(1, 17, 33, 7, 1);  // 1x1 kernel, odd channels
  add(c);
  // 1x1 kernels take 7-row tiles in conv.direct: tails of 1 and of 1 per group.
  c = make(1, 19, 64, 23, 1);  // flat pixels, 64 = 9 x 7 + 1
  add(c);
  c = make(2, 9, 15, 99, 1);  // stride 2: rows mode, 4 vectors per 50-wide row
  c.stride = {2, 2};
  add(c);
  c = make(1, 8, 16, 20, 1);  // groups 2, 8 = 7 + 1 output channels per group
  c.groups = 2;
  add(c);
  c = make(2, 5, 6, 9, 3);  // stride 2, padding 1
  c.stride = {2, 2};
  c.padding = {1};
  add(c);
  c = make(1, 4, 6, 11, 3);  // asymmetric 4-int padding, uneven stride
  c.padding = {0, 2, 1, 0};
  c.stride = {1, 2};
  add(c);
  c = make(1, 4, 6, 12, 3);  // dilation
  c.dilation = {2, 2};
  c.padding = {2};
  add(c);
  c = make(1, 8, 12, 9, 3);  // groups
  c.groups = 4;
  c.padding = {1};
  add(c);
  c = make(2, 16, 16, 13, 3);  // depthwise
  c.groups = 16;
  c.padding = {1};
  add(c);
  c = make(1, 8, 16, 10, 3);  // depthwise with channel multiplier 2
  c.groups = 8;
  add(c);
  c = make(1, 8, 8, 15, 3);  // depthwise, stride 2 (MobileNet's downsampling)
  c.groups = 8;
  c.stride = {2, 2};
  c.padding = {1};
  add(c);
  c = make(2, 6, 6, 11, 3);  // depthwise, dilation 2, asymmetric padding
  c.groups = 6;
  c.dilation = {2, 2};
  c.padding = {2, 1, 0, 2};
  add(c);
  c = make(1, 8, 4, 9, 3);  // narrow groups: 2 input channels per group
  c.groups = 4;
  c.padding = {1};
  add(c);
  c = make(1, 6, 6, 30, 5);  // 5x5 kernel, padding 2, wide row (two column blocks)
  c.padding = {2};
  add(c);
  c = make(1, 3, 4, 40, 3);  // rows wider than one tile; no padding
  add(c);
  c = make(1, 4, 4, 8, 3);  // unbatched
  c.batched = false;
  c.padding = {1};
  add(c);
  c = make(1, 2, 3, 5, 2);  // even kernel, uneven 'same'-style padding
  c.padding = {0, 1, 0, 1};
  add(c);
  return cases;
}

void check_grid(const std::string& algorithm, double factor = 1) {
  int ran = 0;
  const std::vector<ConvCase> cases = grid();
  for (size_t i = 0; i < cases.size(); ++i) {
    for (DType t : {DType::F32, DType::F64, DType::F16, DType::BF16}) {
      ConvCase d = cases[i];
      d.dtype = t;
      // 16-bit and f64 on a few small cases (padding, odd channels, batch 2,
      // groups, 1x1): they test the casts, not the tiling.
      const bool dtype_case = i == 1 || i == 2 || i == 7 || i == 11 || i == 12;
      if (t != DType::F32 && !dtype_case) continue;
      ran += check(algorithm, d, factor);
    }
  }
  EXPECT_GT(ran, 0) << algorithm << " applied to no case";
}

TEST(ConvAlgorithms, Naive) {
  check_grid("naive");
}

TEST(ConvAlgorithms, Direct) {
  check_grid("conv.direct");
}

TEST(ConvAlgorithms, Depthwise) {
  check_grid("conv.depthwise");
}

TEST(ConvAlgorithms, Winograd) {
  check_grid("conv.winograd");
}

// Weights that are graph constants: Winograd transforms them at compile
// time; the others read them from a constant buffer.
TEST(ConvAlgorithms, ConstantWeights) {
  for (const char* algorithm :
       {"conv.direct", "conv.depthwise", "conv.winograd", "conv.1x1", "conv.im2col"}) {
    int ran = 0;
    for (ConvCase c : grid()) {
      c.constant_weight = true;
      ran += check(algorithm, c);
    }
    EXPECT_GT(ran, 0) << algorithm;
  }
}

TEST(ConvAlgorithms, OneByOne) {
  check_grid("conv.1x1");
}

TEST(ConvAlgorithms, Im2col) {
  check_grid("conv.im2col");
}

// Channels-last input read through a permute inlined into the conv's kernel:
// every candidate reads it correctly (the fast ones repack it to NCHW first).
TEST(ConvAlgorithms, ChannelsLastInputThroughAnInlinedPermute) {
  for (const ConvCase& base : {make(1, 17, 8, 9, 3), make(2, 16, 16, 7, 3), make(1, 8, 8, 6, 1)}) {
    ConvCase c = base;
    if (c.kh == 3) c.padding = {1};
    if (c.n == 2) c.groups = 16;
    ConvGraph b = conv_graph(c, 5);
    // x becomes an NHWC input seen through permute(0, 3, 1, 2).
    ir::Node* conv = nullptr;
    for (const auto& n : b.g->nodes()) {
      if (n->op() == "conv2d") conv = n.get();
    }
    ir::Graph g("nhwc");
    ir::Value* xn =
        g.add_input("x", ir::Type::tensor(c.dtype, ir::dims_from_shape({c.n, c.h, c.w, c.cin})));
    ir::Value* xp = g.apply1("permute", {xn}, {{"dims", std::vector<int64_t>{0, 3, 1, 2}}});
    std::vector<ir::Value*> ins{xp};
    const Tensor& x0 = b.feed[0];
    std::vector<Tensor> feed{
        x0.view_as_strided({c.n, c.h, c.w, c.cin}, {c.cin * c.h * c.w, c.w, 1, c.h * c.w}, 0)
            .contiguous()};
    for (size_t i = 1; i < 3; ++i) {
      ir::Value* v = conv->input(i);
      if (v->type().is_none()) {
        ins.push_back(g.constant(ir::AttrValue()));
        continue;
      }
      ins.push_back(g.add_input("in" + std::to_string(i), v->type()));
      feed.push_back(b.feed[i]);
    }
    ir::Value* y = g.apply1("conv2d", ins, conv->attrs());
    g.set_outputs({y});
    std::vector<Tensor> want = ir::interpret(g, feed);
    std::vector<const ir::Node*> group;
    for (const auto& n : g.nodes()) {
      if (n->op() == "permute" || n->op() == "conv2d") group.push_back(n.get());
    }
    for (const std::string& a : passes::applicable_algorithms(*group.back(), api::host_target())) {
      passes::LowerOptions o;
      o.target = api::host_target();
      o.algorithm = a;
      passes::LoweredKernel k = passes::lower_group(g, group, "nhwc_conv", o);
      std::vector<passes::KernelPlan> plans{k.plan};
      std::vector<loop::Kernel> ks = schedule_all({k.kernel}, plans);
      std::vector<Tensor> got = run_native(g, ks, plans, feed);
      Tolerance t = tolerance(c, 1);
      EXPECT_TRUE(tensors_close(got.at(0), want.at(0), t.rtol, t.atol)) << a << " on " << c.str();
    }
  }
}

// Symbolic batch, height and width ('same' padding keeps the window's size):
// one compiled kernel for several sizes.
TEST(ConvAlgorithms, SymbolicSizes) {
  for (int64_t groups : {1, 8}) {
    ir::Graph g("sym");
    ir::Dims xd{ir::Dim::sym("N"), ir::Dim(8), ir::Dim::sym("H"), ir::Dim::sym("W")};
    ir::Value* x = g.add_input("x", ir::Type::tensor(DType::F32, xd));
    ir::Value* w = g.add_input("w", ir::Type::tensor(DType::F32, {8, 8 / groups, 3, 3}));
    ir::Value* b = g.add_input("b", ir::Type::tensor(DType::F32, {8}));
    ir::Attrs attrs{{"stride", std::vector<int64_t>{1, 1}},
                    {"padding", std::vector<int64_t>{1, 1}},
                    {"dilation", std::vector<int64_t>{1, 1}},
                    {"groups", groups}};
    g.set_outputs(g.apply("conv2d", {x, w, b}, attrs));
    const ir::Node* conv = g.nodes().back().get();
    for (const std::string& a : passes::applicable_algorithms(*conv, api::host_target())) {
      LoweredGraph l = lower_with(g, a);
      for (const Shape& s : {Shape{1, 8, 5, 7}, Shape{2, 8, 17, 33}, Shape{1, 8, 1, 1}}) {
        std::vector<Tensor> feed{random_tensor(s, DType::F32, 1),
                                 random_tensor({8, 8 / groups, 3, 3}, DType::F32, 2),
                                 random_tensor({8}, DType::F32, 3)};
        std::vector<Tensor> want = ir::interpret(g, feed);
        std::vector<Tensor> got = run_native(g, l.kernels, l.plans, feed);
        EXPECT_TRUE(tensors_close(got.at(0), want.at(0), 1e-5, 2e-5 * 72))
            << a << " groups " << groups << " on " << shape_str(s);
      }
    }
  }
}

// Graph inputs that are views at run time: channels-last strides (the width
// strided by C) and rows padded to a wider pitch. The candidates' fast
// versions assume dense rows; these take the repacking versions.
TEST(ConvAlgorithms, StridedInputViews) {
  for (ConvCase c : {make(1, 8, 8, 9, 3), make(2, 16, 16, 7, 3), make(1, 8, 12, 6, 1)}) {
    if (c.kh == 3) c.padding = {1};
    if (c.n == 2) c.groups = 16;
    ConvGraph b = conv_graph(c, 9);
    const ir::Node* conv = nullptr;
    for (const auto& n : b.g->nodes()) {
      if (n->op() == "conv2d") conv = n.get();
    }
    std::vector<Tensor> want = ir::interpret(*b.g, b.feed);
    const Tensor x = b.feed[0];
    // The same values in NHWC memory, seen as NCHW.
    Tensor nhwc =
        x.view_as_strided({c.n, c.h, c.w, c.cin}, {c.cin * c.h * c.w, c.w, 1, c.h * c.w}, 0)
            .contiguous();
    Tensor cl =
        nhwc.view_as_strided({c.n, c.cin, c.h, c.w}, {c.h * c.w * c.cin, 1, c.w * c.cin, c.cin}, 0);
    // Rows of pitch W + 3.
    const int64_t pitch = c.w + 3;
    Tensor wide = Tensor::zeros({c.n, c.cin, c.h, pitch});
    Tensor inner = wide.view_as_strided({c.n, c.cin, c.h, c.w},
                                        {c.cin * c.h * pitch, c.h * pitch, pitch, 1}, 0);
    Tensor xc = x.contiguous();
    for (int64_t i = 0; i < xc.numel(); ++i) {
      const int64_t w = i % c.w, rest = i / c.w;
      wide.data<float>()[rest * pitch + w] = xc.data<float>()[i];
    }
    for (const std::string& a : passes::applicable_algorithms(*conv, api::host_target())) {
      for (const Tensor& view : {cl, inner}) {
        std::vector<Tensor> feed = b.feed;
        feed[0] = view;
        std::vector<Tensor> got = run_algorithm(*b.g, feed, a);
        Tolerance t = tolerance(c, 1);
        EXPECT_TRUE(tensors_close(got.at(0), want.at(0), t.rtol, t.atol))
            << a << " on " << c.str() << (view.stride(1) == 1 ? " (channels-last)" : " (pitch)");
      }
    }
  }
}

// compile() folds an inference batch norm into a conv with constant weights
// (passes/fold_batch_norm.cpp): one kernel, no batch_norm left, and the
// values of the unfolded graph.
TEST(ConvAlgorithms, BatchNormFoldsIntoConstantWeights) {
  for (DType t : {DType::F32, DType::BF16}) {
    ConvCase c = make(2, 6, 10, 9, 3);
    c.padding = {1};
    c.constant_weight = true;
    c.dtype = t;
    ConvGraph b = conv_graph(c, 3);
    ir::Value* conv = b.g->outputs()[0];
    auto stat = [&](uint64_t seed, bool positive) {
      Tensor s = random_tensor({c.cout}, t, seed);
      if (positive) s = Tensor::full({c.cout}, 0.25, t);
      return b.g->constant(ir::AttrValue(s));
    };
    ir::Value* bn = b.g->apply1(
        "batch_norm", {conv, stat(20, false), stat(21, true), stat(22, false), stat(23, false)},
        {{"eps", 1e-3}});
    b.g->set_outputs({b.g->apply1("relu", {bn})});
    std::vector<Tensor> want = ir::interpret(*b.g, b.feed);
    CompiledFunction f = compile(*b.g);
    EXPECT_EQ(f.explain().find("batch_norm"), std::string::npos) << f.explain();
    EXPECT_NE(f.explain().find("conv2d"), std::string::npos);
    std::vector<Tensor> got = f(b.feed);
    // bf16: the unfolded graph rounds the conv's output before normalizing.
    const double tol = t == DType::BF16 ? 6e-2 : 1e-4;
    EXPECT_TRUE(tensors_close(got.at(0), want.at(0), tol, tol * 10)) << dtype_name(t);
  }
}

}  // namespace
}  // namespace kiln::test

namespace kiln::test {
namespace {

// A conv2d whose output has no name is buffer "v1"; the Winograd candidate's
// scratch comes from fresh("v"). Scratch once shadowed the output buffer
// (same name, different buffer), which the loop verifier rejects: the
// bench's ResNet conv row failed to compile. Fresh names now skip buffer
// names, so every candidate compiles and verifies, and computes the right
// values.
TEST(ConvAlgorithms, UnnamedOutputDoesNotCollideWithScratch) {
  auto g = std::make_unique<ir::Graph>("conv");
  ir::Value* x = g->add_input("x", ir::Type::tensor(DType::F32, {1, 64, 8, 8}));
  ir::Value* w = g->add_input("w", ir::Type::tensor(DType::F32, {64, 64, 3, 3}));
  ir::Value* none = g->constant(ir::AttrValue());
  g->set_outputs(
      g->apply("conv2d", {x, w, none},
               {{"stride", std::vector<int64_t>{1, 1}}, {"padding", std::vector<int64_t>{1, 1}}}));
  std::vector<Tensor> feed = {random_tensor({1, 64, 8, 8}, DType::F32, 1),
                              random_tensor({64, 64, 3, 3}, DType::F32, 2)};
  std::vector<Tensor> want = ir::interpret(*g, feed);
  const ir::Node* conv = g->outputs()[0]->producer();
  for (const std::string& a : passes::applicable_algorithms(*conv, api::host_target())) {
    SCOPED_TRACE("algorithm " + a);
    for (const loop::Kernel& k : lower_with(*g, a).kernels) EXPECT_NO_THROW(loop::verify_kernel(k));
    std::vector<Tensor> got = run_algorithm(*g, feed, a);
    EXPECT_TRUE(tensors_close(got.at(0), want.at(0), 1e-4, 1e-3));
  }
  CompileOptions o;
  o.passes.verify_each = true;
  std::vector<Tensor> got = compile(*g, o)(feed);
  EXPECT_TRUE(tensors_close(got.at(0), want.at(0), 1e-4, 1e-3));
}

}  // namespace
}  // namespace kiln::test
