// Reduction schedules: vectorize_reduction on hand-built loops (the nest
// before and after, values through loop_eval for lengths around the vector
// width, exact results for min/max/integers/bools, the loops it refuses), and
// lowered reductions and normalizations scheduled by default_schedule against
// the unscheduled kernels and the interpreter on odd shapes, strided inputs
// and every float dtype.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "ir/loop/loop_eval.h"
#include "ir/loop/visitor.h"
#include "kiln/error.h"
#include "lower_test_util.h"
#include "passes/schedule/schedule.h"

namespace kiln::passes {
namespace {

using namespace kiln::loop;  // NOLINT
using test::random_tensor;
using test::tensors_close;

Expr var(const char* n) {
  return Var::make(i64_t(), n);
}

// acc[0] = op(acc[0], x[r]) over r in [0, n), acc a scratch of dtype `acc_t`
// initialized to `init`; the result is stored to out[0].
struct Reduce {
  Buf x, out, acc;
  Stmt loop, whole;
  Reduce(DType in_t, DType acc_t, BinOp op, Expr init) {
    x = make_buf("x", in_t);
    out = make_buf("out", acc_t);
    acc = make_buf("acc", acc_t);
    Expr v = Cast::make({acc_t, 1}, Load::make(x, var("r")));
    loop =
        For::make(var("r"), make_int(0), var("n"), ForKind::Serial,
                  Store::make(acc, make_int(0), Binary::make(op, Load::make(acc, make_int(0)), v)));
    whole =
        Allocate::make(acc, make_int(1), MemoryScope::Stack,
                       Block::make({Store::make(acc, make_int(0), init), loop,
                                    Store::make(out, make_int(0), Load::make(acc, make_int(0)))}));
  }
  Tensor run(const Stmt& s, const Tensor& in) const {
    Tensor o = Tensor::zeros({1}, out->dtype);
    eval_stmt(s, {{x, in}, {out, o}}, {{"n", in.numel()}});
    return o;
  }
};

TEST(ScheduleReduction, VectorizeReductionLoopNest) {
  Reduce k(DType::F32, DType::F32, BinOp::Add, make_const({DType::F32, 1}, 0));
  Stmt s = vectorize_reduction(k.loop, "r", 8, 2);
  EXPECT_EQ(to_string(s),
            "let r_n = max(n, 0)\n"
            "allocate acc_v[f32 * 16] in stack\n"
            "acc_v[ramp(0, 1, 8)] = x8(0.0f)\n"
            "acc_v[ramp(8, 1, 8)] = x8(0.0f)\n"
            "for (r_o, 0, (r_n / 16)) {\n"
            "  acc_v[ramp(0, 1, 8)] = (acc_v[ramp(0, 1, 8)] + x[ramp((r_o * 16), 1, 8)])\n"
            "  acc_v[ramp(8, 1, 8)] = (acc_v[ramp(8, 1, 8)] + x[ramp(((r_o * 16) + 8), 1, 8)])\n"
            "}\n"
            "for (r_t, 0, (((r_n - ((r_n / 16) * 16)) + 7) / 8)) {\n"
            "  acc_v[ramp(0, 1, 8)] = select((ramp((((r_n / 16) * 16) + (r_t * 8)), 1, 8) < "
            "x8(r_n)), (acc_v[ramp(0, 1, 8)] + x[ramp((((r_n / 16) * 16) + (r_t * 8)), 1, 8) if "
            "(ramp((((r_n / 16) * 16) + (r_t * 8)), 1, 8) < x8(r_n))]), acc_v[ramp(0, 1, 8)])\n"
            "}\n"
            "acc_v[ramp(0, 1, 8)] = (acc_v[ramp(0, 1, 8)] + acc_v[ramp(8, 1, 8)])\n"
            "acc_v[ramp(0, 1, 4)] = (acc_v[ramp(0, 1, 4)] + acc_v[ramp(4, 1, 4)])\n"
            "acc_v[ramp(0, 1, 2)] = (acc_v[ramp(0, 1, 2)] + acc_v[ramp(2, 1, 2)])\n"
            "acc_v[0] = (acc_v[0] + acc_v[1])\n"
            "acc[0] = (acc[0] + acc_v[0])\n");
  Stmt whole = vectorize_reduction(k.whole, "r", 8, 4);
  for (int64_t n : {0, 1, 7, 8, 9, 15, 16, 17, 31, 32, 33, 100, 1023}) {
    Tensor in = random_tensor({n}, DType::F32, uint64_t(n));
    EXPECT_TRUE(tensors_close(k.run(whole, in), k.run(k.whole, in), 1e-6, 1e-5)) << n;
  }
}

// min/max (NaN included), integer sums and products (wrapping) and logical
// reductions give exactly the scalar loop's result, for any lanes/accumulators.
TEST(ScheduleReduction, ExactReductionsStayExact) {
  const double inf = std::numeric_limits<double>::infinity();
  struct Case {
    DType in_t, acc_t;
    BinOp op;
    double init;
  };
  std::vector<Case> cases = {
      {DType::F32, DType::F32, BinOp::Max, -inf}, {DType::F16, DType::F32, BinOp::Min, inf},
      {DType::I32, DType::I64, BinOp::Add, 0},    {DType::I8, DType::I64, BinOp::Mul, 1},
      {DType::Bool, DType::Bool, BinOp::And, 1},  {DType::Bool, DType::Bool, BinOp::Or, 0},
      {DType::F64, DType::F64, BinOp::Max, -inf}, {DType::I64, DType::I64, BinOp::Min, 1e9},
  };
  for (const Case& c : cases) {
    Reduce k(c.in_t, c.acc_t, c.op, make_const({c.acc_t, 1}, c.init));
    for (auto [lanes, accs] : {std::pair{8, 4}, {4, 1}, {1, 3}, {16, 2}}) {
      Stmt s = vectorize_reduction(k.whole, "r", lanes, accs);
      for (int64_t n : {0, 1, 5, 8, 13, 64, 77}) {
        Tensor in = random_tensor({n}, c.in_t, uint64_t(n) + 7);
        if (is_floating(c.in_t) && n > 9) {
          in.set(std::vector<int64_t>{9}, std::nan(""));  // max/min propagate NaN
        }
        if (c.op == BinOp::And && n > 3) {  // mostly true, so && is not trivially false
          for (int64_t i = 0; i < n; ++i) in.set_int(std::vector<int64_t>{i}, i != n - 2);
        }
        EXPECT_TRUE(k.run(s, in).equal(k.run(k.whole, in)))
            << binop_name(c.op) << " " << dtype_name(c.in_t) << " n " << n << " lanes " << lanes
            << " x" << accs << ": " << k.run(s, in).to_string() << " vs "
            << k.run(k.whole, in).to_string();
      }
    }
  }
}

// A loop that stores each element and accumulates it (softmax's exp pass):
// both vectorize, the stores masked only in the tail.
TEST(ScheduleReduction, StoresAndAccumulatesInOneLoop) {
  Buf x = make_buf("x", DType::F32), y = make_buf("y", DType::F32);
  Buf sum = make_buf("sum", DType::F32), out = make_buf("out", DType::F32);
  Expr e = Var::make({DType::F32, 1}, "e");
  Stmt body =
      LetStmt::make(e, Call::make({DType::F32, 1}, "exp", {Load::make(x, var("r"))}),
                    Block::make({Store::make(y, var("r"), e),
                                 Store::make(sum, make_int(0), Load::make(sum, make_int(0)) + e)}));
  Stmt loop = For::make(var("r"), make_int(0), var("n"), ForKind::Serial, body);
  Stmt whole = Allocate::make(
      sum, make_int(1), MemoryScope::Stack,
      Block::make({Store::make(sum, make_int(0), make_const({DType::F32, 1}, 0)), loop,
                   Store::make(out, make_int(0), Load::make(sum, make_int(0)))}));
  Stmt s = vectorize_reduction(whole, "r", 8, 4);
  std::string text = to_string(s);
  EXPECT_NE(text.find("y[ramp(((r_o * 32) + 24), 1, 8)] = e"), std::string::npos) << text;
  EXPECT_NE(text.find("acc"), 0u);
  for (int64_t n : {0, 3, 8, 40, 129}) {
    Tensor in = random_tensor({n}, DType::F32, uint64_t(n));
    auto run = [&](const Stmt& st) {
      Tensor ys = Tensor::zeros({n}, DType::F32), o = Tensor::zeros({1}, DType::F32);
      eval_stmt(st, {{x, in}, {y, ys}, {out, o}}, {{"n", n}});
      return std::pair{ys, o};
    };
    auto [want_y, want_sum] = run(whole);
    auto [got_y, got_sum] = run(s);
    EXPECT_TRUE(got_y.equal(want_y)) << n;
    EXPECT_TRUE(tensors_close(got_sum, want_sum, 1e-6, 1e-5)) << n;
  }
}

TEST(ScheduleReduction, RefusesWhatItCannotVectorize) {
  Buf x = make_buf("x", DType::F32), acc = make_buf("acc", DType::F32);
  Buf y = make_buf("y", DType::F32);
  auto loop = [&](Stmt body) {
    return For::make(var("r"), make_int(0), var("n"), ForKind::Serial, std::move(body));
  };
  Expr a0 = Load::make(acc, make_int(0)), xr = Load::make(x, var("r"));
  // argmax-style branch
  EXPECT_THROW(vectorize_reduction(
                   loop(IfThenElse::make(xr > a0, Store::make(acc, make_int(0), xr))), "r", 8, 4),
               Error);
  // not an accumulation (a plain overwrite) / division is not reassociable
  EXPECT_THROW(vectorize_reduction(loop(Store::make(acc, make_int(0), xr)), "r", 8, 4), Error);
  EXPECT_THROW(vectorize_reduction(loop(Store::make(acc, make_int(0), a0 / xr)), "r", 8, 4), Error);
  // the accumulator read elsewhere in the loop
  EXPECT_THROW(
      vectorize_reduction(
          loop(Block::make({Store::make(acc, make_int(0), a0 + xr), Store::make(y, var("r"), a0)})),
          "r", 8, 4),
      Error);
  // a loop-carried dependence through memory: y[r] reads y[r - 1]
  EXPECT_THROW(
      vectorize_reduction(loop(Store::make(y, var("r"), Load::make(y, var("r") - make_int(1)))),
                          "r", 8, 4),
      Error);
  EXPECT_THROW(vectorize_reduction(loop(Store::make(acc, make_int(0), a0 + xr)), "q", 8, 4), Error);
  EXPECT_THROW(vectorize_reduction(loop(Store::make(acc, make_int(0), a0 + xr)), "r", 0, 4), Error);
}

// --- lowered reductions and normalizations under default_schedule -----------------------------

// Lowers a one-node graph (strided inputs), schedules it by default, and
// compares the scheduled kernels with the unscheduled ones (exactly for
// integer and min/max-like results) and with the interpreter.
void check_op(const std::string& op, const std::vector<test::In>& ins, const ir::Attrs& attrs,
              bool exact, const std::string& must_contain = "") {
  test::Built b = test::build(op, ins, attrs);
  std::vector<KernelPlan> plans;
  std::vector<Kernel> ks = lower_graph(*b.g, {}, &plans);
  std::vector<Kernel> scheduled;
  ScheduleTarget t;
  t.parallel_grain = 64;
  t.prefetch_rows_level = 1;  // as the CPU pipeline schedules: values are unchanged
  for (size_t i = 0; i < ks.size(); ++i) {
    scheduled.push_back(default_schedule(ks[i], plans[i].category, t));
  }
  std::string text;
  for (const Kernel& k : scheduled) text += to_string(k);
  if (!must_contain.empty()) {
    EXPECT_NE(text.find(must_contain), std::string::npos) << text;
  }
  std::vector<Tensor> plain = test::run_kernels(*b.g, ks, plans, b.feed);
  std::vector<Tensor> got = test::run_kernels(*b.g, scheduled, plans, b.feed);
  std::vector<Tensor> ref = ir::interpret(*b.g, b.feed);
  for (size_t i = 0; i < got.size(); ++i) {
    double r = test::default_rtol(got[i].dtype());
    if (exact) {
      EXPECT_TRUE(got[i].equal(plain[i])) << op << " output " << i << "\n" << text;
    } else {
      EXPECT_TRUE(tensors_close(got[i], plain[i], r, r)) << op << " output " << i << "\n" << text;
    }
    EXPECT_TRUE(tensors_close(got[i], ref[i], r, r)) << op << " output " << i << " vs reference";
  }
}

const std::vector<Shape> kShapes = {{3, 1}, {2, 7}, {5, 33}, {2, 1023}, {0, 9}, {4, 0}, {1, 64}};

TEST(ScheduleReduction, RowReductionsMatch) {
  for (const Shape& shape : kShapes) {
    for (int64_t dim : {-1, 0}) {
      ir::Attrs d{{"dim", std::vector<int64_t>{dim}}};
      Tensor f = random_tensor(shape, DType::F32, 1), i = random_tensor(shape, DType::I32, 2);
      check_op("sum", {f}, d, false);
      check_op("mean", {random_tensor(shape, DType::F16, 3)}, d, false);
      check_op("prod", {i}, d, true);
      check_op("sum", {i}, d, true);
      check_op("var", {f}, {{"dim", std::vector<int64_t>{dim}}, {"correction", int64_t{1}}}, false);
      check_op("std", {random_tensor(shape, DType::BF16, 5)},
               {{"dim", std::vector<int64_t>{dim}}, {"correction", int64_t{0}}}, false);
      check_op("any", {random_tensor(shape, DType::Bool, 6)}, d, true);
      check_op("all", {random_tensor(shape, DType::Bool, 7)}, d, true);
      if (shape[size_t(dim + 2) % 2] == 0) continue;  // no identity: the reference refuses
      check_op("amax", {f}, d, true);
      check_op("amin", {random_tensor(shape, DType::F64, 4)}, d, true);
      ir::Attrs one{{"dim", dim}};
      check_op("argmax", {f}, one, true);
      check_op("argmin", {i}, one, true);
      check_op("max", {f}, one, true);
    }
    check_op("sum", {random_tensor(shape, DType::F32, 8)}, {}, false);  // every dim
  }
  // Vectorized along the row, and across the kept dim for a reduction over dim 0.
  check_op("sum", {random_tensor({4, 100}, DType::F32, 1)}, {{"dim", std::vector<int64_t>{1}}},
           false, "acc0_v[ramp(24, 1, 8)]");
  check_op("sum", {random_tensor({100, 40}, DType::F32, 1)}, {{"dim", std::vector<int64_t>{0}}},
           false, "acc0[ramp(0, 1, 8)]");
}

TEST(ScheduleReduction, NormalizationsMatch) {
  for (const Shape& shape : kShapes) {
    for (DType t : {DType::F32, DType::F16, DType::BF16, DType::F64}) {
      Tensor x = random_tensor(shape, t, 11);
      for (int64_t dim : {-1, 0}) {
        check_op("softmax", {x}, {{"dim", dim}}, false);
        check_op("log_softmax", {x}, {{"dim", dim}}, false);
      }
      Shape last{shape[1]};
      ir::Attrs ns{{"normalized_shape", std::vector<int64_t>{shape[1]}}};
      check_op("layer_norm", {x, random_tensor(last, t, 12), random_tensor(last, t, 13)}, ns,
               false);
      check_op("layer_norm", {x, test::In::c(ir::NoneAttr{}), test::In::c(ir::NoneAttr{})}, ns,
               false);
      check_op("rms_norm", {x, random_tensor(last, t, 14)}, ns, false);
    }
  }
  // exp runs once per element: the output row is written, then scaled in place.
  check_op("softmax", {random_tensor({3, 100}, DType::F32, 1)}, {{"dim", int64_t{-1}}}, false,
           "v0[ramp(");
  // The exp pass (it reads the row the max pass brought into cache) fetches
  // the next row; so does log_softmax's sum of exp.
  check_op("softmax", {random_tensor({3, 100}, DType::F32, 1)}, {{"dim", int64_t{-1}}}, false,
           "call kiln_prefetch(in0, (((i0 + 1) * in0_s0) + ");
  check_op("log_softmax", {random_tensor({5, 1023}, DType::F64, 1)}, {{"dim", int64_t{-1}}},
           false, "call kiln_prefetch(in0, ");
}

// prefetch_next_rows on a hand-built row loop: only a later pass that calls
// an intrinsic and re-reads a row an earlier pass loaded gets a prefetch.
TEST(ScheduleReduction, PrefetchNextRows) {
  Buf x = make_buf("x", DType::F32), y = make_buf("y", DType::F32);
  Buf acc = make_buf("acc", DType::F32);
  Expr i = var("i"), c = var("c"), at = Ramp::make(i * var("n") + c * make_int(8), make_int(1), 8);
  auto pass = [&](Stmt body) {
    return For::make(c, make_int(0), make_int(4), ForKind::Serial, std::move(body));
  };
  Expr a0 = Load::make(acc, make_int(0));
  Stmt max_pass = pass(Store::make(y, at, Load::make(x, at)));
  Stmt exp_pass = pass(Store::make(y, at, Call::make({DType::F32, 8}, "exp", {Load::make(x, at)})));
  Stmt plain_pass = pass(Store::make(y, at, Load::make(x, at) + Broadcast::make(a0, 8)));
  auto rows = [&](std::vector<Stmt> passes) {
    return For::make(i, make_int(0), var("m"), ForKind::Parallel, Block::make(std::move(passes)));
  };
  EXPECT_EQ(to_string(prefetch_next_rows(rows({max_pass, exp_pass}), {x, y}, 1)),
            "for (i, 0, m) parallel {\n"
            "  for (c, 0, 4) {\n"
            "    y[ramp(((i * n) + (c * 8)), 1, 8)] = x[ramp(((i * n) + (c * 8)), 1, 8)]\n"
            "  }\n"
            "  for (c, 0, 4) {\n"
            "    call kiln_prefetch(x, (((i + 1) * n) + (c * 8)), 1)\n"
            "    y[ramp(((i * n) + (c * 8)), 1, 8)] = exp(x[ramp(((i * n) + (c * 8)), 1, 8)])\n"
            "  }\n"
            "}\n");
  // No intrinsic in the later pass, the first pass alone, a scratch row, or a
  // negative level: nothing to add.
  Stmt no_call = rows({max_pass, plain_pass});
  EXPECT_TRUE(equal(prefetch_next_rows(no_call, {x, y}, 1), no_call));
  Stmt first = rows({exp_pass, max_pass});
  EXPECT_TRUE(equal(prefetch_next_rows(first, {x, y}, 1), first));
  Stmt both = rows({max_pass, exp_pass});
  EXPECT_TRUE(equal(prefetch_next_rows(both, {y}, 1), both));
  EXPECT_TRUE(equal(prefetch_next_rows(both, {x, y}, -1), both));
  // The prefetch changes no value in the loop evaluator, even past the last row.
  Stmt fetched = prefetch_next_rows(both, {x, y}, 0);
  Tensor in = random_tensor({3, 32}, DType::F32, 7);
  Tensor out_plain = Tensor::zeros({3, 32}, DType::F32), out = Tensor::zeros({3, 32}, DType::F32);
  Stmt whole_plain = Allocate::make(acc, make_int(1), MemoryScope::Stack, both);
  Stmt whole = Allocate::make(acc, make_int(1), MemoryScope::Stack, fetched);
  eval_stmt(whole_plain, {{x, in}, {y, out_plain}}, {{"n", 32}, {"m", 3}});
  eval_stmt(whole, {{x, in}, {y, out}}, {{"n", 32}, {"m", 3}});
  EXPECT_TRUE(out.equal(out_plain));
}

// Non-contiguous inputs take the general (stride-parameter) version.
TEST(ScheduleReduction, StridedInputsMatch) {
  // 6 x 37 with strides (1, 6): a transposed view.
  Tensor x = random_tensor({37, 6}, DType::F32, 3).view_as_strided({6, 37}, {1, 6}, 0);
  check_op("softmax", {x}, {{"dim", int64_t{-1}}}, false, "if ((in0_s1 == 1))");
  check_op("sum", {x}, {{"dim", std::vector<int64_t>{1}}}, false);
  check_op("layer_norm",
           {x, random_tensor({37}, DType::F32, 4), random_tensor({37}, DType::F32, 5)},
           {{"normalized_shape", std::vector<int64_t>{37}}}, false);
  check_op("argmax", {x}, {{"dim", int64_t{1}}}, true);
}

}  // namespace
}  // namespace kiln::passes
