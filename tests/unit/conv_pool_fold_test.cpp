// A 2x2 stride-2 max_pool2d folded into the store of the conv2d kernel it
// reads (passes/fuse.cpp fold_pool, conv.winograd's pooled_store; docs/conv.md
// "Max pool folded into Winograd"): values against the reference interpreter
// (odd channel counts, images 2..56, batch 1 and 3, NaN and -inf through the
// max, with and without the batch-norm/ReLU epilogue), the kernel counts and
// explain text through compile(), and the cases that must not fold.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "conv_test_util.h"
#include "kiln/compile.h"
#include "passes/fuse.h"

namespace kiln::test {
namespace {

using Ints = std::vector<int64_t>;

struct Block {
  int64_t n = 1, cin = 3, cout = 7, hw = 6;
  bool bn = true, relu = true;
  Ints pool_kernel{2}, pool_stride{}, pool_padding{0, 0};
  int64_t conv_stride = 1;
  bool return_conv = false;  // the conv's value is also an output
};

struct BlockGraph {
  std::unique_ptr<ir::Graph> g = std::make_unique<ir::Graph>("block");
  std::vector<Tensor> feed;
};

// conv2d 3x3 pad 1 (+ bias) -> batch_norm (inference) -> relu -> max_pool2d.
BlockGraph block_graph(const Block& b, uint64_t seed) {
  BlockGraph out;
  ir::Graph& g = *out.g;
  auto input = [&](const std::string& name, const Shape& s, uint64_t k) {
    out.feed.push_back(random_tensor(s, DType::F32, seed + k));
    return g.add_input(name, ir::Type::tensor(DType::F32, ir::dims_from_shape(s)));
  };
  ir::Value* x = input("x", {b.n, b.cin, b.hw, b.hw}, 0);
  ir::Value* w = input("w", {b.cout, b.cin, 3, 3}, 1);
  ir::Value* bias = input("b", {b.cout}, 2);
  ir::Value* y = g.apply1("conv2d", {x, w, bias},
                          {{"padding", Ints{1}}, {"stride", Ints{b.conv_stride}}});
  ir::Value* conv = y;
  if (b.bn) {
    ir::Value* p = input("p", {b.cout}, 3);  // mean and gamma
    ir::Value* beta = input("beta", {b.cout}, 4);
    ir::Value* var = g.apply1("add", {g.apply1("abs", {p}), g.constant(0.5)});
    y = g.apply1("batch_norm", {y, p, var, p, beta}, {{"eps", 1e-5}});
  }
  if (b.relu) y = g.apply1("relu", {y});
  y = g.apply1("max_pool2d", {y},
               {{"kernel_size", b.pool_kernel},
                {"stride", b.pool_stride},
                {"padding", b.pool_padding}});
  if (b.return_conv) {
    g.set_outputs({y, conv});
  } else {
    g.set_outputs({y});
  }
  return out;
}

std::vector<passes::KernelGroup> groups_of(const ir::Graph& g) {
  return passes::group_kernels(g);
}

// The ops of each group.
std::vector<std::vector<std::string>> ops_of(const std::vector<passes::KernelGroup>& gs) {
  std::vector<std::vector<std::string>> out;
  for (const passes::KernelGroup& grp : gs) {
    std::vector<std::string> ops;
    for (const ir::Node* n : grp.nodes) ops.push_back(n->op());
    out.push_back(ops);
  }
  return out;
}

// The fused groups lowered with `algorithm` for every conv (no split back),
// scheduled as compile() does, run natively.
std::vector<Tensor> run_groups(const ir::Graph& g, const std::vector<Tensor>& feed,
                               const std::string& algorithm, int* intermediates = nullptr) {
  std::vector<passes::KernelGroup> gs = groups_of(g);
  for (passes::KernelGroup& grp : gs) {
    for (const ir::Node* n : grp.nodes) {
      if (n->op() == "conv2d") grp.algorithm.name = algorithm;
    }
  }
  passes::LowerOptions o;
  o.target = api::host_target();
  std::vector<passes::KernelPlan> plans;
  std::vector<loop::Kernel> lowered = passes::lower_groups(g, gs, o, &plans);
  if (intermediates) {
    *intermediates = 0;
    for (const passes::KernelPlan& p : plans) {
      for (const passes::BufferParam& bp : p.buffers) {
        *intermediates += bp.role == passes::BufferRole::Intermediate;
      }
    }
  }
  return run_native(g, schedule_all(lowered, plans), plans, feed);
}

// K = Cin x 9 products per output; the F(2x2, 3x3) bound of the conv tests.
void expect_matches(const std::vector<Tensor>& got, const std::vector<Tensor>& want, int64_t cin,
                    const std::string& what) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_TRUE(tensors_close(got[i], want[i], 1e-5 * 4, 2e-5 * 4 * double(cin * 9)))
        << what << " output " << i;
  }
}

