// Tests of the normalization op family (ir/ops/normalization.cpp): softmax,
// log_softmax, layer_norm, batch_norm and rms_norm — hand-computed values,
// the properties each guarantees (rows sum to 1, mean 0 / variance 1), large
// and -inf logits, dtypes, strided views, empty inputs and error messages.
#include <cmath>
#include <string>
#include <vector>

#include "op_test_util.h"
#include "reduction_test_checks.h"

namespace kiln::test {
namespace {

using ir::Attrs;
using Ints = std::vector<int64_t>;

const double kLn2 = std::log(2.0);
const double kLn3 = std::log(3.0);

Attrs along(int64_t dim) {
  return {{"dim", dim}};
}
Attrs norm_shape(Ints shape, double eps) {
  return {{"normalized_shape", shape}, {"eps", eps}};
}

// --- softmax, log_softmax ------------------------------------------------------------------

TEST(Softmax, HandValues) {
  Tensor x = make_tensor({1, 3}, {0, kLn2, kLn3});
  Tensor s = run_op1("softmax", {x}, along(1));
  EXPECT_EQ(s.dtype(), DType::F32);
  EXPECT_EQ(s.sizes(), Shape({1, 3}));
  expect_values(s, {1.0 / 6, 1.0 / 3, 0.5});
  Tensor l = run_op1("log_softmax", {x}, along(-1));
  expect_values(l, {std::log(1.0 / 6), std::log(1.0 / 3), std::log(0.5)});
  // Along dim 0 each column has one element: probability 1, log 0.
  expect_values(run_op1("softmax", {x}, along(0)), {1, 1, 1});
  expect_values(run_op1("log_softmax", {x}, along(-2)), {0, 0, 0});
}

TEST(Softmax, RowsSumToOneAlongEachDim) {
  Tensor x = Tensor::randn({3, 4, 5}, 7);
  for (int64_t dim : {0, 1, 2, -1}) {
    Tensor s = run_op1("softmax", {x}, along(dim));
    Tensor total = run_op1("sum", {s}, {{"dim", Ints{dim}}});
    std::vector<double> ones(size_t(total.numel()), 1.0);
    expect_values(total, ones, 1e-6);
    // exp(log_softmax) is softmax.
    std::vector<double> sv = values_of(s), lv = values_of(run_op1("log_softmax", {x}, along(dim)));
    for (size_t i = 0; i < sv.size(); ++i) EXPECT_NEAR(std::exp(lv[i]), sv[i], 1e-6);
  }
}

TEST(Softmax, LargeLogitsNeedMaxSubtraction) {
  Tensor x = make_tensor({2, 3}, {150, -150, 149, 150, 150, -150});
  double s = 1 + std::exp(-1.0);  // e^-300 vanishes next to 1 + e^-1
  expect_values(run_op1("softmax", {x}, along(1)), {1 / s, 0, std::exp(-1.0) / s, 0.5, 0.5, 0});
  double ls = std::log(s);
  expect_values(run_op1("log_softmax", {x}, along(1)),
                {-ls, -300 - ls, -1 - ls, -kLn2, -kLn2, -300 - kLn2}, 1e-6);
}

TEST(Softmax, MinusInfinityMasks) {
  Tensor x = make_tensor({3, 3}, {1, -kInf, 1, -kInf, 2, -kInf, -kInf, -kInf, -kInf});
  expect_values(run_op1("softmax", {x}, along(-1)), {0.5, 0, 0.5, 0, 1, 0, kNaN, kNaN, kNaN});
  expect_values(run_op1("log_softmax", {x}, along(-1)),
                {-kLn2, -kInf, -kLn2, -kInf, 0, -kInf, kNaN, kNaN, kNaN});
  // NaN in a row poisons that row only.
  Tensor n = make_tensor({2, 2}, {kNaN, 1, 1, 1});
  expect_values(run_op1("softmax", {n}, along(1)), {kNaN, kNaN, 0.5, 0.5});
}

TEST(Softmax, DtypesAndDtypeAttr) {
  Tensor h = run_op1("softmax", {Tensor::zeros({4}, DType::F16)}, along(0));
  EXPECT_EQ(h.dtype(), DType::F16);
  expect_values(h, {0.25, 0.25, 0.25, 0.25}, 0);
  Tensor bf = run_op1("log_softmax", {Tensor::zeros({2}, DType::BF16)}, along(0));
  EXPECT_EQ(bf.dtype(), DType::BF16);
  expect_values(bf, {-kLn2, -kLn2}, 4e-3);
  Tensor x = make_tensor({3}, {0, kLn2, kLn3}, DType::F64);
  Tensor d = run_op1("softmax", {x}, along(0));
  EXPECT_EQ(d.dtype(), DType::F64);
  expect_values(d, {1.0 / 6, 1.0 / 3, 0.5}, 1e-15);
  // dtype converts the input first and sets the result dtype.
  Tensor up = run_op1("softmax", {make_tensor({2}, {0, kLn3})},
                      {{"dim", int64_t{0}}, {"dtype", DType::F64}});
  EXPECT_EQ(up.dtype(), DType::F64);
  double e = std::exp(double(float(kLn3)));
  expect_values(up, {1 / (1 + e), e / (1 + e)}, 1e-15);
  Tensor from_int = run_op1("softmax", {make_tensor({2}, {3, 3}, DType::I64)},
                            {{"dim", int64_t{0}}, {"dtype", DType::F32}});
  EXPECT_EQ(from_int.dtype(), DType::F32);
  expect_values(from_int, {0.5, 0.5});
}

TEST(Softmax, OddSizesAndViews) {
  // 0-dim and one element.
  expect_values(run_op1("softmax", {Tensor::scalar(5.0)}, along(0)), {1});
  expect_values(run_op1("log_softmax", {make_tensor({1, 1}, {7})}, along(1)), {0});
  // 1023 equal logits.
  Tensor big = run_op1("softmax", {Tensor::full({1023}, 3.0)}, along(0));
  expect_values(big, std::vector<double>(1023, 1.0 / 1023));
  // Empty along and across the softmax dim.
  EXPECT_EQ(run_op1("softmax", {Tensor::zeros({0, 5})}, along(1)).sizes(), Shape({0, 5}));
  EXPECT_EQ(run_op1("log_softmax", {Tensor::zeros({5, 0})}, along(1)).sizes(), Shape({5, 0}));
  // Transposed view: base [3, 2] viewed as [[0, ln2, ln3], [ln2, 0, ln3]].
  Tensor base = make_tensor({3, 2}, {0, kLn2, kLn2, 0, kLn3, kLn3});
  Tensor t = base.view_as_strided({2, 3}, {1, 2}, 0);
  Tensor s = run_op1("softmax", {t}, along(1));
  EXPECT_TRUE(s.is_contiguous());
  expect_values(s, {1.0 / 6, 1.0 / 3, 0.5, 1.0 / 3, 1.0 / 6, 0.5});
}

// --- layer_norm ------------------------------------------------------------------------------

TEST(LayerNorm, AffineHandValues) {
  // Both rows normalize to [-1.5, -0.5, 0.5, 1.5] / sqrt(1.25) with eps 0.
  Tensor x = make_tensor({2, 4}, {1, 2, 3, 4, 2, 4, 6, 8});
  const double r = std::sqrt(1.25);
  std::vector<double> n = {-1.5 / r, -0.5 / r, 0.5 / r, 1.5 / r};
  Tensor plain = run_op1("layer_norm", {x, Arg::none(), Arg::none()}, norm_shape({4}, 0.0));
  expect_values(plain, {n[0], n[1], n[2], n[3], n[0], n[1], n[2], n[3]});
  Tensor w = make_tensor({4}, {1, 2, 3, 4});
  Tensor b = make_tensor({4}, {0.5, 0, 0, -1});
  std::vector<double> a = {n[0] + 0.5, 2 * n[1], 3 * n[2], 4 * n[3] - 1};
  Tensor y = run_op1("layer_norm", {x, w, b}, norm_shape({4}, 0.0));
  EXPECT_EQ(y.dtype(), DType::F32);
  EXPECT_EQ(y.sizes(), Shape({2, 4}));
  expect_values(y, {a[0], a[1], a[2], a[3], a[0], a[1], a[2], a[3]});
  // Default eps is 1e-5, added to the biased variances 1.25 and 5.
  Tensor d = run_op1("layer_norm", {x, w, Arg::none()}, {{"normalized_shape", Ints{4}}});
  const double r0 = std::sqrt(1.25 + 1e-5), r1 = std::sqrt(5 + 1e-5);
  expect_values(d, {-1.5 / r0, -1 / r0, 1.5 / r0, 6 / r0, -3 / r1, -2 / r1, 3 / r1, 12 / r1});
}

TEST(LayerNorm, TwoDimsMeanZeroVarianceOne) {
  // Data with a large mean: 10 + 3 * N(0, 1).
  std::vector<double> v = values_of(Tensor::randn({3, 5, 16}, 11));
  for (double& e : v) e = 10 + 3 * e;
  Tensor x = make_tensor({3, 5, 16}, v, DType::F64);
  Tensor y = run_op1("layer_norm", {x, Arg::none(), Arg::none()}, norm_shape({5, 16}, 1e-12));
  Attrs rows = {{"dim", Ints{-2, -1}}};
  expect_values(run_op1("mean", {y}, rows), {0, 0, 0}, 1e-12);
  Attrs biased = {{"dim", Ints{1, 2}}, {"correction", int64_t{0}}};
  expect_values(run_op1("var", {y}, biased), {1, 1, 1}, 1e-9);
}

TEST(LayerNorm, DtypesViewsAndEmpty) {
  Tensor h = make_tensor({4}, {1, 2, 3, 4}, DType::F16);
  Tensor y = run_op1("layer_norm", {h, Arg::none(), Arg::none()}, norm_shape({4}, 0.0));
  EXPECT_EQ(y.dtype(), DType::F16);
  const double r = std::sqrt(1.25);
  expect_values(y, {-1.5 / r, -0.5 / r, 0.5 / r, 1.5 / r}, 1e-3);
  // bf16 input with an f32 weight computes in double and returns bf16.
  Tensor bf = make_tensor({2}, {-1, 1}, DType::BF16);
  Tensor yb =
      run_op1("layer_norm", {bf, make_tensor({2}, {2, 2}), Arg::none()}, norm_shape({2}, 0.0));
  EXPECT_EQ(yb.dtype(), DType::BF16);
  expect_values(yb, {-2, 2}, 0);
  // Transposed view [2, 3] of base [3, 2]: rows [1, 3, 5] and [2, 4, 6].
  Tensor base = make_tensor({3, 2}, {1, 2, 3, 4, 5, 6});
  Tensor t = base.view_as_strided({2, 3}, {1, 2}, 0);
  const double s = std::sqrt(8.0 / 3);
  expect_values(run_op1("layer_norm", {t, Arg::none(), Arg::none()}, norm_shape({3}, 0.0)),
                {-2 / s, 0, 2 / s, -2 / s, 0, 2 / s});
  EXPECT_EQ(run_op1("layer_norm", {Tensor::zeros({0, 4}), Arg::none(), Arg::none()},
                    norm_shape({4}, 1e-5))
                .sizes(),
            Shape({0, 4}));
  // A single element normalizes to 0 (x - mean), not NaN, thanks to eps.
  expect_values(run_op1("layer_norm", {make_tensor({1}, {9}), Arg::none(), Arg::none()},
                        norm_shape({1}, 1e-5)),
                {0});
}

// --- batch_norm ------------------------------------------------------------------------------

TEST(BatchNorm, NclWithAffine) {
  // x[n][c][l]; channel 0: (x - 1) / 2 * 2; channel 1: (x + 1) / 0.5 * 1 + 10.
  Tensor x = make_tensor({2, 2, 2}, {1, 3, 0, 2, 5, -1, 4, 1});
  Tensor mean = make_tensor({2}, {1, -1});
  Tensor var = make_tensor({2}, {4, 0.25});
  Tensor w = make_tensor({2}, {2, 1});
  Tensor b = make_tensor({2}, {0, 10});
  Tensor y = run_op1("batch_norm", {x, mean, var, w, b}, {{"eps", 0.0}});
  EXPECT_EQ(y.sizes(), Shape({2, 2, 2}));
  expect_values(y, {0, 2, 12, 16, 4, -2, 20, 14});
  // A channels-last view of the same values gives the same numbers.
  Tensor cl = make_tensor({2, 2, 2}, {1, 0, 3, 2, 5, 4, -1, 1});
  Tensor view = cl.view_as_strided({2, 2, 2}, {4, 1, 2}, 0);
  expect_values(run_op1("batch_norm", {view, mean, var, w, b}, {{"eps", 0.0}}),
                {0, 2, 12, 16, 4, -2, 20, 14});
}

TEST(BatchNorm, TwoDimNoAffineAndDtypes) {
  Tensor x = make_tensor({2, 2}, {1, 2, 3, 4});
  Tensor mean = make_tensor({2}, {0, 1});
  Tensor var = make_tensor({2}, {1, 4});
  Tensor y = run_op1("batch_norm", {x, mean, var, Arg::none(), Arg::none()}, {{"eps", 1e-3}});
  double a = std::sqrt(1.001), c = std::sqrt(4.001);
  expect_values(y, {1 / a, 1 / c, 3 / a, 3 / c});
  // Default eps 1e-5.
  Tensor d = run_op1("batch_norm", {x, mean, var, Arg::none(), Arg::none()});
  expect_values(d, {1 / std::sqrt(1.00001), 1 / std::sqrt(4.00001), 3 / std::sqrt(1.00001),
                    3 / std::sqrt(4.00001)});
  Tensor h =
      run_op1("batch_norm",
              {make_tensor({1, 2, 1}, {3, 3}, DType::F16), make_tensor({2}, {1, 2}, DType::F16),
               make_tensor({2}, {4, 1}, DType::F16), Arg::none(), Arg::none()},
              {{"eps", 0.0}});
  EXPECT_EQ(h.dtype(), DType::F16);
  expect_values(h, {1, 1}, 0);
  EXPECT_EQ(
      run_op1("batch_norm", {Tensor::zeros({0, 2}), mean, var, Arg::none(), Arg::none()}).sizes(),
      Shape({0, 2}));
}

// --- rms_norm -----------------------------------------------------------------------------------

TEST(RmsNorm, HandValuesAndDefaultEps) {
  // Row 0: rms = sqrt(12.5); row 1: rms = 1.
  Tensor x = make_tensor({2, 2}, {3, 4, 1, -1});
  Tensor w = make_tensor({2}, {2, 0.5});
  const double r = std::sqrt(12.5);
  expect_values(run_op1("rms_norm", {x, w}, norm_shape({2}, 0.0)), {6 / r, 2 / r, 2, -0.5});
  expect_values(run_op1("rms_norm", {x, Arg::none()}, norm_shape({2}, 0.0)), {3 / r, 4 / r, 1, -1});
  expect_values(
      run_op1("rms_norm", {x, Arg::none()}, norm_shape({2, 2}, 0.0)),
      {3 / std::sqrt(6.75), 4 / std::sqrt(6.75), 1 / std::sqrt(6.75), -1 / std::sqrt(6.75)});
  // No eps: torch.finfo(f16).eps = 2^-10, so mean square 2^-10 gives 2^-5 / 2^-4.5.
  Tensor h = make_tensor({2}, {0.03125, 0.03125}, DType::F16);
  Tensor y = run_op1("rms_norm", {h, Arg::none()}, {{"normalized_shape", Ints{2}}});
  EXPECT_EQ(y.dtype(), DType::F16);
  expect_values(y, {0.70703125, 0.70703125}, 0);
}

// --- inference with symbolic dims ---------------------------------------------------------------

Arg symbolic(DType dtype, ir::Dims dims) {
  Arg a{Tensor()};
  a.type = ir::Type::tensor(dtype, std::move(dims));
  return a;
}

TEST(NormalizationInfer, SymbolicDimsPassThrough) {
  ir::Dim n = ir::Dim::sym("N");
  EXPECT_EQ(infer_op("softmax", {symbolic(DType::F32, {n, 8})}, along(-1))[0].str(), "f32[N, 8]");
  EXPECT_EQ(infer_op("log_softmax", {symbolic(DType::I32, {n})},
                     {{"dim", int64_t{0}}, {"dtype", DType::F16}})[0]
                .str(),
            "f16[N]");
  EXPECT_EQ(infer_op("layer_norm", {symbolic(DType::F32, {n, 5, 16}), Arg::none(), Arg::none()},
                     norm_shape({5, 16}, 1e-5))[0]
                .str(),
            "f32[N, 5, 16]");
  EXPECT_EQ(infer_op("batch_norm",
                     {symbolic(DType::F32, {n, 3, ir::Dim::sym("H")}), symbolic(DType::F32, {3}),
                      symbolic(DType::F32, {3}), Arg::none(), Arg::none()})[0]
                .str(),
            "f32[N, 3, H]");
}

// --- errors
// -----------------------------------------------------------------------------------------

TEST(NormalizationErrors, Dtypes) {
  Tensor i = make_tensor({2, 2}, {1, 2, 3, 4}, DType::I64);
  expect_error([&] { run_op("softmax", {i}, along(1)); }, {"softmax", "i64", "pass dtype="});
  expect_error(
      [&] {
        run_op("log_softmax", {make_tensor({2}, {1, 2})},
               {{"dim", int64_t{0}}, {"dtype", DType::I32}});
      },
      {"log_softmax", "i32"});
  expect_error(
      [&] {
        run_op("layer_norm", {i, Arg::none(), Arg::none()}, norm_shape({2}, 0.0));
      },
      {"layer_norm", "operand 'x'", "i64", "floating"});
  expect_error(
      [&] {
        run_op("rms_norm", {make_tensor({2}, {1, 1}, DType::Bool), Arg::none()},
               norm_shape({2}, 0.0));
      },
      {"rms_norm", "bool"});
  expect_error(
      [&] {
        run_op("batch_norm",
               {i, make_tensor({2}, {0, 0}), make_tensor({2}, {1, 1}), Arg::none(), Arg::none()});
      },
      {"batch_norm", "i64"});
  Tensor x = make_tensor({2}, {1, 2});
  expect_error(
      [&] {
        run_op("layer_norm", {x, make_tensor({2}, {1, 1}, DType::I32), Arg::none()},
               norm_shape({2}, 0.0));
      },
      {"layer_norm", "operand 'weight'", "i32"});
}

TEST(NormalizationErrors, ShapesAndDims) {
  Tensor x = make_tensor({2, 4}, std::vector<double>(8, 1.0));
  expect_error([&] { run_op("softmax", {x}, along(2)); }, {"softmax", "dim 2", "rank 2"});
  expect_error([&] { run_op("softmax", {x}); }, {"softmax", "missing", "dim"});
  expect_error(
      [&] {
        run_op("layer_norm", {x, Arg::none(), Arg::none()}, norm_shape({5}, 1e-5));
      },
      {"layer_norm", "normalized_shape [5]", "f32[2, 4]"});
  expect_error(
      [&] {
        run_op("layer_norm", {x, Arg::none(), Arg::none()}, norm_shape({1, 2, 4}, 1e-5));
      },
      {"normalized_shape [1, 2, 4]", "f32[2, 4]"});
  expect_error(
      [&] {
        run_op("layer_norm", {x, Arg::none(), Arg::none()}, norm_shape({}, 1e-5));
      },
      {"layer_norm", "normalized_shape"});
  expect_error(
      [&] {
        run_op("layer_norm", {x, make_tensor({3}, {1, 1, 1}), Arg::none()}, norm_shape({4}, 1e-5));
      },
      {"operand 'weight' f32[3]", "[4]"});
  expect_error(
      [&] {
        run_op("layer_norm", {x, Arg::none(), make_tensor({1, 4}, {0, 0, 0, 0})},
               norm_shape({4}, 1e-5));
      },
      {"operand 'bias' f32[1, 4]", "[4]"});
  expect_error(
      [&] {
        run_op("rms_norm", {x, Arg::none()}, norm_shape({2}, 1e-5));
      },
      {"rms_norm", "normalized_shape [2]", "f32[2, 4]"});
  Tensor nchw = Tensor::zeros({2, 3, 5});
  Tensor c3 = Tensor::ones({3}), c4 = Tensor::ones({4});
  expect_error(
      [&] {
        run_op("batch_norm", {nchw, c4, c3, Arg::none(), Arg::none()});
      },
      {"batch_norm", "operand 'running_mean' f32[4]", "[3]", "f32[2, 3, 5]"});
  expect_error(
      [&] {
        run_op("batch_norm", {nchw, c3, c3, c3, c4});
      },
      {"batch_norm", "operand 'bias' f32[4]"});
  expect_error(
      [&] {
        run_op("batch_norm", {Tensor::zeros({3}), c3, c3, Arg::none(), Arg::none()});
      },
      {"batch_norm", "rank >= 2", "f32[3]"});
  expect_error(
      [&] {
        run_op("batch_norm", {nchw, Arg::none(), c3, Arg::none(), Arg::none()});
      },
      {"batch_norm", "running_mean"});
}

TEST(NormalizationRegistry, CategoryAndSignature) {
  for (const char* name : {"softmax", "log_softmax", "layer_norm", "batch_norm", "rms_norm"}) {
    EXPECT_EQ(op_def(name).category, ir::OpCategory::Reduction) << name;
    EXPECT_FALSE(op_def(name).doc.empty()) << name;
  }
  // The float default's spelling belongs to attr_str, so only the shape of the
  // signature is checked here.
  std::string sig = op_def("layer_norm").signature();
  EXPECT_EQ(sig.rfind("layer_norm(x: Tensor, weight: Tensor?, bias: Tensor?) "
                      "{normalized_shape: int[], eps: float = ",
                      0),
            0u)
      << sig;
  EXPECT_NE(op_def("rms_norm").signature().find("eps: float? = none"), std::string::npos);
  EXPECT_NE(op_def("softmax").signature().find("{dim: int, dtype: dtype? = none}"),
            std::string::npos);
}

// --- PyTorch conformance cases ----------------------------------------------------------------
// Each call mirrors one expression of the case's TorchScript function.

const double kAccRtol = 1e-3, kAccAtol = 1e-4;  // f32_accumulate
const double kTrRtol = 5e-4, kTrAtol = 5e-5;    // f32_transcendental

// `t` with every element mapped through f, same shape and dtype.
template <typename F>
Tensor map_values(const Tensor& t, F&& f) {
  std::vector<double> v = values_of(t);
  for (double& e : v) e = f(e);
  return make_tensor(t.sizes(), v, t.dtype());
}

TEST(NormalizationConformance, SoftmaxEachDimAndLarge) {
  KILN_SKIP_WITHOUT_CORPUS();
  const char* id = "sm_softmax_each_dim";
  Tensor x = case_input(id, "x");
  expect_case_output(run_op1("softmax", {x}, along(0)), id, 0, kTrRtol, kTrAtol);
  expect_case_output(run_op1("softmax", {x}, along(1)), id, 1, kTrRtol, kTrAtol);
  expect_case_output(run_op1("softmax", {x}, along(-1)), id, 2, kTrRtol, kTrAtol);
  const char* large = "sm_log_softmax_large";
  Tensor y = case_input(large, "x");
  expect_case_output(run_op1("log_softmax", {y}, along(-2)), large, 0, kTrRtol, kTrAtol);
  // x * 40.0 in f32: the double product is exact, so one rounding matches torch.
  Tensor scaled = map_values(y, [](double e) { return e * 40.0; });
  expect_case_output(run_op1("log_softmax", {scaled}, along(2)), large, 1, kTrRtol, kTrAtol);
}

TEST(NormalizationConformance, SoftmaxF64AndMasked) {
  KILN_SKIP_WITHOUT_CORPUS();
  const char* id = "sm_softmax_f64";
  Tensor x = case_input(id, "x"), y = case_input(id, "y");
  expect_case_output(run_op1("softmax", {x}, along(1)), id, 0, 1e-7, 1e-9);
  expect_case_output(run_op1("log_softmax", {x}, along(0)), id, 1, 1e-7, 1e-9);
  expect_case_output(run_op1("softmax", {y}, {{"dim", int64_t{1}}, {"dtype", DType::F64}}), id, 2,
                     1e-7, 1e-9);
  const char* masked = "sm_softmax_masked";
  Tensor m = case_input(masked, "x");
  std::vector<double> v = values_of(m), keep = values_of(case_input(masked, "keep"));
  for (size_t i = 0; i < v.size(); ++i) {
    if (keep[i] == 0) v[i] = -kInf;  // x.masked_fill(~keep, -inf)
  }
  Tensor s = make_tensor(m.sizes(), v, m.dtype());
  expect_case_output(run_op1("softmax", {s}, along(-1)), masked, 0, kTrRtol, kTrAtol);
}

TEST(NormalizationConformance, LayerNormBatchNormRmsNorm) {
  KILN_SKIP_WITHOUT_CORPUS();
  const char* ln = "norm_layer_norm_affine";
  expect_case_output(
      run_op1("layer_norm", {case_input(ln, "x"), case_input(ln, "w"), case_input(ln, "b")},
              norm_shape({33}, 1e-5)),
      ln, 0, kAccRtol, kAccAtol);
  const char* ln2 = "norm_layer_norm_two_dims";
  expect_case_output(run_op1("layer_norm", {case_input(ln2, "x"), Arg::none(), Arg::none()},
                             norm_shape({5, 16}, 1e-6)),
                     ln2, 0, kAccRtol, kAccAtol);
  const char* bn = "norm_batch_norm_nchw";
  expect_case_output(run_op1("batch_norm",
                             {case_input(bn, "x"), case_input(bn, "mean"), case_input(bn, "var"),
                              case_input(bn, "w"), case_input(bn, "b")},
                             {{"eps", 1e-5}}),
                     bn, 0, kAccRtol, kAccAtol);
  const char* bn2 = "norm_batch_norm_2d_noaffine";
  expect_case_output(run_op1("batch_norm",
                             {case_input(bn2, "x"), case_input(bn2, "mean"), case_input(bn2, "var"),
                              Arg::none(), Arg::none()},
                             {{"eps", 1e-3}}),
                     bn2, 0, kAccRtol, kAccAtol);
  // The composite block x * rsqrt(mean(x^2, -1) + eps) * weight is rms_norm.
  const char* rms = "blk_rmsnorm";
  expect_case_output(run_op1("rms_norm", {case_input(rms, "x"), case_input(rms, "weight")},
                             norm_shape({64}, 1e-6)),
                     rms, 0, kAccRtol, kAccAtol);
}

}  // namespace
}  // namespace kiln::test
