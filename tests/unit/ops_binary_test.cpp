// Binary elementwise ops of the registry: arithmetic, comparisons, logical and
// bitwise ops, where/clamp/masked_fill. Hand-computed values over each dtype
// class, broadcasting (column x row, rank 4 vs 3 vs [1], symbolic dims), odd
// sizes, NaN edges and the error messages.
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

void expect_error(const std::string& op, const std::vector<Arg>& args,
                  const std::vector<std::string>& fragments, const ir::Attrs& attrs = {}) {
  std::string err = error_of(op, args, attrs);
  for (const std::string& f : fragments) {
    EXPECT_NE(err.find(f), std::string::npos) << "'" << f << "' not in: " << err;
  }
}

// --- arithmetic ------------------------------------------------------------------------

TEST(OpsBinary, AddColumnByRow) {
  Tensor col = make_tensor({3, 1}, {1, 2, 3});
  Tensor row = make_tensor({1, 4}, {10, 20, 30, 40});
  Tensor out = run_op1("add", {col, row});
  EXPECT_EQ(out.sizes(), (Shape{3, 4}));
  expect_values(out, {11, 21, 31, 41, 12, 22, 32, 42, 13, 23, 33, 43});
  expect_values(run_op1("sub", {col, row}),
                {-9, -19, -29, -39, -8, -18, -28, -38, -7, -17, -27, -37});
}

TEST(OpsBinary, BroadcastRank4Rank3AndOne) {
  // a: [2,1,3,1], b: [4,1,1], c: [1] -> [2,4,3,1]
  std::vector<double> av{1, 2, 3, 4, 5, 6};
  Tensor a = make_tensor({2, 1, 3, 1}, av);
  Tensor b = make_tensor({4, 1, 1}, {0, 10, 20, 30});
  Tensor c = make_tensor({1}, {2});
  Tensor ab = run_op1("add", {a, b});
  EXPECT_EQ(ab.sizes(), (Shape{2, 4, 3, 1}));
  Tensor out = run_op1("mul", {ab, c});
  std::vector<double> want;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 4; ++j)
      for (int k = 0; k < 3; ++k) want.push_back((av[size_t(i * 3 + k)] + 10.0 * j) * 2);
  expect_values(out, want);
}

TEST(OpsBinary, AlphaAndScalarSides) {
  Tensor a = make_tensor({3}, {1, 2, 3});
  Tensor b = make_tensor({3}, {10, 20, 30});
  expect_values(run_op1("add", {a, b}, {{"alpha", 0.5}}), {6, 12, 18});
  expect_values(run_op1("sub", {a, b}, {{"alpha", int64_t{2}}}), {-19, -38, -57});
  // Python numbers on either side.
  expect_values(run_op1("sub", {Arg::f(1.0), a}), {0, -1, -2});
  expect_values(run_op1("mul", {Arg::i(3), a}), {3, 6, 9});

  Tensor i = make_tensor({2}, {1, 2}, DType::I32);
  Tensor ia = run_op1("add", {i, i}, {{"alpha", int64_t{3}}});
  EXPECT_EQ(ia.dtype(), DType::I32);
  expect_values(ia, {4, 8});
  // A float alpha is rejected for integer operands, as in PyTorch.
  expect_error("add", {i, i}, {"add", "alpha", "i32"}, {{"alpha", 0.5}});
}

TEST(OpsBinary, IntegerArithmeticWraps) {
  Tensor u = make_tensor({3}, {200, 3, 255}, DType::U8);
  Tensor m = run_op1("mul", {u, Arg::i(2)});
  EXPECT_EQ(m.dtype(), DType::U8);
  expect_values(m, {144, 6, 254});
  Tensor big = Tensor::empty({1}, DType::I64);
  big.data<int64_t>()[0] = std::numeric_limits<int64_t>::max();
  Tensor s = run_op1("add", {big, Arg::i(1)});
  EXPECT_EQ(s.data<int64_t>()[0], std::numeric_limits<int64_t>::min());
}

