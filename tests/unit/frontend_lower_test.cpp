// Tests of the lowering (script -> graph IR): the printed graph of small
// functions, values computed by the reference interpreter for lowered
// functions (scalars, inlining, loops, indexing, functionalized in-place
// updates), and diagnostics with exact locations and carets.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "frontend/frontend.h"
#include "ir/interpreter.h"
#include "kiln/error.h"
#include "tests/unit/op_test_util.h"

namespace kiln::frontend {
namespace {

using test::make_tensor;
using test::values_of;

ArgBinding tensor_arg(const std::string& name, DType dt, ir::Dims dims) {
  ArgBinding a;
  a.name = name;
  a.tensor = ir::TensorType{dt, std::move(dims), Device::cpu()};
  return a;
}

ArgBinding value_arg(const std::string& name, ir::AttrValue v) {
  ArgBinding a;
  a.name = name;
  a.value = std::move(v);
  return a;
}

std::unique_ptr<ir::Graph> lower(const std::string& src, const std::vector<ArgBinding>& args,
                                 const std::string& fn = "") {
  auto m = parse_module(src, "t.kiln");
  return lower_function(*m, fn, args);
}

std::string lower_error(const std::string& src, const std::vector<ArgBinding>& args) {
  try {
    lower(src, args);
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

// Lowers with tensor arguments taken from `inputs` (names in order) and runs it.
std::vector<Tensor> run(const std::string& src, const std::vector<std::string>& names,
                        const std::vector<Tensor>& inputs, std::vector<ArgBinding> extra = {}) {
  for (size_t i = 0; i < names.size(); ++i) {
    extra.push_back(
        tensor_arg(names[i], inputs[i].dtype(), ir::dims_from_shape(inputs[i].sizes())));
  }
  auto g = lower(src, extra);
  return ir::interpret(*g, inputs);
}

TEST(FrontendLower, PrintsGraphWithLocations) {
  auto g = lower(
      "def mlp(x: Tensor[f32, N, 3], w: Tensor, b: Tensor) -> Tensor:\n"
      "    h = F.relu(x @ w + b)\n"
      "    return h * 2.0\n",
      {tensor_arg("w", DType::F32, {3, 4}), tensor_arg("b", DType::F32, {4})});
  EXPECT_EQ(ir::print_graph(*g),
            "graph @mlp(%x: f32[N, 3], %w: f32[3, 4], %b: f32[4]) {\n"
            "  %0: f32[N, 4] = matmul(%x, %w)               # t.kiln:2:18\n"
            "  %1: f32[N, 4] = add(%0, %b) {alpha = 1}      # t.kiln:2:22\n"
            "  %h: f32[N, 4] = relu(%1)                     # t.kiln:2:9\n"
            "  %2: float = constant() {value = 2.0}         # t.kiln:3:14\n"
            "  %3: f32[N, 4] = mul(%h, %2)                  # t.kiln:3:14\n"
            "  return %3\n"
            "}\n");
}

TEST(FrontendLower, EveryNodeHasALocation) {
  auto g = lower(
      "def f(x: Tensor) -> Tensor:\n"
      "    y = x.clone()\n"
      "    y[:, 1:3] += 10.0\n"
      "    return y.sum(-1, keepdim=True)\n",
      {tensor_arg("x", DType::F32, {2, 5})});
  for (const auto& n : g->nodes()) EXPECT_TRUE(n->loc().known()) << n->op();
}

TEST(FrontendLower, ScalarArithmeticIsCompileTime) {
  // c // heads and float(d) ** 0.5 fold to constants; only the tensor ops remain.
  auto g = lower(
      "def f(x: Tensor, heads: int) -> Tensor:\n"
      "    c = x.size(1)\n"
      "    d = c // heads\n"
      "    return x / (float(d) ** 0.5)\n",
      {tensor_arg("x", DType::F32, {2, 8}), value_arg("heads", int64_t(2))});
  ASSERT_EQ(g->nodes().size(), 2u);
  EXPECT_EQ(g->nodes()[0]->op(), "constant");
  EXPECT_EQ(std::get<double>(*g->nodes()[0]->attrs().find("value")), 2.0);
  EXPECT_EQ(g->nodes()[1]->op(), "div");
}

TEST(FrontendLower, ValuesOfScalarMix) {
  Tensor x = make_tensor({4}, {1, -2, 3, 0.5});
  auto out =
      run("def f(x: Tensor, alpha: float) -> Tuple[Tensor, Tensor]:\n"
          "    y = alpha * x - 1\n"
          "    return y, 2.0 ** x\n",
          {"x"}, {x}, {value_arg("alpha", 3.0)});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(values_of(out[0]), (std::vector<double>{2, -7, 8, 0.5}));
  EXPECT_EQ(values_of(out[1]), (std::vector<double>{2, 0.25, 8, std::sqrt(2.0f)}));
}

TEST(FrontendLower, InlinesCallsAndUnrollsLoops) {
  Tensor x = make_tensor({3}, {1, 2, 3});
  auto out =
      run("def twice(x, k: int = 1):\n"
          "    for i in range(k):\n"
          "        x = x * 2\n"
          "    return x\n"
          "def main(x: Tensor, n: int = 3) -> Tensor:\n"
          "    y = twice(x, k=n)\n"
          "    if n > 2:\n"
          "        y = y + 1\n"
          "    else:\n"
          "        y = y - 1\n"
          "    return y\n",
          {"x"}, {x});
  EXPECT_EQ(values_of(out[0]), (std::vector<double>{9, 17, 25}));
}

TEST(FrontendLower, IndexingReads) {
  Tensor x = make_tensor({3, 4}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11});
  auto out =
      run("def f(x):\n"
          "    return x[1:, ::2], x[..., -1], x[None, 2], x[-1], x.narrow(1, 1, 2), x.t()[1:3]\n",
          {"x"}, {x});
  ASSERT_EQ(out.size(), 6u);
  EXPECT_EQ(values_of(out[0]), (std::vector<double>{4, 6, 8, 10}));
  EXPECT_EQ(values_of(out[1]), (std::vector<double>{3, 7, 11}));
  EXPECT_EQ(out[2].sizes(), (Shape{1, 4}));
  EXPECT_EQ(values_of(out[2]), (std::vector<double>{8, 9, 10, 11}));
  EXPECT_EQ(values_of(out[3]), (std::vector<double>{8, 9, 10, 11}));
  EXPECT_EQ(values_of(out[4]), (std::vector<double>{1, 2, 5, 6, 9, 10}));
  EXPECT_EQ(values_of(out[5]), (std::vector<double>{1, 5, 9, 2, 6, 10}));
}

TEST(FrontendLower, SliceAssignmentIsFunctionalized) {
  Tensor x = make_tensor({2, 7}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13});
  auto g = lower(
      "def f(x):\n"
      "    y = x.clone()\n"
      "    y[:, 1::3] = -1.0\n"
      "    y[1] += 100.0\n"
      "    y[0, 5:] = x[1, :2]\n"
      "    return y\n",
      {tensor_arg("x", DType::F32, {2, 7})});
  for (const auto& n : g->nodes()) {
    EXPECT_EQ(n->op().back() == '_', false) << "mutating op in graph: " << n->op();
  }
  Tensor y = ir::interpret(*g, {x})[0];
  EXPECT_EQ(values_of(y), (std::vector<double>{0, -1, 2, 3, -1, 7, 8,  //
                                               107, 99, 109, 110, 99, 112, 113}));
  EXPECT_EQ(values_of(x)[1], 1);  // the input is untouched
}

TEST(FrontendLower, InPlaceMethodsRebind) {
  Tensor x = make_tensor({3}, {1, 2, 3});
  Tensor z = make_tensor({3}, {10, 20, 30});
  auto out =
      run("def f(x, z):\n"
          "    y = x.clone()\n"
          "    a = y\n"
          "    y.mul_(2.0)\n"
          "    y.add_(z, alpha=0.5)\n"
          "    y.clamp_(max=15.0)\n"
          "    return y, a\n",
          {"x", "z"}, {x, z});
  EXPECT_EQ(values_of(out[0]), (std::vector<double>{7, 14, 15}));
  EXPECT_EQ(values_of(out[1]), (std::vector<double>{7, 14, 15}));  // `a` aliases y
}

TEST(FrontendLower, MultiOutputUnpacking) {
  Tensor x = make_tensor({2, 3}, {1, 5, 2, 7, 0, 3});
  auto out =
      run("def f(x):\n"
          "    v, i = torch.max(x, 1)\n"
          "    a, b, c = x.chunk(3, dim=1)\n"
          "    return v, i, b\n",
          {"x"}, {x});
  EXPECT_EQ(values_of(out[0]), (std::vector<double>{5, 7}));
  EXPECT_EQ(out[1].dtype(), DType::I64);
  EXPECT_EQ(values_of(out[1]), (std::vector<double>{1, 0}));
  EXPECT_EQ(values_of(out[2]), (std::vector<double>{5, 0}));
}

TEST(FrontendLower, BoolAndIntOperatorsPickOps) {
  auto g = lower(
      "def f(m: Tensor[bool, 4], n: Tensor[bool, 4], i: Tensor[i32, 4]):\n"
      "    return ~m | n, i & 3, ~i\n",
      {});
  std::vector<std::string> ops;
  for (const auto& n : g->nodes()) {
    if (n->op() != "constant") ops.push_back(n->op());
  }
  EXPECT_EQ(ops,
            (std::vector<std::string>{"logical_not", "logical_or", "bitwise_and", "bitwise_not"}));
}

TEST(FrontendLower, DeclaredSymbolicDimsAreKept) {
  auto g = lower("def f(x: Tensor[f32, N, 4]):\n    return x.sum(1)\n",
                 {tensor_arg("x", DType::F32, {8, 4})});
  EXPECT_EQ(g->input(0)->type().str(), "f32[N, 4]");
  EXPECT_EQ(g->outputs()[0]->type().str(), "f32[N]");
}

TEST(FrontendLower, MismatchedDeclarationIsAnError) {
  EXPECT_EQ(
      lower_error("def f(x: Tensor[f32, N, 4]):\n    return x\n",
                  {tensor_arg("x", DType::F32, {8, 5})}),
      "t.kiln:1:7: error: argument 'x' has type f32[8, 5] but the parameter is declared f32[N, 4]\n"
      "def f(x: Tensor[f32, N, 4]):\n"
      "      ^");
}

TEST(FrontendLower, UnknownNameSuggests) {
  EXPECT_EQ(lower_error("def f(x, weight):\n    return x * wieght\n",
                        {tensor_arg("x", DType::F32, {2}), tensor_arg("weight", DType::F32, {2})}),
            "t.kiln:2:16: error: unknown name 'wieght'; did you mean 'weight'?\n"
            "    return x * wieght\n"
            "               ^~~~~~");
}

TEST(FrontendLower, UnknownOpSuggests) {
  EXPECT_EQ(
      lower_error("def f(x):\n    return torch.sigmiod(x)\n", {tensor_arg("x", DType::F32, {2})}),
      "t.kiln:2:18: error: 'torch' has no function 'sigmiod'; did you mean 'sigmoid'?\n"
      "    return torch.sigmiod(x)\n"
      "                 ^~~~~~~");
}

TEST(FrontendLower, ShapeErrorPointsAtTheCall) {
  std::string msg =
      lower_error("def f(a, b):\n    return torch.matmul(a, b)\n",
                  {tensor_arg("a", DType::F32, {2, 3}), tensor_arg("b", DType::F32, {4, 5})});
  EXPECT_EQ(msg.rfind("t.kiln:2:12: error: matmul: ", 0), 0u) << msg;
  EXPECT_NE(msg.find("\n    return torch.matmul(a, b)\n           ^~~~~~~~~~~~"), std::string::npos)
      << msg;
}

TEST(FrontendLower, WrongArity) {
  EXPECT_EQ(
      lower_error("def f(x):\n    return torch.relu(x, x)\n", {tensor_arg("x", DType::F32, {2})}),
      "t.kiln:2:26: error: torch.relu() takes 1 positional argument but 2 were given\n"
      "    return torch.relu(x, x)\n"
      "                         ^");
}

TEST(FrontendLower, DataDependentIfIsRejected) {
  EXPECT_EQ(
      lower_error("def f(x):\n    if x.sum() > 0:\n        x = -x\n    return x\n",
                  {tensor_arg("x", DType::F32, {2})}),
      "t.kiln:2:8: error: data-dependent control flow on a tensor value is not supported yet\n"
      "    if x.sum() > 0:\n"
      "       ^~~~~~~~~~~\n"
      "note: the condition is only known at run time; use torch.where to select values");
}

TEST(FrontendLower, SeveralIndependentErrors) {
  std::string msg = lower_error(
      "def f(x):\n"
      "    a = nope(x)\n"
      "    b = a + 1\n"
      "    while True:\n"
      "        pass\n"
      "    c = x.reluu()\n"
      "    return x\n",
      {tensor_arg("x", DType::F32, {2})});
  EXPECT_NE(msg.find("t.kiln:2:9: error: unknown name 'nope'"), std::string::npos) << msg;
  // `b = a + 1` uses the failed `a` and stays quiet.
  EXPECT_EQ(msg.find("t.kiln:3:"), std::string::npos) << msg;
  EXPECT_NE(msg.find("t.kiln:4:5: error: 'while' loops are not supported yet"), std::string::npos)
      << msg;
  EXPECT_NE(
      msg.find(
          "t.kiln:6:11: error: tensor has no method or attribute 'reluu'; did you mean 'relu'?"),
      std::string::npos)
      << msg;
  EXPECT_NE(msg.find("3 errors generated."), std::string::npos) << msg;
}

TEST(FrontendLower, AliasedViewUpdateIsRejected) {
  std::string msg = lower_error(
      "def f(x):\n"
      "    y = x.clone()\n"
      "    r = y[0]\n"
      "    y.add_(1.0)\n"
      "    return r\n",
      {tensor_arg("x", DType::F32, {2, 2})});
  EXPECT_NE(msg.find("t.kiln:4:7: error: in-place update of 'y' would also change 'r'"),
            std::string::npos)
      << msg;
}

TEST(FrontendLower, InPlaceDtypeRuleFollowsPyTorch) {
  std::string msg =
      lower_error("def f(x):\n    x.mul_(2.5)\n    return x\n", {tensor_arg("x", DType::I32, {2})});
  EXPECT_NE(msg.find("t.kiln:2:7: error: in-place update: result type f32 can't be cast to the "
                     "tensor's type i32"),
            std::string::npos)
      << msg;
}

TEST(FrontendLower, ArgumentErrors) {
  EXPECT_NE(lower_error("def f(x, n: int):\n    return x\n", {tensor_arg("x", DType::F32, {2})})
                .find("t.kiln:1:10: error: missing argument 'n' for function 'f'"),
            std::string::npos);
  EXPECT_NE(lower_error("def f(x):\n    return x\n",
                        {tensor_arg("x", DType::F32, {2}), value_arg("y", int64_t(1))})
                .find("error: unknown argument 'y' for function 'f'"),
            std::string::npos);
  EXPECT_NE(lower_error("def f(x, n: int):\n    return x\n",
                        {tensor_arg("x", DType::F32, {2}), value_arg("n", 1.5)})
                .find("error: argument 'n' is declared 'int' but was given float"),
            std::string::npos);
}

}  // namespace
}  // namespace kiln::frontend

