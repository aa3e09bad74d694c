// Python numbers known only at run time (t.item(), int(t), float(t), bool(t)):
// the graph they lower to, their dtypes next to tensors, and the located
// errors where a compile-time value is needed.
#include <gtest/gtest.h>

#include "frontend/frontend.h"
#include "ir/interpreter.h"
#include "kiln/error.h"
#include "tests/unit/op_test_util.h"

namespace kiln::frontend {
namespace {

ArgBinding tensor_arg(const std::string& name, DType dt, ir::Dims dims) {
  ArgBinding a;
  a.name = name;
  a.tensor = ir::TensorType{dt, std::move(dims), Device::cpu()};
  return a;
}

std::unique_ptr<ir::Graph> lower(const std::string& src, const std::vector<ArgBinding>& args) {
  auto m = parse_module(src, "t.kiln");
  return lower_function(*m, "", args);
}

std::string lower_error(const std::string& src, const std::vector<ArgBinding>& args) {
  try {
    lower(src, args);
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(FrontendRuntimeNumber, ItemStaysInTheGraphAndPromotesAsAPythonScalar) {
  // f16 tensor * float from an f32 tensor: the number is held as f64 (a
  // Python float), then cast to f16 as a wrapped number; the result is f16.
  auto g = lower("def f(x: Tensor, t: Tensor) -> Tensor:\n    return x * t.item()\n",
                 {tensor_arg("x", DType::F16, {3}), tensor_arg("t", DType::F32, {1, 1})});
  std::string text = ir::print_graph(*g);
  EXPECT_NE(text.find("f32[] = reshape(%t)"), std::string::npos) << text;
  EXPECT_NE(text.find("f64[] = cast("), std::string::npos) << text;
  EXPECT_NE(text.find("f16[] = cast("), std::string::npos) << text;
  EXPECT_NE(text.find("f16[3] = mul(%x,"), std::string::npos) << text;
}

TEST(FrontendRuntimeNumber, FloatNextToAnIntTensorGivesTheDefaultDtype) {
  auto g = lower("def f(x: Tensor, t: Tensor) -> Tensor:\n    return x + float(t)\n",
                 {tensor_arg("x", DType::I32, {3}), tensor_arg("t", DType::F64, {})});
  EXPECT_EQ(g->outputs()[0]->type().dtype(), DType::F32);
}

TEST(FrontendRuntimeNumber, PythonArithmeticBetweenNumbers) {
  // int / int is a float (f64); int // int stays an int (i64).
  auto g = lower(
      "def f(t: Tensor):\n    n = int(t)\n    return n / 2, n // 2, n > 1, float(n) * 2\n",
      {tensor_arg("t", DType::I32, {})});
  ASSERT_EQ(g->outputs().size(), 4u);
  EXPECT_EQ(g->outputs()[0]->type().dtype(), DType::F64);
  EXPECT_EQ(g->outputs()[1]->type().dtype(), DType::I64);
  EXPECT_EQ(g->outputs()[2]->type().dtype(), DType::Bool);
  EXPECT_EQ(g->outputs()[3]->type().dtype(), DType::F64);
  Tensor t = test::make_tensor({}, {7}, DType::I32);
  std::vector<Tensor> out = ir::interpret(*g, {t});
  EXPECT_EQ(test::values_of(out[0]), std::vector<double>{3.5});
  EXPECT_EQ(test::values_of(out[1]), std::vector<double>{3});
  EXPECT_EQ(test::values_of(out[2]), std::vector<double>{1});
  EXPECT_EQ(test::values_of(out[3]), std::vector<double>{14});
}

TEST(FrontendRuntimeNumber, CompileTimeUsesAreLocatedErrors) {
  std::vector<ArgBinding> x = {tensor_arg("x", DType::F32, {3})};
  EXPECT_NE(lower_error("def f(x: Tensor) -> Tensor:\n    return x.view(int(x[0]))\n", x)
                .find("t.kiln:2:19: error: Tensor.view() argument 'shape' needs a value known at "
                      "compile time"),
            std::string::npos);
  std::string cond = lower_error(
      "def f(x: Tensor) -> Tensor:\n    return x if bool(x[0]) else -x\n", x);
  EXPECT_NE(cond.find("t.kiln:2:17: error: a Python condition"), std::string::npos) << cond;
  EXPECT_NE(cond.find("torch.where"), std::string::npos) << cond;
  EXPECT_NE(lower_error("def f(x: Tensor) -> Tensor:\n    return x * float(x)\n", x)
                .find("only one-element tensors can be converted to Python scalars"),
            std::string::npos);
}

}  // namespace
}  // namespace kiln::frontend
