// loop_eval: the loop-IR evaluator's semantics, which the backends' loop-level
// tests rely on — per-dtype precision (f16 rounds after each op), integer
// wrapping and floor division (x / 0 raises like the interpreter), NaN-propagating float min/max,
// saturating float -> int casts, vector lanes with predicates, scratch,
// lets, scalar parameters, and bounds checking.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "ir/loop/loop_eval.h"
#include "ir/loop/visitor.h"
#include "kiln/element.h"
#include "kiln/error.h"
#include "op_test_util.h"

namespace kiln::loop {
namespace {

using test::make_tensor;
using test::values_of;

Expr var(const char* n) {
  return Var::make(i64_t(), n);
}
Expr imm(DType t, double v) {
  return make_const({t, 1}, v);
}

// Evaluates a scalar expression of dtype `t` by storing it into a 1-element buffer.
double value_of(const Expr& e) {
  Buf out = make_buf("out", e.type().dtype);
  Tensor t = Tensor::zeros({1}, e.type().dtype);
  eval_stmt(Store::make(out, make_int(0), e), {{out, t}});
  return t.get(std::vector<int64_t>{0});
}

TEST(LoopEval, PrecisionFollowsTheDtype) {
  // 2049 is not an f16: each f16 op rounds (2048 + 1 = 2048), f32 does not.
  EXPECT_EQ(value_of(imm(DType::F16, 2048) + imm(DType::F16, 1)), 2048);
  EXPECT_EQ(value_of(imm(DType::F32, 2048) + imm(DType::F32, 1)), 2049);
  EXPECT_EQ(value_of(imm(DType::F32, 1) / imm(DType::F32, 3)), double(1.0f / 3.0f));
  EXPECT_EQ(value_of(imm(DType::F64, 1) / imm(DType::F64, 3)), 1.0 / 3.0);
  EXPECT_EQ(value_of(imm(DType::I8, 100) + imm(DType::I8, 100)), -56);  // wraps
  EXPECT_EQ(value_of(imm(DType::U8, 3) - imm(DType::U8, 5)), 254);
}

TEST(LoopEval, IntegerDivisionFloorsAndNeverTraps) {
  EXPECT_EQ(value_of(imm(DType::I32, -7) / imm(DType::I32, 2)), -4);
  EXPECT_EQ(value_of(imm(DType::I32, -7) % imm(DType::I32, 2)), 1);
  EXPECT_EQ(value_of(imm(DType::I32, 7) % imm(DType::I32, -2)), -1);
  EXPECT_EQ(value_of(imm(DType::I8, -128) / imm(DType::I8, -1)), -128);
  EXPECT_EQ(value_of(imm(DType::F32, -7) % imm(DType::F32, 2)), 1);  // float floor mod
}

// The interpreter's errors (ir/ops/binary.cpp), for every integer type, also
// inside a loop where only one element has a zero divisor.
TEST(LoopEval, IntegerDivisionByZeroRaises) {
  auto message = [](const Expr& e) -> std::string {
    try {
      value_of(e);
    } catch (const InternalError& err) {
      return std::string("internal error: ") + err.what();
    } catch (const Error& err) {
      return err.what();
    }
    return "no error";
  };
  for (DType t : {DType::I8, DType::I32, DType::I64, DType::U8}) {
    EXPECT_NE(message(imm(t, 7) / imm(t, 0)).find("div: integer division by zero"),
              std::string::npos)
        << dtype_name(t);
    EXPECT_NE(message(imm(t, 7) % imm(t, 0)).find("remainder: integer division by zero"),
              std::string::npos)
        << dtype_name(t);
  }
  EXPECT_EQ(value_of(imm(DType::F32, 1) / imm(DType::F32, 0)), INFINITY);  // floats do not raise
  Buf a = make_buf("a", DType::I32), b = make_buf("b", DType::I32), q = make_buf("q", DType::I32);
  Expr i = var("i");
  Stmt loop = For::make(i, make_int(0), make_int(4), ForKind::Serial,
                        Store::make(q, i, Load::make(a, i) % Load::make(b, i)));
  Tensor at = make_tensor({4}, {1, 2, 3, 4}, DType::I32);
  Tensor bt = make_tensor({4}, {1, 1, 0, 1}, DType::I32), qt = Tensor::zeros({4}, DType::I32);
  EXPECT_THROW(eval_stmt(loop, {{a, at}, {b, bt}, {q, qt}}), Error);
  bt = make_tensor({4}, {1, 1, 2, 1}, DType::I32);
  EXPECT_NO_THROW(eval_stmt(loop, {{a, at}, {b, bt}, {q, qt}}));
}

TEST(LoopEval, FloatMinMaxPropagateNaN) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_TRUE(std::isnan(value_of(max(imm(DType::F32, nan), imm(DType::F32, 1)))));
  EXPECT_TRUE(std::isnan(value_of(min(imm(DType::F32, 1), imm(DType::F32, nan)))));
  EXPECT_EQ(value_of(max(imm(DType::F32, -2), imm(DType::F32, 1))), 1);
  EXPECT_FALSE(std::signbit(value_of(max(imm(DType::F32, -0.0), imm(DType::F32, 0.0)))));
}

TEST(LoopEval, CastsSaturateAndTruncate) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  auto cast = [](double v, DType from, DType to) {
    return value_of(Cast::make({to, 1}, imm(from, v)));
  };
  EXPECT_EQ(cast(-1.7, DType::F32, DType::I32), -1);
  EXPECT_EQ(cast(nan, DType::F32, DType::I64), 0);
  EXPECT_EQ(cast(1e30, DType::F32, DType::I64), double(std::numeric_limits<int64_t>::max()));
  EXPECT_EQ(cast(300, DType::F32, DType::U8), 44);  // saturate to i64, then wrap
  EXPECT_EQ(cast(nan, DType::F32, DType::Bool), 1);
  EXPECT_EQ(cast(0.1, DType::F64, DType::F16), double(half_to_float(double_to_half(0.1))));
  EXPECT_EQ(cast(-3, DType::I8, DType::U8), 253);
}