TEST(ConvPoolFold, FoldsIntoTheConvGroup) {
  Block b;
  BlockGraph bg = block_graph(b, 1);
  std::vector<passes::KernelGroup> gs = groups_of(*bg.g);
  ASSERT_EQ(gs.size(), 1u);
  EXPECT_EQ(ops_of(gs)[0],
            (std::vector<std::string>{"conv2d", "batch_norm", "relu", "max_pool2d"}));
  ASSERT_NE(gs[0].folded_pool, nullptr);
  EXPECT_NE(gs[0].reason.find("max_pool2d 2x2 stride 2 folded into the store"), std::string::npos)
      << gs[0].reason;
}

// Winograd computes whole pool windows: the pooled value is stored, the
// conv's never is.
TEST(ConvPoolFold, WinogradValuesAcrossShapes) {
  struct Shape3 {
    int64_t n, cin, cout;
  };
  for (int64_t hw : {2, 6, 14, 56}) {
    for (Shape3 s : {Shape3{1, 3, 7}, Shape3{3, 7, 3}, Shape3{1, 32, 33}}) {
      if (hw == 56 && s.cin == 32) continue;  // enough at 56 with the small ones
      for (bool epilogue : {true, false}) {
        Block b;
        b.n = s.n, b.cin = s.cin, b.cout = s.cout, b.hw = hw;
        b.bn = b.relu = epilogue;
        BlockGraph bg = block_graph(b, uint64_t(hw * 100 + s.cin));
        int intermediates = -1;
        std::vector<Tensor> got = run_groups(*bg.g, bg.feed, "conv.winograd", &intermediates);
        std::vector<Tensor> want = ir::interpret(*bg.g, bg.feed);
        const std::string what = "hw " + std::to_string(hw) + " n " + std::to_string(s.n) +
                                 " cin " + std::to_string(s.cin) + " cout " +
                                 std::to_string(s.cout) + (epilogue ? " bn relu" : "");
        expect_matches(got, want, s.cin, what);
        // Only the pooled value is stored: no full-size intermediate.
        EXPECT_EQ(intermediates, 0) << what;
      }
    }
  }
}

// NaN propagates through the max as the interpreter's (torch's) max_pool2d;
// -inf is an ordinary value that loses to anything but -inf and NaN.
TEST(ConvPoolFold, NanAndMinusInfinity) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  for (bool relu : {false, true}) {
    Block b;
    b.n = 3, b.cin = 5, b.cout = 7, b.hw = 14, b.relu = relu;
    BlockGraph bg = block_graph(b, 42);
    // x: NaN at a few pixels (each poisons the windows that read it).
    Tensor& x = bg.feed[0];
    x.set(std::vector<int64_t>{0, 1, 3, 4}, nan);
    x.set(std::vector<int64_t>{2, 4, 13, 13}, nan);
    x.set(std::vector<int64_t>{1, 0, 0, 0}, nan);
    // The batch norm's beta (and so the whole channel) NaN in channel 2,
    // -inf in channel 5 (the max of a window of -inf is -inf; relu makes it 0).
    Tensor& p = bg.feed[4];
    p.set(std::vector<int64_t>{2}, nan);
    p.set(std::vector<int64_t>{5}, -inf);
    std::vector<Tensor> got = run_groups(*bg.g, bg.feed, "conv.winograd");
    std::vector<Tensor> want = ir::interpret(*bg.g, bg.feed);
    expect_matches(got, want, b.cin, relu ? "nan relu" : "nan");
    // Not vacuous: NaN and -inf reached the output.
    const Tensor& y = want[0];
    EXPECT_TRUE(std::isnan(y.get(std::vector<int64_t>{0, 0, 1, 2})));
    EXPECT_TRUE(std::isnan(y.get(std::vector<int64_t>{1, 2, 3, 3})));
    if (!relu) {
      EXPECT_EQ(y.get(std::vector<int64_t>{1, 5, 3, 3}), -inf);
    }
  }
}