TEST(OpsBinary, BoolArithmetic) {
  Tensor t = make_tensor({4}, {1, 1, 0, 0}, DType::Bool);
  Tensor f = make_tensor({4}, {1, 0, 1, 0}, DType::Bool);
  Tensor sum = run_op1("add", {t, f});
  EXPECT_EQ(sum.dtype(), DType::Bool);
  expect_values(sum, {1, 1, 1, 0});
  Tensor prod = run_op1("mul", {t, f});
  EXPECT_EQ(prod.dtype(), DType::Bool);
  expect_values(prod, {1, 0, 0, 0});
  Tensor plus_one = run_op1("add", {t, Arg::i(1)});
  EXPECT_EQ(plus_one.dtype(), DType::I64);
  expect_values(plus_one, {2, 2, 1, 1});
  expect_error("sub", {t, f}, {"sub", "bool"});
  expect_error("sub", {t, Arg::i(1)}, {"sub", "bool"});
}

TEST(OpsBinary, HalfArithmetic) {
  Tensor h = make_tensor({3}, {1, 0.5, 2049}, DType::F16);
  Tensor m = run_op1("mul", {h, Arg::f(2.5)});
  EXPECT_EQ(m.dtype(), DType::F16);
  // 2049 is not an f16 value (make_tensor stored 2048); 2048 * 2.5 = 5120.
  expect_values(m, {2.5, 1.25, 5120});
  Tensor x = make_tensor({3}, {0.25, 0.25, 1});
  Tensor s = run_op1("add", {h, x});
  EXPECT_EQ(s.dtype(), DType::F32);
  expect_values(s, {1.25, 0.75, 2049});
  // f16 + 0.1: the scalar is read at f32 precision and the sum rounded once:
  // 1 + 0.1f = 1.10000000149 -> f16 1.099609375.
  expect_values(run_op1("add", {make_tensor({1}, {1}, DType::F16), Arg::f(0.1)}), {1.099609375});
}

TEST(OpsBinary, DivisionModes) {
  Tensor a = make_tensor({4}, {7, -7, 7, -7}, DType::I32);
  Tensor b = make_tensor({4}, {2, 2, -2, -2}, DType::I32);
  Tensor t = run_op1("div", {a, b});
  EXPECT_EQ(t.dtype(), DType::F32);
  expect_values(t, {3.5, -3.5, -3.5, 3.5});
  Tensor tr = run_op1("div", {a, b}, {{"rounding_mode", std::string("trunc")}});
  EXPECT_EQ(tr.dtype(), DType::I32);
  expect_values(tr, {3, -3, -3, 3});
  Tensor fl = run_op1("div", {a, b}, {{"rounding_mode", std::string("floor")}});
  EXPECT_EQ(fl.dtype(), DType::I32);
  expect_values(fl, {3, -4, -4, 3});

  Tensor x = make_tensor({5}, {-7.5, 7.5, 1, -1, 0}, DType::F64);
  Tensor y = make_tensor({5}, {2, 2, 0, 0, 0}, DType::F64);
  expect_values(run_op1("div", {x, y}), {-3.75, 3.75, kInf, -kInf, kNaN});
  expect_values(run_op1("div", {x, y}, {{"rounding_mode", std::string("floor")}}),
                {-4, 3, kInf, -kInf, kNaN});
  expect_values(run_op1("div", {x, y}, {{"rounding_mode", std::string("trunc")}}),
                {-3, 3, kInf, -kInf, kNaN});

  Tensor zero = make_tensor({1}, {0}, DType::I64);
  expect_error("div", {make_tensor({1}, {5}, DType::I64), zero}, {"div", "division by zero"},
               {{"rounding_mode", std::string("floor")}});
  expect_error("div", {a, b}, {"div", "rounding_mode", "round"},
               {{"rounding_mode", std::string("round")}});
  // Integer true division by zero is a float division.
  expect_values(run_op1("div", {make_tensor({1}, {1}, DType::I64), zero}), {kInf});
}

