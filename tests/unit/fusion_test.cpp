// Kernel grouping (passes/fuse_elementwise): which nodes share a kernel and
// why, that no grouping forms a cycle or a wrong execution order, and that
// fused kernels compute the interpreter's values through kiln::compile.
#include <gtest/gtest.h>

#include "ir/graph.h"
#include "kiln/compile.h"
#include "lower_test_util.h"
#include "op_test_util.h"
#include "passes/fuse_elementwise.h"

namespace kiln::test {
namespace {

using ir::Dim;
using Ints = std::vector<int64_t>;

std::vector<std::vector<std::string>> group_ops(const ir::Graph& g, bool fuse = true) {
  passes::FusionOptions o;
  o.fuse = fuse;
  std::vector<std::vector<std::string>> out;
  for (const passes::KernelGroup& grp : passes::group_kernels(g, o)) {
    std::vector<std::string> ops;
    for (const ir::Node* n : grp.nodes) ops.push_back(n->op());
    out.push_back(ops);
  }
  return out;
}

using Groups = std::vector<std::vector<std::string>>;

void expect_compiled_matches(const ir::Graph& g, const std::vector<Tensor>& in, double tol = 5e-4) {
  for (const std::string& backend : available_backends()) {
    if (backend == "interp") continue;
    SCOPED_TRACE("backend " + backend);
    CompileOptions o;
    o.backend = backend;
    CompiledFunction f = compile(g, o);
    std::vector<Tensor> want = ir::interpret(g, in);
    std::vector<Tensor> got = f(in);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_TRUE(tensors_close(got[i], want[i], tol, tol)) << "output " << i << "\n"
                                                            << f.dump("loops");
    }
  }
}

// y = sigmoid(x * a + b) * tanh(x) + 0.5 * x
std::unique_ptr<ir::Graph> chain() {
  auto g = std::make_unique<ir::Graph>("chain");
  ir::Value* x = g->add_input("x", ir::Type::tensor(DType::F32, {Dim::sym("N")}));
  ir::Value* t = g->apply1("mul", {x, g->constant(1.5)});
  t = g->apply1("add", {t, g->constant(0.25)});
  t = g->apply1("sigmoid", {t});
  t = g->apply1("mul", {t, g->apply1("tanh", {x})});
  t = g->apply1("add", {t, g->apply1("mul", {x, g->constant(0.5)})});
  g->set_outputs({t});
  return g;
}

TEST(Fusion, ElementwiseChainIsOneKernel) {
  auto g = chain();
  Groups gs = group_ops(*g);
  ASSERT_EQ(gs.size(), 1u);
  EXPECT_EQ(gs[0].size(), 7u);
  auto groups = passes::group_kernels(*g);
  EXPECT_NE(groups[0].reason.find("fused"), std::string::npos) << groups[0].reason;
  EXPECT_EQ(compile(*g).num_kernels(), 1);
  for (int64_t n : {0, 1, 7, 1023}) {
    SCOPED_TRACE("N = " + std::to_string(n));
    expect_compiled_matches(*g, {random_tensor({n}, DType::F32, uint64_t(n) + 1)});
  }
}

TEST(Fusion, OffGivesOneKernelPerNode) {
  auto g = chain();
  EXPECT_EQ(group_ops(*g, false).size(), 7u);
  CompileOptions o;
  o.fuse = false;
  EXPECT_EQ(compile(*g, o).num_kernels(), 7);
}

TEST(Fusion, NoCycleThroughAReduction) {
  // a = exp(x); s = sum(a); b = a + s: fusing the add into exp's kernel would
  // make that kernel both feed and read the sum's kernel.
  auto g = std::make_unique<ir::Graph>("cyc");
  ir::Value* x = g->add_input("x", ir::Type::tensor(DType::F32, {5, 7}));
  ir::Value* a = g->apply1("exp", {x});
  ir::Value* s = g->apply1("sum", {a}, {{"dim", Ints{1}}, {"keepdim", true}});
  ir::Value* b = g->apply1("add", {a, s});
  g->set_outputs({b});
  EXPECT_EQ(group_ops(*g), (Groups{{"exp"}, {"sum"}, {"add"}}));
  auto groups = passes::group_kernels(*g);
  EXPECT_NE(groups[2].reason.find("cycle"), std::string::npos) << groups[2].reason;
  EXPECT_NE(groups[1].reason.find("starts its own kernel"), std::string::npos);
  expect_compiled_matches(*g, {random_tensor({5, 7}, DType::F32, 3)});
}

TEST(Fusion, KernelOrderFollowsDependencesNotCreation) {
  // exp's kernel absorbs the add, which reads a sum created after it: the sum
  // must run first.
  auto g = std::make_unique<ir::Graph>("ord");
  ir::Value* x = g->add_input("x", ir::Type::tensor(DType::F32, {4, 3}));
  ir::Value* y = g->add_input("y", ir::Type::tensor(DType::F32, {4, 3}));
  ir::Value* a = g->apply1("exp", {x});
  ir::Value* r = g->apply1("sum", {y}, {{"dim", Ints{1}}, {"keepdim", true}});
  ir::Value* n = g->apply1("add", {a, r});
  g->set_outputs({n});
  EXPECT_EQ(group_ops(*g), (Groups{{"sum"}, {"exp", "add"}}));
  expect_compiled_matches(
      *g, {random_tensor({4, 3}, DType::F32, 1), random_tensor({4, 3}, DType::F32, 2)});
}

TEST(Fusion, SiblingProducersMergeIntoTheirConsumer) {
  auto g = std::make_unique<ir::Graph>("sib");
  ir::Value* x = g->add_input("x", ir::Type::tensor(DType::F32, {Dim::sym("N"), 3}));
  ir::Value* y = g->add_input("y", ir::Type::tensor(DType::F32, {3}));
  ir::Value* a = g->apply1("exp", {x});
  ir::Value* b = g->apply1("tanh", {y});
  g->set_outputs({g->apply1("mul", {a, b})});
  EXPECT_EQ(group_ops(*g), (Groups{{"exp", "tanh", "mul"}}));
  expect_compiled_matches(
      *g, {random_tensor({9, 3}, DType::F32, 1), random_tensor({3}, DType::F32, 2)});
}

TEST(Fusion, LayoutOpsBecomeIndexingInsideTheKernel) {
  auto g = std::make_unique<ir::Graph>("lay");
  ir::Value* x = g->add_input("x", ir::Type::tensor(DType::F32, {3, 5}));
  ir::Value* y = g->add_input("y", ir::Type::tensor(DType::F32, {5, 3}));
  ir::Value* t = g->apply1("transpose", {x}, {{"dim0", int64_t(0)}, {"dim1", int64_t(1)}});
  g->set_outputs({g->apply1("relu", {g->apply1("add", {t, y})})});
  EXPECT_EQ(group_ops(*g), (Groups{{"transpose", "add", "relu"}}));
  expect_compiled_matches(
      *g, {random_tensor({3, 5}, DType::F32, 1), random_tensor({5, 3}, DType::F32, 2)});
}

TEST(Fusion, ContractionsAndReductionsKeepTheirKernels) {
  auto g = std::make_unique<ir::Graph>("mm");
  ir::Value* x = g->add_input("x", ir::Type::tensor(DType::F32, {Dim::sym("N"), 4}));
  ir::Value* w = g->add_input("w", ir::Type::tensor(DType::F32, {4, 6}));
  ir::Value* b = g->add_input("b", ir::Type::tensor(DType::F32, {6}));
  ir::Value* h = g->apply1("relu", {g->apply1("add", {g->apply1("matmul", {x, w}), b})});
  g->set_outputs({h});
  EXPECT_EQ(group_ops(*g), (Groups{{"matmul"}, {"add", "relu"}}));
  expect_compiled_matches(*g,
                          {random_tensor({7, 4}, DType::F32, 1),
                           random_tensor({4, 6}, DType::F32, 2), random_tensor({6}, DType::F32, 3)},
                          1e-4);
}

TEST(Fusion, ValueUsedInsideAndOutsideItsKernel) {
  // a feeds both the fused mul and a sum: it is stored for the sum and still
  // inlined into the mul; both outputs are right, mixed dtypes included.
  auto g = std::make_unique<ir::Graph>("esc");
  ir::Value* x = g->add_input("x", ir::Type::tensor(DType::F16, {Dim::sym("N"), 7}));
  ir::Value* a = g->apply1("exp", {x});
  ir::Value* m = g->apply1("mul", {a, g->constant(2.0)});
  ir::Value* i = g->apply1("cast", {m}, {{"dtype", DType::F32}});
  ir::Value* s = g->apply1("sum", {a}, {{"dim", Ints{1}}});
  g->set_outputs({i, s, a});
  EXPECT_EQ(group_ops(*g), (Groups{{"exp", "mul", "cast"}, {"sum"}}));
  for (int64_t n : {0, 1, 33}) {
    expect_compiled_matches(*g, {random_tensor({n, 7}, DType::F16, uint64_t(n))}, 5e-3);
  }
}

}  // namespace
}  // namespace kiln::test
