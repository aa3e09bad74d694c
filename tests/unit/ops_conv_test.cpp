// Tests of conv2d, max_pool2d and avg_pool2d: hand-computed cases, conv2d
// against a naive convolution written here in scatter form (each input pixel
// pushes its contributions to the outputs it reaches, unlike the reference's
// gather loop), pooling rules (default stride, padding, ceil mode, dilation,
// divisors), error messages, and the conformance corpus's conv/pool cases.
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <limits>

#include "conformance_corpus.h"
#include "op_test_util.h"

namespace kiln::test {
namespace {

using ir::Attrs;
using ir::Dim;
using ir::Type;
using I = std::vector<int64_t>;

std::vector<double> small_ints(int64_t n, uint64_t seed) {
  std::vector<double> v(static_cast<size_t>(n));
  uint64_t s = seed * 2862933555777941757ull + 3037000493ull;
  for (auto& x : v) {
    s = s * 2862933555777941757ull + 3037000493ull;
    x = double(int64_t((s >> 33) % 7) - 3);
  }
  return v;
}

std::vector<double> iota(int64_t n, double start = 1) {
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[size_t(i)] = start + double(i);
  return v;
}

struct ConvCase {
  int64_t N, C, H, W, Cout, KH, KW;
  int64_t sh = 1, sw = 1, pt = 0, pb = 0, pl = 0, pr = 0, dh = 1, dw = 1, groups = 1;
  bool bias = false;
};

// Scatter-form convolution: for every input pixel (x at real coordinates) and
// kernel tap, the output it lands in is (iy + pt - ky*dh) / sh when that divides
// evenly and is in range. Padding contributes zeros, so it never scatters.
std::vector<double> naive_conv(const ConvCase& c, const std::vector<double>& x,
                               const std::vector<double>& w, const std::vector<double>& b,
                               int64_t& OH, int64_t& OW) {
  OH = (c.H + c.pt + c.pb - c.dh * (c.KH - 1) - 1) / c.sh + 1;
  OW = (c.W + c.pl + c.pr - c.dw * (c.KW - 1) - 1) / c.sw + 1;
  const int64_t cin_g = c.C / c.groups, cout_g = c.Cout / c.groups;
  std::vector<double> out(size_t(c.N * c.Cout * OH * OW), 0.0);
  for (int64_t n = 0; n < c.N; ++n)
    for (int64_t ci = 0; ci < c.C; ++ci)
      for (int64_t iy = 0; iy < c.H; ++iy)
        for (int64_t ix = 0; ix < c.W; ++ix) {
          double v = x[size_t(((n * c.C + ci) * c.H + iy) * c.W + ix)];
          int64_t g = ci / cin_g;
          for (int64_t co = g * cout_g; co < (g + 1) * cout_g; ++co)
            for (int64_t ky = 0; ky < c.KH; ++ky)
              for (int64_t kx = 0; kx < c.KW; ++kx) {
                int64_t ny = iy + c.pt - ky * c.dh, nx = ix + c.pl - kx * c.dw;
                if (ny < 0 || nx < 0 || ny % c.sh || nx % c.sw) continue;
                int64_t oy = ny / c.sh, ox = nx / c.sw;
                if (oy >= OH || ox >= OW) continue;
                double wv = w[size_t(((co * cin_g + (ci - g * cin_g)) * c.KH + ky) * c.KW + kx)];
                out[size_t(((n * c.Cout + co) * OH + oy) * OW + ox)] += v * wv;
              }
        }
  if (!b.empty()) {
    for (size_t i = 0; i < out.size(); ++i) out[i] += b[size_t(int64_t(i) / (OH * OW) % c.Cout)];
  }
  return out;
}

Attrs conv_attrs(const ConvCase& c) {
  return {{"stride", I{c.sh, c.sw}},
          {"padding", I{c.pt, c.pb, c.pl, c.pr}},
          {"dilation", I{c.dh, c.dw}},
          {"groups", c.groups}};
}

// Runs conv2d on small-integer data and compares with naive_conv exactly.
void check_conv(const ConvCase& c, uint64_t seed) {
  std::vector<double> x = small_ints(c.N * c.C * c.H * c.W, seed);
  std::vector<double> w = small_ints(c.Cout * (c.C / c.groups) * c.KH * c.KW, seed + 1);
  std::vector<double> b = c.bias ? small_ints(c.Cout, seed + 2) : std::vector<double>{};
  int64_t OH = 0, OW = 0;
  std::vector<double> want = naive_conv(c, x, w, b, OH, OW);
  Tensor out = run_op1(
      "conv2d",
      {make_tensor({c.N, c.C, c.H, c.W}, x), make_tensor({c.Cout, c.C / c.groups, c.KH, c.KW}, w),
       c.bias ? Arg(make_tensor({c.Cout}, b)) : Arg::none()},
      conv_attrs(c));
  ASSERT_EQ(out.sizes(), (Shape{c.N, c.Cout, OH, OW}));
  EXPECT_EQ(values_of(out), want);
}

std::vector<Type> infer_types_of(const std::string& op, const std::vector<Type>& types,
                                 const Attrs& attrs = {}) {
  const ir::OpDef& d = op_def(op);
  return ir::infer_types(d, types, ir::complete_attrs(d, attrs));
}

Type f32(ir::Dims dims) {
  return Type::tensor(DType::F32, std::move(dims));
}

template <typename F>
std::string error_of(F f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// --- conv2d ---------------------------------------------------------------------------

TEST(Conv2d, ThreeByThreeOnFourByFour) {
  Tensor x = make_tensor({1, 1, 4, 4}, iota(16));
  Tensor ones = make_tensor({1, 1, 3, 3}, std::vector<double>(9, 1.0));
  Tensor out = run_op1("conv2d", {x, ones, Arg::none()});
  EXPECT_EQ(out.sizes(), (Shape{1, 1, 2, 2}));
  EXPECT_EQ(values_of(out), (std::vector<double>{54, 63, 90, 99}));
  // Corner taps: x[i][j] - x[i+2][j+2] = -10 everywhere (no kernel flip: cross-correlation).
  Tensor corners = make_tensor({1, 1, 3, 3}, {1, 0, 0, 0, 0, 0, 0, 0, -1});
  EXPECT_EQ(values_of(run_op1("conv2d", {x, corners, Arg::none()})),
            (std::vector<double>{-10, -10, -10, -10}));
}

TEST(Conv2d, StrideTwoPaddingOneBias) {
  // Hand case: all-ones 3x3 on 1..16 with padding 1, stride 2, bias 0.5: windows
  // centred on (0,0), (0,2), (2,0), (2,2).
  Tensor x = make_tensor({1, 1, 4, 4}, iota(16));
  Tensor ones = make_tensor({1, 1, 3, 3}, std::vector<double>(9, 1.0));
  Tensor out = run_op1("conv2d", {x, ones, make_tensor({1}, {0.5})},
                       {{"stride", int64_t{2}}, {"padding", int64_t{1}}});
  EXPECT_EQ(out.sizes(), (Shape{1, 1, 2, 2}));
  EXPECT_EQ(values_of(out), (std::vector<double>{14.5, 30.5, 57.5, 99.5}));
  check_conv({.N = 2,
              .C = 4,
              .H = 15,
              .W = 15,
              .Cout = 8,
              .KH = 3,
              .KW = 3,
              .sh = 2,
              .sw = 2,
              .pt = 1,
              .pb = 1,
              .pl = 1,
              .pr = 1,
              .bias = true},
             1);
}

TEST(Conv2d, Dilation) {
  check_conv({.N = 2,
              .C = 3,
              .H = 9,
              .W = 8,
              .Cout = 4,
              .KH = 3,
              .KW = 3,
              .pt = 2,
              .pb = 2,
              .pl = 2,
              .pr = 2,
              .dh = 2,
              .dw = 2},
             2);
  check_conv({.N = 1, .C = 2, .H = 7, .W = 7, .Cout = 2, .KH = 2, .KW = 3, .dh = 3, .dw = 2}, 3);
}

TEST(Conv2d, Groups) {
  check_conv(
      {.N = 2, .C = 8, .H = 6, .W = 5, .Cout = 6, .KH = 3, .KW = 3, .groups = 2, .bias = true}, 4);
}

TEST(Conv2d, DepthwiseWithChannelMultiplier) {
  check_conv({.N = 1,
              .C = 6,
              .H = 8,
              .W = 8,
              .Cout = 6,
              .KH = 3,
              .KW = 3,
              .pt = 1,
              .pb = 1,
              .pl = 1,
              .pr = 1,
              .groups = 6,
              .bias = true},
             5);
  check_conv({.N = 2,
              .C = 6,
              .H = 8,
              .W = 7,
              .Cout = 12,
              .KH = 3,
              .KW = 3,
              .sh = 2,
              .sw = 2,
              .pt = 1,
              .pb = 1,
              .pl = 1,
              .pr = 1,
              .groups = 6},
             6);
}

TEST(Conv2d, PointwiseOneByOne) {
  check_conv({.N = 2, .C = 16, .H = 7, .W = 7, .Cout = 8, .KH = 1, .KW = 1}, 7);
}

TEST(Conv2d, RectangularKernelPerAxisStrideAndPadding) {
  check_conv({.N = 1,
              .C = 3,
              .H = 11,
              .W = 9,
              .Cout = 4,
              .KH = 3,
              .KW = 5,
              .sh = 2,
              .sw = 1,
              .pt = 1,
              .pb = 1,
              .pl = 2,
              .pr = 2,
              .bias = true},
             8);
  // The same through 2-value attributes.
  Tensor x = make_tensor({1, 1, 5, 6}, iota(30));
  Tensor w = make_tensor({1, 1, 3, 5}, std::vector<double>(15, 1.0));
  Tensor out = run_op1("conv2d", {x, w, Arg::none()}, {{"stride", I{2, 1}}, {"padding", I{1, 2}}});
  EXPECT_EQ(out.sizes(), (Shape{1, 1, 3, 6}));
}

TEST(Conv2d, AsymmetricPaddingForSameWithEvenKernel) {
  // padding='same' for a 4x4 kernel: total 3 = 1 before, 2 after; output keeps 7x7.
  check_conv({.N = 1,
              .C = 1,
              .H = 7,
              .W = 7,
              .Cout = 2,
              .KH = 4,
              .KW = 4,
              .pt = 1,
              .pb = 2,
              .pl = 1,
              .pr = 2},
             9);
  // Hand case: 2x2 ones on a 2x2 input with [0, 1, 0, 1] keeps 2x2.
  Tensor out = run_op1("conv2d",
                       {make_tensor({1, 1, 2, 2}, {1, 2, 3, 4}),
                        make_tensor({1, 1, 2, 2}, {1, 1, 1, 1}), Arg::none()},
                       {{"padding", I{0, 1, 0, 1}}});
  EXPECT_EQ(values_of(out), (std::vector<double>{10, 6, 7, 4}));
}

TEST(Conv2d, KernelAsLargeAsInput) {
  check_conv({.N = 2, .C = 2, .H = 7, .W = 7, .Cout = 3, .KH = 7, .KW = 7, .bias = true}, 10);
}

TEST(Conv2d, UnbatchedInput) {
  Tensor x = make_tensor({1, 4, 4}, iota(16));
  Tensor w = make_tensor({2, 1, 3, 3}, [] {
    std::vector<double> v(18, 1.0);
    for (size_t i = 9; i < 18; ++i) v[i] = -1;
    return v;
  }());
  Tensor out = run_op1("conv2d", {x, w, make_tensor({2}, {1, 2})});
  EXPECT_EQ(out.sizes(), (Shape{2, 2, 2}));
  EXPECT_EQ(values_of(out), (std::vector<double>{55, 64, 91, 100, -52, -61, -88, -97}));
}

TEST(Conv2d, NonContiguousInputAndDoublePrecision) {
  // x is [1, 2, 3, 3] stored channels-last.
  std::vector<double> nhwc = small_ints(18, 11);
  Tensor x =
      make_tensor({1, 3, 3, 2}, nhwc, DType::F64).view_as_strided({1, 2, 3, 3}, {18, 1, 6, 2}, 0);
  std::vector<double> nchw(18);
  for (int c = 0; c < 2; ++c)
    for (int p = 0; p < 9; ++p) nchw[size_t(c * 9 + p)] = nhwc[size_t(p * 2 + c)];
  std::vector<double> w = {0.1, 0.2, 0.3, 0.4, -0.5, 0.25, 1.0 / 3, 1e-3};
  Tensor out = run_op1("conv2d", {x, make_tensor({1, 2, 2, 2}, w, DType::F64), Arg::none()});
  EXPECT_EQ(out.dtype(), DType::F64);
  ConvCase c{.N = 1, .C = 2, .H = 3, .W = 3, .Cout = 1, .KH = 2, .KW = 2};
  int64_t OH, OW;
  std::vector<double> want = naive_conv(c, nchw, w, {}, OH, OW);
  std::vector<double> got = values_of(out);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-14);
}

TEST(Conv2d, InferKeepsSymbolicBatch) {
  Dim n = Dim::sym("N");
  EXPECT_EQ(infer_types_of("conv2d", {f32({n, 3, 32, 32}), f32({8, 3, 3, 3}), Type::none()},
                           {{"padding", int64_t{1}}, {"stride", int64_t{2}}})[0],
            f32({n, 8, 16, 16}));
  // A symbolic spatial dim passes through a size-keeping window.
  Dim h = Dim::sym("H");
  EXPECT_EQ(infer_types_of("conv2d", {f32({n, 3, h, 8}), f32({8, 3, 4, 3}), Type::none()},
                           {{"padding", I{1, 2, 1, 1}}})[0],
            f32({n, 8, h, 8}));
  EXPECT_EQ(error_of([&] {
              infer_types_of("conv2d", {f32({n, 3, h, 8}), f32({8, 3, 3, 3}), Type::none()});
            }),
            "conv2d: output size along H is not expressible: input x is f32[N, 3, H, 8] (H = H, "
            "symbolic); only stride 1 and padding totalling dilation*(kernel-1) keep a symbolic "
            "size");
}

TEST(Conv2d, Errors) {
  auto conv = [](Shape x, Shape w, Attrs attrs = {}, DType wd = DType::F32) {
    return error_of([&] {
      run_op1("conv2d", {Tensor::zeros(x), Tensor::zeros(w, wd), Arg::none()}, attrs);
    });
  };
  EXPECT_EQ(conv({1, 6, 5, 5}, {4, 2, 3, 3}, {{"groups", int64_t{4}}}),
            "conv2d: input channels (6) are not divisible by groups (4): x is f32[1, 6, 5, 5], "
            "weight is f32[4, 2, 3, 3]");
  EXPECT_EQ(conv({1, 6, 5, 5}, {4, 2, 3, 3}, {{"groups", int64_t{2}}}),
            "conv2d: weight expects 4 input channels (2 per group, groups 2) but input x has 6: "
            "x is f32[1, 6, 5, 5], weight is f32[4, 2, 3, 3]");
  EXPECT_EQ(conv({1, 4, 5, 5}, {3, 2, 3, 3}, {{"groups", int64_t{2}}}),
            "conv2d: out_channels (3) are not divisible by groups (2): x is f32[1, 4, 5, 5], "
            "weight is f32[3, 2, 3, 3]");
  EXPECT_EQ(conv({1, 1, 2, 2}, {1, 1, 3, 3}),
            "conv2d: output would be empty along H: input x is f32[1, 1, 2, 2] (H = 2), kernel 3, "
            "dilation 1, padding 0+0, stride 1: padded size 2 is smaller than the kernel extent 3");
  EXPECT_EQ(conv({1, 1, 5, 4}, {1, 1, 3, 3}, {{"dilation", I{1, 2}}}),
            "conv2d: output would be empty along W: input x is f32[1, 1, 5, 4] (W = 4), kernel 3, "
            "dilation 2, padding 0+0, stride 1: padded size 4 is smaller than the kernel extent 5");
  EXPECT_EQ(conv({1, 1, 5, 5}, {1, 1, 3, 3}, {}, DType::F64),
            "conv2d: operand dtypes differ (f32 vs f64): x is f32[1, 1, 5, 5], weight is "
            "f64[1, 1, 3, 3]");
  EXPECT_EQ(conv({5, 5}, {1, 1, 3, 3}),
            "conv2d: input x must be 3-D (C, H, W) or 4-D (N, C, H, W): x is f32[5, 5], weight "
            "is f32[1, 1, 3, 3]");
  EXPECT_EQ(conv({1, 1, 5, 5}, {1, 3, 3}),
            "conv2d: weight must be 4-D [out_channels, in_channels/groups, kH, kW]: x is "
            "f32[1, 1, 5, 5], weight is f32[1, 3, 3]");
  EXPECT_EQ(conv({1, 1, 5, 5}, {1, 1, 3, 3}, {{"padding", I{1, 1, 1}}}),
            "conv2d: attribute 'padding' must have 1, 2 ([ph, pw]) or 4 ([top, bottom, left, "
            "right]) values, got [1, 1, 1]");
  EXPECT_EQ(conv({1, 1, 5, 5}, {1, 1, 3, 3}, {{"stride", I{0, 1}}}),
            "conv2d: attribute 'stride' values must be at least 1, got [0, 1]");
  EXPECT_EQ(conv({1, 1, 5, 5}, {1, 1, 3, 3}, {{"padding", int64_t{-1}}}),
            "conv2d: attribute 'padding' values must be at least 0, got [-1]");
  EXPECT_EQ(error_of([] {
              run_op1("conv2d", {Tensor::zeros({1, 2, 5, 5}), Tensor::zeros({3, 2, 3, 3}),
                                 Tensor::zeros({2})});
            }),
            "conv2d: bias must be 1-D with out_channels (3) elements: x is f32[1, 2, 5, 5], "
            "weight is f32[3, 2, 3, 3], bias is f32[2]");
  EXPECT_EQ(error_of([] {
              run_op1("conv2d", {Tensor::zeros({1, 1, 5, 5}, DType::I32),
                                 Tensor::zeros({1, 1, 3, 3}, DType::I32), Arg::none()});
            }),
            "conv2d: operand 'x' must be a floating tensor, got x is i32[1, 1, 5, 5], weight is "
            "i32[1, 1, 3, 3]");
}

// --- max_pool2d ---------------------------------------------------------------------------

Tensor pool(const std::string& op, const Tensor& x, Attrs attrs) {
  return run_op1(op, {x}, attrs);
}

TEST(MaxPool2d, DefaultStrideIsKernel) {
  Tensor x = make_tensor({1, 1, 4, 4}, iota(16));
  Tensor out = pool("max_pool2d", x, {{"kernel_size", int64_t{2}}});
  EXPECT_EQ(out.sizes(), (Shape{1, 1, 2, 2}));
  EXPECT_EQ(values_of(out), (std::vector<double>{6, 8, 14, 16}));
  // An odd size floors: 5 -> 2 windows.
  Tensor y = make_tensor({1, 5, 5}, iota(25));
  EXPECT_EQ(values_of(pool("max_pool2d", y, {{"kernel_size", int64_t{2}}})),
            (std::vector<double>{7, 9, 17, 19}));
}

TEST(MaxPool2d, PaddingIsMinusInfinity) {
  // All negative values: a zero pad would win, -inf must not.
  std::vector<double> v = iota(9);
  for (double& e : v) e = -e;
  Tensor out = pool("max_pool2d", make_tensor({1, 1, 3, 3}, v),
                    {{"kernel_size", int64_t{3}}, {"stride", int64_t{1}}, {"padding", int64_t{1}}});
  EXPECT_EQ(values_of(out), (std::vector<double>{-1, -1, -2, -1, -1, -2, -4, -4, -5}));
  Tensor pos = pool("max_pool2d", make_tensor({1, 1, 3, 3}, iota(9)),
                    {{"kernel_size", int64_t{3}}, {"stride", int64_t{1}}, {"padding", int64_t{1}}});
  EXPECT_EQ(values_of(pos), (std::vector<double>{5, 6, 6, 8, 9, 9, 8, 9, 9}));
}

TEST(MaxPool2d, CeilMode) {
  Tensor x = make_tensor({1, 1, 5, 5}, iota(25));
  Tensor out = pool("max_pool2d", x, {{"kernel_size", int64_t{2}}, {"ceil_mode", true}});
  EXPECT_EQ(out.sizes(), (Shape{1, 1, 3, 3}));
  EXPECT_EQ(values_of(out), (std::vector<double>{7, 9, 10, 17, 19, 20, 22, 24, 25}));
  // With padding: windows start at -1, 1, 3 on a 4-wide input.
  Tensor y = make_tensor({1, 1, 4, 4}, iota(16));
  Tensor p = pool("max_pool2d", y,
                  {{"kernel_size", int64_t{3}},
                   {"stride", int64_t{2}},
                   {"padding", int64_t{1}},
                   {"ceil_mode", true}});
  EXPECT_EQ(p.sizes(), (Shape{1, 1, 3, 3}));
  EXPECT_EQ(values_of(p), (std::vector<double>{6, 8, 8, 14, 16, 16, 14, 16, 16}));
  // A last window that would start in the trailing padding is dropped: 5 wide,
  // kernel 2, stride 2, padding 1 gives 3 windows (starts -1, 1, 3), not 4.
  EXPECT_EQ(infer_types_of("max_pool2d", {f32({1, 1, 5, 5})},
                           {{"kernel_size", int64_t{2}},
                            {"stride", int64_t{2}},
                            {"padding", int64_t{1}},
                            {"ceil_mode", true}})[0],
            f32({1, 1, 3, 3}));
}

TEST(MaxPool2d, Dilation) {
  Tensor x = make_tensor({1, 1, 4, 4}, iota(16));
  Tensor out =
      pool("max_pool2d", x,
           {{"kernel_size", int64_t{2}}, {"stride", int64_t{1}}, {"dilation", int64_t{2}}});
  EXPECT_EQ(out.sizes(), (Shape{1, 1, 2, 2}));
  EXPECT_EQ(values_of(out), (std::vector<double>{11, 12, 15, 16}));
  // Dilation 2, stride 2 on a strided input with decreasing values.
  std::vector<double> v = iota(36);
  for (double& e : v) e = 100 - e;
  Tensor y = make_tensor({1, 1, 6, 6}, v);
  Tensor d = pool("max_pool2d", y,
                  {{"kernel_size", int64_t{2}}, {"stride", int64_t{2}}, {"dilation", int64_t{2}}});
  EXPECT_EQ(d.sizes(), (Shape{1, 1, 2, 2}));
  EXPECT_EQ(values_of(d), (std::vector<double>{99, 97, 87, 85}));
}

TEST(MaxPool2d, NaNPropagatesAndIntegersWork) {
  Tensor x = make_tensor({1, 1, 2, 4}, {1, std::nan(""), 3, 4, 5, 6, 7, 8});
  std::vector<double> out = values_of(pool("max_pool2d", x, {{"kernel_size", int64_t{2}}}));
  EXPECT_TRUE(std::isnan(out[0]));
  EXPECT_EQ(out[1], 8);
  Tensor xi = make_tensor({2, 2, 2}, {-5, -7, -9, -6, 1, 2, 3, 4}, DType::I32);
  Tensor oi = pool("max_pool2d", xi, {{"kernel_size", int64_t{2}}});
  EXPECT_EQ(oi.dtype(), DType::I32);
  EXPECT_EQ(values_of(oi), (std::vector<double>{-5, 4}));
}

TEST(MaxPool2d, Errors) {
  auto mp = [](Shape s, Attrs attrs) {
    return error_of([&] { run_op1("max_pool2d", {Tensor::zeros(s)}, attrs); });
  };
  EXPECT_EQ(mp({1, 1, 4, 4}, {{"kernel_size", int64_t{2}}, {"padding", int64_t{2}}}),
            "max_pool2d: padding must be at most half the kernel size, got padding [2, 2] for "
            "kernel_size [2, 2]");
  EXPECT_EQ(mp({1, 1, 1, 4}, {{"kernel_size", int64_t{2}}}),
            "max_pool2d: output would be empty along H: input x is f32[1, 1, 1, 4] (H = 1), "
            "kernel 2, dilation 1, padding 0+0, stride 2: padded size 1 is smaller than the "
            "kernel extent 2");
  EXPECT_EQ(mp({1, 1, 4, 4}, {}), "max_pool2d: missing required attribute 'kernel_size'");
  EXPECT_EQ(mp({4, 4}, {{"kernel_size", int64_t{2}}}),
            "max_pool2d: input x must be 3-D (C, H, W) or 4-D (N, C, H, W): input x is f32[4, 4]");
  EXPECT_EQ(mp({1, 0, 4, 4}, {{"kernel_size", int64_t{2}}}),
            "max_pool2d: input x must have non-empty channel and spatial dims: input x is "
            "f32[1, 0, 4, 4]");
  EXPECT_EQ(mp({1, 1, 4, 4}, {{"kernel_size", I{2, 2, 2}}}),
            "max_pool2d: attribute 'kernel_size' must have 1 or 2 values, got [2, 2, 2]");
}

// --- avg_pool2d --------------------------------------------------------------------------

TEST(AvgPool2d, DefaultStride) {
  Tensor x = make_tensor({1, 1, 4, 4}, iota(16));
  EXPECT_EQ(values_of(pool("avg_pool2d", x, {{"kernel_size", int64_t{2}}})),
            (std::vector<double>{3.5, 5.5, 11.5, 13.5}));
}

TEST(AvgPool2d, CountIncludePadBothWays) {
  Tensor x = make_tensor({1, 1, 3, 3}, iota(9), DType::F64);
  Attrs a{{"kernel_size", int64_t{3}}, {"stride", int64_t{1}}, {"padding", int64_t{1}}};
  std::vector<double> with = values_of(pool("avg_pool2d", x, a));
  a.set("count_include_pad", false);
  std::vector<double> without = values_of(pool("avg_pool2d", x, a));
  // Corner (0,0): 1+2+4+5 = 12; top edge (0,1): 1+2+3+4+5+6 = 21; centre 45.
  EXPECT_DOUBLE_EQ(with[0], 12.0 / 9);
  EXPECT_DOUBLE_EQ(with[1], 21.0 / 9);
  EXPECT_DOUBLE_EQ(with[4], 5.0);
  EXPECT_DOUBLE_EQ(without[0], 3.0);
  EXPECT_DOUBLE_EQ(without[1], 3.5);
  EXPECT_DOUBLE_EQ(without[4], 5.0);
  EXPECT_DOUBLE_EQ(without[8], (5 + 6 + 8 + 9) / 4.0);
}

TEST(AvgPool2d, CeilModeClipsWindowsToThePaddedInput) {
  // No padding: the ceil-mode window past the edge counts only what is inside.
  Tensor x = make_tensor({1, 5, 5}, iota(25));
  Tensor out = pool("avg_pool2d", x, {{"kernel_size", int64_t{2}}, {"ceil_mode", true}});
  EXPECT_EQ(out.sizes(), (Shape{1, 3, 3}));
  EXPECT_EQ(values_of(out), (std::vector<double>{4, 6, 7.5, 14, 16, 17.5, 21.5, 23.5, 25}));
  // Padding 1 on 4x4, kernel 3, stride 2: the last window [3, 6) is clipped to
  // the padded end 5 (2 rows count with padding), to the input 4 (1 row) without.
  Tensor y = make_tensor({1, 1, 4, 4}, iota(16), DType::F64);
  Attrs a{{"kernel_size", int64_t{3}},
          {"stride", int64_t{2}},
          {"padding", int64_t{1}},
          {"ceil_mode", true}};
  std::vector<double> with = values_of(pool("avg_pool2d", y, a));
  a.set("count_include_pad", false);
  std::vector<double> without = values_of(pool("avg_pool2d", y, a));
  ASSERT_EQ(with.size(), 9u);
  EXPECT_DOUBLE_EQ(with[0], 14.0 / 9);       // rows/cols {0, 1} of a 3x3 padded window
  EXPECT_DOUBLE_EQ(with[8], 16.0 / 4);       // x[3][3] in a 2x2 window
  EXPECT_DOUBLE_EQ(with[2], (4 + 8) / 6.0);  // rows {0,1} x col 3, window 3x2
  EXPECT_DOUBLE_EQ(without[0], 14.0 / 4);
  EXPECT_DOUBLE_EQ(without[8], 16.0);
  EXPECT_DOUBLE_EQ(without[2], (4 + 8) / 2.0);
}

TEST(AvgPool2d, DivisorOverride) {
  Tensor x = make_tensor({1, 1, 4, 4}, iota(16));
  EXPECT_EQ(values_of(pool("avg_pool2d", x,
                           {{"kernel_size", int64_t{2}}, {"divisor_override", int64_t{2}}})),
            (std::vector<double>{7, 11, 23, 27}));
  EXPECT_EQ(
      error_of([&] {
        pool("avg_pool2d", x, {{"kernel_size", int64_t{2}}, {"divisor_override", int64_t{0}}});
      }),
      "avg_pool2d: attribute 'divisor_override' must not be zero");
  EXPECT_EQ(error_of([&] {
              run_op1("avg_pool2d", {Tensor::zeros({1, 1, 4, 4}, DType::I64)},
                      {{"kernel_size", int64_t{2}}});
            }),
            "avg_pool2d: operand 'x' must be a floating tensor, got x is i64[1, 1, 4, 4]");
}

TEST(Pool2d, InferKeepsBatchAndChannels) {
  Dim n = Dim::sym("N"), c = Dim::sym("C");
  EXPECT_EQ(infer_types_of("avg_pool2d", {f32({n, c, 9, 7})},
                           {{"kernel_size", I{3, 2}}, {"stride", I{2, 1}}})[0],
            f32({n, c, 4, 6}));
  EXPECT_EQ(infer_types_of("max_pool2d", {f32({n, 3, 9, 7})}, {{"kernel_size", int64_t{3}}})[0],
            f32({n, 3, 3, 2}));
}

// --- the conformance corpus's conv and pooling cases -----------------------------------

std::filesystem::path corpus_dir() { return conformance_dir() / "cases"; }

Tensor corpus(const std::string& id, const std::string& file) {
  return read_npy((corpus_dir() / id / (file + ".npy")).string());
}

void expect_close(const Tensor& got, const Tensor& want, double rtol = 1e-3, double atol = 1e-4) {
  ASSERT_EQ(got.sizes(), want.sizes());
  std::vector<double> g = values_of(got), w = values_of(want);
  for (size_t i = 0; i < g.size(); ++i) {
    EXPECT_LE(std::abs(g[i] - w[i]), atol + rtol * std::abs(w[i])) << "element " << i;
  }
}

TEST(ConvCorpus, SingleOpCases) {
  KILN_SKIP_WITHOUT_CORPUS();
  auto in = [](const std::string& id, const std::string& n) { return corpus(id, "input_" + n); };
  {
    std::string id = "conv_stride2_pad1_bias";
    expect_close(run_op1("conv2d", {in(id, "x"), in(id, "w"), in(id, "b")},
                         {{"stride", int64_t{2}}, {"padding", int64_t{1}}}),
                 corpus(id, "output_0"));
  }
  {
    std::string id = "conv_dilated_nobias";
    expect_close(run_op1("conv2d", {in(id, "x"), in(id, "w"), Arg::none()},
                         {{"dilation", int64_t{2}}, {"padding", int64_t{2}}}),
                 corpus(id, "output_0"));
  }
  {
    std::string id = "conv_grouped";
    expect_close(
        run_op1("conv2d", {in(id, "x"), in(id, "w"), in(id, "b")}, {{"groups", int64_t{2}}}),
        corpus(id, "output_0"));
  }
  {
    std::string id = "conv_depthwise";
    expect_close(run_op1("conv2d", {in(id, "x"), in(id, "w"), in(id, "b")},
                         {{"padding", int64_t{1}}, {"groups", int64_t{6}}}),
                 corpus(id, "output_0"));
    expect_close(run_op1("conv2d", {in(id, "x"), in(id, "w2"), Arg::none()},
                         {{"stride", int64_t{2}}, {"padding", int64_t{1}}, {"groups", int64_t{6}}}),
                 corpus(id, "output_1"));
  }
  {
    std::string id = "conv_pointwise_1x1";
    expect_close(run_op1("conv2d", {in(id, "x"), in(id, "w"), Arg::none()}),
                 corpus(id, "output_0"));
  }
  {
    std::string id = "conv_rect_asym";
    expect_close(run_op1("conv2d", {in(id, "x"), in(id, "w"), in(id, "b")},
                         {{"stride", I{2, 1}}, {"padding", I{1, 2}}}),
                 corpus(id, "output_0"));
  }
  {
    std::string id = "conv_same_and_full";
    expect_close(
        run_op1("conv2d", {in(id, "x"), in(id, "w"), Arg::none()}, {{"padding", I{1, 2, 1, 2}}}),
        corpus(id, "output_0"));
    expect_close(run_op1("conv2d", {in(id, "x"), in(id, "wf"), Arg::none()}),
                 corpus(id, "output_1"));
  }
  {
    std::string id = "pool_max_basic";
    Tensor x = in(id, "x");
    expect_close(pool("max_pool2d", x, {{"kernel_size", int64_t{2}}}), corpus(id, "output_0"), 0,
                 0);
    expect_close(
        pool("max_pool2d", x,
             {{"kernel_size", int64_t{3}}, {"stride", int64_t{1}}, {"padding", int64_t{1}}}),
        corpus(id, "output_1"), 0, 0);
  }
  {
    std::string id = "pool_max_ceil_dilated";
    Tensor x = in(id, "x");
    expect_close(pool("max_pool2d", x,
                      {{"kernel_size", int64_t{3}},
                       {"stride", int64_t{2}},
                       {"padding", int64_t{1}},
                       {"ceil_mode", true}}),
                 corpus(id, "output_0"), 0, 0);
    expect_close(
        pool("max_pool2d", x,
             {{"kernel_size", int64_t{2}}, {"stride", int64_t{2}}, {"dilation", int64_t{2}}}),
        corpus(id, "output_1"), 0, 0);
  }
  {
    std::string id = "pool_avg_variants";
    Tensor x = in(id, "x");
    Attrs a{{"kernel_size", int64_t{3}}, {"stride", int64_t{2}}, {"padding", int64_t{1}}};
    expect_close(pool("avg_pool2d", x, a), corpus(id, "output_0"));
    a.set("count_include_pad", false);
    expect_close(pool("avg_pool2d", x, a), corpus(id, "output_1"));
    expect_close(pool("avg_pool2d", x, {{"kernel_size", int64_t{2}}, {"ceil_mode", true}}),
                 corpus(id, "output_2"));
  }
}

TEST(Conv2d, RegistryEntries) {
  EXPECT_EQ(op_def("conv2d").signature(),
            "conv2d(x: Tensor, weight: Tensor, bias: Tensor?) {stride: int[] = [1, 1], padding: "
            "int[] = [0, 0], dilation: int[] = [1, 1], groups: int = 1} -> contraction");
  EXPECT_EQ(op_def("avg_pool2d").signature(),
            "avg_pool2d(x: Tensor) {kernel_size: int[], stride: int[] = [], padding: int[] = [0, "
            "0], ceil_mode: bool = false, count_include_pad: bool = true, divisor_override: int? "
            "= none} -> contraction");
}

}  // namespace
}  // namespace kiln::test