TEST(OpsBinary, PowForms) {
  Tensor i = make_tensor({4}, {-3, -1, 0, 2}, DType::I32);
  Tensor sq = run_op1("pow", {i, Arg::i(2)});
  EXPECT_EQ(sq.dtype(), DType::I32);
  expect_values(sq, {9, 1, 0, 4});
  expect_values(run_op1("pow", {i, Arg::i(3)}), {-27, -1, 0, 8});
  // Negative Python-int exponent of an integer base: an error, as in PyTorch.
  expect_error("pow", {i, Arg::i(-1)}, {"pow", "negative"});
  // Tensor exponents follow PyTorch's integer rule: 1 -> 1, -1 -> +-1, others 0.
  Tensor base = make_tensor({4}, {1, -1, -1, 2}, DType::I64);
  Tensor ex = make_tensor({4}, {-2, -3, -2, -1}, DType::I64);
  expect_values(run_op1("pow", {base, ex}), {1, -1, 1, 0});

  Tensor f = run_op1("pow", {i, Arg::f(0.5)});
  EXPECT_EQ(f.dtype(), DType::F32);
  expect_values(f, {kNaN, kNaN, 0, std::sqrt(2.0)}, 1e-6);
  Tensor two_to = run_op1("pow", {Arg::f(2.0), make_tensor({3}, {0, 3, -1}, DType::I64)});
  EXPECT_EQ(two_to.dtype(), DType::F32);
  expect_values(two_to, {1, 8, 0.5});
  Tensor p = make_tensor({2}, {4, 9});
  expect_values(run_op1("pow", {p, make_tensor({2}, {0.5, 2})}), {2, 81});
}

TEST(OpsBinary, MaximumMinimumPropagateNaN) {
  Tensor a = make_tensor({4}, {1, kNaN, 3, -kInf});
  Tensor b = make_tensor({4}, {2, 0, kNaN, 5});
  expect_values(run_op1("maximum", {a, b}), {2, kNaN, kNaN, 5});
  expect_values(run_op1("minimum", {a, b}), {1, kNaN, kNaN, -kInf});
  Tensor i = make_tensor({2}, {-4, 9}, DType::I16);
  Tensor j = make_tensor({2}, {3, 2}, DType::I16);
  Tensor mx = run_op1("maximum", {i, j});
  EXPECT_EQ(mx.dtype(), DType::I16);
  expect_values(mx, {3, 9});
  // torch.maximum takes tensors only.
  EXPECT_THROW(infer_op("maximum", {a, Arg::f(1.0)}), Error);
}

TEST(OpsBinary, RemainderTakesDivisorSign) {
  Tensor a = make_tensor({4}, {-7, 7, -7, 6}, DType::I32);
  Tensor b = make_tensor({4}, {3, -3, -3, 3}, DType::I32);
  expect_values(run_op1("remainder", {a, b}), {2, -2, -1, 0});
  Tensor x = make_tensor({4}, {-7.5, 7.5, 1, 5}, DType::F64);
  Tensor y = make_tensor({4}, {2, -2, 0, kInf}, DType::F64);
  expect_values(run_op1("remainder", {x, y}), {0.5, -0.5, kNaN, 5});
  expect_values(run_op1("remainder", {a, Arg::i(4)}), {1, 3, 1, 2});
  std::string err = error_of("remainder", {a, Arg::i(0)});
  EXPECT_NE(err.find("remainder: integer division by zero"), std::string::npos) << err;
  expect_error("remainder",
               {make_tensor({1}, {1}, DType::Bool), make_tensor({1}, {1}, DType::Bool)},
               {"remainder", "bool"});
}

// --- comparisons, logical, bitwise --------------------------------------------------------

TEST(OpsBinary, ComparisonsGiveBool) {
  Tensor x = make_tensor({4}, {1, 2, 3, kNaN});
  struct Case {
    const char* op;
    std::vector<double> want;
  };
  for (const Case& c :
       {Case{"eq", {0, 1, 0, 0}}, Case{"ne", {1, 0, 1, 1}}, Case{"lt", {1, 0, 0, 0}},
        Case{"le", {1, 1, 0, 0}}, Case{"gt", {0, 0, 1, 0}}, Case{"ge", {0, 1, 1, 0}}}) {
    Tensor out = run_op1(c.op, {x, Arg::f(2.0)});
    EXPECT_EQ(out.dtype(), DType::Bool) << c.op;
    expect_values(out, c.want);
  }
  // i32 against a float scalar compares as f32: 2 < 2.5.
  Tensor i = make_tensor({2}, {2, 3}, DType::I32);
  expect_values(run_op1("lt", {i, Arg::f(2.5)}), {1, 0});
  // Scalar on the left, broadcasting of tensors.
  expect_values(run_op1("gt", {Arg::i(2), i}), {0, 0});
  Tensor col = make_tensor({2, 1}, {1, 2}, DType::I64);
  Tensor row = make_tensor({3}, {0, 1, 2}, DType::I64);
  Tensor eq = run_op1("eq", {col, row});
  EXPECT_EQ(eq.sizes(), (Shape{2, 3}));
  expect_values(eq, {0, 1, 0, 0, 0, 1});
}

