// The public builder API (kiln/kiln.h): graphs built with operators and named
// functions, checked by running them through the interpreter against
// hand-computed values, plus the errors users see.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "kiln/kiln.h"

namespace {

using kiln::DType;
using kiln::Tensor;
using kiln::Var;

Tensor make(const kiln::Shape& sizes, const std::vector<double>& values, DType dtype = DType::F32) {
  Tensor t = Tensor::empty(sizes, dtype);
  EXPECT_EQ(static_cast<int64_t>(values.size()), t.numel());
  Tensor flat = t.view_as_strided({t.numel()}, {1}, 0);
  for (int64_t i = 0; i < t.numel(); ++i) flat.set(std::vector<int64_t>{i}, values[size_t(i)]);
  return t;
}

std::vector<double> values(const Tensor& t) {
  Tensor c = t.contiguous();
  Tensor flat = c.view_as_strided({c.numel()}, {1}, c.storage_offset());
  std::vector<double> out;
  for (int64_t i = 0; i < c.numel(); ++i) out.push_back(flat.get(std::vector<int64_t>{i}));
  return out;
}

void expect_near(const std::vector<double>& got, const std::vector<double>& want,
                 double tol = 1e-6) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << "element " << i;
}

// Runs `f` and expects a message containing every one of `parts`.
template <typename F>
void expect_error(F f, const std::vector<std::string>& parts) {
  try {
    f();
    ADD_FAILURE() << "expected kiln::Error";
  } catch (const kiln::InternalError& e) {
    ADD_FAILURE() << "internal error instead of a user error: " << e.what();
  } catch (const kiln::Error& e) {
    std::string msg = e.what();
    for (const std::string& p : parts) EXPECT_NE(msg.find(p), std::string::npos) << msg;
  }
}

TEST(ApiBuilder, MlpMatchesHandComputedValues) {
  kiln::Builder b("mlp");
  Var x = b.input("x", DType::F32, {kiln::sym("N"), 3});
  Var w = b.input("w", DType::F32, {3, 2});
  Var bias = b.input("b", DType::F32, {2});
  Var y = kiln::relu(kiln::matmul(x, w) + bias);
  EXPECT_EQ(y.type_str(), "f32[N, 2]");
  kiln::Function f = b.build({y});

  std::vector<kiln::ValueInfo> ins = f.inputs();
  ASSERT_EQ(ins.size(), 3u);
  EXPECT_EQ(ins[0].name, "x");
  EXPECT_EQ(ins[0].type, "f32[N, 3]");
  EXPECT_FALSE(ins[0].tensor.dims[0].is_static());
  EXPECT_EQ(ins[0].tensor.dims[0].symbol, "N");
  EXPECT_EQ(ins[1].tensor.str(), "f32[3, 2]");
  ASSERT_EQ(f.outputs().size(), 1u);
  EXPECT_EQ(f.outputs()[0].type, "f32[N, 2]");
  EXPECT_EQ(f.name(), "mlp");

  std::string text = f.str();
  EXPECT_NE(text.find("graph @mlp("), std::string::npos) << text;
  EXPECT_NE(text.find("matmul("), std::string::npos) << text;
  EXPECT_NE(text.find("relu("), std::string::npos) << text;

  // x @ w = [[1*1 + 2*0 + 3*1, 1*-1 + 2*1 + 3*0], [-1 + 0 + 0, 1 + 0 + 0]]
  //       = [[4, 1], [-1, 1]];  + b [0.5, -2] = [[4.5, -1], [-0.5, -1]];  relu.
  Tensor xt = make({2, 3}, {1, 2, 3, -1, 0, 0});
  Tensor wt = make({3, 2}, {1, -1, 0, 1, 1, 0});
  Tensor bt = make({2}, {0.5, -2});
  std::vector<Tensor> out = f.run_interpreter({xt, wt, bt});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].sizes(), (kiln::Shape{2, 2}));
  EXPECT_EQ(out[0].dtype(), DType::F32);
  expect_near(values(out[0]), {4.5, 0, 0, 0});

  // The symbolic batch dim binds per call: one row.
  out = f.run_interpreter({make({1, 3}, {0, 0, 1}), wt, bt});
  EXPECT_EQ(out[0].sizes(), (kiln::Shape{1, 2}));
  expect_near(values(out[0]), {1.5, 0});
}

