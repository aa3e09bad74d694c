// Graph IR building and editing (apply, constant, uses, erase, move, clone) and
// the verifier's diagnostics. Ops come from the registry; a test whose ops are
// not registered skips rather than fails.
#include <gtest/gtest.h>

#include <initializer_list>
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

// The message of the kiln::Error `fn` throws ("" when it does not throw).
template <typename Fn>
std::string error_of(Fn&& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

#define EXPECT_CONTAINS(haystack, needle)                                                          \
  do {                                                                                             \
    std::string h_ = (haystack);                                                                   \
    EXPECT_NE(h_.find(needle), std::string::npos) << "missing \"" << (needle) << "\" in:\n" << h_; \
  } while (0)

TEST(GraphTest, ApplyInfersTypesAndFillsDefaults) {
  REQUIRE_OPS("add", "relu");
  Graph g("f");
  Value* x = g.add_input("x", f32({Dim::sym("N"), 3}));
  Value* b = g.add_input("b", f32({3}));
  Value* s = g.apply1("add", {x, b}, {}, SourceLoc{"f.kiln", 2, 7});
  Value* r = g.apply1("relu", {s});
  g.set_outputs({r});
  EXPECT_EQ(s->type(), f32({Dim::sym("N"), 3}));
  EXPECT_EQ(r->type(), f32({Dim::sym("N"), 3}));
  ASSERT_EQ(g.nodes().size(), 2u);
  // The default alpha is filled in, so the node verifies.
  EXPECT_TRUE(g.nodes()[0]->attrs().has("alpha"));
  EXPECT_EQ(s->producer(), g.nodes()[0].get());
  EXPECT_EQ(s->index(), 0);
  EXPECT_EQ(g.nodes()[0]->loc().str(), "f.kiln:2:7");
  EXPECT_EQ(g.nodes()[0]->def(), OpRegistry::global().find("add"));
  EXPECT_EQ(x->producer(), nullptr);
  EXPECT_EQ(b->index(), 1);
  EXPECT_NO_THROW(verify(g));
}

TEST(GraphTest, ApplyErrorNamesOpOperandsAndLocationAndLeavesGraphUnchanged) {
  REQUIRE_OPS("add");
  Graph g;
  Value* x = g.add_input("x", f32({2, 3}));
  Value* y = g.add_input("y", f32({4}));
  std::string msg = error_of([&] { g.apply("add", {x, y}, {}, SourceLoc{"m.kiln", 3, 9}); });
  EXPECT_EQ(msg.rfind("m.kiln:3:9: add", 0), 0u) << msg;
  EXPECT_CONTAINS(msg, "f32[2, 3]");
  EXPECT_CONTAINS(msg, "f32[4]");
  EXPECT_TRUE(g.nodes().empty());

  // Without a location there is no prefix; the op still leads.
  msg = error_of([&] { g.apply("add", {x, y}); });
  EXPECT_EQ(msg.rfind("add", 0), 0u) << msg;
  EXPECT_TRUE(g.nodes().empty());
}

TEST(GraphTest, ApplyUnknownOpSuggestsNearest) {
  REQUIRE_OPS("add");
  Graph g;
  Value* x = g.add_input("x", f32({2}));
  std::string msg = error_of([&] { g.apply("addd", {x, x}); });
  EXPECT_CONTAINS(msg, "unknown op 'addd'");
  EXPECT_CONTAINS(msg, "'add'");
  EXPECT_TRUE(g.nodes().empty());
}

TEST(GraphTest, ApplyBadAttributeAndOperandCount) {
  REQUIRE_OPS("sum", "relu");
  Graph g;
  Value* x = g.add_input("x", f32({2, 3}));
  EXPECT_CONTAINS(error_of([&] {
                    g.apply("sum", {x}, {{"dim", std::string("zero")}});
                  }),
                  "attribute 'dim'");
  EXPECT_CONTAINS(error_of([&] {
                    g.apply("sum", {x}, {{"bogus", int64_t{1}}});
                  }),
                  "unknown attribute 'bogus'");
  EXPECT_CONTAINS(error_of([&] { g.apply("relu", {x, x}); }), "relu: expects 1 operand(s), got 2");
  EXPECT_TRUE(g.nodes().empty());
}

TEST(GraphTest, ApplyMultipleOutputs) {
  REQUIRE_OPS("max");
  Graph g;
  Value* x = g.add_input("x", f32({Dim::sym("N"), 5}));
  std::vector<Value*> outs = g.apply("max", {x}, {{"dim", int64_t{1}}});
  ASSERT_EQ(outs.size(), 2u);
  EXPECT_EQ(outs[0]->type(), f32({Dim::sym("N")}));
  EXPECT_EQ(outs[1]->type(), Type::tensor(DType::I64, {Dim::sym("N")}));
  EXPECT_EQ(outs[1]->index(), 1);
  // apply1 insists on one output and leaves the graph as it was.
  EXPECT_CONTAINS(error_of([&] { g.apply1("max", {x}, {{"dim", int64_t{1}}}); }), "2 outputs");
  EXPECT_EQ(g.nodes().size(), 1u);
}

TEST(GraphTest, ConstantTypes) {
  REQUIRE_OPS("constant");
  Graph g;
  EXPECT_EQ(g.constant(int64_t{3})->type(), Type::int_());
  EXPECT_EQ(g.constant(2.5)->type(), Type::float_());
  EXPECT_EQ(g.constant(true)->type(), Type::bool_());
  Tensor t = Tensor::zeros({2, 3}, DType::I32);
  EXPECT_EQ(g.constant(t)->type(), Type::tensor(DType::I32, {2, 3}));
  EXPECT_EQ(g.nodes().size(), 4u);
  EXPECT_EQ(g.nodes()[1]->op(), "constant");
  EXPECT_EQ(std::get<double>(*g.nodes()[1]->attrs().find("value")), 2.5);
}

TEST(GraphTest, ReplaceAllUsesAndUsers) {
  REQUIRE_OPS("add", "mul", "relu");
  Graph g;
  Value* x = g.add_input("x", f32({4}));
  Value* a = g.apply1("relu", {x});
  Value* b = g.apply1("add", {a, a});
  Value* c = g.apply1("mul", {b, a});
  g.set_outputs({a, c});
  std::vector<Node*> us = g.users(a);
  ASSERT_EQ(us.size(), 2u);  // add uses it twice but is listed once
  EXPECT_EQ(us[0], b->producer());
  EXPECT_EQ(us[1], c->producer());
  EXPECT_TRUE(g.users(c).empty());

  g.replace_all_uses(a, x);
  EXPECT_TRUE(g.users(a).empty());
  EXPECT_EQ(b->producer()->input(0), x);
  EXPECT_EQ(b->producer()->input(1), x);
  EXPECT_EQ(c->producer()->input(1), x);
  EXPECT_EQ(g.outputs()[0], x);
  EXPECT_EQ(g.users(x).size(), 3u);  // relu, add, mul
}

TEST(GraphTest, EraseNodeRefusesUsedNodes) {
  REQUIRE_OPS("relu", "neg");
  Graph g;
  Value* x = g.add_input("x", f32({4}));
  Value* a = g.apply1("relu", {x});
  Value* b = g.apply1("neg", {a});
  g.set_outputs({b});
  std::string msg = error_of([&] { g.erase_node(a->producer()); });
  EXPECT_CONTAINS(msg, "%0 = relu(%x)");
  EXPECT_CONTAINS(msg, "used by %1 = neg(%0)");
  msg = error_of([&] { g.erase_node(b->producer()); });
  EXPECT_CONTAINS(msg, "graph output");
  EXPECT_EQ(g.nodes().size(), 2u);

  g.set_outputs({a});
  g.erase_node(b->producer());
  ASSERT_EQ(g.nodes().size(), 1u);
  EXPECT_EQ(g.nodes()[0]->op(), "relu");
  EXPECT_NO_THROW(verify(g));
}

TEST(GraphTest, MoveBefore) {
  REQUIRE_OPS("relu", "neg", "exp");
  Graph g;
  Value* x = g.add_input("x", f32({4}));
  Node* a = g.apply1("relu", {x})->producer();
  Node* b = g.apply1("neg", {x})->producer();
  Node* c = g.apply1("exp", {x})->producer();
  g.move_before(c, a);
  ASSERT_EQ(g.nodes().size(), 3u);
  EXPECT_EQ(g.nodes()[0].get(), c);
  EXPECT_EQ(g.nodes()[1].get(), a);
  EXPECT_EQ(g.nodes()[2].get(), b);
  g.move_before(a, a);  // no-op
  g.move_before(a, b);  // already just before b
  EXPECT_EQ(g.nodes()[1].get(), a);
  EXPECT_EQ(g.nodes()[2].get(), b);
}

TEST(GraphTest, CloneIsDeepAndKeepsNamesAndLocations) {
  REQUIRE_OPS("add", "relu");
  Graph g("orig");
  Value* x = g.add_input("x", f32({Dim::sym("N"), 2}));
  Value* h = g.apply1("add", {x, x}, {}, SourceLoc{"a/b-c.kiln", 4, 2});
  h->set_name("hidden");
  Value* r = g.apply1("relu", {h});
  g.set_outputs({r, h});
  std::unique_ptr<Graph> c = g.clone();
  EXPECT_EQ(print_graph(*c), print_graph(g));
  EXPECT_EQ(c->name(), "orig");
  ASSERT_EQ(c->nodes().size(), 2u);
  EXPECT_NE(c->nodes()[0].get(), g.nodes()[0].get());
  EXPECT_EQ(c->nodes()[0]->input(0), c->input(0));
  EXPECT_EQ(c->nodes()[1]->input(0), c->nodes()[0]->output());
  EXPECT_EQ(c->outputs()[1], c->nodes()[0]->output());
  EXPECT_EQ(c->nodes()[0]->output()->name(), "hidden");
  EXPECT_EQ(c->nodes()[0]->loc().str(), "a/b-c.kiln:4:2");
  // Editing the clone leaves the original alone.
  c->nodes()[0]->output()->set_name("other");
  c->set_outputs({});
  EXPECT_EQ(h->name(), "hidden");
  EXPECT_EQ(g.outputs().size(), 2u);
  EXPECT_NO_THROW(verify(*c));
}

TEST(GraphTest, ValueNamesKeepUniqueIdentifiersAndNumberTheRest) {
  REQUIRE_OPS("relu");
  Graph g;
  Value* x = g.add_input("x", f32({1}));
  Value* a = g.apply1("relu", {x});
  a->set_name("x");  // taken by the input
  Value* b = g.apply1("relu", {a});
  b->set_name("2 bad");  // not an identifier
  Value* c = g.apply1("relu", {b});
  c->set_name("h.1");
  ValueNames names(g);
  EXPECT_EQ(names(x), "%x");
  EXPECT_EQ(names(a), "%0");
  EXPECT_EQ(names(b), "%1");
  EXPECT_EQ(names(c), "%h.1");
  EXPECT_EQ(names(nullptr), "%<null>");
  EXPECT_EQ(node_summary(*c->producer(), names), "%h.1 = relu(%1)");
  EXPECT_TRUE(is_ir_identifier("_a1.b"));
  EXPECT_FALSE(is_ir_identifier("1a"));
  EXPECT_FALSE(is_ir_identifier(""));
}

TEST(GraphTest, SourceLocStr) {
  EXPECT_EQ((SourceLoc{"x.kiln", 3, 9}).str(), "x.kiln:3:9");
  EXPECT_EQ(SourceLoc{}.str(), "");
  EXPECT_FALSE(SourceLoc{}.known());
}

// --- verifier -----------------------------------------------------------------------

TEST(VerifierTest, WrongRecordedType) {
  REQUIRE_OPS("add");
  Graph g;
  Value* x = g.add_input("x", f32({2, 3}));
  Value* y = g.add_input("y", f32({3}));
  Node* n =
      g.add_node("add", {x, y}, {{"alpha", int64_t{1}}}, {f32({2, 4})}, SourceLoc{"f.kir", 4, 3});
  g.set_outputs({n->output()});
  std::string msg = error_of([&] { verify(g); });
  EXPECT_CONTAINS(msg, "%0 = add(%x, %y) at f.kir:4:3: ");
  EXPECT_CONTAINS(msg, "recorded as f32[2, 4] but inference gives f32[2, 3]");
}

TEST(VerifierTest, WrongOutputCount) {
  REQUIRE_OPS("relu");
  Graph g;
  Value* x = g.add_input("x", f32({2}));
  g.add_node("relu", {x}, {}, {f32({2}), f32({2})});
  EXPECT_CONTAINS(error_of([&] { verify(g); }), "records 2 output(s), but relu produces 1");
}

TEST(VerifierTest, UnknownOpSuggestsNearest) {
  REQUIRE_OPS("relu");
  Graph g;
  Value* x = g.add_input("x", f32({2}));
  g.add_node("rleu", {x}, {}, {f32({2})});
  std::string msg = error_of([&] { verify(g); });
  EXPECT_CONTAINS(msg, "%0 = rleu(%x): unknown op 'rleu'");
  EXPECT_CONTAINS(msg, "'relu'?)");
}

TEST(VerifierTest, UseBeforeDefinition) {
  REQUIRE_OPS("relu", "neg");
  Graph g;
  Value* x = g.add_input("x", f32({2}));
  Value* a = g.apply1("relu", {x});
  Value* b = g.apply1("neg", {a});
  g.set_outputs({b});
  g.move_before(b->producer(), a->producer());
  std::string msg = error_of([&] { verify(g); });
  EXPECT_CONTAINS(msg, "%0 = neg(%1): operand 0 (%1) is used before its definition");
}

TEST(VerifierTest, ValueFromAnotherGraph) {
  REQUIRE_OPS("relu");
  Graph other;
  Value* stray = other.add_input("s", f32({2}));
  Graph g;
  g.add_input("x", f32({2}));
  g.add_node("relu", {stray}, {}, {f32({2})});
  g.set_outputs({stray});
  std::string msg = error_of([&] { verify(g); });
  EXPECT_CONTAINS(msg, "operand 0 (%<undefined>) is not defined in this graph");
  EXPECT_CONTAINS(msg, "return: output 0 (%<undefined>) is not defined in the graph");
}

TEST(VerifierTest, WrongOperandCountAndKind) {
  REQUIRE_OPS("relu", "matmul", "constant");
  Graph g;
  Value* x = g.add_input("x", f32({2, 2}));
  Value* s = g.add_input("s", Type::float_());
  g.add_node("relu", {x, x}, {}, {f32({2, 2})});
  g.add_node("matmul", {x, s}, {}, {f32({2, 2})});
  std::string msg = error_of([&] { verify(g); });
  EXPECT_CONTAINS(msg, "%0 = relu(%x, %x): relu: expects 1 operand(s), got 2");
  EXPECT_CONTAINS(msg, "%1 = matmul(%x, %s): matmul: operand 'b' must be Tensor, got float");
}

TEST(VerifierTest, MissingAndUnknownAttributes) {
  REQUIRE_OPS("add", "reshape");
  Graph g;
  Value* x = g.add_input("x", f32({2, 3}));
  g.add_node("add", {x, x}, {}, {f32({2, 3})});
  g.add_node("reshape", {x}, {}, {f32({6})});
  g.add_node("add", {x, x}, {{"alpha", int64_t{1}}, {"beta", 2.0}}, {f32({2, 3})});
  std::string msg = error_of([&] { verify(g); });
  EXPECT_CONTAINS(msg, "%0 = add(%x, %x): missing attribute 'alpha' (its default is 1");
  EXPECT_CONTAINS(msg, "%1 = reshape(%x): missing attribute 'shape'");
  EXPECT_CONTAINS(msg, "%2 = add(%x, %x): add: unknown attribute 'beta'");
}

TEST(VerifierTest, ValidGraphWithMultipleOutputsPasses) {
  REQUIRE_OPS("max", "add", "constant");
  Graph g;
  Value* x = g.add_input("x", f32({Dim::sym("N"), 4}));
  std::vector<Value*> vi = g.apply("max", {x}, {{"dim", int64_t{1}}});
  Value* c = g.constant(1.5);
  Value* y = g.apply1("add", {vi[0], c});
  g.set_outputs({y, vi[1]});
  EXPECT_NO_THROW(verify(g));
}

}  // namespace
}  // namespace kiln::ir