TEST(OpsBinary, LogicalOpsTakeAnyDType) {
  Tensor a = make_tensor({4}, {0, 1.5, kNaN, 0});
  Tensor b = make_tensor({4}, {0, 0, 3, 7}, DType::I32);
  expect_values(run_op1("logical_and", {a, b}), {0, 0, 1, 0});
  expect_values(run_op1("logical_or", {a, b}), {0, 1, 1, 1});
  Tensor x = run_op1("logical_xor", {a, b});
  EXPECT_EQ(x.dtype(), DType::Bool);
  expect_values(x, {0, 1, 0, 1});
}

TEST(OpsBinary, BitwiseIntegralAndBool) {
  Tensor i = make_tensor({3}, {12, -1, 5}, DType::I32);
  Tensor r = run_op1("bitwise_and", {i, Arg::i(6)});
  EXPECT_EQ(r.dtype(), DType::I32);
  expect_values(r, {4, 6, 4});
  expect_values(run_op1("bitwise_or", {i, Arg::i(3)}), {15, -1, 7});
  expect_values(run_op1("bitwise_xor", {i, Arg::i(5)}), {9, -6, 0});
  expect_values(run_op1("bitwise_not", {i}), {-13, 0, -6});
  Tensor m = make_tensor({4}, {1, 1, 0, 0}, DType::Bool);
  Tensor n = make_tensor({4}, {1, 0, 1, 0}, DType::Bool);
  Tensor mn = run_op1("bitwise_and", {m, n});
  EXPECT_EQ(mn.dtype(), DType::Bool);
  expect_values(mn, {1, 0, 0, 0});
  expect_values(run_op1("bitwise_or", {m, n}), {1, 1, 1, 0});
  expect_values(run_op1("bitwise_xor", {m, n}), {0, 1, 1, 0});
  expect_values(run_op1("bitwise_not", {m}), {0, 0, 1, 1});

  expect_error("bitwise_and", {make_tensor({2}, {1, 2}), make_tensor({2}, {1, 2})},
               {"bitwise_and", "integral", "f32[2]"});
  expect_error("bitwise_or", {i, Arg::f(1.5)}, {"bitwise_or", "float"});
  expect_error("bitwise_not", {make_tensor({1}, {1}, DType::F64)}, {"bitwise_not", "f64[1]"});
}

// --- where, clamp, masked_fill ------------------------------------------------------------

TEST(OpsBinary, WhereTensorAndScalarBranches) {
  Tensor x = make_tensor({4}, {-1, 2, -3, 4});
  Tensor y = make_tensor({4}, {0, 0, 0, 10});
  Tensor cond = run_op1("gt", {x, y});
  Tensor w = run_op1("where", {cond, x, y});
  EXPECT_EQ(w.dtype(), DType::F32);
  expect_values(w, {0, 2, 0, 10});
  Tensor neg = run_op1("lt", {x, Arg::f(0.0)});
  Tensor b = run_op1("where", {neg, Arg::f(0.0), x});
  EXPECT_EQ(b.dtype(), DType::F32);
  expect_values(b, {0, 2, 0, 4});
  // Integer branches, broadcast [2, 1] cond against [3].
  Tensor c2 = make_tensor({2, 1}, {1, 0}, DType::Bool);
  Tensor ints = make_tensor({3}, {1, 2, 3}, DType::I32);
  Tensor wi = run_op1("where", {c2, ints, Arg::i(-1)});
  EXPECT_EQ(wi.dtype(), DType::I32);
  EXPECT_EQ(wi.sizes(), (Shape{2, 3}));
  expect_values(wi, {1, 2, 3, -1, -1, -1});
  expect_error("where", {x, x, y}, {"where", "cond", "bool", "f32[4]"});
}