TEST(LoopEval, CallsAndSelect) {
  EXPECT_EQ(value_of(Call::make({DType::F32, 1}, "round", {imm(DType::F32, 2.5)})), 2);
  EXPECT_EQ(value_of(Call::make({DType::F32, 1}, "round", {imm(DType::F32, -0.5)})), 0);
  EXPECT_NEAR(value_of(Call::make({DType::F32, 1}, "erf", {imm(DType::F32, 0.5)})), std::erf(0.5),
              1e-6);
  EXPECT_EQ(value_of(Call::make({DType::I32, 1}, "abs", {imm(DType::I32, -4)})), 4);
  Expr isnan = Call::make(bool_t(), "isnan", {imm(DType::F32, 1)});
  EXPECT_EQ(value_of(Select::make(isnan, imm(DType::F32, 1), imm(DType::F32, 2))), 2);
}

TEST(LoopEval, VectorLanesWithPredicates) {
  Buf x = make_buf("x", DType::F32), y = make_buf("y", DType::F32);
  Tensor in = make_tensor({5}, {1, 2, 3, 4, 5});
  Tensor out = Tensor::full({8}, -1);
  Expr lanes = Ramp::make(make_int(0), make_int(1), 8);
  Expr pred = lanes < Broadcast::make(var("n"), 8);
  // Masked lanes of the load read 0 and are not touched (x has only 5 elements).
  Stmt s = Store::make(y, lanes,
                       Load::make(x, lanes, pred) * Broadcast::make(imm(DType::F32, 2), 8), pred);
  eval_stmt(s, {{x, in}, {y, out}}, {{"n", 5}});
  EXPECT_EQ(values_of(out), (std::vector<double>{2, 4, 6, 8, 10, -1, -1, -1}));
  // Without the predicate the out-of-bounds lanes are an internal error, not a read.
  EXPECT_THROW(eval_stmt(Store::make(y, lanes, Load::make(x, lanes)), {{x, in}, {y, out}}),
               InternalError);
}

TEST(LoopEval, ScratchLetsLoopsAndKernelScalars) {
  // sum of x[i] * scale over i < n, with an f64 scalar parameter.
  Buf x = make_buf("x", DType::F32), y = make_buf("y", DType::F32),
      acc = make_buf("acc", DType::F32);
  Expr scale = Var::make({DType::F64, 1}, "scale");
  Expr i = var("i");
  Stmt loop =
      For::make(i, make_int(0), var("n"), ForKind::Parallel,
                Store::make(acc, make_int(0), Load::make(acc, make_int(0)) + Load::make(x, i)));
  Expr t = Var::make({DType::F32, 1}, "t");
  Stmt body = Allocate::make(
      acc, make_int(1), MemoryScope::Stack,
      Block::make(
          {Store::make(acc, make_int(0), imm(DType::F32, 0)), loop,
           LetStmt::make(t, Load::make(acc, make_int(0)),
                         Store::make(y, make_int(0), t * Cast::make({DType::F32, 1}, scale)))}));
  Kernel k{"sum_scale", {x, y}, {var("n"), scale}, body};
  Tensor in = make_tensor({4}, {1, 2, 3, 4});
  Tensor out = Tensor::zeros({1});
  std::vector<Tensor> bufs{in, out};
  std::vector<int64_t> scalars{3, pack_scalar(DType::F64, 0.5)};
  eval_kernel(k, bufs, scalars);
  EXPECT_EQ(values_of(out), (std::vector<double>{3}));
  std::vector<int64_t> too_few{3};
  EXPECT_THROW(eval_kernel(k, bufs, too_few), Error);
  std::vector<Tensor> wrong_dtype{in.to(DType::F64), out};
  EXPECT_THROW(eval_kernel(k, wrong_dtype, scalars), Error);
  EXPECT_EQ(eval_int(var("n") * make_int(3) + make_int(1), {{"n", 4}}), 13);
}

