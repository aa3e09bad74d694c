// conv2d's GPU candidates (passes/lower/gpu/gpu_conv.h: "conv.implicit_gemm",
// "conv.1x1", "conv.depthwise") on the sim device: each graph is compiled
// with the candidate forced (the heuristic's choice too) and run as GPU-mapped
// loop IR through the evaluator with the plan's copies and launches, against
// the interpreter. Shapes: batch 1 and 3 and unbatched, spatial sizes 1, 7,
// 13, channels 1, 3, 17, 64, kernels 1/3/5/7, strides 1 and 2, symmetric and
// asymmetric padding, dilation 2, groups, depthwise with multipliers 1 and 2,
// bias or none, fused epilogues (batch norm folded into constants, relu, a
// residual add), channels-last input, symbolic sizes; f32, f64, f16, bf16.
// Also the nests' form and the heuristic's choices and reasons.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "api/compile_internal.h"
#include "conv_test_util.h"
#include "kiln/kiln.h"
#include "passes/lower/conv.h"
#include "passes/lower/gpu/gpu_conv.h"

namespace kiln::test {
namespace {

#define EXPECT_HAS(text, part) EXPECT_NE((text).find(part), std::string::npos) << (text)
#define EXPECT_LACKS(text, part) EXPECT_EQ((text).find(part), std::string::npos) << (text)

CompiledFunction sim_compile(const ir::Graph& g, const std::string& algorithm) {
  CompileOptions o;
  o.backend = "loop-eval";
  o.device = Device::sim(0);
  o.use_cache = false;
  o.disk_cache = false;
  return CompiledFunction::from_impl(compile_detail::build_with_algorithm(g, o, "loop-eval", algorithm));
}

struct Tol {
  double rtol, atol;
};
// As conv_algorithms_test: f32 sums of K products grow with K; 16-bit
// outputs are dominated by their own rounding.
Tol tol_for(const ConvCase& c) {
  const double k = double(c.cin / c.groups * c.kh * c.kw);
  switch (c.dtype) {
    case DType::F64:
      return {1e-10, 1e-10 * k};
    case DType::F16:
      return {4e-3, 4e-3 * (1 + k * 1e-2)};
    case DType::BF16:
      return {3.2e-2, 3.2e-2 * (1 + k * 1e-2)};
    default:
      return {1e-5, 2e-5 * k};
  }
}

// Compiles `c` for sim with `algorithm` ("" for the heuristic's choice) and
// compares with the interpreter; returns the explain text.
std::string check(const ConvCase& c, const std::string& algorithm, uint64_t seed = 7) {
  ConvGraph b = conv_graph(c, seed);
  CompiledFunction f = sim_compile(*b.g, algorithm);
  std::vector<Tensor> want = ir::interpret(*b.g, b.feed);
  std::vector<Tensor> got = f(b.feed);
  const Tol t = tol_for(c);
  EXPECT_TRUE(tensors_close(got.at(0), want.at(0), t.rtol, t.atol))
      << (algorithm.empty() ? std::string("heuristic") : algorithm) << " on " << c.str();
  return f.explain();
}

ConvCase make(int64_t n, int64_t cin, int64_t cout, int64_t hw, int64_t k) {
  ConvCase c;
  c.n = n, c.cin = cin, c.cout = cout, c.h = c.w = hw, c.kh = c.kw = k;
  return c;
}

TEST(GpuConv, ImplicitGemmMatchesTheInterpreter) {
  std::vector<ConvCase> cases;
  ConvCase c = make(1, 3, 17, 7, 3);
  c.padding = {1};
  cases.push_back(c);
  c = make(3, 17, 19, 13, 3);  // batch 3, stride 2, no bias
  c.stride = {2, 2}, c.padding = {1}, c.bias = false;
  cases.push_back(c);
  c = make(1, 1, 16, 1, 1);  // a 1x1 image, one channel
  cases.push_back(c);
  c = make(1, 3, 64, 13, 7);  // 7x7 stride 2 padding 3 (a stem)
  c.stride = {2, 2}, c.padding = {3};
  cases.push_back(c);
  c = make(3, 3, 17, 13, 5);  // dilation 2
  c.dilation = {2, 2}, c.padding = {4};
  cases.push_back(c);
  c = make(1, 8, 34, 7, 3);  // groups 2
  c.groups = 2, c.padding = {1};
  cases.push_back(c);
  c = make(1, 3, 17, 13, 3);  // asymmetric padding, strides (2, 1)
  c.stride = {2, 1}, c.padding = {1, 0, 2, 1};
  cases.push_back(c);
  c = make(1, 3, 17, 7, 3);  // unbatched
  c.batched = false, c.padding = {1};
  cases.push_back(c);
  c = make(1, 64, 64, 7, 3);  // K 576: many slabs
  c.padding = {1};
  cases.push_back(c);
  c = make(2, 3, 17, 7, 1);  // a 1x1 kernel through the implicit form
  cases.push_back(c);
  for (const ConvCase& cc : cases) check(cc, "conv.implicit_gemm");
  // Other dtypes on a padded, strided, grouped case.
  for (DType dt : {DType::F64, DType::F16, DType::BF16}) {
    c = make(3, 6, 34, 7, 3);
    c.groups = 2, c.stride = {2, 2}, c.padding = {1}, c.dtype = dt;
    check(c, "conv.implicit_gemm");
  }
}

TEST(GpuConv, OneByOneMatchesTheInterpreter) {
  std::vector<ConvCase> cases = {make(1, 17, 64, 13, 1), make(3, 3, 17, 7, 1),
                                 make(1, 64, 17, 1, 1)};
  ConvCase c = make(1, 8, 34, 13, 1);
  c.groups = 2, c.bias = false;
  cases.push_back(c);
  c = make(1, 17, 19, 7, 1);
  c.batched = false;
  cases.push_back(c);
  for (DType dt : {DType::F64, DType::F16, DType::BF16}) {
    c = make(3, 17, 19, 7, 1);
    c.dtype = dt;
    cases.push_back(c);
  }
  for (const ConvCase& cc : cases) check(cc, "conv.1x1");
}

TEST(GpuConv, DepthwiseMatchesTheInterpreter) {
  std::vector<ConvCase> cases;
  auto dw = [](int64_t n, int64_t ch, int64_t mult, int64_t hw, int64_t k) {
    ConvCase c = make(n, ch, ch * mult, hw, k);
    c.groups = ch;
    return c;
  };
  ConvCase c = dw(1, 17, 1, 13, 3);
  c.padding = {1};
  cases.push_back(c);
  c = dw(3, 3, 1, 13, 5);  // stride 2, batch 3, no bias
  c.stride = {2, 2}, c.padding = {2}, c.bias = false;
  cases.push_back(c);
  c = dw(1, 17, 2, 13, 7);  // multiplier 2, dilation 2
  c.dilation = {2, 2}, c.padding = {3};
  cases.push_back(c);
  cases.push_back(dw(1, 64, 1, 1, 1));  // 1x1 image and kernel
  c = dw(3, 64, 1, 7, 3);               // many planes per block
  c.padding = {1, 0, 2, 1};
  cases.push_back(c);
  c = dw(1, 17, 1, 7, 3);
  c.batched = false, c.stride = {1, 2};
  cases.push_back(c);
  c = dw(1, 3, 1, 40, 3);  // more than one tile per plane
  c.padding = {1};
  cases.push_back(c);
  for (DType dt : {DType::F64, DType::F16, DType::BF16}) {
    c = dw(3, 17, 2, 13, 3);
    c.padding = {1}, c.dtype = dt;
    cases.push_back(c);
  }
  for (const ConvCase& cc : cases) {
    std::string e = check(cc, "conv.depthwise");
    EXPECT_HAS(e, "conv.depthwise");
  }
}

// y = relu(batch_norm(conv2d(x, w, b)) + r) with the weight, bias and
// statistics constants: fold-batch-norm makes one conv, and the relu and the
// residual add run in its kernel's store.
TEST(GpuConv, EpiloguesRunInTheStore) {
  for (const char* algorithm : {"conv.implicit_gemm", "conv.1x1", "conv.depthwise", ""}) {
    const std::string name = algorithm;
    ConvCase c = make(3, 17, 19, 7, 3);
    if (name == "conv.1x1") c = make(3, 17, 19, 7, 1);
    if (name == "conv.depthwise") c = make(3, 17, 34, 7, 3), c.groups = 17;
    if (name != "conv.1x1") c.padding = {1};
    c.constant_weight = true;
    ConvGraph b = conv_graph(c, 11);
    ir::Value* conv = b.g->outputs()[0];
    auto constant = [&](Tensor t) { return b.g->constant(ir::AttrValue(t)); };
    const Shape ch{c.cout};
    ir::Value* mean = constant(random_tensor(ch, DType::F32, 12));
    ir::Value* var = constant(Tensor::full(ch, 0.7));
    ir::Value* gamma = constant(random_tensor(ch, DType::F32, 13));
    ir::Value* beta = constant(random_tensor(ch, DType::F32, 14));
    ir::Value* bn = b.g->apply("batch_norm", {conv, mean, var, gamma, beta}, {{"eps", 1e-5}})[0];
    const ir::Type& ot = conv->type();
    ir::Value* r = b.g->add_input("r", ot);
    ir::Value* sum = b.g->apply("add", {bn, r}, {{"alpha", 1.0}})[0];
    b.g->set_outputs(b.g->apply("relu", {sum}));
    Shape os;
    for (const ir::Dim& d : ot.dims()) os.push_back(d.value);
    b.feed.push_back(random_tensor(os, DType::F32, 15));
    CompiledFunction f = sim_compile(*b.g, name);
    EXPECT_EQ(f.num_kernels(), 1) << f.explain();
    std::vector<Tensor> want = ir::interpret(*b.g, b.feed);
    EXPECT_TRUE(tensors_close(f(b.feed).at(0), want.at(0), 1e-5, 1e-3)) << name << " " << c.str();
    if (name.empty()) {
      EXPECT_HAS(f.explain(), "algorithm: conv.implicit_gemm");
    }
  }
}

constexpr const char* kScript = R"(
def conv(x: Tensor, w: Tensor, b: Tensor):
    return F.conv2d(x, w, b, padding=1)

def conv_nhwc(x: Tensor, w: Tensor):
    return F.conv2d(x.permute(0, 3, 1, 2), w, padding=1)

def conv1_nhwc(x: Tensor, w: Tensor):
    return F.conv2d(x.permute(0, 3, 1, 2), w)

def conv_bn_rows(x: Tensor, w: Tensor, bn: Tensor):
    y = F.conv2d(x, w, None, padding=1)
    return torch.relu(F.batch_norm(y, bn[2], bn[3], bn[0], bn[1], training=False, eps=1e-5))
)";

// A reader of the conv's value that is not an epilogue (batch norm of
// statistics sliced in the same kernel: a nest after the conv's) needs the
// whole output first: the kernel takes the plain nest, which gpu_map maps
// with the rest, instead of a pre-mapped candidate (examples/conv_block.kiln).
TEST(GpuConv, ANonEpilogueReaderTakesThePlainNest) {
  Function fn = load_script(kScript, "conv_bn_rows",
                            {bind_tensor("x", DType::F32, {2, 3, 13, 13}),
                             bind_tensor("w", DType::F32, {16, 3, 3, 3}),
                             bind_tensor("bn", DType::F32, {4, 16})});
  CompiledFunction f = sim_compile(fn.graph(), "");
  Tensor bn = random_tensor({4, 16}, DType::F32, 3);
  for (int64_t i = 0; i < 16; ++i) bn.data<float>()[3 * 16 + i] = 0.5f + 0.01f * float(i);
  std::vector<Tensor> in = {random_tensor({2, 3, 13, 13}, DType::F32, 1),
                            random_tensor({16, 3, 3, 3}, DType::F32, 2), bn};
  std::vector<Tensor> want = ir::interpret(fn.graph(), in);
  EXPECT_TRUE(tensors_close(f(in).at(0), want.at(0), 1e-5, 1e-3)) << f.explain();
}

// Symbolic batch and image sizes: one compile serves every size.
TEST(GpuConv, SymbolicSizesFromOneCompile) {
  Function fn = load_script(kScript, "conv",
                            {bind_tensor("x", DType::F32, {sym("N"), 17, sym("H"), sym("W")}),
                             bind_tensor("w", DType::F32, {19, 17, 3, 3}),
                             bind_tensor("b", DType::F32, {19})});
  for (const char* algorithm : {"conv.implicit_gemm", ""}) {
    CompiledFunction f = sim_compile(fn.graph(), algorithm);
    EXPECT_HAS(f.explain(), "algorithm: conv.implicit_gemm");
    for (auto [n, h, w] : std::vector<std::array<int64_t, 3>>{{1, 1, 1}, {3, 7, 13}, {0, 5, 5}}) {
      std::vector<Tensor> in = {random_tensor({n, 17, h, w}, DType::F32, 1),
                                random_tensor({19, 17, 3, 3}, DType::F32, 2),
                                random_tensor({19}, DType::F32, 3)};
      std::vector<Tensor> want = ir::interpret(fn.graph(), in);
      EXPECT_TRUE(tensors_close(f(in).at(0), want.at(0), 1e-5, 4e-3))
          << algorithm << " " << n << "x17x" << h << "x" << w;
    }
  }
}

// Channels-last data through the NCHW permute: K runs along the channels.
TEST(GpuConv, ChannelsLastInput) {
  for (auto [fn_name, algorithm, k] :
       std::vector<std::tuple<const char*, const char*, int64_t>>{
           {"conv_nhwc", "conv.implicit_gemm", 3}, {"conv1_nhwc", "conv.1x1", 1}}) {
    Function fn = load_script(kScript, fn_name,
                              {bind_tensor("x", DType::F32, {3, 13, 7, 17}),
                               bind_tensor("w", DType::F32, {19, 17, k, k})});
    CompiledFunction f = sim_compile(fn.graph(), algorithm);
    std::vector<Tensor> in = {random_tensor({3, 13, 7, 17}, DType::F32, 4),
                              random_tensor({19, 17, k, k}, DType::F32, 5)};
    std::vector<Tensor> want = ir::interpret(fn.graph(), in);
    EXPECT_TRUE(tensors_close(f(in).at(0), want.at(0), 1e-5, 4e-3)) << algorithm;
  }
}

TEST(GpuConv, NestsAreMappedWithSharedTiles) {
  ConvCase c = make(1, 17, 19, 13, 3);
  c.padding = {1};
  ConvGraph b = conv_graph(c, 1);
  for (const char* algorithm : {"conv.implicit_gemm", "conv.1x1"}) {
    if (std::string(algorithm) == "conv.1x1") b = conv_graph(make(1, 17, 19, 13, 1), 1);
    const std::string loops = sim_compile(*b.g, algorithm).dump("loops-scheduled");
    EXPECT_HAS(loops, "gpu_block");
    EXPECT_HAS(loops, "in gpu_shared");
    EXPECT_HAS(loops, "in gpu_local");
    EXPECT_HAS(loops, "for (slab");
    EXPECT_HAS(loops, "barrier()");
    EXPECT_LACKS(loops, "in heap");  // no column buffer
  }
  ConvCase d = make(1, 17, 17, 13, 3);
  d.groups = 17;
  const std::string loops = sim_compile(*conv_graph(d, 1).g, "conv.depthwise").dump("loops-scheduled");
  EXPECT_HAS(loops, "gpu_block");
  EXPECT_HAS(loops, "in gpu_shared");
  EXPECT_HAS(loops, "barrier()");
  EXPECT_HAS(loops, "fma(");
}

TEST(GpuConv, HeuristicChoosesAndSaysWhy) {
  auto explain = [](const ConvCase& c) { return sim_compile(*conv_graph(c, 1).g, "").explain(); };
  ConvCase c = make(1, 64, 64, 13, 3);
  c.padding = {1};
  std::string e = explain(c);
  EXPECT_HAS(e, "algorithm: conv.implicit_gemm (heuristic: M 64 (Cout/groups), N 169 (batch x OH x "
                "OW), K 576: the input patch gathered into the shared-memory tiles");
  EXPECT_HAS(e, "candidate conv.1x1: does not apply - needs a 1x1 kernel, stride 1 and no padding");
  EXPECT_HAS(e, "candidate conv.depthwise: does not apply - not a depthwise convolution");
  EXPECT_HAS(e, "candidate naive: score 0");
  EXPECT_LACKS(e, "conv.winograd");  // the CPU's candidates are not offered
  EXPECT_LACKS(e, "conv.direct");
  // 1x1: the batched GEMM, unless small images come in a batch.
  e = explain(make(1, 64, 64, 13, 1));
  EXPECT_HAS(e, "algorithm: conv.1x1 (heuristic:");
  e = explain(make(3, 64, 64, 7, 1));
  EXPECT_HAS(e, "algorithm: conv.implicit_gemm");
  EXPECT_HAS(e, "candidate conv.1x1: score 1 - 49 (H x W) per image of 3: images under one "
                "64-wide tile each");
  // Depthwise.
  c = make(1, 32, 64, 13, 3);
  c.groups = 32, c.padding = {1};
  e = explain(c);
  EXPECT_HAS(e, "algorithm: conv.depthwise (heuristic: depthwise, channel multiplier 2");
  EXPECT_HAS(e, "candidate conv.implicit_gemm: score -1 - M 2 (Cout/groups)");
  // Few output channels: the naive nest.
  e = explain(make(1, 3, 4, 13, 3));
  EXPECT_HAS(e, "algorithm: naive");
}

TEST(GpuConv, DepthwiseTilingFitsTheTarget) {
  namespace lower = passes::lower;
  passes::GpuTarget sm90;
  lower::ConvGeometry g;
  g.cin = g.cout = g.groups = 32, g.cin_g = g.cout_g = 1, g.kh = g.kw = 3;
  g.n = 1, g.h = g.w = g.oh = g.ow = 56;
  lower::GpuDepthwiseTiling t = lower::gpu_depthwise_tiling(g, sm90);
  EXPECT_EQ(t.str(), "1 channel x 32x32 outputs, 4 rows per thread, 256 threads");
  g.h = g.w = g.oh = g.ow = 7;
  t = lower::gpu_depthwise_tiling(g, sm90);
  EXPECT_EQ(t.str(), "16 channels x 8x8 outputs, 4 rows per thread, 256 threads");
  // A big dilated kernel in f64 still fits 48 KiB, in smaller tiles.
  g.dtype = DType::F64, g.kh = g.kw = 7, g.dh = g.dw = 3, g.sh = g.sw = 2;
  g.h = g.w = 112, g.oh = g.ow = 56;
  t = lower::gpu_depthwise_tiling(g, sm90);
  EXPECT_TRUE(t.fits);
  EXPECT_LE(t.shared_elements() * 8, 48 << 10) << t.str();
  // One that cannot fit at all does not apply.
  g.dh = g.dw = 200;
  EXPECT_FALSE(lower::gpu_depthwise_tiling(g, sm90).fits);
}

}  // namespace
}  // namespace kiln::test