TEST(ApiBuilder, ScalarOperatorsOnEitherSide) {
  kiln::Builder b("scalars");
  Var x = b.input("x", DType::F32, {3});
  Var y = (x + 1) * 2.0 - x / 4;  // (x+1)*2 - x/4
  Var z = 1.0 - x;
  Var q = 3 * x + 0.5;
  Var n = -x;
  kiln::Function f = b.build({y, z, q, n});
  std::vector<Tensor> out = f.run_interpreter({make({3}, {0, 4, -2})});
  ASSERT_EQ(out.size(), 4u);
  expect_near(values(out[0]), {2, 9, -1.5});
  expect_near(values(out[1]), {1, -3, 3});
  expect_near(values(out[2]), {0.5, 12.5, -5.5});
  expect_near(values(out[3]), {0, -4, 2});
  for (const Tensor& t : out) EXPECT_EQ(t.dtype(), DType::F32);
}

TEST(ApiBuilder, ScalarDivisionOnTheLeft) {
  kiln::Builder b("rdiv");
  Var x = b.input("x", DType::F32, {3});
  kiln::Function f = b.build({2.0 / x});
  expect_near(values(f.run_interpreter({make({3}, {1, 4, -0.5})})[0]), {2, 0.5, -4});
}

TEST(ApiBuilder, IntTensorWithIntScalarStaysInt) {
  kiln::Builder b("ints");
  Var x = b.input("x", DType::I32, {4});
  Var y = x * 3 + 1;
  Var d = x / 2;  // true division gives a float
  EXPECT_EQ(y.dtype(), DType::I32);
  EXPECT_EQ(d.dtype(), DType::F32);
  kiln::Function f = b.build({y, d});
  std::vector<Tensor> out = f.run_interpreter({make({4}, {0, 1, -2, 7}, DType::I32)});
  EXPECT_EQ(out[0].dtype(), DType::I32);
  expect_near(values(out[0]), {1, 4, -5, 22});
  expect_near(values(out[1]), {0, 0.5, -1, 3.5});
}

TEST(ApiBuilder, BroadcastingAddAndF16Scalar) {
  kiln::Builder b("bcast");
  Var col = b.input("col", DType::F32, {2, 1});
  Var row = b.input("row", DType::F32, {3});
  Var h = b.input("h", DType::F16, {2});
  kiln::Function f = b.build({col + row, h * 2.5});
  EXPECT_EQ(f.outputs()[0].type, "f32[2, 3]");
  EXPECT_EQ(f.outputs()[1].type, "f16[2]");  // a float scalar does not widen f16
  std::vector<Tensor> out = f.run_interpreter(
      {make({2, 1}, {10, 20}), make({3}, {1, 2, 3}), make({2}, {1, -3}, DType::F16)});
  expect_near(values(out[0]), {11, 12, 13, 21, 22, 23});
  expect_near(values(out[1]), {2.5, -7.5});
}