// Another candidate given the folded group (the autotuner may time them all)
// runs the pool as a second nest of the same kernel: still the right values.
TEST(ConvPoolFold, OtherCandidatesKeepThePoolNest) {
  Block b;
  b.n = 2, b.cin = 7, b.cout = 3, b.hw = 14;
  BlockGraph bg = block_graph(b, 5);
  std::vector<Tensor> want = ir::interpret(*bg.g, bg.feed);
  for (const char* algorithm : {"naive", "conv.direct", "conv.im2col"}) {
    int intermediates = -1;
    std::vector<Tensor> got = run_groups(*bg.g, bg.feed, algorithm, &intermediates);
    EXPECT_EQ(intermediates, 1) << algorithm;  // the conv block's value, then the pool
    expect_matches(got, want, b.cin, algorithm);
  }
}

// Through compile(): the heuristic picks conv.winograd at 32+ channels on a
// 56-wide image, and the pool is folded (one kernel); at 3 input channels
// it picks another candidate and the pool keeps a kernel of its own.
TEST(ConvPoolFold, CompileAgreesWithTheAlgorithm) {
  struct Case {
    int64_t cin, cout;
    int kernels;
  };
  for (Case c : {Case{32, 32, 1}, Case{3, 8, 2}}) {
    Block b;
    b.cin = c.cin, b.cout = c.cout, b.hw = 56;
    BlockGraph bg = block_graph(b, 9);
    CompiledFunction f = compile(*bg.g);
    EXPECT_EQ(f.num_kernels(), c.kernels) << f.explain();
    const std::string e = f.explain();
    if (c.kernels == 1) {
      EXPECT_NE(e.find("algorithm: conv.winograd"), std::string::npos) << e;
      EXPECT_NE(e.find("folded into the store"), std::string::npos) << e;
    } else {
      EXPECT_EQ(e.find("folded into the store"), std::string::npos) << e;
      EXPECT_NE(e.find("not folded into the conv2d kernel: its algorithm is conv."),
                std::string::npos)
          << e;
    }
    std::vector<Tensor> got = f(bg.feed);
    expect_matches(got, ir::interpret(*bg.g, bg.feed), b.cin, "compile");
  }
}

// Where the pool must not fold: it stays a kernel of its own, says why, and
// the values are right.
TEST(ConvPoolFold, NotFolded) {
  struct Case {
    std::string what, why;
    Block b;
  };
  std::vector<Case> cases;
  Block odd;
  odd.hw = 7;
  cases.push_back({"odd height", "the height or width is odd", odd});
  Block stride1;
  stride1.pool_stride = {1};
  cases.push_back({"stride-1 pool", "its stride is not 2", stride1});
  Block padded;
  padded.pool_padding = {1, 1};
  cases.push_back({"padded pool", "it pads", padded});
  Block k3;
  k3.pool_kernel = {3};
  k3.pool_stride = {2};
  cases.push_back({"3x3 pool", "its kernel is not 2x2", k3});
  Block returned;
  returned.return_conv = true;
  cases.push_back(
      {"conv returned", "the conv2d kernel's values are also read elsewhere or returned", returned});
  Block strided;
  strided.conv_stride = 2;
  strided.hw = 12;
  cases.push_back({"strided conv", "", strided});  // folds here; compile splits it
  for (const Case& c : cases) {
    BlockGraph bg = block_graph(c.b, 3);
    std::vector<passes::KernelGroup> gs = groups_of(*bg.g);
    if (!c.why.empty()) {
      ASSERT_EQ(gs.size(), 2u) << c.what;
      EXPECT_EQ(gs[0].folded_pool, nullptr) << c.what;
      EXPECT_NE(gs[1].reason.find("not folded into the conv2d kernel: " + c.why),
                std::string::npos)
          << c.what << ": " << gs[1].reason;
    }
    CompiledFunction f = compile(*bg.g);
    EXPECT_EQ(f.num_kernels(), 2) << c.what << "\n" << f.explain();
    std::vector<Tensor> got = f(bg.feed);
    expect_matches(got, ir::interpret(*bg.g, bg.feed), c.b.cin, c.what);
  }
}

}  // namespace
}  // namespace kiln::test
