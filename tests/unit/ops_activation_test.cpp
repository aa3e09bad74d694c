// Activations and pointwise ops of issue 13 in the reference interpreter:
// values computed with Python's math module (printed with repr), NaN/inf
// edges, dtype rules and errors. Backends are compared with these references
// by llvm_ops_test (tests/unit/op_cases.h).
#include <cmath>
#include <limits>

#include "op_test_util.h"

namespace kiln {
namespace {

using test::make_tensor;
using test::run_op1;
using test::values_of;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

void expect_values(const Tensor& t, const std::vector<double>& want, double tol = 1e-14) {
  std::vector<double> got = values_of(t);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << "element " << i << " = " << got[i];
    } else if (std::isinf(want[i])) {
      EXPECT_EQ(got[i], want[i]) << "element " << i;
    } else {
      EXPECT_NEAR(got[i], want[i], tol) << "element " << i;
    }
  }
}

TEST(OpsActivation, ValuesMatchPythonMath) {
  Tensor x = make_tensor({4}, {-2, -0.5, 0.5, 3}, DType::F64);
  // [x if x > 0 else 0.2 * x for x in xs]
  expect_values(run_op1("leaky_relu", {x}, {{"negative_slope", 0.2}}), {-0.4, -0.1, 0.5, 3});
  // math.expm1(x) for x <= 0
  expect_values(run_op1("elu", {x}), {-0.8646647167633873, -0.3934693402873666, 0.5, 3});
  expect_values(run_op1("selu", {x}),
                {-1.520166468595695, -0.6917581878028713, 0.5253504936777402, 3.1521029620664414});
  // 2 * math.expm1(x / 2)
  expect_values(run_op1("celu", {x}, {{"alpha", 2.0}}),
                {-1.2642411176571153, -0.44239843385719024, 0.5, 3});
  // math.log1p(math.exp(x)); x itself above the threshold
  expect_values(run_op1("softplus", {x}),
                {0.1269280110429725, 0.4740769841801067, 0.9740769841801067, 3.048587351573742});
  expect_values(run_op1("softplus", {x}, {{"beta", 2.0}, {"threshold", 4.0}}),
                {0.009074963958904869, 0.15663084375911143, 0.6566308437591114, 3});
  expect_values(run_op1("hardswish", {x}),
                {-0.3333333333333333, -0.20833333333333334, 0.2916666666666667, 3});
  expect_values(run_op1("hardsigmoid", {x}),
                {0.16666666666666666, 0.4166666666666667, 0.5833333333333334, 1});
  expect_values(run_op1("mish", {x}),
                {-0.2525014826957089, -0.22074377465173, 0.3752452113048951, 2.9865350049679575});
  expect_values(run_op1("logsigmoid", {x}), {-2.1269280110429727, -0.9740769841801067,
                                             -0.4740769841801067, -0.04858735157374206});
}

TEST(OpsActivation, NaNAndInfinities) {
  Tensor x = make_tensor({3}, {kNaN, kInf, -kInf}, DType::F64);
  expect_values(run_op1("leaky_relu", {x}), {kNaN, kInf, -kInf});
  expect_values(run_op1("elu", {x}), {kNaN, kInf, -1});
  expect_values(run_op1("softplus", {x}), {kNaN, kInf, 0});
  expect_values(run_op1("hardswish", {x}), {kNaN, kInf, kNaN});  // -inf * 0
  expect_values(run_op1("hardsigmoid", {x}), {kNaN, 1, 0});
  expect_values(run_op1("mish", {x}), {kNaN, kInf, kNaN});
  expect_values(run_op1("logsigmoid", {x}), {kNaN, 0, -kInf});
  expect_values(run_op1("isnan", {x}), {1, 0, 0});
  expect_values(run_op1("isinf", {x}), {0, 1, 1});
  expect_values(run_op1("isfinite", {x}), {0, 0, 0});
  expect_values(run_op1("nan_to_num", {x}),
                {0, std::numeric_limits<double>::max(), -std::numeric_limits<double>::max()});
  Tensor h = make_tensor({3}, {kNaN, kInf, -kInf}, DType::F16);
  expect_values(run_op1("nan_to_num", {h}, {{"nan", 1.5}, {"neginf", -2.0}}), {1.5, 65504, -2});
  Tensor i = make_tensor({2}, {3, -4}, DType::I32);
  EXPECT_EQ(run_op1("isfinite", {i}).dtype(), DType::Bool);
  expect_values(run_op1("isfinite", {i}), {1, 1});
  expect_values(run_op1("isnan", {i}), {0, 0});
  EXPECT_EQ(run_op1("nan_to_num", {i}).dtype(), DType::I32);
}