TEST(ApiBuilder, ReductionsAndSoftmax) {
  kiln::Builder b("red");
  Var x = b.input("x", DType::F32, {2, 3});
  Var s = kiln::sum(x, {1}, /*keepdim=*/true);
  Var m = kiln::mean(x);
  Var mx = kiln::amax(x, {0});
  Var sm = kiln::softmax(x, 1);
  EXPECT_EQ(s.type_str(), "f32[2, 1]");
  EXPECT_EQ(m.type_str(), "f32[]");
  kiln::Function f = b.build({s, m, mx, sm});
  const double l2 = std::log(2.0);
  std::vector<Tensor> out = f.run_interpreter({make({2, 3}, {1, 2, 3, 0, l2, 0})});
  expect_near(values(out[0]), {6, l2});
  expect_near(values(out[1]), {(6 + l2) / 6});
  expect_near(values(out[2]), {1, 2, 3});
  // softmax of [0, ln2, 0] = [1, 2, 1] / 4
  std::vector<double> sm1 = values(out[3]);
  expect_near({sm1[3], sm1[4], sm1[5]}, {0.25, 0.5, 0.25});
  double e = std::exp(1.0), e2 = e * e, e3 = e2 * e, z = e + e2 + e3;
  expect_near({sm1[0], sm1[1], sm1[2]}, {e / z, e2 / z, e3 / z});
}

TEST(ApiBuilder, LayoutOps) {
  kiln::Builder b("layout");
  Var x = b.input("x", DType::F32, {2, 3});
  Var t = kiln::transpose(x, 0, 1);
  Var r = kiln::reshape(x, {3, -1});
  Var c = kiln::cat({x, x * 10}, 0);
  Var p = kiln::permute(kiln::unsqueeze(x, 0), {2, 0, 1});
  EXPECT_EQ(t.type_str(), "f32[3, 2]");
  EXPECT_EQ(r.type_str(), "f32[3, 2]");
  EXPECT_EQ(c.type_str(), "f32[4, 3]");
  EXPECT_EQ(p.type_str(), "f32[3, 1, 2]");
  kiln::Function f = b.build({t, r, c});
  std::vector<Tensor> out = f.run_interpreter({make({2, 3}, {1, 2, 3, 4, 5, 6})});
  expect_near(values(out[0]), {1, 4, 2, 5, 3, 6});
  expect_near(values(out[1]), {1, 2, 3, 4, 5, 6});
  expect_near(values(out[2]), {1, 2, 3, 4, 5, 6, 10, 20, 30, 40, 50, 60});
}

TEST(ApiBuilder, ComparisonsWhereAndCast) {
  kiln::Builder b("cmp");
  Var x = b.input("x", DType::F32, {4});
  Var y = b.input("y", DType::F32, {4});
  Var lt = kiln::lt(x, y);
  Var ge0 = kiln::ge(x, 0);
  EXPECT_EQ(lt.dtype(), DType::Bool);
  Var w = kiln::where(lt, x, y);  // elementwise min
  Var c = kiln::cast(x, DType::I64);
  kiln::Function f = b.build({lt, ge0, w, c});
  std::vector<Tensor> out =
      f.run_interpreter({make({4}, {1, -2, 3.7, 0}), make({4}, {2, -3, 3.7, 1})});
  EXPECT_EQ(out[0].dtype(), DType::Bool);
  expect_near(values(out[0]), {1, 0, 0, 1});
  expect_near(values(out[1]), {1, 0, 1, 1});
  expect_near(values(out[2]), {1, -3, 3.7, 0}, 1e-6);
  EXPECT_EQ(out[3].dtype(), DType::I64);
  expect_near(values(out[3]), {1, -2, 3, 0});  // truncation toward zero
}

TEST(ApiBuilder, LinearWithAndWithoutBias) {
  kiln::Builder b("lin");
  Var x = b.input("x", DType::F32, {1, 2});
  Var w = b.input("w", DType::F32, {3, 2});
  Var bias = b.input("b", DType::F32, {3});
  kiln::Function f = b.build({kiln::linear(x, w, bias), kiln::linear(x, w)});
  // x @ w^T: [1*1 + 2*0, 1*0 + 2*1, 1*1 + 2*1] = [1, 2, 3]
  std::vector<Tensor> out = f.run_interpreter(
      {make({1, 2}, {1, 2}), make({3, 2}, {1, 0, 0, 1, 1, 1}), make({3}, {10, 20, 30})});
  expect_near(values(out[0]), {11, 22, 33});
  expect_near(values(out[1]), {1, 2, 3});
}

