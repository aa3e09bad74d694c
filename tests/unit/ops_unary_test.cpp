// Unary elementwise ops of the registry: inferred dtypes per dtype class,
// hand-computed values (NaN/inf edges, round half to even), odd sizes,
// non-contiguous inputs and error messages.
#include <cmath>
#include <limits>

#include "op_test_util.h"

namespace kiln {
namespace {

using test::Arg;
using test::infer_op;
using test::make_tensor;
using test::run_op1;
using test::values_of;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// Compares element by element; NaN matches NaN, infinities must match exactly.
void expect_values(const Tensor& t, const std::vector<double>& want, double tol = 0) {
  std::vector<double> got = values_of(t);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << "element " << i << " = " << got[i];
    } else if (std::isinf(want[i]) || tol == 0) {
      EXPECT_EQ(got[i], want[i]) << "element " << i;
    } else {
      EXPECT_NEAR(got[i], want[i], tol) << "element " << i;
    }
  }
}

std::string error_of(const std::string& op, const std::vector<Arg>& args,
                     const ir::Attrs& attrs = {}) {
  try {
    test::run_op(op, args, attrs);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(OpsUnary, ExpKeepsFloatDTypesAndLiftsIntegersToF32) {
  Tensor f32 = make_tensor({3}, {0, 1, -1});
  Tensor out = run_op1("exp", {f32});
  EXPECT_EQ(out.dtype(), DType::F32);
  expect_values(out, {1, 2.718281828459045, 0.36787944117144233}, 1e-6);

  Tensor f64 = make_tensor({1}, {1}, DType::F64);
  EXPECT_EQ(values_of(run_op1("exp", {f64}))[0], std::exp(1.0));

  // f16: computed in double, rounded once: e -> 2.71875 (spacing 2^-9).
  Tensor f16 = make_tensor({1}, {1}, DType::F16);
  Tensor h = run_op1("exp", {f16});
  EXPECT_EQ(h.dtype(), DType::F16);
  expect_values(h, {2.71875});

  Tensor i32 = make_tensor({2}, {0, 2}, DType::I32);
  Tensor from_int = run_op1("exp", {i32});
  EXPECT_EQ(from_int.dtype(), DType::F32);
  expect_values(from_int, {1, 7.38905609893065}, 1e-5);

  Tensor b = make_tensor({2}, {0, 1}, DType::Bool);
  Tensor from_bool = run_op1("exp", {b});
  EXPECT_EQ(from_bool.dtype(), DType::F32);
  expect_values(from_bool, {1, 2.718281828459045}, 1e-6);
}

TEST(OpsUnary, LogFamilyEdges) {
  Tensor x = make_tensor({4}, {1, 0, -1, kInf}, DType::F64);
  expect_values(run_op1("log", {x}), {0, -kInf, kNaN, kInf});
  Tensor small = make_tensor({2}, {1e-10, -1}, DType::F64);
  // log1p and expm1 keep full precision near zero.
  EXPECT_DOUBLE_EQ(values_of(run_op1("log1p", {small}))[0], 9.999999999500001e-11);
  EXPECT_EQ(values_of(run_op1("log1p", {small}))[1], -kInf);
  EXPECT_DOUBLE_EQ(values_of(run_op1("expm1", {small}))[0], 1.00000000005e-10);
}

TEST(OpsUnary, RootsAndReciprocal) {
  Tensor x = make_tensor({4}, {4, 0, -1, 0.25});
  expect_values(run_op1("sqrt", {x}), {2, 0, kNaN, 0.5});
  expect_values(run_op1("rsqrt", {x}), {0.5, kInf, kNaN, 2});
  expect_values(run_op1("reciprocal", {x}), {0.25, kInf, -1, 4});
  Tensor i = make_tensor({2}, {2, 4}, DType::I64);
  Tensor r = run_op1("reciprocal", {i});
  EXPECT_EQ(r.dtype(), DType::F32);
  expect_values(r, {0.5, 0.25});
}

TEST(OpsUnary, TrigAndActivations) {
  Tensor x = make_tensor({3}, {0, 1, -kInf}, DType::F64);
  expect_values(run_op1("sin", {x}), {0, std::sin(1.0), kNaN});
  expect_values(run_op1("cos", {x}), {1, std::cos(1.0), kNaN});
  expect_values(run_op1("tanh", {x}), {0, 0.7615941559557649, -1}, 1e-15);
  expect_values(run_op1("sigmoid", {x}), {0.5, 0.7310585786300049, 0}, 1e-15);
  expect_values(run_op1("silu", {x}), {0, 0.7310585786300049, kNaN}, 1e-15);
  expect_values(run_op1("erf", {x}), {0, 0.8427007929497149, -1}, 1e-15);
}

TEST(OpsUnary, GeluExactAndTanh) {
  Tensor x = make_tensor({5}, {-2, -0.5, 0, 1, 3}, DType::F64);
  expect_values(
      run_op1("gelu", {x}),
      {-0.04550026389635842, -0.15426876936299344, 0, 0.8413447460685429, 2.99595030590511}, 1e-14);
  expect_values(
      run_op1("gelu", {x}, {{"approximate", std::string("tanh")}}),
      {-0.04540230591222494, -0.15428599017485606, 0, 0.8411919906082768, 2.996362607918227},
      1e-14);
  std::string err = error_of("gelu", {x}, {{"approximate", std::string("fast")}});
  EXPECT_NE(err.find("gelu"), std::string::npos) << err;
  EXPECT_NE(err.find("approximate"), std::string::npos) << err;
  EXPECT_NE(err.find("fast"), std::string::npos) << err;
}

TEST(OpsUnary, ReluPropagatesNaNAndKeepsIntegers) {
  Tensor x = make_tensor({4}, {-2, 3, kNaN, -kInf});
  expect_values(run_op1("relu", {x}), {0, 3, kNaN, 0});
  Tensor i = make_tensor({3}, {-5, 0, 7}, DType::I8);
  Tensor r = run_op1("relu", {i});
  EXPECT_EQ(r.dtype(), DType::I8);
  expect_values(r, {0, 0, 7});
  std::string err = error_of("relu", {make_tensor({1}, {1}, DType::Bool)});
  EXPECT_NE(err.find("bool"), std::string::npos) << err;
}

TEST(OpsUnary, NegAndAbs) {
  Tensor f = make_tensor({3}, {1.5, -0.0, -kInf}, DType::F16);
  Tensor n = run_op1("neg", {f});
  EXPECT_EQ(n.dtype(), DType::F16);
  expect_values(n, {-1.5, 0, kInf});
  expect_values(run_op1("abs", {f}), {1.5, 0, kInf});

  // Integers wrap like two's complement: -(-128) is -128 in i8, -(1) is 255 in u8.
  Tensor i8 = make_tensor({3}, {-128, 5, -7}, DType::I8);
  expect_values(run_op1("neg", {i8}), {-128, -5, 7});
  expect_values(run_op1("abs", {i8}), {-128, 5, 7});
  Tensor u8 = make_tensor({2}, {1, 0}, DType::U8);
  expect_values(run_op1("neg", {u8}), {255, 0});

  std::string err = error_of("neg", {make_tensor({2}, {1, 0}, DType::Bool)});
  EXPECT_NE(err.find("neg"), std::string::npos) << err;
  EXPECT_NE(err.find("bool[2]"), std::string::npos) << err;
  EXPECT_NE(error_of("abs", {make_tensor({1}, {1}, DType::Bool)}).find("bool"), std::string::npos);
}

TEST(OpsUnary, RoundHalfToEvenFloorCeil) {
  Tensor x = make_tensor({8}, {0.5, 1.5, 2.5, -0.5, -1.5, 2.4, -2.6, kNaN});
  Tensor r = run_op1("round", {x});
  expect_values(r, {0, 2, 2, -0.0, -2, 2, -3, kNaN});
  EXPECT_TRUE(std::signbit(values_of(r)[3]));  // round(-0.5) is -0
  expect_values(run_op1("floor", {x}), {0, 1, 2, -1, -2, 2, -3, kNaN});
  expect_values(run_op1("ceil", {x}), {1, 2, 3, -0.0, -1, 3, -2, kNaN});

  // Integers pass through unchanged and keep their dtype.
  Tensor i = make_tensor({3}, {-3, 0, 9}, DType::I32);
  for (const char* op : {"round", "floor", "ceil"}) {
    Tensor o = run_op1(op, {i});
    EXPECT_EQ(o.dtype(), DType::I32) << op;
    expect_values(o, {-3, 0, 9});
  }
  EXPECT_NE(error_of("floor", {make_tensor({1}, {1}, DType::Bool)}).find("bool"),
            std::string::npos);
}

TEST(OpsUnary, Sign) {
  expect_values(run_op1("sign", {make_tensor({5}, {-3, 0, 2.5, kNaN, -0.0})}), {-1, 0, 1, 0, 0});
  Tensor i = run_op1("sign", {make_tensor({3}, {-9, 0, 4}, DType::I64)});
  EXPECT_EQ(i.dtype(), DType::I64);
  expect_values(i, {-1, 0, 1});
  Tensor b = run_op1("sign", {make_tensor({2}, {1, 0}, DType::Bool)});
  EXPECT_EQ(b.dtype(), DType::Bool);
  expect_values(b, {1, 0});
}

TEST(OpsUnary, LogicalNotAnyDType) {
  Tensor f = run_op1("logical_not", {make_tensor({4}, {0, 1, kNaN, -0.0})});
  EXPECT_EQ(f.dtype(), DType::Bool);
  expect_values(f, {1, 0, 0, 1});
  expect_values(run_op1("logical_not", {make_tensor({3}, {0, -4, 2}, DType::I16)}), {1, 0, 0});
  expect_values(run_op1("logical_not", {make_tensor({2}, {1, 0}, DType::Bool)}), {0, 1});
}

TEST(OpsUnary, CastLikeTensorTo) {
  Tensor x = make_tensor({4}, {-1.7, 1.7, 2.5, -0.2});
  Tensor i = run_op1("cast", {x}, {{"dtype", DType::I32}});
  EXPECT_EQ(i.dtype(), DType::I32);
  expect_values(i, {-1, 1, 2, 0});  // truncates toward zero

  Tensor b = run_op1("cast", {make_tensor({3}, {0, 0.1, kNaN})}, {{"dtype", DType::Bool}});
  expect_values(b, {0, 1, 1});
  Tensor f = run_op1("cast", {make_tensor({2}, {1, 0}, DType::Bool)}, {{"dtype", DType::F32}});
  expect_values(f, {1, 0});
  // Narrowing integer casts wrap.
  expect_values(run_op1("cast", {make_tensor({2}, {300, -1}, DType::I32)}, {{"dtype", DType::U8}}),
                {44, 255});
  // f32 -> f16 rounds to nearest even: 0.1 -> 0.0999755859375.
  expect_values(run_op1("cast", {make_tensor({1}, {0.1})}, {{"dtype", DType::F16}}),
                {0.0999755859375});
  // i64 beyond 2^53 goes to f64 with one rounding.
  Tensor big = Tensor::empty({1}, DType::I64);
  big.data<int64_t>()[0] = (int64_t{1} << 53) + 1;
  expect_values(run_op1("cast", {big}, {{"dtype", DType::F64}}), {9007199254740992.0});
  // A missing dtype is a user error.
  EXPECT_NE(error_of("cast", {x}).find("dtype"), std::string::npos);
}

TEST(OpsUnary, OddSizesAndNonContiguousInput) {
  Tensor zero_dim = run_op1("exp", {Tensor::scalar(0.0, DType::F64)});
  EXPECT_EQ(zero_dim.dim(), 0);
  EXPECT_EQ(zero_dim.item(), 1.0);

  Tensor empty = Tensor::empty({0, 5}, DType::F32);
  Tensor e = run_op1("exp", {empty});
  EXPECT_EQ(e.sizes(), (Shape{0, 5}));

  for (int64_t n : {1, 7, 1023}) {
    std::vector<double> v, want;
    for (int64_t k = 0; k < n; ++k) {
      v.push_back(double(k) - 500);
      want.push_back(std::fabs(double(k) - 500));
    }
    Tensor out = run_op1("abs", {make_tensor({n}, v)});
    expect_values(out, want);
  }

  // Transposed [2, 3] view of a [3, 2] tensor.
  Tensor base = make_tensor({3, 2}, {1, 2, 3, 4, 5, 6});
  Tensor t = base.view_as_strided({2, 3}, {1, 2}, 0);
  Tensor n = run_op1("neg", {t});
  EXPECT_TRUE(n.is_contiguous());
  expect_values(n, {-1, -3, -5, -2, -4, -6});
}

TEST(OpsUnary, InferenceKeepsSymbolicDims) {
  ir::Type x = ir::Type::tensor(DType::I32, {ir::Dim::sym("N"), 3});
  struct Case {
    const char* op;
    DType dtype;
  };
  for (Case c : {Case{"exp", DType::F32}, Case{"neg", DType::I32}, Case{"logical_not", DType::Bool},
                 Case{"round", DType::I32}}) {
    std::vector<ir::Type> out = ir::infer_types(test::op_def(c.op), std::vector<ir::Type>{x}, {});
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].str(), std::string(dtype_name(c.dtype)) + "[N, 3]") << c.op;
  }
  // A scalar operand is not accepted where a tensor is required.
  EXPECT_THROW(infer_op("exp", {Arg::f(1.0)}), Error);
}

TEST(OpsUnary, SignaturesAndCategory) {
  const ir::OpDef& gelu = test::op_def("gelu");
  EXPECT_EQ(gelu.category, ir::OpCategory::Elementwise);
  EXPECT_NE(gelu.signature().find("approximate"), std::string::npos) << gelu.signature();
  for (const char* op :
       {"neg",   "abs",  "exp",   "log",     "log1p",      "expm1",       "sqrt", "rsqrt",
        "sin",   "cos",  "tanh",  "sigmoid", "relu",       "gelu",        "silu", "erf",
        "floor", "ceil", "round", "sign",    "reciprocal", "logical_not", "cast"}) {
    const ir::OpDef& d = test::op_def(op);
    EXPECT_EQ(d.category, ir::OpCategory::Elementwise) << op;
    EXPECT_FALSE(d.doc.empty()) << op;
  }
}

}  // namespace
}  // namespace kiln
