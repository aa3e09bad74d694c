// The graph IR text form: exact printing, parsing of handwritten text (locations,
// symbolic dims, multiple outputs, every attribute kind), the round-trip
// property, and parse errors with their exact file:line:col.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "ir/graph.h"
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

std::string parse_error(const std::string& text, const std::string& file = "t.kir") {
  try {
    parse_graph(text, file);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

void expect_round_trip(const Graph& g) {
  std::string once = print_graph(g);
  std::unique_ptr<Graph> back = parse_graph(once, "round-trip");
  EXPECT_EQ(print_graph(*back), once);
}

TEST(GraphTextTest, PrintsBuiltGraphExactly) {
  REQUIRE_OPS("matmul", "add", "max", "constant");
  Graph g("mlp");
  Value* x = g.add_input("x", f32({Dim::sym("N"), 784}));
  Value* w1 = g.add_input("w1", f32({784, 256}));
  Value* b1 = g.add_input("b1", f32({256}));
  g.add_input("eps", Type::float_());
  Value* h = g.apply1("matmul", {x, w1}, {}, SourceLoc{"mlp.kiln", 3, 9});
  Value* c = g.constant(2.5);
  c->set_name("c");
  Value* s = g.apply1("add", {h, b1}, {{"alpha", 1.0}});
  std::vector<Value*> vi = g.apply("max", {s}, {{"dim", int64_t{1}}});
  vi[0]->set_name("v");
  vi[1]->set_name("i");
  g.set_outputs({vi[0], vi[1]});
  const char* expected =
      "graph @mlp(%x: f32[N, 784], %w1: f32[784, 256], %b1: f32[256], %eps: float) {\n"
      "  %0: f32[N, 256] = matmul(%x, %w1)            # mlp.kiln:3:9\n"
      "  %c: float = constant() {value = 2.5}\n"
      "  %1: f32[N, 256] = add(%0, %b1) {alpha = 1.0}\n"
      "  %v: f32[N], %i: i64[N] = max(%1) {dim = 1, keepdim = false}\n"
      "  return %v, %i\n"
      "}\n";
  EXPECT_EQ(print_graph(g), expected);
  EXPECT_NO_THROW(verify(g));
  std::unique_ptr<Graph> back = parse_graph(expected, "mlp.kir");
  EXPECT_EQ(print_graph(*back), expected);
  EXPECT_NO_THROW(verify(*back));
}

TEST(GraphTextTest, ParsesHandwrittenText) {
  REQUIRE_OPS("matmul", "add", "max", "constant", "reshape");
  const char* text = R"(# A comment line, then a blank line.

graph @mlp(%x: f32[N, 784], %w1: f32[784, 256], %b1: f32[256], %eps: float) {
  %0: f32[N, 256] = matmul(%x, %w1)            # mlp.kiln:3:9
  # mlp.kiln:99:1 on its own line is just a comment
  %c: float = constant() {value = 2.5}  # not a location
  %1: f32[N, 256] = add(%0, %b1) {alpha = 1.0}   # dir/sub-dir/my.model.kiln:12:40
  %v: f32[N], %i: i64[N] = max(%1) {dim = 1, keepdim = false}
  %t: i64[2, 2] = constant() {value = tensor<i64[2, 2]>[1, -2, 3, 4]}
  %r: i64[4] = reshape(%t) {shape = [4]}
  return %v, %i, %r
}
)";
  std::unique_ptr<Graph> g = parse_graph(text, "mlp.kir");
  EXPECT_EQ(g->name(), "mlp");
  ASSERT_EQ(g->inputs().size(), 4u);
  EXPECT_EQ(g->input(0)->name(), "x");
  EXPECT_EQ(g->input(0)->type(), f32({Dim::sym("N"), 784}));
  EXPECT_EQ(g->input(3)->type(), Type::float_());
  ASSERT_EQ(g->nodes().size(), 6u);
  const Node& mm = *g->nodes()[0];
  EXPECT_EQ(mm.op(), "matmul");
  EXPECT_EQ(mm.input(0), g->input(0));
  EXPECT_EQ(mm.loc().file, "mlp.kiln");
  EXPECT_EQ(mm.loc().line, 3);
  EXPECT_EQ(mm.loc().col, 9);
  EXPECT_FALSE(g->nodes()[1]->loc().known());
  EXPECT_EQ(g->nodes()[2]->loc().str(), "dir/sub-dir/my.model.kiln:12:40");
  const Node& mx = *g->nodes()[3];
  ASSERT_EQ(mx.num_outputs(), 2u);
  EXPECT_EQ(mx.output(0)->name(), "v");
  EXPECT_EQ(mx.output(1)->type(), Type::tensor(DType::I64, {Dim::sym("N")}));
  EXPECT_EQ(mx.attrs().get_int("dim"), 1);
  EXPECT_FALSE(mx.attrs().get_bool("keepdim"));
  const Tensor& t = g->nodes()[4]->attrs().get_tensor("value");
  EXPECT_EQ(t.dtype(), DType::I64);
  EXPECT_EQ(t.sizes(), (Shape{2, 2}));
  EXPECT_EQ(t.get_int(std::vector<int64_t>{0, 1}), -2);
  EXPECT_EQ(t.get_int(std::vector<int64_t>{1, 1}), 4);
  ASSERT_EQ(g->outputs().size(), 3u);
  EXPECT_EQ(g->outputs()[1], mx.output(1));
  EXPECT_NO_THROW(verify(*g));
  // The canonical form drops plain comments and aligns locations.
  const char* canonical =
      "graph @mlp(%x: f32[N, 784], %w1: f32[784, 256], %b1: f32[256], %eps: float) {\n"
      "  %0: f32[N, 256] = matmul(%x, %w1)            # mlp.kiln:3:9\n"
      "  %c: float = constant() {value = 2.5}\n"
      "  %1: f32[N, 256] = add(%0, %b1) {alpha = 1.0}  # dir/sub-dir/my.model.kiln:12:40\n"
      "  %v: f32[N], %i: i64[N] = max(%1) {dim = 1, keepdim = false}\n"
      "  %t: i64[2, 2] = constant() {value = tensor<i64[2, 2]>[1, -2, 3, 4]}\n"
      "  %r: i64[4] = reshape(%t) {shape = [4]}\n"
      "  return %v, %i, %r\n"
      "}\n";
  EXPECT_EQ(print_graph(*g), canonical);
}

TEST(GraphTextTest, EveryAttributeKindRoundTrips) {
  REQUIRE_OPS("relu");
  // The parser does not judge attributes against the op (verify does), so one
  // node can carry every kind.
  const char* text =
      "graph @attrs(%x: f32[2]) {\n"
      "  %0: f32[2] = relu(%x) {a = none, b = true, c = false, d = -7, e = 0.1, f = 1e-05, "
      "g = inf, h = -inf, i = nan, j = \"say \\\"hi\\\" \\\\ there\", k = [1, -2, 3], "
      "l = [0.5, -1.0, 1e+20], m = [], n = f16, o = bool, "
      "p = tensor<f32[2, 2]>[1.0, 2.5, -3.0, 4.0], q = tensor<bool[3]>[true, false, true], "
      "r = tensor<f64[]>[-0.0], s = tensor<i32[0]>[], t = 9223372036854775807}\n"
      "  return %0\n"
      "}\n";
  std::unique_ptr<Graph> g = parse_graph(text);
  EXPECT_EQ(print_graph(*g), text);
  const Attrs& a = g->nodes()[0]->attrs();
  EXPECT_TRUE(a.is_none("a"));
  EXPECT_TRUE(a.get_bool("b"));
  EXPECT_EQ(a.get_int("d"), -7);
  EXPECT_EQ(a.get_float("e"), 0.1);
  EXPECT_EQ(a.get_float("f"), 1e-05);
  EXPECT_TRUE(std::isinf(a.get_float("g")) && a.get_float("g") > 0);
  EXPECT_TRUE(std::isinf(a.get_float("h")) && a.get_float("h") < 0);
  EXPECT_TRUE(std::isnan(a.get_float("i")));
  EXPECT_EQ(a.get_string("j"), "say \"hi\" \\ there");
  EXPECT_EQ(a.get_ints("k"), (std::vector<int64_t>{1, -2, 3}));
  EXPECT_EQ(a.get_floats("l"), (std::vector<double>{0.5, -1.0, 1e20}));
  EXPECT_TRUE(a.get_ints("m").empty());
  EXPECT_EQ(a.get_dtype("n"), DType::F16);
  EXPECT_EQ(a.get_dtype("o"), DType::Bool);
  const Tensor& p = a.get_tensor("p");
  EXPECT_EQ(p.dtype(), DType::F32);
  EXPECT_EQ(p.get(std::vector<int64_t>{0, 1}), 2.5);
  EXPECT_EQ(p.get(std::vector<int64_t>{1, 0}), -3.0);
  EXPECT_EQ(a.get_tensor("q").get_int(std::vector<int64_t>{1}), 0);
  EXPECT_EQ(a.get_tensor("r").dim(), 0);
  EXPECT_TRUE(std::signbit(a.get_tensor("r").item()));
  EXPECT_EQ(a.get_tensor("s").numel(), 0);
  EXPECT_EQ(a.get_int("t"), INT64_MAX);
  // And verify() is the one that objects.
  EXPECT_THROW(verify(*g), Error);
}

TEST(GraphTextTest, NamesAreKeptOrRenumbered) {
  REQUIRE_OPS("relu", "neg");
  const char* text =
      "graph @names(%in: f32[3]) {\n"
      "  %7: f32[3] = relu(%in)\n"
      "  %h.1: f32[3] = neg(%7)\n"
      "  %_tmp: f32[3] = relu(%h.1)\n"
      "  %3: f32[3] = neg(%_tmp)\n"
      "  return %3, %7\n"
      "}\n";
  std::unique_ptr<Graph> g = parse_graph(text);
  EXPECT_EQ(g->nodes()[0]->output()->name(), "7");  // the parser keeps names as written
  const char* printed =
      "graph @names(%in: f32[3]) {\n"
      "  %0: f32[3] = relu(%in)\n"
      "  %h.1: f32[3] = neg(%0)\n"
      "  %_tmp: f32[3] = relu(%h.1)\n"
      "  %1: f32[3] = neg(%_tmp)\n"
      "  return %1, %0\n"
      "}\n";
  EXPECT_EQ(print_graph(*g), printed);
  expect_round_trip(*g);
}

TEST(GraphTextTest, RoundTripOfAwkwardGraphs) {
  REQUIRE_OPS("relu", "add", "sum", "constant");
  {
    // Duplicate and invalid hints, a quoted graph name, a device, no outputs.
    Graph g("my graph\n2");
    Value* x = g.add_input("x", Type::tensor(DType::BF16, {}, Device::cuda(1)));
    Value* y = g.add_input("", Type::tensor(DType::I64, {0, Dim::sym("B_2")}));
    g.add_input("x", Type::bool_());
    g.add_input("n", Type::none());
    g.add_input("k", Type::int_());
    g.add_node("relu", {x}, {}, {f32({1})})->output()->set_name("x");
    g.add_node("relu", {y, y}, {}, {})->set_loc(SourceLoc{"<input>", 1, 2});
    g.add_node("relu", {x}, {}, {f32({1})})->set_loc(SourceLoc{"", 3, 4});
    g.add_node("relu", {x}, {}, {f32({1})})->set_loc(SourceLoc{"C:/my dir/a.kiln", 5, 6});
    expect_round_trip(g);
    std::string text = print_graph(g);
    EXPECT_NE(text.find("graph @\"my graph\\n2\"(%x: bf16[]@cuda:1, %0: i64[0, B_2], %1: bool"),
              std::string::npos)
        << text;
    EXPECT_NE(text.find("  relu(%0, %0)"), std::string::npos) << text;
    EXPECT_NE(text.find("  return\n}"), std::string::npos) << text;
  }
  {
    // A built graph with defaults filled in, several locations and reuse.
    Graph g("built");
    Value* x = g.add_input("x", f32({Dim::sym("N"), 7}));
    Value* a = g.apply1("relu", {x}, {}, SourceLoc{"a.kiln", 1, 1});
    Value* b = g.apply1("add", {a, x}, {}, SourceLoc{"a.kiln", 2, 123});
    Value* c = g.apply1("sum", {b}, {{"dim", std::vector<int64_t>{-1}}, {"keepdim", true}});
    Value* k = g.constant(Tensor::arange(0, 7, 1, DType::F32));
    Value* d = g.apply1("add", {c, k}, {{"alpha", -0.5}});
    g.set_outputs({d, a});
    EXPECT_NO_THROW(verify(g));
    expect_round_trip(g);
    std::unique_ptr<Graph> back = parse_graph(print_graph(g));
    EXPECT_NO_THROW(verify(*back));
  }
}

TEST(GraphTextTest, WrittenTypesThatDisagreeParseAndFailVerify) {
  REQUIRE_OPS("add");
  const char* text =
      "graph @g(%a: f32[2, 3], %b: f32[3]) {\n"
      "  %s: f32[3, 3] = add(%a, %b) {alpha = 1}  # g.kiln:4:3\n"
      "  return %s\n"
      "}\n";
  std::unique_ptr<Graph> g = parse_graph(text);
  EXPECT_EQ(g->nodes()[0]->output()->type(), f32({3, 3}));
  try {
    verify(*g);
    ADD_FAILURE() << "verify accepted a wrong type";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("%s = add(%a, %b) at g.kiln:4:3: output %s is recorded "
                                         "as f32[3, 3] but inference gives f32[2, 3]"),
              std::string::npos)
        << e.what();
  }
}

