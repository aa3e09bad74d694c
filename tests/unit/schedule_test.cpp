// Schedules: each transform's loop nest before and after (exact text), and
// scheduled kernels — hand-written and lowered from graphs — evaluate to the
// same values as unscheduled ones (loop_eval), including predicated tails.
#include <gtest/gtest.h>

#include "ir/loop/loop_eval.h"
#include "ir/loop/visitor.h"
#include "lower_test_util.h"
#include "op_test_util.h"
#include "passes/schedule/schedule.h"

namespace kiln::passes {
namespace {

using namespace kiln::loop;  // NOLINT
using test::random_tensor;
using test::tensors_close;

Expr var(const char* n) {
  return Var::make(i64_t(), n);
}
Expr f32(double v) {
  return FloatImm::make({DType::F32, 1}, v);
}

struct Scale {
  Buf x = make_buf("x", DType::F32), y = make_buf("y", DType::F32);
  Stmt nest = For::make(var("i"), make_int(0), var("n"), ForKind::Serial,
                        Store::make(y, var("i"), Load::make(x, var("i")) * f32(2)));
  // y = nest(x) for n elements.
  Tensor run(const Stmt& s, const Tensor& in) const {
    Tensor out = Tensor::zeros({in.numel()}, DType::F32);
    eval_stmt(s, {{x, in}, {y, out}}, {{"n", in.numel()}});
    return out;
  }
};

TEST(Schedule, SplitGuardsTheTail) {
  Scale k;
  Stmt s = split(k.nest, "i", 4, "i_o", "i_i");
  EXPECT_EQ(to_string(s),
            "for (i_o, 0, ((n + 3) / 4)) {\n"
            "  for (i_i, 0, 4) {\n"
            "    if ((((i_o * 4) + i_i) < n)) {\n"
            "      y[((i_o * 4) + i_i)] = (x[((i_o * 4) + i_i)] * 2.0f)\n"
            "    }\n"
            "  }\n"
            "}\n");
  for (int64_t n : {0, 1, 7, 8, 33}) {
    Tensor in = random_tensor({n}, DType::F32, uint64_t(n));
    EXPECT_TRUE(k.run(s, in).equal(k.run(k.nest, in))) << n;
  }
  // A constant extent the factor divides needs no guard.
  Stmt c = For::make(var("i"), make_int(0), make_int(8), ForKind::Serial,
                     Store::make(k.y, var("i"), Load::make(k.x, var("i"))));
  EXPECT_EQ(
      to_string(split(c, "i", 4, "a", "b")),
      "for (a, 0, 2) {\n  for (b, 0, 4) {\n    y[((a * 4) + b)] = x[((a * 4) + b)]\n  }\n}\n");
  EXPECT_THROW(split(k.nest, "nope", 4, "a", "b"), Error);
  EXPECT_THROW(split(k.nest, "i", 0, "a", "b"), Error);
}

TEST(Schedule, ShiftInwardsRecomputesTheLastChunk) {
  Scale k;
  Stmt s = split(k.nest, "i", 4, "i_o", "i_i", TailStrategy::ShiftInwards);
  EXPECT_EQ(to_string(s),
            "for (i_o, 0, ((n + 3) / 4)) {\n"
            "  for (i_i, 0, 4) {\n"
            "    y[(min((i_o * 4), (n - 4)) + i_i)] = (x[(min((i_o * 4), (n - 4)) + i_i)] * 2.0f)\n"
            "  }\n"
            "}\n");
  for (int64_t n : {4, 7, 33}) {
    Tensor in = random_tensor({n}, DType::F32, uint64_t(n));
    EXPECT_TRUE(k.run(s, in).equal(k.run(k.nest, in))) << n;
  }
}

TEST(Schedule, VectorizeWithPredicatedTail) {
  Scale k;
  Stmt s = vectorize(split(k.nest, "i", 8, "i_o", "i_v", TailStrategy::Predicate), "i_v");
  EXPECT_EQ(to_string(s),
            "for (i_o, 0, ((n + 7) / 8)) {\n"
            "  y[ramp((i_o * 8), 1, 8) if (ramp((i_o * 8), 1, 8) < x8(n))] = "
            "(x[ramp((i_o * 8), 1, 8) if (ramp((i_o * 8), 1, 8) < x8(n))] * x8(2.0f))\n"
            "}\n");
  for (int64_t n : {0, 1, 7, 8, 33, 1023}) {
    Tensor in = random_tensor({n}, DType::F32, uint64_t(n));
    EXPECT_TRUE(k.run(s, in).equal(k.run(k.nest, in))) << n;
  }
  // A lane-dependent value stored to one place cannot be vectorized.
  Stmt sum = For::make(
      var("i"), make_int(0), make_int(8), ForKind::Serial,
      Store::make(k.y, make_int(0), Load::make(k.y, make_int(0)) + Load::make(k.x, var("i"))));
  EXPECT_THROW(vectorize(sum, "i"), Error);
  EXPECT_THROW(vectorize(k.nest, "i"), Error);  // extent n is not constant
}

TEST(Schedule, PredicatedTailRunsFullChunksUnmasked) {
  Scale k;
  Stmt s = split(k.nest, "i", 8, "i_o", "i_v", TailStrategy::PredicatedTail);
  EXPECT_EQ(to_string(s),
            "for (i_o, 0, (n / 8)) {\n"
            "  for (i_v, 0, 8) {\n"
            "    y[((i_o * 8) + i_v)] = (x[((i_o * 8) + i_v)] * 2.0f)\n"
            "  }\n"
            "}\n"
            "for (i_v, 0, 8) {\n"
            "  if (((((n / 8) * 8) + i_v) < n)) {\n"
            "    y[(((n / 8) * 8) + i_v)] = (x[(((n / 8) * 8) + i_v)] * 2.0f)\n"
            "  }\n"
            "}\n");
  Stmt v = vectorize(s, "i_v");  // both loops named i_v
  EXPECT_EQ(to_string(v),
            "for (i_o, 0, (n / 8)) {\n"
            "  y[ramp((i_o * 8), 1, 8)] = (x[ramp((i_o * 8), 1, 8)] * x8(2.0f))\n"
            "}\n"
            "y[ramp(((n / 8) * 8), 1, 8) if (ramp(((n / 8) * 8), 1, 8) < x8(n))] = "
            "(x[ramp(((n / 8) * 8), 1, 8) if (ramp(((n / 8) * 8), 1, 8) < x8(n))] * x8(2.0f))\n");
  for (int64_t n : {0, 1, 7, 8, 9, 33, 1023}) {
    Tensor in = random_tensor({n}, DType::F32, uint64_t(n));
    EXPECT_TRUE(k.run(s, in).equal(k.run(k.nest, in))) << n;
    EXPECT_TRUE(k.run(v, in).equal(k.run(k.nest, in))) << n;
  }
  // A static extent the factor divides has no tail; a shorter one has only the tail.
  Stmt c16 = For::make(var("i"), make_int(0), make_int(16), ForKind::Serial,
                       Store::make(k.y, var("i"), Load::make(k.x, var("i"))));
  EXPECT_EQ(to_string(vectorize(split(c16, "i", 8, "a", "b", TailStrategy::PredicatedTail), "b")),
            "for (a, 0, 2) {\n  y[ramp((a * 8), 1, 8)] = x[ramp((a * 8), 1, 8)]\n}\n");
  Stmt c3 = For::make(var("i"), make_int(0), make_int(3), ForKind::Serial,
                      Store::make(k.y, var("i"), Load::make(k.x, var("i"))));
  EXPECT_EQ(to_string(vectorize(split(c3, "i", 8, "a", "b", TailStrategy::PredicatedTail), "b")),
            "y[ramp(0, 1, 8) if (ramp(0, 1, 8) < x8(3))] = x[ramp(0, 1, 8) if (ramp(0, 1, 8) < "
            "x8(3))]\n");
}

TEST(Schedule, ShortenLastClampsTheLastChunk) {
  Scale k;
  Stmt s = split(k.nest, "i", var("b"), "i_b", "i_i", TailStrategy::ShortenLast);
  EXPECT_EQ(to_string(s),
            "for (i_b, 0, ((n + (b - 1)) / b)) {\n"
            "  for (i_i, 0, min(b, (n - (i_b * b)))) {\n"
            "    y[((i_b * b) + i_i)] = (x[((i_b * b) + i_i)] * 2.0f)\n"
            "  }\n"
            "}\n");
  for (int64_t n : {0, 1, 7, 8, 33}) {
    for (int64_t b : {1, 3, 8, 100}) {
      Tensor in = random_tensor({n}, DType::F32, uint64_t(n));
      Tensor out = Tensor::zeros({n}, DType::F32);
      eval_stmt(s, {{k.x, in}, {k.y, out}}, {{"n", n}, {"b", b}});
      EXPECT_TRUE(out.equal(k.run(k.nest, in))) << n << " " << b;
    }
  }
  EXPECT_EQ(to_string(split(k.nest, "i", 4, "i_b", "i_i", TailStrategy::ShortenLast)),
            "for (i_b, 0, ((n + 3) / 4)) {\n"
            "  for (i_i, 0, min(4, (n - (i_b * 4)))) {\n"
            "    y[((i_b * 4) + i_i)] = (x[((i_b * 4) + i_i)] * 2.0f)\n"
            "  }\n"
            "}\n");
}

TEST(Schedule, SpecializeVersionsOnAStride) {
  Buf x = make_buf("x", DType::F32), y = make_buf("y", DType::F32);
  Stmt nest = For::make(var("i"), make_int(0), make_int(8), ForKind::Serial,
                        Store::make(y, var("i"), Load::make(x, var("i") * var("x_s0"))));
  Stmt v = vectorize(nest, "i");
  Stmt s = specialize(v, {{"x_s0", 1}});
  EXPECT_EQ(to_string(s),
            "if ((x_s0 == 1)) {\n"
            "  y[ramp(0, 1, 8)] = x[ramp(0, 1, 8)]\n"
            "} else {\n"
            "  y[ramp(0, 1, 8)] = x[ramp(0, x_s0, 8)]\n"
            "}\n");
  Tensor in = random_tensor({16}, DType::F32, 5);
  for (int64_t stride : {1, 2}) {
    auto run = [&](const Stmt& st) {
      Tensor out = Tensor::zeros({8}, DType::F32);
      eval_stmt(st, {{x, in}, {y, out}}, {{"x_s0", stride}});
      return out;
    };
    EXPECT_TRUE(run(s).equal(run(nest))) << stride;
  }
}

TEST(Schedule, ReorderUnrollParallelize) {
  Buf x = make_buf("x", DType::F32), y = make_buf("y", DType::F32);
  Stmt body = Store::make(y, var("i") * make_int(3) + var("j"),
                          Load::make(x, var("j") * make_int(2) + var("i")));
  Stmt nest = For::make(var("i"), make_int(0), make_int(2), ForKind::Serial,
                        For::make(var("j"), make_int(0), make_int(3), ForKind::Serial, body));
  Stmt r = reorder(nest, "i", "j");
  EXPECT_EQ(
      to_string(r),
      "for (j, 0, 3) {\n  for (i, 0, 2) {\n    y[((i * 3) + j)] = x[((j * 2) + i)]\n  }\n}\n");
  Stmt u = unroll(r, "i");
  EXPECT_EQ(to_string(u),
            "for (j, 0, 3) {\n  y[j] = x[(j * 2)]\n  y[(j + 3)] = x[((j * 2) + 1)]\n}\n");
  Stmt p = parallelize(u, "j");
  EXPECT_EQ(to_string(p),
            "for (j, 0, 3) parallel {\n  y[j] = x[(j * 2)]\n  y[(j + 3)] = x[((j * 2) + 1)]\n}\n");
  Tensor in = random_tensor({6}, DType::F32, 3);
  auto run = [&](const Stmt& s) {
    Tensor out = Tensor::zeros({6}, DType::F32);
    eval_stmt(s, {{x, in}, {y, out}});
    return out;
  };
  EXPECT_TRUE(run(p).equal(run(nest)));
  EXPECT_THROW(reorder(nest, "j", "i"), Error);
  EXPECT_THROW(unroll(For::make(var("k"), make_int(0), var("n"), ForKind::Serial, body), "k"),
               Error);
}

// Lowers a one-node graph, schedules it by default and checks both agree
// (within `rtol` for float sums, which the schedule reassociates).
void check_default_schedule(const std::string& op, std::vector<test::In> ins,
                            const ir::Attrs& attrs, int width, double rtol = 0) {
  test::Built b = test::build(op, ins, attrs);
  std::vector<KernelPlan> plans;
  std::vector<Kernel> ks = lower_graph(*b.g, {}, &plans);
  std::vector<Kernel> scheduled;
  for (size_t i = 0; i < ks.size(); ++i) {
    ScheduleTarget t;
    t.vector_width = width;
    t.parallel_grain = 16;  // block and parallelize even these small nests
    scheduled.push_back(default_schedule(ks[i], plans[i].category, t));
  }
  std::vector<Tensor> want = test::run_kernels(*b.g, ks, plans, b.feed);
  std::vector<Tensor> got = test::run_kernels(*b.g, scheduled, plans, b.feed);
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_TRUE(tensors_close(got[i], want[i], rtol, rtol)) << op << " width " << width << "\n"
                                                            << to_string(scheduled[0]);
  }
}

TEST(Schedule, DefaultScheduleKeepsValues) {
  for (int width : {8, 4, 1}) {
    check_default_schedule(
        "add", {random_tensor({33, 31}, DType::F32, 1), random_tensor({31}, DType::F32, 2)}, {},
        width);
    check_default_schedule("exp", {random_tensor({1023}, DType::F16, 1)}, {}, width);
    check_default_schedule(
        "where",
        {random_tensor({7}, DType::Bool, 1), random_tensor({3, 7}, DType::I32, 2),
         random_tensor({7}, DType::I32, 3)},
        {}, width);
    check_default_schedule("transpose", {random_tensor({5, 9}, DType::I64, 1)},
                           {{"dim0", int64_t{0}}, {"dim1", int64_t{1}}}, width);
    check_default_schedule("sum", {random_tensor({9, 5}, DType::F32, 1)},
                           {{"dim", std::vector<int64_t>{1}}}, width, 1e-6);
    check_default_schedule(
        "matmul", {random_tensor({3, 4}, DType::F32, 1), random_tensor({4, 5}, DType::F32, 2)}, {},
        width);
    check_default_schedule(
        "cat", {random_tensor({2, 3}, DType::F32, 1), random_tensor({2, 5}, DType::F32, 2)},
        {{"dim", int64_t{1}}}, width);
  }
}

TEST(Schedule, DefaultScheduleOfAnElementwiseKernel) {
  auto g = std::make_unique<ir::Graph>("ew");
  ir::Value* x = g->add_input("x", ir::Type::tensor(DType::F32, {ir::Dim::sym("N")}));
  g->set_outputs({g->apply1("relu", {x})});
  LowerOptions packed;
  packed.strided_inputs = false;
  std::vector<KernelPlan> plans;
  std::vector<Kernel> ks = lower_graph(*g, packed, &plans);
  Kernel s = default_schedule(ks[0], plans[0].category);
  // An unmasked main loop in blocks of 4096 vectors (one task's share), then
  // one masked vector for the rest.
  EXPECT_EQ(to_string(s),
            "kernel ew_0_relu(x: f32*, v0: f32*, N: i64) {\n"
            "  for (i0_o_b, 0, (((N / 8) + 4095) / 4096)) parallel {\n"
            "    for (i0_o_i, 0, min(4096, ((N / 8) - (i0_o_b * 4096)))) {\n"
            "      v0[ramp((((i0_o_b * 4096) + i0_o_i) * 8), 1, 8)] = "
            "max(x[ramp((((i0_o_b * 4096) + i0_o_i) * 8), 1, 8)], x8(0.0f))\n"
            "    }\n"
            "  }\n"
            "  v0[ramp(((N / 8) * 8), 1, 8) if (ramp(((N / 8) * 8), 1, 8) < x8(N))] = "
            "max(x[ramp(((N / 8) * 8), 1, 8) if (ramp(((N / 8) * 8), 1, 8) < x8(N))], x8(0.0f))\n"
            "}\n");
  for (int64_t n : {0, 5, 17, 40000}) {
    std::vector<Tensor> in{random_tensor({n}, DType::F32, uint64_t(n))};
    EXPECT_TRUE(
        tensors_close(test::run_kernels(*g, {s}, plans, in)[0], ir::interpret(*g, in)[0], 0, 0));
  }
}

// Static extents around the vector width: the split leaves one chunk (its
// outer loop folds away) or none, so there may be no loop left to run
// parallel. Scheduling must not throw and must keep the values.
TEST(Schedule, DefaultScheduleOfShortStaticLoops) {
  for (int64_t n : {0, 1, 3, 5, 7, 8, 9, 15}) {
    auto g = std::make_unique<ir::Graph>("short");
    ir::Value* x = g->add_input("x", ir::Type::tensor(DType::F32, {n}));
    g->set_outputs({g->apply1("relu", {x})});
    LowerOptions packed;
    packed.strided_inputs = false;
    std::vector<KernelPlan> plans;
    std::vector<Kernel> ks = lower_graph(*g, packed, &plans);
    ASSERT_EQ(ks.size(), 1u) << n;
    Kernel s;
    ASSERT_NO_THROW(s = default_schedule(ks[0], plans[0].category)) << "extent " << n;
    std::string text = to_string(s);
    if (n == 0) {
      EXPECT_EQ(text.find("for ("), std::string::npos) << text;
      EXPECT_EQ(text.find("v0["), std::string::npos) << text;
    } else if (n == 1) {
      EXPECT_EQ(text.find("for ("), std::string::npos) << text;  // lowering drops the loop
      EXPECT_NE(text.find("v0[0] = "), std::string::npos) << text;
    } else {
      // At most one unmasked vector and one masked one, no loop, nothing parallel.
      EXPECT_EQ(text.find("for ("), std::string::npos) << text;
      EXPECT_NE(text.find("v0[ramp(0, 1, 8)"), std::string::npos) << text;
      EXPECT_EQ(text.find(" if (") == std::string::npos, n == 8) << text;
    }
    std::vector<Tensor> in{random_tensor({n}, DType::F32, uint64_t(n) + 1)};
    EXPECT_TRUE(
        tensors_close(test::run_kernels(*g, {s}, plans, in)[0], ir::interpret(*g, in)[0], 0, 0))
        << "extent " << n << "\n"
        << text;
    // Serial targets and other widths never throw either.
    for (int width : {1, 4, 16}) {
      for (bool parallel : {true, false}) {
        ScheduleTarget t;
        t.vector_width = width;
        t.parallel = parallel;
        Kernel other;
        ASSERT_NO_THROW(other = default_schedule(ks[0], plans[0].category, t))
            << "extent " << n << " width " << width;
        EXPECT_TRUE(tensors_close(test::run_kernels(*g, {other}, plans, in)[0],
                                  ir::interpret(*g, in)[0], 0, 0))
            << "extent " << n << " width " << width;
      }
    }
  }
}

// An outer dim of extent 1 folds away too: the next loop left runs parallel
// (here with a grain of one element, so even this small nest is shared out).
TEST(Schedule, DefaultScheduleParallelizesTheOutermostLoopLeft) {
  auto g = std::make_unique<ir::Graph>("row");
  ir::Value* x = g->add_input("x", ir::Type::tensor(DType::F32, {1, 20}));
  g->set_outputs({g->apply1("relu", {x})});
  LowerOptions packed;
  packed.strided_inputs = false;
  std::vector<KernelPlan> plans;
  std::vector<Kernel> ks = lower_graph(*g, packed, &plans);
  ScheduleTarget t;
  t.parallel_grain = 1;
  Kernel s = default_schedule(ks[0], plans[0].category, t);
  std::string text = to_string(s);
  EXPECT_NE(text.find("for (i1_o, 0, 2) parallel {"), std::string::npos) << text;
  std::vector<Tensor> in{random_tensor({1, 20}, DType::F32, 4)};
  EXPECT_TRUE(
      tensors_close(test::run_kernels(*g, {s}, plans, in)[0], ir::interpret(*g, in)[0], 0, 0));
  // With the default grain the 20 elements are one task: no parallel loop.
  text = to_string(default_schedule(ks[0], plans[0].category));
  EXPECT_EQ(text.find("parallel"), std::string::npos) << text;
}

// Rows shorter than the grain are blocked so one task gets several rows.
TEST(Schedule, DefaultScheduleBlocksShortRows) {
  auto g = std::make_unique<ir::Graph>("rows");
  ir::Value* x = g->add_input("x", ir::Type::tensor(DType::F32, {ir::Dim::sym("N"), 64}));
  g->set_outputs({g->apply1("relu", {x})});
  LowerOptions packed;
  packed.strided_inputs = false;
  std::vector<KernelPlan> plans;
  std::vector<Kernel> ks = lower_graph(*g, packed, &plans);
  Kernel s = default_schedule(ks[0], plans[0].category);
  std::string text = to_string(s);
  EXPECT_NE(text.find("for (i0_b, 0, ((N + 511) / 512)) parallel {"), std::string::npos) << text;
  EXPECT_NE(text.find("for (i0_i, 0, min(512, (N - (i0_b * 512)))) {"), std::string::npos) << text;
  for (int64_t n : {0, 3, 1000}) {
    std::vector<Tensor> in{random_tensor({n, 64}, DType::F32, 4)};
    EXPECT_TRUE(
        tensors_close(test::run_kernels(*g, {s}, plans, in)[0], ir::interpret(*g, in)[0], 0, 0));
  }
}

// mark_stream_stores marks the stores that write a kernel buffer for the last
// time: the exp pass of a softmax-like row (read back by the next pass), a
// buffer a later statement reads and one a loop around the store reads (an
// accumulation) keep plain stores; scratch is never marked; the size
// condition is folded when the extents are known.
TEST(Schedule, StreamStoresMarkOnlyLastWrites) {
  Buf x = make_buf("x", DType::F32), y = make_buf("y", DType::F32), z = make_buf("z", DType::F32);
  Buf w = make_buf("w", DType::F32);
  Expr i = var("i"), c = var("c"), n = var("n");
  Expr at = i * make_int(64) + c;
  auto row = [&](const Stmt& body) {
    return For::make(c, make_int(0), make_int(64), ForKind::Serial, body);
  };
  Stmt nest = For::make(
      i, make_int(0), n, ForKind::Serial,
      Block::make({row(Store::make(y, at, Load::make(x, at))),
                   row(Store::make(w, at, Load::make(y, at) * f32(2))),
                   row(Store::make(z, at, Load::make(x, at)))}));
  Stmt later = Store::make(x, make_int(0), Load::make(z, make_int(0)));
  Stmt m = mark_stream_stores(nest, {x, y, z, w}, {later}, 1 << 20);
  EXPECT_EQ(to_string(m),
            "for (i, 0, n) {\n"
            "  for (c, 0, 64) {\n"
            "    y[((i * 64) + c)] = x[((i * 64) + c)]\n"
            "  }\n"
            "  for (c, 0, 64) {\n"
            "    w[((i * 64) + c)] = stream((y[((i * 64) + c)] * 2.0f), "
            "(((max(n, 0) * 64) * 4) >= 1048576))\n"
            "  }\n"
            "  for (c, 0, 64) {\n"
            "    z[((i * 64) + c)] = x[((i * 64) + c)]\n"
            "  }\n"
            "}\n");
  // Known sizes fold the condition: below the threshold nothing changes.
  Stmt small = substitute(nest, "n", make_int(16));
  EXPECT_TRUE(mark_stream_stores(small, {x, y, z, w}, {later}, 1 << 20).same_as(small));
  Stmt large =
      mark_stream_stores(substitute(nest, "n", make_int(4096)), {x, y, z, w}, {}, 1 << 20);
  EXPECT_NE(to_string(large).find("z[((i * 64) + c)] = stream(x[((i * 64) + c)], true)"),
            std::string::npos)
      << to_string(large);
  // Not a kernel buffer, or a threshold of 0: no marks.
  EXPECT_TRUE(mark_stream_stores(nest, {x}, {}, 1 << 20).same_as(nest));
  EXPECT_TRUE(mark_stream_stores(nest, {x, y, z, w}, {}, 0).same_as(nest));
  // y[c] += x[k * 64 + c] over k: each trip reads what the last one stored.
  Stmt acc = For::make(
      var("k"), make_int(0), make_int(1 << 20), ForKind::Serial,
      row(Store::make(y, c, Load::make(y, c) + Load::make(x, var("k") * make_int(64) + c))));
  EXPECT_TRUE(mark_stream_stores(acc, {x, y}, {}, 1).same_as(acc));
  // The marked nest computes what the plain one does.
  for (int64_t rows : {0, 3}) {
    Tensor in = random_tensor({rows * 64}, DType::F32, 9);
    std::vector<Tensor> a, b;
    for (int t = 0; t < 6; ++t) (t < 3 ? a : b).push_back(Tensor::zeros({rows * 64}, DType::F32));
    eval_stmt(nest, {{x, in}, {y, a[0]}, {z, a[1]}, {w, a[2]}}, {{"n", rows}});
    eval_stmt(m, {{x, in}, {y, b[0]}, {z, b[1]}, {w, b[2]}}, {{"n", rows}});
    for (int t = 0; t < 3; ++t) EXPECT_TRUE(a[size_t(t)].equal(b[size_t(t)])) << rows << " " << t;
  }
}

}  // namespace
}  // namespace kiln::passes