TEST(OpsBinary, ClampForms) {
  Tensor x = make_tensor({5}, {-1, -0.25, 0.5, 2, kNaN});
  expect_values(run_op1("clamp", {x, Arg::f(-0.5), Arg::f(0.75)}), {-0.5, -0.25, 0.5, 0.75, kNaN});
  expect_values(run_op1("clamp", {x, Arg::f(0.0), Arg::none()}), {0, 0, 0.5, 2, kNaN});
  expect_values(run_op1("clamp", {x, Arg::none(), Arg::f(1.0)}), {-1, -0.25, 0.5, 1, kNaN});
  // Broadcast tensor bounds; min > max gives max.
  Tensor lo = make_tensor({2, 1}, {0, 1});
  Tensor hi = make_tensor({5}, {1, 1, 1, 0.5, 0});
  Tensor c = run_op1("clamp", {x, lo, hi});
  EXPECT_EQ(c.sizes(), (Shape{2, 5}));
  expect_values(c, {0, 0, 0.5, 0.5, kNaN, 1, 1, 1, 0.5, kNaN});
  // NaN bound propagates.
  expect_values(run_op1("clamp", {make_tensor({1}, {3}), make_tensor({1}, {kNaN}), Arg::none()}),
                {kNaN});
  // Integers stay integral with int bounds, and lift to f32 with a float bound.
  Tensor i = make_tensor({3}, {-5, 3, 9}, DType::I32);
  Tensor ci = run_op1("clamp", {i, Arg::i(0), Arg::i(5)});
  EXPECT_EQ(ci.dtype(), DType::I32);
  expect_values(ci, {0, 3, 5});
  Tensor cf = run_op1("clamp", {i, Arg::f(0.5), Arg::none()});
  EXPECT_EQ(cf.dtype(), DType::F32);
  expect_values(cf, {0.5, 3, 9});
  expect_error("clamp", {x, Arg::none(), Arg::none()}, {"clamp", "min", "max"});
}