TEST(GraphTextTest, DamagedTextNeverCrashes) {
  REQUIRE_OPS("add", "max", "constant");
  const std::string text =
      "graph @g(%x: f32[N, 3], %s: float) {\n"
      "  %0: f32[N, 3] = add(%x, %s) {alpha = 1.0}  # g.kiln:1:2\n"
      "  %c: f32[2] = constant() {value = tensor<f32[2]>[1.0, -2.5]}\n"
      "  %v: f32[N], %i: i64[N] = max(%0) {dim = 1, keepdim = false}\n"
      "  return %v, %i, %c\n"
      "}\n";
  ASSERT_NO_THROW(verify(*parse_graph(text)));
  // Every truncation and every single-character deletion either parses (and
  // then round trips and verifies or not) or throws kiln::Error; nothing else.
  auto check = [](const std::string& t) {
    std::unique_ptr<Graph> g;
    try {
      g = parse_graph(t);
    } catch (const InternalError& e) {
      ADD_FAILURE() << "internal error for:\n" << t << "\n" << e.what();
      return;
    } catch (const Error&) {
      return;
    }
    EXPECT_EQ(print_graph(*parse_graph(print_graph(*g))), print_graph(*g)) << t;
    try {
      verify(*g);
    } catch (const InternalError& e) {
      ADD_FAILURE() << "internal error verifying:\n" << t << "\n" << e.what();
    } catch (const Error&) {
    }
  };
  for (size_t n = 0; n < text.size(); ++n) {
    check(text.substr(0, n));
    check(text.substr(0, n) + text.substr(n + 1));
  }
}