TEST(OpsActivation, LogitAndXlogy) {
  Tensor p = make_tensor({4}, {0, 0.25, 0.5, 1}, DType::F64);
  expect_values(run_op1("logit", {p}), {-kInf, -1.0986122886681098, 0, kInf});
  // math.log(0.01 / 0.99)
  expect_values(run_op1("logit", {p}, {{"eps", 0.01}}),
                {-4.59511985013459, -1.0986122886681098, 0, 4.595119850134589}, 1e-12);
  Tensor x = make_tensor({4}, {0, 0, 2, 2}, DType::F64);
  Tensor y = make_tensor({4}, {0, kNaN, 3, 0}, DType::F64);
  expect_values(test::run_op("xlogy", {x, y})[0], {0, kNaN, 2.1972245773362196, -kInf});
  Tensor i = make_tensor({1}, {2}, DType::I64);
  EXPECT_EQ(test::run_op("xlogy", {i, i})[0].dtype(), DType::F32);
}

TEST(OpsActivation, FmodHasTheDividendsSign) {
  Tensor a = make_tensor({5}, {-7, 7, -7, 5.5, -0.0}, DType::F64);
  Tensor b = make_tensor({5}, {2, -2, kInf, 0, 3}, DType::F64);
  expect_values(test::run_op("fmod", {a, b})[0], {-1, 1, -7, kNaN, 0});
  EXPECT_TRUE(std::signbit(values_of(test::run_op("fmod", {a, b})[0])[4]));
  Tensor ia = make_tensor({3}, {-7, 7, -7}, DType::I32);
  Tensor ib = make_tensor({3}, {2, -2, -1}, DType::I32);
  expect_values(test::run_op("fmod", {ia, ib})[0], {-1, 1, 0});
  Tensor zero = make_tensor({3}, {2, 0, 1}, DType::I32);
  try {
    test::run_op("fmod", {ia, zero});
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("remainder: integer division by zero"), std::string::npos)
        << e.what();
  }
}

TEST(OpsActivation, AddcmulAddcdivLerp) {
  Tensor s = make_tensor({3}, {1, 2, 3}, DType::F64);
  Tensor t1 = make_tensor({3}, {2, 4, 6}, DType::F64);
  Tensor t2 = make_tensor({3}, {4, 8, -3}, DType::F64);
  expect_values(test::run_op("addcmul", {s, t1, t2}, {{"value", 0.5}})[0], {5, 18, -6});
  expect_values(test::run_op("addcdiv", {s, t1, t2}, {{"value", 2.0}})[0], {2, 3, -1});
  // Weight 1 gives end exactly (PyTorch's two-sided formula).
  Tensor w = make_tensor({3}, {0, 0.25, 1}, DType::F64);
  expect_values(test::run_op("lerp", {s, t2, w})[0], {1, 3.5, -3}, 0);
  Tensor i = make_tensor({2}, {1, 2}, DType::I64);
  EXPECT_EQ(test::run_op("addcmul", {i, i, i}, {{"value", int64_t{3}}})[0].dtype(), DType::I64);
  expect_values(test::run_op("addcmul", {i, i, i}, {{"value", int64_t{3}}})[0], {4, 14});
}

TEST(OpsActivation, DTypeErrors) {
  Tensor i = make_tensor({2}, {1, 2}, DType::I64);
  for (const char* op : {"leaky_relu", "elu", "softplus", "hardswish", "mish", "logsigmoid"}) {
    EXPECT_THROW(run_op1(op, {i}), Error) << op;
  }
  EXPECT_THROW(test::run_op("addcdiv", {i, i, i}), Error);
  EXPECT_THROW(test::run_op("addcmul", {i, i, i}, {{"value", 0.5}}), Error);
  Tensor f = make_tensor({2}, {1, 2}, DType::F32);
  Tensor d = make_tensor({2}, {1, 2}, DType::F64);
  EXPECT_THROW(test::run_op("lerp", {f, d, f}), Error);
  EXPECT_THROW(test::run_op("lerp", {i, i, i}), Error);
  Tensor b = make_tensor({2}, {1, 0}, DType::Bool);
  EXPECT_THROW(test::run_op("fmod", {b, b}), Error);
}

}  // namespace
}  // namespace kiln
