// Constant and factory ops of the registry: constant (scalar and tensor
// values), arange (torch.arange sizes, default dtypes, sign errors) and full.
#include <cmath>
#include <limits>

#include "op_test_util.h"

namespace kiln {
namespace {

using test::make_tensor;
using test::run_op1;
using test::values_of;

// Runs an op whose output may be a scalar type (which run_op's shape check does
// not accept): inference, then the reference directly.
Tensor run_scalar(const std::string& op, const ir::Attrs& attrs) {
  const ir::OpDef& d = test::op_def(op);
  ir::Attrs full = ir::complete_attrs(d, attrs);
  std::vector<ir::Type> out_types = ir::infer_types(d, {}, full);
  std::vector<Tensor> outs = d.reference(ir::RefContext{d, {}, {}, full, out_types});
  EXPECT_EQ(outs.size(), 1u);
  return outs.at(0);
}

std::string error_of(const std::string& op, const ir::Attrs& attrs) {
  try {
    test::run_op(op, {}, attrs);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(OpsConstant, ScalarValues) {
  std::vector<ir::Type> t = test::infer_op("constant", {}, {{"value", int64_t{7}}});
  EXPECT_EQ(t.at(0), ir::Type::int_());
  EXPECT_EQ(test::infer_op("constant", {}, {{"value", 2.5}}).at(0), ir::Type::float_());
  EXPECT_EQ(test::infer_op("constant", {}, {{"value", true}}).at(0), ir::Type::bool_());

  // Scalars run as 0-dim tensors: int -> i64 (exact beyond 2^53), float -> f64, bool -> bool.
  const int64_t big = (int64_t{1} << 60) + 1;
  Tensor i = run_scalar("constant", {{"value", big}});
  EXPECT_EQ(i.dtype(), DType::I64);
  EXPECT_EQ(i.dim(), 0);
  EXPECT_EQ(i.data<int64_t>()[0], big);
  Tensor f = run_scalar("constant", {{"value", 2.5}});
  EXPECT_EQ(f.dtype(), DType::F64);
  EXPECT_EQ(f.item(), 2.5);
  Tensor b = run_scalar("constant", {{"value", true}});
  EXPECT_EQ(b.dtype(), DType::Bool);
  EXPECT_EQ(b.item(), 1.0);
}

TEST(OpsConstant, TensorValueIsCopied) {
  Tensor value = make_tensor({2, 2}, {1, 2, 3, 4}, DType::I32);
  std::vector<ir::Type> t = test::infer_op("constant", {}, {{"value", value}});
  EXPECT_EQ(t.at(0).str(), "i32[2, 2]");
  Tensor out = run_op1("constant", {}, {{"value", value}});
  EXPECT_TRUE(out.equal(value));
  // A fresh tensor: writing to the output leaves the attribute alone.
  out.data<int32_t>()[0] = 99;
  EXPECT_EQ(values_of(value)[0], 1);

  Tensor empty = Tensor::empty({0, 3}, DType::F32);
  EXPECT_EQ(run_op1("constant", {}, {{"value", empty}}).sizes(), (Shape{0, 3}));

  std::string err = error_of("constant", {{"value", std::string("hello")}});
  EXPECT_NE(err.find("constant"), std::string::npos) << err;
  EXPECT_NE(err.find("value"), std::string::npos) << err;
  EXPECT_NE(error_of("constant", {}).find("value"), std::string::npos);
}

TEST(OpsConstant, ArangeIntegers) {
  Tensor a = run_op1("arange", {}, {{"end", int64_t{5}}});
  EXPECT_EQ(a.dtype(), DType::I64);
  EXPECT_EQ(a.sizes(), (Shape{5}));
  EXPECT_EQ(values_of(a), (std::vector<double>{0, 1, 2, 3, 4}));
  Tensor b =
      run_op1("arange", {}, {{"start", int64_t{10}}, {"end", int64_t{1}}, {"step", int64_t{-3}}});
  EXPECT_EQ(values_of(b), (std::vector<double>{10, 7, 4}));
  Tensor c = run_op1("arange", {}, {{"start", int64_t{2}}, {"end", int64_t{2}}});
  EXPECT_EQ(c.sizes(), (Shape{0}));
  // Large integers stay exact.
  const int64_t base = (int64_t{1} << 60);
  Tensor d = run_op1("arange", {}, {{"start", base}, {"end", base + 2}});
  EXPECT_EQ(d.data<int64_t>()[1], base + 1);
}

TEST(OpsConstant, ArangeFloats) {
  Tensor a = run_op1("arange", {}, {{"start", 0.0}, {"end", 1.0}, {"step", 0.25}});
  EXPECT_EQ(a.dtype(), DType::F32);
  EXPECT_EQ(values_of(a), (std::vector<double>{0, 0.25, 0.5, 0.75}));
  // ceil((1 - 0) / 0.3) = 4 elements.
  Tensor b = run_op1("arange", {}, {{"end", 1.0}, {"step", 0.3}, {"dtype", DType::F64}});
  EXPECT_EQ(b.dtype(), DType::F64);
  std::vector<double> v = values_of(b);
  ASSERT_EQ(v.size(), 4u);
  EXPECT_DOUBLE_EQ(v[3], 0.9);
  // An explicit integer dtype truncates each value.
  Tensor c = run_op1("arange", {}, {{"start", 0.5}, {"end", 3.0}, {"dtype", DType::I32}});
  EXPECT_EQ(c.dtype(), DType::I32);
  EXPECT_EQ(values_of(c), (std::vector<double>{0, 1, 2}));
  // Odd size 1023.
  Tensor d = run_op1("arange", {}, {{"end", int64_t{1023}}, {"dtype", DType::F16}});
  EXPECT_EQ(d.sizes(), (Shape{1023}));
  EXPECT_EQ(values_of(d)[1022], 1022);
}

TEST(OpsConstant, ArangeErrors) {
  std::string zero = error_of("arange", {{"end", int64_t{5}}, {"step", int64_t{0}}});
  EXPECT_NE(zero.find("arange"), std::string::npos) << zero;
  EXPECT_NE(zero.find("step"), std::string::npos) << zero;
  std::string sign = error_of("arange", {{"start", int64_t{5}}, {"end", int64_t{0}}});
  EXPECT_NE(sign.find("wrong side"), std::string::npos) << sign;
  std::string inf = error_of("arange", {{"end", std::numeric_limits<double>::infinity()}});
  EXPECT_NE(inf.find("finite"), std::string::npos) << inf;
  EXPECT_NE(error_of("arange", {}).find("end"), std::string::npos);
}

TEST(OpsConstant, Full) {
  Tensor a = run_op1("full", {}, {{"size", std::vector<int64_t>{2, 3}}, {"value", 1.5}});
  EXPECT_EQ(a.dtype(), DType::F32);
  EXPECT_EQ(a.sizes(), (Shape{2, 3}));
  EXPECT_EQ(values_of(a), (std::vector<double>(6, 1.5)));
  Tensor b = run_op1("full", {}, {{"size", std::vector<int64_t>{7}}, {"value", int64_t{-4}}});
  EXPECT_EQ(b.dtype(), DType::I64);
  EXPECT_EQ(values_of(b), (std::vector<double>(7, -4)));
  Tensor c = run_op1("full", {},
                     {{"size", std::vector<int64_t>{1}}, {"value", 0.1}, {"dtype", DType::F16}});
  EXPECT_EQ(values_of(c), (std::vector<double>{0.0999755859375}));
  Tensor d = run_op1("full", {},
                     {{"size", std::vector<int64_t>{2}}, {"value", 2.0}, {"dtype", DType::Bool}});
  EXPECT_EQ(values_of(d), (std::vector<double>{1, 1}));
  Tensor s = run_op1("full", {}, {{"size", std::vector<int64_t>{}}, {"value", 3.0}});
  EXPECT_EQ(s.dim(), 0);
  EXPECT_EQ(s.item(), 3.0);
  Tensor e = run_op1("full", {}, {{"size", std::vector<int64_t>{0, 5}}, {"value", 3.0}});
  EXPECT_EQ(e.sizes(), (Shape{0, 5}));
  Tensor nan = run_op1(
      "full", {},
      {{"size", std::vector<int64_t>{1}}, {"value", std::numeric_limits<double>::quiet_NaN()}});
  EXPECT_TRUE(std::isnan(values_of(nan)[0]));

  std::string err = error_of("full", {{"size", std::vector<int64_t>{2, -1}}, {"value", 1.0}});
  EXPECT_NE(err.find("full"), std::string::npos) << err;
  EXPECT_NE(err.find("[2, -1]"), std::string::npos) << err;
}

TEST(OpsConstant, Category) {
  for (const char* op : {"constant", "arange", "full"}) {
    EXPECT_EQ(test::op_def(op).category, ir::OpCategory::Other) << op;
    EXPECT_TRUE(test::op_def(op).operands.empty()) << op;
  }
}

}  // namespace
}  // namespace kiln