TEST(OpsBinary, MaskedFill) {
  Tensor x = make_tensor({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor mask = make_tensor({1, 3}, {1, 0, 1}, DType::Bool);
  Tensor out = run_op1("masked_fill", {x, mask, Arg::f(-10000.0)});
  EXPECT_EQ(out.dtype(), DType::F32);
  EXPECT_EQ(out.sizes(), (Shape{2, 3}));
  expect_values(out, {-10000, 2, -10000, -10000, 5, -10000});
  Tensor i = make_tensor({3}, {1, 2, 3}, DType::I64);
  Tensor mi = make_tensor({3}, {0, 1, 0}, DType::Bool);
  Tensor oi = run_op1("masked_fill", {i, mi, Arg::f(7.9)});
  EXPECT_EQ(oi.dtype(), DType::I64);
  expect_values(oi, {1, 7, 3});
  expect_values(run_op1("masked_fill", {i, mi, Tensor::scalar(-2, DType::I32)}), {1, -2, 3});

  expect_error("masked_fill", {x, x, Arg::f(0.0)}, {"masked_fill", "mask", "bool"});
  expect_error("masked_fill", {x, mask, make_tensor({1}, {1})}, {"masked_fill", "0-dim"});
  // The mask must broadcast *to* x: [2, 3] does not fit into x: [3].
  expect_error("masked_fill",
               {make_tensor({3}, {1, 2, 3}), make_tensor({2, 3}, {1, 0, 1, 0, 1, 0}, DType::Bool),
                Arg::f(0.0)},
               {"masked_fill", "bool[2, 3]", "f32[3]"});
  // PyTorch's overflow check: -1e9 does not fit into f16.
  expect_error("masked_fill", {make_tensor({3}, {1, 2, 3}, DType::F16), mi, Arg::f(-1e9)},
               {"masked_fill", "f16", "overflow"});
}

// --- shapes, sizes, errors -------------------------------------------------------------

TEST(OpsBinary, ShapeMismatchNamesBothShapes) {
  std::string err =
      error_of("add", {make_tensor({2, 3}, {1, 2, 3, 4, 5, 6}), make_tensor({4}, {1, 2, 3, 4})});
  EXPECT_NE(err.find("add"), std::string::npos) << err;
  EXPECT_NE(err.find("[2, 3]"), std::string::npos) << err;
  EXPECT_NE(err.find("[4]"), std::string::npos) << err;
  EXPECT_NE(err.find("'a'"), std::string::npos) << err;
  EXPECT_NE(err.find("'b'"), std::string::npos) << err;
  expect_error("mul", {Arg::f(1.0), Arg::i(2)}, {"mul", "tensor"});
}

TEST(OpsBinary, SymbolicDimsBroadcast) {
  ir::Type a = ir::Type::tensor(DType::F32, {ir::Dim::sym("N"), 1});
  ir::Type b = ir::Type::tensor(DType::F32, {1, 4});
  std::vector<ir::Type> out = ir::infer_types(test::op_def("add"), std::vector<ir::Type>{a, b}, {});
  EXPECT_EQ(out.at(0).str(), "f32[N, 4]");
  ir::Type n = ir::Type::tensor(DType::F32, {ir::Dim::sym("N")});
  ir::Type m = ir::Type::tensor(DType::F32, {ir::Dim::sym("M")});
  EXPECT_EQ(ir::infer_types(test::op_def("mul"), std::vector<ir::Type>{n, n}, {}).at(0).str(),
            "f32[N]");
  EXPECT_THROW(ir::infer_types(test::op_def("mul"), std::vector<ir::Type>{n, m}, {}), Error);
  ir::Type cond = ir::Type::tensor(DType::Bool, {ir::Dim::sym("N"), 1});
  EXPECT_EQ(
      ir::infer_types(test::op_def("where"), std::vector<ir::Type>{cond, b, ir::Type::float_()}, {})
          .at(0)
          .str(),
      "f32[N, 4]");
}

TEST(OpsBinary, OddSizes) {
  Tensor s = run_op1("mul", {Tensor::scalar(3, DType::I32), Arg::i(4)});
  EXPECT_EQ(s.dim(), 0);
  EXPECT_EQ(s.dtype(), DType::I32);
  EXPECT_EQ(s.item(), 12);

  Tensor empty = Tensor::empty({0, 5});
  Tensor bias = make_tensor({5}, {1, 2, 3, 4, 5});
  Tensor e = run_op1("mul", {empty, bias});
  EXPECT_EQ(e.sizes(), (Shape{0, 5}));
  EXPECT_EQ(run_op1("add", {e, Arg::f(1.0)}).sizes(), (Shape{0, 5}));
  for (int64_t n : {1, 7, 1023}) {
    std::vector<double> a, b, sum;
    for (int64_t k = 0; k < n; ++k) {
      a.push_back(double(k));
      b.push_back(double(2 * k) - 3);
      sum.push_back(double(3 * k) - 3);
    }
    expect_values(run_op1("add", {make_tensor({n}, a), make_tensor({n}, b)}), sum);
    Tensor lt = run_op1("lt", {make_tensor({n}, a), make_tensor({n}, b)});
    std::vector<double> want;
    for (int64_t k = 0; k < n; ++k) want.push_back(a[size_t(k)] < b[size_t(k)] ? 1 : 0);
    expect_values(lt, want);
  }
}

TEST(OpsBinary, NonContiguousOperands) {
  Tensor base = make_tensor({3, 2}, {1, 2, 3, 4, 5, 6});
  Tensor t = base.view_as_strided({2, 3}, {1, 2}, 0);  // transpose: [[1,3,5],[2,4,6]]
  Tensor row = make_tensor({3}, {10, 20, 30});
  Tensor out = run_op1("sub", {t, row});
  EXPECT_TRUE(out.is_contiguous());
  expect_values(out, {-9, -17, -25, -8, -16, -24});
}

}  // namespace
}  // namespace kiln