TEST(ApiBuilder, GenericOpReachesMultiOutputOps) {
  kiln::Builder b("generic");
  Var x = b.input("x", DType::F32, {2, 3});
  std::vector<Var> mx = kiln::op("max", {x}, {{"dim", 1}});
  ASSERT_EQ(mx.size(), 2u);
  EXPECT_EQ(mx[1].dtype(), DType::I64);
  Var s = kiln::op1("sum", {x}, {{"dim", {0}}, {"keepdim", false}});
  kiln::Function f = b.build({mx[0], mx[1], s});
  std::vector<Tensor> out = f.run_interpreter({make({2, 3}, {1, 5, 2, 7, 0, -1})});
  expect_near(values(out[0]), {5, 7});
  expect_near(values(out[1]), {1, 0});
  expect_near(values(out[2]), {8, 5, 1});
  expect_error([&] { kiln::op1("max", {x}, {{"dim", 1}}); }, {"max", "2 outputs"});
}

TEST(ApiBuilder, ScalarInputAndConstants) {
  kiln::Builder b("consts");
  Var x = b.input("x", DType::F32, {2});
  Var k = b.scalar_input("k", kiln::Scalar::Kind::Float);
  Var c = b.constant(make({2}, {100, 200}));
  EXPECT_EQ(k.type_str(), "float");
  kiln::Function f = b.build({kiln::mul(x, k) + c});
  std::vector<Tensor> out = f.run_interpreter({make({2}, {1, 2}), Tensor::scalar(3, DType::F64)});
  expect_near(values(out[0]), {103, 206});
}

TEST(ApiBuilder, OpsWithoutOperandsGoThroughTheBuilder) {
  kiln::Builder b("factory");
  Var r = b.op("arange", {}, {{"end", 5}})[0];
  EXPECT_EQ(r.type_str(), "i64[5]");
  kiln::Function f = b.build({r * 2});
  std::vector<Tensor> out = f.run_interpreter({});
  EXPECT_EQ(out[0].dtype(), DType::I64);
  expect_near(values(out[0]), {0, 2, 4, 6, 8});
}

TEST(ApiScript, LoadScriptFromSourceAndLowerPerBinding) {
  const std::string src =
      "def scale(x: Tensor, k: float, bias: int = 1):\n"
      "    return x * k + bias\n"
      "\n"
      "def pair(x: Tensor, y: Tensor):\n"
      "    return x - y, x * y\n";
  kiln::Script s = kiln::Script::from_source(src, "api.kiln");
  ASSERT_EQ(s.functions().size(), 2u);
  const kiln::ScriptFunction& scale = s.function("scale");
  ASSERT_EQ(scale.params.size(), 3u);
  EXPECT_EQ(scale.params[0].kind, kiln::ParamKind::Tensor);
  EXPECT_EQ(scale.params[1].kind, kiln::ParamKind::Float);
  EXPECT_TRUE(scale.params[2].has_default);
  EXPECT_EQ(scale.params[2].default_value.str(), "1");
  EXPECT_EQ(s.function().name, "pair");  // "" => the last def

  kiln::Function f = s.lower(
      "scale", {kiln::bind_tensor("x", DType::F32, {kiln::sym("N")}), kiln::bind_value("k", 2.0)});
  ASSERT_EQ(f.inputs().size(), 1u);  // only tensor parameters are inputs
  EXPECT_EQ(f.inputs()[0].type, "f32[N]");
  expect_near(values(f.run_interpreter({make({3}, {0, 1, -2})})[0]), {1, 3, -3});

  Tensor x = make({2}, {3, 4}), y = make({2}, {1, 2});
  kiln::Function g = kiln::load_script(src, "", {kiln::bind_like("x", x), kiln::bind_like("y", y)});
  std::vector<Tensor> out = g.run_interpreter({x, y});
  ASSERT_EQ(out.size(), 2u);
  expect_near(values(out[0]), {2, 2});
  expect_near(values(out[1]), {3, 8});

  expect_error([&] { (void)s.function("nope"); }, {"no function 'nope'", "scale, pair"});
  expect_error([&] { (void)s.lower("scale", {kiln::bind_like("x", x)}); }, {"k"});
  expect_error(
      [&] { (void)kiln::Script::from_source("def f(x: Tensor):\n    return x +\n", "bad.kiln"); },
      {"bad.kiln:2:"});
}