TEST(LoopEval, HalfScalarParamsReadTheLow16Bits) {
  // y[0] = s for an f16 / bf16 scalar parameter packed the way the executable
  // packs it (store_double into the low bits of the slot).
  for (DType dt : {DType::F16, DType::BF16}) {
    Buf y = make_buf("y", dt);
    Expr s = Var::make({dt, 1}, "s");
    Kernel k{"put", {y}, {s}, Store::make(y, make_int(0), s)};
    Tensor out = Tensor::zeros({1}, dt);
    std::vector<Tensor> bufs{out};
    int64_t slot = 0;
    store_double(dt, &slot, -1.75);
    std::vector<int64_t> scalars{slot};
    eval_kernel(k, bufs, scalars);
    EXPECT_EQ(values_of(out), (std::vector<double>{-1.75})) << dtype_name(dt);
  }
}

TEST(LoopEval, StridedViewsAreBoundsCheckedAgainstStorage) {
  Buf x = make_buf("x", DType::F32), y = make_buf("y", DType::F32);
  Tensor base = make_tensor({6}, {0, 1, 2, 3, 4, 5});
  Tensor view = base.view_as_strided({2}, {2}, 3);  // elements 3 and 5
  Tensor out = Tensor::zeros({2});
  Stmt s = For::make(var("i"), make_int(0), make_int(2), ForKind::Serial,
                     Store::make(y, var("i"), Load::make(x, var("i") * make_int(2))));
  eval_stmt(s, {{x, view}, {y, out}});
  EXPECT_EQ(values_of(out), (std::vector<double>{3, 5}));
  // Reading before the view (offset -3 from its element 0) stays inside the storage.
  eval_stmt(Store::make(y, make_int(0), Load::make(x, make_int(-3))), {{x, view}, {y, out}});
  EXPECT_EQ(values_of(out)[0], 0);
  EXPECT_THROW(
      eval_stmt(Store::make(y, make_int(0), Load::make(x, make_int(3))), {{x, view}, {y, out}}),
      InternalError);
}

TEST(LoopEval, GpuLocalScratchIsPerThreadAcrossPhases) {
  // Two blocks of 4 threads; each thread keeps x[b * 4 + t] in its own
  // gpu_local element through a barrier, then writes it reversed within the
  // block. Per-thread copies: thread t reads back what it wrote, not what the
  // last thread of the phase wrote.
  Buf x = make_buf("x", DType::F32), y = make_buf("y", DType::F32),
      keep = make_buf("keep", DType::F32);
  Expr b = var("b"), t = var("t");
  Stmt phase1 = For::make(t, make_int(0), make_int(4), ForKind::GpuThread,
                          Store::make(keep, make_int(0), Load::make(x, b * make_int(4) + t)));
  Stmt phase2 = For::make(t, make_int(0), make_int(4), ForKind::GpuThread,
                          Store::make(y, b * make_int(4) + make_int(3) - t,
                                      Load::make(keep, make_int(0)) * imm(DType::F32, 2)));
  Stmt body = For::make(b, make_int(0), make_int(2), ForKind::GpuBlock,
                        Allocate::make(keep, make_int(1), MemoryScope::GpuLocal,
                                       Block::make({phase1, Barrier::make(), phase2})));
  Kernel k{"reverse", {x, y}, {}, body};
  EXPECT_NE(to_string(k).find("allocate keep[f32 * 1] in gpu_local"), std::string::npos)
      << to_string(k);
  Tensor in = make_tensor({8}, {1, 2, 3, 4, 5, 6, 7, 8});
  Tensor out = Tensor::zeros({8});
  std::vector<Tensor> bufs{in, out};
  eval_kernel(k, bufs, {});
  EXPECT_EQ(values_of(out), (std::vector<double>{8, 6, 4, 2, 16, 14, 12, 10}));
  // Outside a thread loop there is no copy to read.
  Stmt outside = For::make(b, make_int(0), make_int(1), ForKind::GpuBlock,
                           Allocate::make(keep, make_int(1), MemoryScope::GpuLocal,
                                          Store::make(keep, make_int(0), imm(DType::F32, 1))));
  EXPECT_THROW(eval_stmt(outside, {}), InternalError);
  // Each copy is bounds-checked against the per-thread size.
  Stmt past = For::make(b, make_int(0), make_int(1), ForKind::GpuBlock,
                        Allocate::make(keep, make_int(2), MemoryScope::GpuLocal,
                                       For::make(t, make_int(0), make_int(4), ForKind::GpuThread,
                                                 Store::make(keep, t, imm(DType::F32, 1)))));
  EXPECT_THROW(eval_stmt(past, {}), InternalError);
  // Per-thread storage has a size known when the kernel is compiled.
  EXPECT_THROW(Allocate::make(keep, var("n"), MemoryScope::GpuLocal, outside), InternalError);
  EXPECT_THROW(Allocate::make(keep, make_int(0), MemoryScope::GpuLocal, outside), InternalError);
}

}  // namespace
}  // namespace kiln::loop
