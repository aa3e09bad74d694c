// Kernel fusion (passes/fuse): which nodes share a kernel and
// why, that no grouping forms a cycle or a wrong execution order, and that
// fused kernels compute the interpreter's values through kiln::compile.
#include <gtest/gtest.h>

#include "api/target.h"
#include "ir/graph.h"
#include "kiln/compile.h"
#include "lower_test_util.h"
#include "op_test_util.h"
#include "passes/fuse.h"

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

// Every available compiled backend on the host, and the sim device.
std::vector<CompileOptions> compiled_configurations() {
  std::vector<CompileOptions> out;
  for (const BackendInfo& b : available_backends()) {
    if (b.name == "interp" || !b.available) continue;
    for (const std::string& d : b.devices) {
      if (d != "cpu" && d != "sim") continue;
      CompileOptions o;
      o.backend = b.name;
      o.device = *Device::parse(d);
      out.push_back(o);
    }
  }
  return out;
}

void expect_compiled_matches(const ir::Graph& g, const std::vector<Tensor>& in, double tol = 5e-4) {
  for (const CompileOptions& o : compiled_configurations()) {
    SCOPED_TRACE("backend " + o.backend + " on " + o.device.str());
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

TEST(Fusion, NoCycleThroughAContraction) {
  // a = exp(x); c = a @ w (one column); b = a + c: b cannot be c's epilogue
  // (it broadcasts c over the rows), and joining exp's kernel would make that
  // kernel both feed and read the matmul's kernel.
  auto g = std::make_unique<ir::Graph>("cyc");
  ir::Value* x = g->add_input("x", ir::Type::tensor(DType::F32, {5, 7}));
  ir::Value* w = g->add_input("w", ir::Type::tensor(DType::F32, {7, 1}));
  ir::Value* a = g->apply1("exp", {x});
  ir::Value* c = g->apply1("matmul", {a, w});
  ir::Value* b = g->apply1("add", {a, c});
  g->set_outputs({b});
  EXPECT_EQ(group_ops(*g), (Groups{{"exp"}, {"matmul"}, {"add"}}));
  auto groups = passes::group_kernels(*g);
  EXPECT_NE(groups[2].reason.find("cycle"), std::string::npos) << groups[2].reason;
  EXPECT_NE(groups[1].reason.find("starts its own kernel"), std::string::npos);
  expect_compiled_matches(
      *g, {random_tensor({5, 7}, DType::F32, 3), random_tensor({7, 1}, DType::F32, 4)});
}

TEST(Fusion, KernelOrderFollowsDependencesNotCreation) {
  // exp's kernel absorbs the add, which reads a matmul created after it (the
  // add broadcasts the matmul's one column, so it is no epilogue): the matmul
  // must run first.
  auto g = std::make_unique<ir::Graph>("ord");
  ir::Value* x = g->add_input("x", ir::Type::tensor(DType::F32, {4, 3}));
  ir::Value* y = g->add_input("y", ir::Type::tensor(DType::F32, {4, 2}));
  ir::Value* w = g->add_input("w", ir::Type::tensor(DType::F32, {2, 1}));
  ir::Value* a = g->apply1("exp", {x});
  ir::Value* r = g->apply1("matmul", {y, w});
  ir::Value* n = g->apply1("add", {a, r});
  g->set_outputs({n});
  EXPECT_EQ(group_ops(*g), (Groups{{"matmul"}, {"exp", "add"}}));
  expect_compiled_matches(
      *g, {random_tensor({4, 3}, DType::F32, 1), random_tensor({4, 2}, DType::F32, 2),
           random_tensor({2, 1}, DType::F32, 5)});
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

TEST(Fusion, EpiloguesFuseIntoContractions) {
  // relu(x @ w + b): one kernel storing relu(acc + b) as each element is done;
  // the matmul's own result is never stored.
  auto g = std::make_unique<ir::Graph>("mm");
  ir::Value* x = g->add_input("x", ir::Type::tensor(DType::F32, {Dim::sym("N"), 4}));
  ir::Value* w = g->add_input("w", ir::Type::tensor(DType::F32, {4, 6}));
  ir::Value* b = g->add_input("b", ir::Type::tensor(DType::F32, {6}));
  ir::Value* h = g->apply1("relu", {g->apply1("add", {g->apply1("matmul", {x, w}), b})});
  g->set_outputs({h});
  EXPECT_EQ(group_ops(*g), (Groups{{"matmul", "add", "relu"}}));
  auto groups = passes::group_kernels(*g);
  EXPECT_NE(groups[0].reason.find("epilogue of matmul: add; epilogue of matmul: relu"),
            std::string::npos)
      << groups[0].reason;
  std::vector<passes::KernelPlan> plans;
  passes::lower_groups(*g, groups, {}, &plans);
  ASSERT_EQ(plans.size(), 1u);
  EXPECT_EQ(plans[0].buffers.size(), 4u);  // x, w, b and the relu's output: no matmul buffer
  for (int64_t n : {1, 7, 33}) {
    expect_compiled_matches(
        *g,
        {random_tensor({n, 4}, DType::F32, 1), random_tensor({4, 6}, DType::F32, 2),
         random_tensor({6}, DType::F32, 3)},
        1e-4);
  }
}

TEST(Fusion, EpilogueStoresTheRootValueWhenItIsReturnedToo) {
  // c = x @ w; d = c * 2 + b (f16 out): both are outputs, one kernel writes both.
  auto g = std::make_unique<ir::Graph>("both");
  ir::Value* x = g->add_input("x", ir::Type::tensor(DType::F32, {5, 3}));
  ir::Value* w = g->add_input("w", ir::Type::tensor(DType::F32, {3, 4}));
  ir::Value* b = g->add_input("b", ir::Type::tensor(DType::F32, {1, 4}));
  ir::Value* c = g->apply1("matmul", {x, w});
  ir::Value* d = g->apply1("add", {g->apply1("mul", {c, g->constant(2.0)}), b});
  ir::Value* h = g->apply1("cast", {d}, {{"dtype", DType::F16}});
  g->set_outputs({c, h});
  EXPECT_EQ(group_ops(*g), (Groups{{"matmul", "mul", "add", "cast"}}));
  expect_compiled_matches(
      *g,
      {random_tensor({5, 3}, DType::F32, 1), random_tensor({3, 4}, DType::F32, 2),
       random_tensor({1, 4}, DType::F32, 3)},
      2e-3);
}

TEST(Fusion, ComputingProducersStayOutOfContractions) {
  // exp(x) @ w: inlining exp into the operand would run it once per use.
  auto g = std::make_unique<ir::Graph>("prod");
  ir::Value* x = g->add_input("x", ir::Type::tensor(DType::F32, {6, 5}));
  ir::Value* w = g->add_input("w", ir::Type::tensor(DType::F32, {5, 4}));
  g->set_outputs({g->apply1("matmul", {g->apply1("exp", {x}), w})});
  EXPECT_EQ(group_ops(*g), (Groups{{"exp"}, {"matmul"}}));
  auto groups = passes::group_kernels(*g);
  EXPECT_NE(groups[1].reason.find("computing producers are not fused"), std::string::npos)
      << groups[1].reason;
}

TEST(Fusion, RecomputedNodesStayWithinTheBufferLimit) {
  // cat(t0, ..., t31), each ti three transposes of its own input (a layout
  // kernel): the cat's kernel would recompute all 31 other chains as
  // indexing (93 nodes). Past max_buffers recomputed nodes it reads the
  // value instead, so one kernel's bookkeeping stays bounded.
  auto g = std::make_unique<ir::Graph>("chains");
  std::vector<ir::Value*> pieces;
  std::vector<Tensor> inputs;
  for (int k = 0; k < 32; ++k) {
    ir::Value* t = g->add_input("x" + std::to_string(k), ir::Type::tensor(DType::F32, {4, 4}));
    for (int i = 0; i < 3; ++i) {
      t = g->apply1("transpose", {t}, {{"dim0", int64_t(0)}, {"dim1", int64_t(1)}});
    }
    pieces.push_back(t);
    inputs.push_back(random_tensor({4, 4}, DType::F32, uint64_t(k + 1)));
  }
  g->set_outputs({g->apply1("cat", pieces, {{"dim", int64_t(0)}})});
  passes::FusionOptions o;
  size_t most = 0;
  for (const passes::KernelGroup& grp : passes::group_kernels(*g, o)) {
    most = std::max(most, grp.recomputed.size());
  }
  EXPECT_LE(most, size_t(o.max_buffers));
  expect_compiled_matches(*g, inputs);
}

TEST(Fusion, LayoutProducersOfAContractionAreRecomputedAsIndexing) {
  // q, k = split(x @ wqk); q @ k^T: the split and transpose become indexing
  // in the attention matmul's kernel, and no copy kernel is left.
  auto g = std::make_unique<ir::Graph>("att");
  ir::Value* x = g->add_input("x", ir::Type::tensor(DType::F32, {Dim::sym("T"), 8}));
  ir::Value* w = g->add_input("w", ir::Type::tensor(DType::F32, {8, 12}));
  ir::Value* qk = g->apply1("matmul", {x, w});
  std::vector<ir::Value*> sp =
      g->apply("split", {qk}, {{"split_size", int64_t(6)}, {"dim", int64_t(-1)}});
  ir::Value* kt = g->apply1("transpose", {sp[1]}, {{"dim0", int64_t(0)}, {"dim1", int64_t(1)}});
  ir::Value* s = g->apply1("matmul", {sp[0], kt});
  g->set_outputs({s});
  auto groups = passes::group_kernels(*g);
  ASSERT_EQ(groups.size(), 2u);
  std::vector<std::string> recomputed;
  for (const ir::Node* n : groups[1].recomputed) recomputed.push_back(n->op());
  EXPECT_EQ(recomputed, (std::vector<std::string>{"split", "transpose"}));
  EXPECT_NE(groups[1].reason.find("indexing recomputed"), std::string::npos) << groups[1].reason;
  for (int64_t t : {1, 9}) {
    expect_compiled_matches(
        *g, {random_tensor({t, 8}, DType::F32, 1), random_tensor({8, 12}, DType::F32, 2)}, 1e-4);
  }
}

TEST(Fusion, ValueUsedInsideAndOutsideItsKernel) {
  // a feeds the fused mul and a sum and is returned: stored once, and (being
  // an exp) read back by its readers in the kernel rather than recomputed.
  auto g = std::make_unique<ir::Graph>("esc");
  ir::Value* x = g->add_input("x", ir::Type::tensor(DType::F16, {Dim::sym("N"), 7}));
  ir::Value* a = g->apply1("exp", {x});
  ir::Value* m = g->apply1("mul", {a, g->constant(2.0)});
  ir::Value* i = g->apply1("cast", {m}, {{"dtype", DType::F32}});
  ir::Value* s = g->apply1("sum", {a}, {{"dim", Ints{1}}});
  g->set_outputs({i, s, a});
  EXPECT_EQ(group_ops(*g), (Groups{{"exp", "mul", "cast", "sum"}}));
  for (int64_t n : {0, 1, 33}) {
    expect_compiled_matches(*g, {random_tensor({n, 7}, DType::F16, uint64_t(n))}, 5e-3);
  }
}

// How often `name` is called in the kernels' loop IR.
int count_calls(const std::vector<loop::Kernel>& ks, const std::string& name) {
  struct Counter : loop::IRVisitor {
    using loop::IRVisitor::visit_node;
    const std::string& name;
    int n = 0;
    explicit Counter(const std::string& s) : name(s) {}
    void visit_node(const loop::Call* op) override {
      n += op->name == name;
      loop::IRVisitor::visit_node(op);
    }
  } c(name);
  for (const loop::Kernel& k : ks) c.visit(k.body);
  return c.n;
}

// The loops at the top of a kernel's body.
size_t top_level_loops(const loop::Kernel& k) {
  const loop::Block* b = k.body.as<loop::Block>();
  if (!b) return k.body.as<loop::For>() ? 1 : 0;
  size_t n = 0;
  for (const loop::Stmt& s : b->stmts) n += s.as<loop::For>() != nullptr;
  return n;
}

TEST(Fusion, HandWrittenSoftmaxIsOneKernelOverTheRows) {
  // e = exp(x - max(x)); e / sum(e): one kernel, one loop over the rows, exp
  // computed once per element, and the row intermediates live in scratch.
  auto g = std::make_unique<ir::Graph>("sm");
  ir::Value* x = g->add_input("x", ir::Type::tensor(DType::F32, {Dim::sym("N"), 33}));
  ir::Value* m = g->apply1("amax", {x}, {{"dim", Ints{-1}}, {"keepdim", true}});
  ir::Value* e = g->apply1("exp", {g->apply1("sub", {x, m})});
  ir::Value* s = g->apply1("sum", {e}, {{"dim", Ints{-1}}, {"keepdim", true}});
  g->set_outputs({g->apply1("div", {e, s})});
  auto groups = passes::group_kernels(*g);
  ASSERT_EQ(groups.size(), 1u);
  std::vector<passes::KernelPlan> plans;
  std::vector<loop::Kernel> ks = passes::lower_groups(*g, groups, {}, &plans);
  EXPECT_EQ(top_level_loops(ks[0]), 1u) << loop::to_string(ks[0]);
  EXPECT_EQ(count_calls(ks, "exp"), 1) << loop::to_string(ks[0]);
  for (const passes::BufferParam& b : plans[0].buffers) {
    EXPECT_NE(b.role, passes::BufferRole::Intermediate) << b.buf->name;
  }
  for (int64_t n : {0, 1, 7, 300}) {
    expect_compiled_matches(*g, {random_tensor({n, 33}, DType::F32, uint64_t(n) + 3)}, 1e-5);
  }
}

TEST(Fusion, MeanAndVarAndRmsNormAreOneKernelEach) {
  auto g = std::make_unique<ir::Graph>("mv");
  ir::Value* x = g->add_input("x", ir::Type::tensor(DType::F32, {Dim::sym("N"), 17}));
  ir::Value* w = g->add_input("w", ir::Type::tensor(DType::F32, {17}));
  ir::Value* mean = g->apply1("mean", {x}, {{"dim", Ints{-1}}});
  ir::Value* var = g->apply1("var", {x}, {{"dim", Ints{-1}}});
  ir::Value* ms =
      g->apply1("mean", {g->apply1("mul", {x, x})}, {{"dim", Ints{-1}}, {"keepdim", true}});
  ir::Value* inv = g->apply1("rsqrt", {g->apply1("add", {ms, g->constant(1e-6)})});
  ir::Value* rms = g->apply1("mul", {g->apply1("mul", {x, inv}), w});
  g->set_outputs({mean, var, rms});
  auto groups = passes::group_kernels(*g);
  ASSERT_EQ(groups.size(), 1u) << groups[1].reason;  // siblings over the rows of x merge
  EXPECT_NE(groups[0].reason.find("horizontal fusion"), std::string::npos) << groups[0].reason;
  std::vector<loop::Kernel> ks = passes::lower_groups(*g, groups);
  EXPECT_EQ(top_level_loops(ks[0]), 1u) << loop::to_string(ks[0]);
  for (int64_t n : {0, 1, 65}) {
    expect_compiled_matches(
        *g, {random_tensor({n, 17}, DType::F32, uint64_t(n)), random_tensor({17}, DType::F32, 9)},
        1e-5);
  }
}

TEST(Fusion, ElementwiseSiblingsShareOnePass) {
  auto g = std::make_unique<ir::Graph>("hsib");
  ir::Value* x = g->add_input("x", ir::Type::tensor(DType::F32, {Dim::sym("N"), 5}));
  ir::Value* a = g->apply1("exp", {x});
  ir::Value* b = g->apply1("sin", {x});
  g->set_outputs({a, b});
  EXPECT_EQ(group_ops(*g), (Groups{{"exp", "sin"}}));
  std::vector<loop::Kernel> ks = passes::lower_groups(*g, passes::group_kernels(*g));
  EXPECT_EQ(top_level_loops(ks[0]), 1u) << loop::to_string(ks[0]);
  expect_compiled_matches(*g, {random_tensor({11, 5}, DType::F32, 2)});
}

TEST(Fusion, LimitsSplitLongChains) {
  auto g = chain();
  passes::FusionOptions o;
  o.max_nodes = 3;
  std::vector<passes::KernelGroup> groups = passes::group_kernels(*g, o);
  EXPECT_GT(groups.size(), 2u);
  for (const passes::KernelGroup& grp : groups) EXPECT_LE(grp.nodes.size(), 3u);
}

TEST(Fusion, ConvBatchNormReluIsOneKernelThenThePool) {
  auto g = std::make_unique<ir::Graph>("cbr");
  ir::Value* x = g->add_input("x", ir::Type::tensor(DType::F32, {2, 3, 8, 8}));
  ir::Value* w = g->add_input("w", ir::Type::tensor(DType::F32, {4, 3, 3, 3}));
  ir::Value* p = g->add_input("p", ir::Type::tensor(DType::F32, {4}));
  ir::Value* y = g->apply1("conv2d", {x, w, g->constant(ir::NoneAttr{})}, {{"padding", Ints{1}}});
  y = g->apply1("batch_norm", {y, p, g->apply1("abs", {p}), p, p}, {{"eps", 1e-5}});
  y = g->apply1("relu", {y});
  y = g->apply1("max_pool2d", {y}, {{"kernel_size", Ints{2}}});
  g->set_outputs({y});
  // abs(p), cheap and over a graph input only, is recomputed by the
  // batch-norm epilogue instead of running as a kernel of its own.
  // The 2x2 pool is folded into the conv's kernel by the fusion
  // (tests/unit/conv_pool_fold_test.cpp) ...
  Groups gs = group_ops(*g);
  ASSERT_EQ(gs.size(), 1u);
  EXPECT_EQ(gs[0], (std::vector<std::string>{"conv2d", "batch_norm", "relu", "max_pool2d"}));
  // ... and moved back into a kernel of its own by choose_algorithms: with 3
  // input channels the conv is not conv.winograd.
  std::vector<passes::KernelGroup> chosen = passes::group_kernels(*g);
  passes::choose_algorithms(chosen, api::host_target());
  ASSERT_EQ(chosen.size(), 2u);
  EXPECT_EQ(chosen[0].nodes.size(), 3u);
  EXPECT_EQ(chosen[1].nodes.at(0)->op(), "max_pool2d");
  expect_compiled_matches(
      *g,
      {random_tensor({2, 3, 8, 8}, DType::F32, 1), random_tensor({4, 3, 3, 3}, DType::F32, 2),
       random_tensor({4}, DType::F32, 3)},
      1e-4);
}

}  // namespace
}  // namespace kiln::test