// A List[Tensor] parameter is bound to a std::vector<Tensor> (issue 13): one
// function input per item, named xs.0, xs.1, ..., passed in list order.
TEST(ApiScript, TensorListParameterFromVectorOfTensors) {
  const std::string src =
      "from typing import List\n"
      "def f(xs: List[Tensor], w: Tensor):\n"
      "    xs.append(w * 2)\n"
      "    return torch.cat(xs)\n";
  kiln::Script s = kiln::Script::from_source(src, "list.py");
  ASSERT_EQ(s.function("f").params.size(), 2u);
  EXPECT_EQ(s.function("f").params[0].kind, kiln::ParamKind::TensorList);
  EXPECT_STREQ(kiln::param_kind_name(kiln::ParamKind::TensorList), "List[Tensor]");

  Tensor a = make({2}, {1, 2}), b = make({3}, {3, 4, 5}), w = make({1}, {-1});
  kiln::Function f = s.lower("f", {kiln::bind_like("xs", std::vector<Tensor>{a, b}),
                                   kiln::bind_like("w", w)});
  ASSERT_EQ(f.inputs().size(), 3u);
  EXPECT_EQ(f.inputs()[0].name, "xs.0");
  EXPECT_EQ(f.inputs()[1].name, "xs.1");
  EXPECT_EQ(f.inputs()[1].type, "f32[3]");
  EXPECT_EQ(f.inputs()[2].name, "w");
  const std::vector<double> want = {1, 2, 3, 4, 5, -2};
  expect_near(values(f.run_interpreter({a, b, w})[0]), want);
  expect_near(values(kiln::compile(f)({a, b, w})[0]), want);

  // Types alone, and an empty list.
  kiln::Function g = s.lower(
      "f", {kiln::bind_tensors("xs", {kiln::TensorSpec{DType::F32, {3}}}), kiln::bind_like("w", w)});
  EXPECT_EQ(g.inputs()[0].type, "f32[3]");
  expect_near(values(kiln::compile(g)({b, w})[0]), {3, 4, 5, -2});
  kiln::Function e = s.lower("f", {kiln::bind_tensors("xs", {}), kiln::bind_like("w", w)});
  expect_near(values(e.run_interpreter({w})[0]), {-2});

  expect_error([&] { (void)s.lower("f", {kiln::bind_like("xs", a), kiln::bind_like("w", w)}); },
               {"'xs' is a List[Tensor] parameter but was given one tensor"});
  expect_error(
      [&] {
        (void)s.lower("f", {kiln::bind_like("xs", std::vector<Tensor>{a}),
                            kiln::bind_like("w", std::vector<Tensor>{w})});
      },
      {"argument 'w' is declared 'Tensor' but was given a list of tensors"});
}

TEST(ApiFunction, TextRoundTripsAndCopiesAreIndependentOfBuilder) {
  kiln::Builder b("rt");
  Var x = b.input("x", DType::F32, {kiln::sym("N"), 4});
  Var y = kiln::gelu(x) * 0.5;
  kiln::Function f = b.build({y});
  std::string text = f.str();
  kiln::Function g = kiln::parse_ir(text, "rt.kir");
  EXPECT_EQ(g.str(), text);
  // Building more does not change an already built Function.
  Var z = kiln::exp(y);
  (void)z;
  EXPECT_EQ(f.str(), text);
  kiln::Function copy = f;
  EXPECT_EQ(&copy.graph(), &f.graph());  // copies share the graph
  f.verify();
}