namespace kiln::frontend {
namespace {

std::string read_example(const std::string& name) {
  std::string path = std::string(KILN_SOURCE_DIR) + "/examples/" + name;
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) throw Error("cannot open " + path);
  std::string text;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) text.append(buf, n);
  std::fclose(f);
  return text;
}

// The example scripts lower and run; outputs have the documented shapes.
TEST(FrontendExamples, TransformerLayerRuns) {
  auto m = parse_module(read_example("transformer.kiln"), "transformer.kiln");
  struct P {
    const char* name;
    Shape shape;
  };
  const P params[] = {{"x", {2, 5, 16}}, {"ln1_w", {16}},    {"ln1_b", {16}}, {"w_qkv", {48, 16}},
                      {"b_qkv", {48}},   {"w_o", {16, 16}},  {"b_o", {16}},   {"ln2_w", {16}},
                      {"ln2_b", {16}},   {"w_up", {32, 16}}, {"b_up", {32}},  {"w_down", {16, 32}},
                      {"b_down", {16}}};
  std::vector<ArgBinding> args;
  std::vector<Tensor> inputs;
  uint64_t seed = 1;
  for (const P& p : params) {
    args.push_back(tensor_arg(p.name, DType::F32, ir::dims_from_shape(p.shape)));
    inputs.push_back(Tensor::randn(p.shape, seed++));
  }
  args.push_back(value_arg("heads", int64_t(2)));
  auto g = lower_function(*m, "", args);
  std::vector<Tensor> out = ir::interpret(*g, inputs);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].sizes(), (Shape{2, 5, 16}));
  for (double v : values_of(out[0])) ASSERT_TRUE(std::isfinite(v));
}

TEST(FrontendExamples, AllExamplesParse) {
  for (const char* name : {"elementwise_chain.kiln", "layer_norm.kiln", "mlp.kiln",
                           "conv_block.kiln", "transformer.kiln"}) {
    auto m = parse_module(read_example(name), name);
    EXPECT_FALSE(functions(*m).empty()) << name;
  }
}

TEST(FrontendExamples, LayerNormByHandMatchesBuiltin) {
  auto m = parse_module(read_example("layer_norm.kiln"), "layer_norm.kiln");
  auto g = lower_function(*m, "",
                          {tensor_arg("x", DType::F32, {3, 256}),
                           tensor_arg("w", DType::F32, {256}), tensor_arg("b", DType::F32, {256})});
  EXPECT_EQ(g->input(0)->type().str(), "f32[N, 256]");
  std::vector<Tensor> out = ir::interpret(
      *g, {Tensor::randn({3, 256}, 7), Tensor::randn({256}, 8), Tensor::randn({256}, 9)});
  std::vector<double> a = values_of(out[0]), b = values_of(out[1]);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) ASSERT_NEAR(a[i], b[i], 1e-4) << i;
}

}  // namespace
}  // namespace kiln::frontend
