// The reference interpreter: hand-computed results for small graphs (symbolic
// batch sizes, scalars, constants, multiple outputs, reused values) and the
// messages for inputs that do not fit the graph's signature.
#include "ir/interpreter.h"

#include <gtest/gtest.h>

#include <string>

#include "ir/op_registry.h"
#include "kiln/error.h"

namespace kiln::ir {
namespace {

#define REQUIRE_OPS(...)                                                                 \
  do {                                                                                   \
    for (const char* op_ : {__VA_ARGS__}) {                                              \
      if (!OpRegistry::global().find(op_)) GTEST_SKIP() << "op not registered: " << op_; \
    }                                                                                    \
  } while (0)

Type f32(Dims dims) {
  return Type::tensor(DType::F32, std::move(dims));
}

Tensor make(const Shape& sizes, const std::vector<double>& values, DType dtype = DType::F32) {
  Tensor t = Tensor::empty(sizes, dtype);
  EXPECT_EQ(static_cast<int64_t>(values.size()), t.numel());
  Tensor flat = t.view_as_strided({t.numel()}, {1}, 0);
  for (int64_t i = 0; i < t.numel(); ++i) {
    flat.set(std::vector<int64_t>{i}, values[static_cast<size_t>(i)]);
  }
  return t;
}

std::vector<double> values(const Tensor& t) {
  std::vector<double> out;
  Tensor c = t.contiguous();
  Tensor flat = c.view_as_strided({c.numel()}, {1}, c.storage_offset());
  for (int64_t i = 0; i < c.numel(); ++i) out.push_back(flat.get(std::vector<int64_t>{i}));
  return out;
}

template <typename Fn>
std::string error_of(Fn&& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

#define EXPECT_CONTAINS(haystack, needle)                                                          \
  do {                                                                                             \
    std::string h_ = (haystack);                                                                   \
    EXPECT_NE(h_.find(needle), std::string::npos) << "missing \"" << (needle) << "\" in:\n" << h_; \
  } while (0)

// relu(x @ w + b) and its row sums, for x: f32[N, 2].
std::unique_ptr<Graph> mlp() {
  auto g = std::make_unique<Graph>("mlp");
  Value* x = g->add_input("x", f32({Dim::sym("N"), 2}));
  Value* w = g->add_input("w", f32({2, 3}));
  Value* b = g->add_input("b", f32({3}));
  Value* s = g->apply1("add", {g->apply1("matmul", {x, w}), b});
  Value* r = g->apply1("relu", {s});
  Value* rows = g->apply1("sum", {s}, {{"dim", std::vector<int64_t>{1}}});
  g->set_outputs({r, rows});
  return g;
}

const Tensor kW = make({2, 3}, {1, -1, 0.5, 2, 0, -1});
const Tensor kB = make({3}, {0.5, 1, -2});

TEST(InterpreterTest, MlpWithTwoBatchSizes) {
  REQUIRE_OPS("matmul", "add", "relu", "sum");
  std::unique_ptr<Graph> g = mlp();
  verify(*g);
  // Row [1, 2]: x@w = [5, -1, -1.5], + b = [5.5, 0, -3.5].
  std::vector<Tensor> one = interpret(*g, {make({1, 2}, {1, 2}), kW, kB});
  ASSERT_EQ(one.size(), 2u);
  EXPECT_EQ(one[0].sizes(), (Shape{1, 3}));
  EXPECT_EQ(one[0].dtype(), DType::F32);
  EXPECT_EQ(values(one[0]), (std::vector<double>{5.5, 0, 0}));
  EXPECT_EQ(values(one[1]), (std::vector<double>{2}));
  // Rows [-1, 0.5] -> [0.5, 2, -3] and [0, 0] -> b.
  std::vector<Tensor> three = interpret(*g, {make({3, 2}, {1, 2, -1, 0.5, 0, 0}), kW, kB});
  EXPECT_EQ(three[0].sizes(), (Shape{3, 3}));
  EXPECT_EQ(values(three[0]), (std::vector<double>{5.5, 0, 0, 0.5, 2, 0, 0.5, 1, 0}));
  EXPECT_EQ(values(three[1]), (std::vector<double>{2, -0.5, -0.5}));
  // An empty batch runs too.
  std::vector<Tensor> none = interpret(*g, {Tensor::zeros({0, 2}), kW, kB});
  EXPECT_EQ(none[0].sizes(), (Shape{0, 3}));
  EXPECT_EQ(none[1].sizes(), (Shape{0}));
}

TEST(InterpreterTest, ScalarsAndConstants) {
  REQUIRE_OPS("mul", "add", "constant");
  Graph g;
  Value* x = g.add_input("x", f32({3}));
  Value* s = g.add_input("s", Type::float_());
  Value* m = g.apply1("mul", {x, g.constant(int64_t{2})});
  Value* a = g.apply1("add", {m, s});
  Value* out = g.apply1("mul", {a, g.constant(make({3}, {1, 2, 3}))});
  Value* k = g.constant(int64_t{1} << 60);
  Value* f = g.constant(true);
  g.set_outputs({out, k, f, x});
  verify(g);
  // The float scalar may come in any floating dtype; it is read as f64.
  Tensor xv = make({3}, {1, 2, 3});
  std::vector<Tensor> r = interpret(g, {xv, Tensor::scalar(0.5, DType::F32)});
  ASSERT_EQ(r.size(), 4u);
  EXPECT_EQ(r[0].dtype(), DType::F32);
  EXPECT_EQ(values(r[0]), (std::vector<double>{2.5, 9, 19.5}));
  EXPECT_EQ(r[1].dim(), 0);
  EXPECT_EQ(r[1].dtype(), DType::I64);
  EXPECT_EQ(r[1].get_int(std::vector<int64_t>{}), int64_t{1} << 60);  // exact, not via double
  EXPECT_EQ(r[2].dtype(), DType::Bool);
  EXPECT_EQ(r[2].item(), 1.0);
  EXPECT_TRUE(r[3].equal(xv));  // an input returned as is
}

TEST(InterpreterTest, MultipleOutputsAndIntegers) {
  REQUIRE_OPS("max", "add");
  Graph g;
  Value* x = g.add_input("x", f32({2, 3}));
  std::vector<Value*> vi = g.apply("max", {x}, {{"dim", int64_t{1}}});
  Value* twice = g.apply1("add", {vi[1], vi[1]});
  g.set_outputs({vi[0], vi[1], twice});
  std::vector<Tensor> r = interpret(g, {make({2, 3}, {1, 5, 2, 7, 0, 6})});
  EXPECT_EQ(values(r[0]), (std::vector<double>{5, 7}));
  EXPECT_EQ(r[1].dtype(), DType::I64);
  EXPECT_EQ(values(r[1]), (std::vector<double>{1, 0}));
  EXPECT_EQ(values(r[2]), (std::vector<double>{2, 0}));
}

TEST(InterpreterTest, ValueUsedAfterLaterNodesStaysAlive) {
  REQUIRE_OPS("relu", "neg", "mul");
  Graph g;
  Value* x = g.add_input("x", f32({4}));
  Value* a = g.apply1("relu", {x});
  Value* b = g.apply1("neg", {a});
  g.apply1("neg", {b});  // dead: computed and dropped
  Value* c = g.apply1("mul", {a, b});
  g.set_outputs({c, a});
  std::vector<Tensor> r = interpret(g, {make({4}, {-1, 2, 3, 0})});
  EXPECT_EQ(values(r[0]), (std::vector<double>{-0.0, -4, -9, -0.0}));
  EXPECT_EQ(values(r[1]), (std::vector<double>{0, 2, 3, 0}));
}

TEST(InterpreterTest, RunsParsedText) {
  REQUIRE_OPS("add", "relu");
  std::unique_ptr<Graph> g = parse_graph(
      "graph @f(%x: f32[B], %y: f32[B]) {\n"
      "  %s: f32[B] = add(%x, %y) {alpha = 2.0}\n"
      "  %r: f32[B] = relu(%s)\n"
      "  return %r\n"
      "}\n");
  verify(*g);
  // x + 2 * y
  std::vector<Tensor> r = interpret(*g, {make({3}, {1, -5, 0}), make({3}, {1, 1, -0.25})});
  EXPECT_EQ(values(r[0]), (std::vector<double>{3, 0, 0}));
}

TEST(InterpreterTest, InputCountErrors) {
  REQUIRE_OPS("matmul", "add", "relu", "sum");
  std::unique_ptr<Graph> g = mlp();
  Tensor x = make({1, 2}, {1, 2});
  EXPECT_CONTAINS(error_of([&] { interpret(*g, {x}); }), "missing input 'w' (1 given, 3 expected)");
  EXPECT_CONTAINS(error_of([&] { interpret(*g, {}); }), "missing input 'x' (0 given, 3 expected)");
  EXPECT_CONTAINS(error_of([&] {
                    interpret(*g, {x, kW, kB, kB});
                  }),
                  "too many inputs (4 given, 3 expected)");
}

TEST(InterpreterTest, InputTypeErrors) {
  REQUIRE_OPS("matmul", "add", "relu", "sum");
  std::unique_ptr<Graph> g = mlp();
  Tensor x = make({1, 2}, {1, 2});
  EXPECT_CONTAINS(error_of([&] {
                    interpret(*g, {x.to(DType::F64), kW, kB});
                  }),
                  "input 'x': expected dtype f32 (f32[N, 2]), got f64");
  EXPECT_CONTAINS(error_of([&] {
                    interpret(*g, {make({2}, {1, 2}), kW, kB});
                  }),
                  "input 'x': expected rank 2 (f32[N, 2]), got rank 1 (shape [2])");
  EXPECT_CONTAINS(error_of([&] {
                    interpret(*g, {x, Tensor::zeros({2, 4}), kB});
                  }),
                  "input 'w': expected shape [2, 3], got [2, 4] (dim 1 differs)");
  EXPECT_CONTAINS(error_of([&] {
                    interpret(*g, {Tensor::zeros({3, 3}), kW, kB});
                  }),
                  "input 'x': expected shape [N, 2], got [3, 3] (dim 1 differs)");
  EXPECT_CONTAINS(error_of([&] {
                    interpret(*g, {Tensor(), kW, kB});
                  }),
                  "input 'x' expects f32[N, 2], got an undefined tensor");
}

TEST(InterpreterTest, SymbolBoundInconsistently) {
  REQUIRE_OPS("add");
  Graph g;
  Value* x = g.add_input("x", f32({Dim::sym("N"), 2}));
  Value* y = g.add_input("y", f32({Dim::sym("N"), 1}));
  g.set_outputs({g.apply1("add", {x, y})});
  EXPECT_CONTAINS(error_of([&] {
                    interpret(g, {Tensor::zeros({4, 2}), Tensor::zeros({5, 1})});
                  }),
                  "dim N bound to 4 by input 'x' but 5 by input 'y'");
  std::vector<Tensor> r = interpret(g, {Tensor::ones({4, 2}), Tensor::ones({4, 1})});
  EXPECT_EQ(values(r[0]), std::vector<double>(8, 2.0));
}

TEST(InterpreterTest, ScalarInputErrors) {
  REQUIRE_OPS("mul");
  Graph g;
  Value* x = g.add_input("x", f32({2}));
  Value* k = g.add_input("k", Type::int_());
  g.set_outputs({g.apply1("mul", {x, k})});
  Tensor xv = make({2}, {1.5, -2});
  EXPECT_CONTAINS(error_of([&] {
                    interpret(g, {xv, Tensor::zeros({1}, DType::I64)});
                  }),
                  "input 'k' is a scalar (int) and takes a 0-dim tensor, got shape [1]");
  EXPECT_CONTAINS(error_of([&] {
                    interpret(g, {xv, Tensor::scalar(2.0, DType::F32)});
                  }),
                  "input 'k' is a scalar (int), got dtype f32");
  // Any integral dtype is accepted and widened to i64.
  std::vector<Tensor> r = interpret(g, {xv, Tensor::scalar(3, DType::I32)});
  EXPECT_EQ(values(r[0]), (std::vector<double>{4.5, -6}));
}

TEST(InterpreterTest, RecordedTypeThatDoesNotMatchIsAnError) {
  REQUIRE_OPS("relu");
  Graph g;
  Value* x = g.add_input("x", f32({Dim::sym("N")}));
  Node* n = g.add_node("relu", {x}, {}, {f32({4})});
  g.set_outputs({n->output()});
  EXPECT_CONTAINS(error_of([&] { interpret(g, {Tensor::zeros({3})}); }),
                  "%0 = relu(%x): output %0 is recorded as f32[4] but computes as f32[3] "
                  "(with N = 3)");
}

TEST(InterpreterTest, UnknownOpAndBadOperandsAreErrorsNotCrashes) {
  REQUIRE_OPS("relu");
  Graph g;
  Value* x = g.add_input("x", f32({2}));
  g.set_outputs({g.add_node("nope", {x}, {}, {f32({2})})->output()});
  EXPECT_CONTAINS(error_of([&] { interpret(g, {Tensor::zeros({2})}); }), "unknown op 'nope'");
  Graph h;
  Value* y = h.add_input("y", f32({2}));
  h.set_outputs({h.add_node("relu", {y, y}, {}, {f32({2})})->output()});
  EXPECT_CONTAINS(error_of([&] { interpret(h, {Tensor::zeros({2})}); }),
                  "relu: expects 1 operand(s), got 2");
}

}  // namespace
}  // namespace kiln::ir