TEST(ApiErrors, ShapeMismatchNamesOpAndOperands) {
  kiln::Builder b("bad");
  Var x = b.input("x", DType::F32, {2, 3});
  Var v = b.input("v", DType::F32, {4});
  std::string before = b.str();
  expect_error([&] { (void)(x + v); }, {"add", "f32[2, 3]", "f32[4]"});
  expect_error([&] { (void)kiln::matmul(x, v); }, {"matmul", "f32[2, 3]", "f32[4]"});
  // Failed calls (including their scalar constants) leave the graph unchanged.
  expect_error([&] { (void)kiln::where(v, x, 1.0); }, {"where"});
  EXPECT_EQ(b.str(), before);
}

TEST(ApiErrors, MixingBuildersIsAnError) {
  kiln::Builder a("first"), b("second");
  Var x = a.input("x", DType::F32, {2});
  Var y = b.input("y", DType::F32, {2});
  expect_error([&] { (void)(x + y); }, {"add", "different builders", "first", "second"});
  expect_error([&] { (void)b.build({x}); }, {"first", "second"});
}

TEST(ApiErrors, MisuseOfBuilderAndFunction) {
  kiln::Builder b("misc");
  Var x = b.input("x", DType::F32, {2});
  expect_error([&] { (void)b.input("x", DType::F32, {3}); }, {"already has an input 'x'"});
  expect_error([&] { (void)b.input("neg", DType::F32, {-1}); }, {"negative dim"});
  expect_error([&] { (void)b.build({}); }, {"at least one output"});
  expect_error([&] { (void)kiln::op("relux", {x}); }, {"unknown op 'relux'", "relu"});
  expect_error([&] { (void)kiln::op("add", {1, 2}); }, {"Builder::op"});
  expect_error([&] { (void)Var().dims(); }, {"none"});
  kiln::Function f = b.build({kiln::relu(x)});
  expect_error([&] { (void)f.run_interpreter({}); }, {"x"});
  expect_error([&] { (void)kiln::Function().str(); }, {"empty function"});
  expect_error([&] { (void)kiln::parse_ir("graph @g( {\n}", "bad.kir"); }, {"bad.kir:1:"});
}

TEST(ApiValues, PrintingOfDimsSpecsAndAttrs) {
  EXPECT_EQ(kiln::sym("N").str(), "N");
  EXPECT_EQ(kiln::Dim(7).str(), "7");
  EXPECT_EQ((kiln::TensorSpec{DType::F16, {kiln::sym("B"), 3}}).str(), "f16[B, 3]");
  EXPECT_EQ((kiln::TensorSpec{DType::I64, {}}).str(), "i64[]");
  EXPECT_EQ(kiln::Attr(3).str(), "3");
  EXPECT_EQ(kiln::Attr(true).str(), "true");
  EXPECT_EQ(kiln::Attr("floor").str(), "\"floor\"");
  EXPECT_EQ(kiln::Attr({1, 2}).str(), "[1, 2]");
  EXPECT_EQ(kiln::Attr(DType::F32).str(), "f32");
  EXPECT_TRUE(kiln::Attr().is_none());
}

TEST(ApiOps, ListingHasSignaturesAndSuggestions) {
  std::vector<kiln::OpInfo> ops = kiln::list_ops();
  ASSERT_FALSE(ops.empty());
  for (size_t i = 1; i < ops.size(); ++i) EXPECT_LT(ops[i - 1].name, ops[i].name);
  std::optional<kiln::OpInfo> mm = kiln::find_op("matmul");
  ASSERT_TRUE(mm.has_value());
  EXPECT_EQ(mm->category, "contraction");
  EXPECT_EQ(mm->signature.rfind("matmul(", 0), 0u) << mm->signature;
  EXPECT_FALSE(kiln::find_op("matmull").has_value());
  std::vector<std::string> near = kiln::suggest_ops("matmull");
  ASSERT_FALSE(near.empty());
  EXPECT_EQ(near[0], "matmul");
}

}  // namespace