// --- parse errors -----------------------------------------------------------------------

struct BadText {
  const char* name;
  std::string text;
  std::string prefix;  // "t.kir:L:C: error: ..." (start of the message)
};

TEST(GraphTextTest, ParseErrorsPointAtTheProblem) {
  REQUIRE_OPS("relu", "add");
  const std::string head = "graph @g(%x: f32[2]) {\n";
  const std::vector<BadText> cases = {
      {"undefined value", head + "  %0: f32[2] = relu(%y)\n  return %0\n}\n",
       "t.kir:2:21: error: use of undefined value '%y'"},
      {"redefinition", head + "  %x: f32[2] = relu(%x)\n  return %x\n}\n",
       "t.kir:2:3: error: redefinition of value '%x' (first defined on line 1)"},
      {"redefinition in node", head + "  %a: f32[2], %a: f32[2] = relu(%x)\n  return %a\n}\n",
       "t.kir:2:15: error: redefinition of value '%a' in the same node"},
      {"unknown dtype", "graph @g(%x: f33[2]) {\n  return %x\n}\n",
       "t.kir:1:14: error: unknown dtype 'f33'"},
      {"unknown type", "graph @g(%x: tensor) {\n  return %x\n}\n",
       "t.kir:1:14: error: unknown type 'tensor'"},
      {"bad dim", "graph @g(%x: f32[2, -1]) {\n  return %x\n}\n",
       "t.kir:1:21: error: expected a dim (a size >= 0 or a symbol like N), got '-1'"},
      {"unterminated string", head + "  %0: f32[2] = relu(%x) {mode = \"abc}\n  return %0\n}\n",
       "t.kir:2:33: error: unterminated string"},
      {"operand separator", head + "  %0: f32[2] = add(%x %x)\n  return %0\n}\n",
       "t.kir:2:23: error: expected ',' or ')' after operand, got '%x'"},
      {"missing return", head + "  %0: f32[2] = relu(%x)\n}\n",
       "t.kir:3:1: error: missing 'return' before the graph's closing '}'"},
      {"unknown op", head + "  %0: f32[2] = rellu(%x)\n  return %0\n}\n",
       "t.kir:2:16: error: unknown op 'rellu' (did you mean 'relu'"},
      {"stray character", head + "  %0: f32[2] = relu(%x) $\n  return %0\n}\n",
       "t.kir:2:25: error: unexpected character '$'"},
      {"second graph", head + "  return %x\n}\ngraph @h() {\n  return\n}\n",
       "t.kir:4:1: error: unexpected 'graph' after the graph's closing '}' (a text holds exactly "
       "one graph)"},
      {"missing '='", head + "  %0: f32[2] relu(%x)\n  return %0\n}\n",
       "t.kir:2:14: error: expected ',' or '=' after the type of '%0', got 'relu'"},
      {"tensor count",
       head + "  %0: f32[2] = relu(%x) {t = tensor<f32[2, 2]>[1.0, 2.0, 3.0]}\n"
              "  return %0\n}\n",
       "t.kir:2:47: error: tensor<f32[2, 2]> needs 4 value(s), got 3"},
      {"tensor element kind",
       head + "  %0: f32[2] = relu(%x) {t = tensor<i64[2]>[1, 2.5]}\n"
              "  return %0\n}\n",
       "t.kir:2:48: error: expected an integer in tensor<i64[2]>, got '2.5'"},
      {"duplicate attribute", head + "  %0: f32[2] = relu(%x) {a = 1, a = 2}\n  return %0\n}\n",
       "t.kir:2:33: error: duplicate attribute 'a'"},
      {"bad attribute value", head + "  %0: f32[2] = relu(%x) {a = %x}\n  return %0\n}\n",
       "t.kir:2:30: error: expected an attribute value"},
      {"integer out of range",
       head + "  %0: f32[2] = relu(%x) {a = 99999999999999999999}\n"
              "  return %0\n}\n",
       "t.kir:2:30: error: integer 99999999999999999999 is out of range"},
      {"bad escape", head + "  %0: f32[2] = relu(%x) {a = \"x\\ty\"}\n  return %0\n}\n",
       "t.kir:2:32: error: unknown escape in string"},
      {"empty input", "", "t.kir:1:1: error: expected 'graph', got end of input"},
      {"end of input", head + "  %0: f32[2] = relu(%x)\n",
       "t.kir:2:24: error: unexpected end of input: missing 'return' and '}'"},
      {"return separator", head + "  return %x %x\n}\n",
       "t.kir:2:13: error: expected ',' or '}' after return value, got '%x'"},
      {"missing type", "graph @g(%x) {\n  return %x\n}\n",
       "t.kir:1:12: error: expected ':' after parameter '%x', got ')'"},
      {"bad device", "graph @g(%x: f32[2]@tpu) {\n  return %x\n}\n",
       "t.kir:1:21: error: expected a device (cpu, cuda:N), got 'tpu'"},
  };
  for (const BadText& c : cases) {
    std::string msg = parse_error(c.text);
    EXPECT_EQ(msg.rfind(c.prefix, 0), 0u) << c.name << ": got\n"
                                          << msg << "\nwanted prefix\n"
                                          << c.prefix;
  }
}

TEST(GraphTextTest, ParseErrorShowsSourceLineAndCaret) {
  REQUIRE_OPS("relu");
  std::string msg = parse_error(
      "graph @g(%x: f32[2]) {\n"
      "\t%0: f32[2] = relu(%nope)\n"
      "  return %0\n"
      "}\n",
      "dir/f.kir");
  EXPECT_EQ(msg,
            "dir/f.kir:2:20: error: use of undefined value '%nope'\n"
            "\t%0: f32[2] = relu(%nope)\n"
            "\t                  ^");
}

TEST(GraphTextTest, HugeTensorShapeFailsWithoutAllocating) {
  REQUIRE_OPS("relu");
  std::string msg = parse_error(
      "graph @g(%x: f32[2]) {\n"
      "  %0: f32[2] = relu(%x) {t = tensor<f32[100000, 100000, 100000]>[1.0]}\n"
      "  return %0\n}\n");
  EXPECT_EQ(msg.rfind("t.kir:2:30: error: tensor attribute is too large", 0), 0u) << msg;
}

}  // namespace
}  // namespace kiln::ir
