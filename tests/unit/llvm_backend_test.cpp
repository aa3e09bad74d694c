// The LLVM CPU backend on hand-built loop-IR kernels: scalar and vector
// elementwise code (dense Ramp loads/stores, predicated tails, gathers and
// scatters), every cast pair against kiln::store_double/load_as_double, floor
// division, NaN-propagating min/max, parallel loops, lets, scratch allocation,
// branches, extern calls, dumps and error cases. Values are hand-computed.
// f16/bf16 conversions and arithmetic are in llvm_half_test.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <thread>

#include "ir/loop/analysis.h"
#include "ir/loop/loop_eval.h"
#include "kiln/element.h"
#include "kiln/error.h"
#include "llvm_test_util.h"
#include "runtime/kernel_status.h"

namespace kiln::codegen {
namespace {

TEST_F(LlvmBackendTest, ScalarAffineOverSymbolicN) {
  Buf x = make_buf("x", DType::F32), y = make_buf("y", DType::F32);
  Expr i = var("i"), n = var("n");
  Expr a = var("a", {DType::F32, 1}), b = var("b", {DType::F32, 1});
  Stmt body =
      For::make(i, make_int(0), n, ForKind::Serial, Store::make(y, i, Load::make(x, i) * a + b));
  KernelFn fn = compile({Kernel{"affine", {x, y}, {n, a, b}, body}});
  for (int64_t count : {0, 1, 7, 1023}) {
    Tensor xt = Tensor::empty({count + 1}), yt = Tensor::full({count + 1}, -99.0);
    for (int64_t k = 0; k <= count; ++k) xt.data<float>()[k] = 0.5f * k - 3;
    run(fn, {xt, yt}, {count, bits_of(1.5f), bits_of(-0.25f)});
    for (int64_t k = 0; k < count; ++k) {
      ASSERT_EQ(yt.data<float>()[k], (0.5f * k - 3) * 1.5f - 0.25f) << "n=" << count << " k=" << k;
    }
    EXPECT_EQ(yt.data<float>()[count], -99.0f) << "wrote past n=" << count;
  }
}

TEST_F(LlvmBackendTest, VectorRampWithPredicatedTail) {
  Buf x = make_buf("x", DType::F32), y = make_buf("y", DType::F32);
  Expr o = var("o"), n = var("n");
  Expr idx = ramp(o * 8, 8);
  Expr pred = idx < bcast(n, 8);
  Stmt body = For::make(
      o, make_int(0), (n + 7) / make_int(8), ForKind::Serial,
      Store::make(y, idx, Load::make(x, idx, pred) * bcast(f32(2), 8) + bcast(f32(1), 8), pred));
  KernelFn fn = compile({Kernel{"vec_tail", {x, y}, {n}, body}});
  for (int64_t count : {0, 1, 7, 8, 1023}) {
    Tensor xt = Tensor::empty({1032}), yt = Tensor::full({1032}, -5.0);
    for (int64_t k = 0; k < 1032; ++k) xt.data<float>()[k] = float(k);
    run(fn, {xt, yt}, {count});
    for (int64_t k = 0; k < 1032; ++k) {
      float want = k < count ? 2.0f * k + 1 : -5.0f;
      ASSERT_EQ(yt.data<float>()[k], want) << "n=" << count << " k=" << k;
    }
  }
}

TEST_F(LlvmBackendTest, StridedGatherAndScatter) {
  Buf x = make_buf("x", DType::F32), idxb = make_buf("idx", DType::I64);
  Buf y = make_buf("y", DType::F32), z = make_buf("z", DType::F32);
  Expr o = var("o");
  // y[o*8 .. o*8+7] = x[o*16 + 2*lane] + x[idx[o*8 + lane]]; z[3*(o*8+lane)] = lane value
  Expr dense = ramp(o * 8, 8);
  Expr strided = Ramp::make(o * 16, make_int(2), 8);
  Expr gathered = Load::make(x, Load::make(idxb, dense));
  Stmt body =
      Block::make({Store::make(y, dense, Load::make(x, strided) + gathered),
                   Store::make(z, Ramp::make(o * 24, make_int(3), 8), Load::make(x, dense))});
  KernelFn fn = compile({Kernel{"gather",
                                {x, idxb, y, z},
                                {},
                                For::make(o, make_int(0), make_int(2), ForKind::Serial, body)}});
  Tensor xt = Tensor::empty({32}), it = Tensor::empty({16}, DType::I64);
  Tensor yt = Tensor::zeros({16}), zt = Tensor::full({48}, -1.0);
  for (int k = 0; k < 32; ++k) xt.data<float>()[k] = float(k * k);
  for (int k = 0; k < 16; ++k) it.data<int64_t>()[k] = 31 - k;
  run(fn, {xt, it, yt, zt});
  for (int k = 0; k < 16; ++k) {
    float want = float((2 * k) * (2 * k)) + float((31 - k) * (31 - k));
    EXPECT_EQ(yt.data<float>()[k], want) << k;
  }
  for (int k = 0; k < 48; ++k) {
    EXPECT_EQ(zt.data<float>()[k], k % 3 == 0 ? float((k / 3) * (k / 3)) : -1.0f) << k;
  }
}

// Strided loads and stores (a wide masked access plus a shuffle) under a
// predicate: masked lanes read as zero and touch no memory (the buffers end
// right after the last element a lane that is on may touch).
TEST_F(LlvmBackendTest, StridedAccessesUnderAPredicate) {
  Buf x = make_buf("x", DType::F32), y = make_buf("y", DType::F32);
  Buf z = make_buf("z", DType::F64);
  Expr lane = ramp(make_int(0), 16);
  Expr on = lane < bcast(var("n"), 16);
  // y[lane] = x[3 * lane] if lane < n; z[2 * lane] = lane if lane < n
  Stmt body = Block::make(
      {Store::make(y, lane, Load::make(x, Ramp::make(make_int(0), make_int(3), 16), on)),
       Store::make(z, Ramp::make(make_int(0), make_int(2), 16), Cast::make({DType::F64, 16}, lane),
                   on)});
  KernelFn fn = compile({Kernel{"strided", {x, y, z}, {var("n")}, body}});
  for (int64_t n : {0, 1, 7, 16}) {
    Tensor xt = Tensor::empty({std::max<int64_t>(3 * (n - 1) + 1, 1)});
    for (int64_t k = 0; k < xt.numel(); ++k) xt.data<float>()[k] = float(k + 1);
    Tensor yt = Tensor::full({16}, -1.0);
    Tensor zt = Tensor::full({std::max<int64_t>(2 * (n - 1) + 1, 1)}, -1.0, DType::F64);
    run(fn, {xt, yt, zt}, {n});
    for (int64_t k = 0; k < 16; ++k) {
      EXPECT_EQ(yt.data<float>()[k], k < n ? float(3 * k + 1) : 0.0f) << "n=" << n << " k=" << k;
    }
    for (int64_t k = 0; k < zt.numel(); ++k) {
      double want = k % 2 == 0 && k / 2 < n ? double(k / 2) : -1.0;
      EXPECT_EQ(zt.data<double>()[k], want) << "n=" << n << " k=" << k;
    }
  }
}

// Every (from, to) dtype pair on edge values, against the runtime's scalar
// conversions (float -> int saturates to i64 then wraps, NaN -> 0, C-style).
TEST_F(LlvmBackendTest, CastsMatchRuntimeConversions) {
  const DType all[] = {DType::Bool, DType::I8,  DType::U8,   DType::I16, DType::I32,
                       DType::I64,  DType::F16, DType::BF16, DType::F32, DType::F64};
  const double values[] = {0,         1,          -1,       2.5,   -2.5,  127,  128,
                           255,       256,        -129,     65504, 70000, 1e10, -1e10,
                           0.1,       -0.7,       3.4e38,   1e-40, 1e300, NAN,  INFINITY,
                           -INFINITY, 1.00390625, 33554433, -0.0};
  const int64_t count = sizeof(values) / sizeof(values[0]);
  std::vector<Kernel> kernels;
  for (DType from : all) {
    for (DType to : all) {
      Buf x = make_buf("x", from), y = make_buf("y", to);
      Expr i = var("i");
      // Half the kernels use 8-lane vectors so both code paths are covered.
      bool vec = (int(from) + int(to)) % 2 == 0;
      Stmt body;
      if (vec) {
        Expr idx = ramp(i * 8, 8);
        body = For::make(i, make_int(0), make_int((count + 7) / 8), ForKind::Serial,
                         Store::make(y, idx, Cast::make({to, 8}, Load::make(x, idx))));
      } else {
        body = For::make(i, make_int(0), make_int(count), ForKind::Serial,
                         Store::make(y, i, Cast::make({to, 1}, Load::make(x, i))));
      }
      kernels.push_back(
          Kernel{std::string("cast_") + dtype_name(from) + "_" + dtype_name(to), {x, y}, {}, body});
    }
  }
  modules_.push_back(backend_->compile(kernels, {}));
  for (const Kernel& k : kernels) {
    DType from = k.buffers[0]->dtype, to = k.buffers[1]->dtype;
    Tensor xt = Tensor::zeros({count + 8}, from), yt = Tensor::zeros({count + 8}, to);
    char* xp = static_cast<char*>(xt.data_ptr());
    for (int64_t j = 0; j < count; ++j) store_double(from, xp + j * dtype_size(from), values[j]);
    run(modules_.back()->lookup(k.name), {xt, yt});
    char* yp = static_cast<char*>(yt.data_ptr());
    for (int64_t j = 0; j < count; ++j) {
      std::vector<char> want(8);
      const char* src = xp + j * dtype_size(from);
      if (is_floating(from)) {
        store_double(to, want.data(), load_as_double(from, src));
      } else {
        store_int(to, want.data(), load_as_int(from, src));
      }
      double got_v = load_as_double(to, yp + j * dtype_size(to));
      double want_v = load_as_double(to, want.data());
      if (std::isnan(want_v)) {
        EXPECT_TRUE(std::isnan(got_v)) << k.name << " value " << values[j];
      } else {
        EXPECT_EQ(std::memcmp(yp + j * dtype_size(to), want.data(), dtype_size(to)), 0)
            << k.name << " value " << values[j] << ": got " << got_v << " want " << want_v;
      }
    }
  }
}

TEST_F(LlvmBackendTest, IntegerFloorDivModAndFloatMod) {
  for (DType t : {DType::I64, DType::I32, DType::I8}) {
    Buf a = make_buf("a", t), b = make_buf("b", t), q = make_buf("q", t), r = make_buf("r", t);
    Buf q3 = make_buf("q3", t), r3 = make_buf("r3", t);
    Expr i = var("i");
    Expr three = IntImm::make({t, 1}, -3);
    Stmt body = Block::make({Store::make(q, i, Load::make(a, i) / Load::make(b, i)),
                             Store::make(r, i, Load::make(a, i) % Load::make(b, i)),
                             Store::make(q3, i, Load::make(a, i) / three),
                             Store::make(r3, i, Load::make(a, i) % three)});
    KernelFn fn = compile({Kernel{std::string("divmod_") + dtype_name(t),
                                  {a, b, q, r, q3, r3},
                                  {},
                                  For::make(i, make_int(0), make_int(8), ForKind::Serial, body)}});
    const int64_t av[] = {-7, 7, -7, 7, 6, -6, 5, -128};
    const int64_t bv[] = {2, 2, -2, -2, 3, 3, 1, -1};
    Tensor at = Tensor::empty({8}, t), bt = Tensor::empty({8}, t), qt = Tensor::zeros({8}, t),
           rt = Tensor::zeros({8}, t), q3t = Tensor::zeros({8}, t), r3t = Tensor::zeros({8}, t);
    for (int64_t k = 0; k < 8; ++k) {
      at.set_int(std::vector<int64_t>{k}, av[k]);
      bt.set_int(std::vector<int64_t>{k}, bv[k]);
    }
    EXPECT_EQ(run(fn, {at, bt, qt, rt, q3t, r3t}), 0);
    // Floor semantics; -128 / -1 wraps in i8.
    const int64_t want_q[] = {-4, 3, 3, -4, 2, -2, 5, t == DType::I8 ? -128 : 128};
    const int64_t want_r[] = {1, 1, -1, -1, 0, 0, 0, 0};
    const int64_t want_q3[] = {2, -3, 2, -3, -2, 2, -2, 42};
    const int64_t want_r3[] = {-1, -2, -1, -2, 0, 0, -1, -2};
    for (int64_t k = 0; k < 8; ++k) {
      std::vector<int64_t> at_k{k};
      EXPECT_EQ(qt.get_int(at_k), want_q[k]) << dtype_name(t) << " " << av[k] << "/" << bv[k];
      EXPECT_EQ(rt.get_int(at_k), want_r[k]) << dtype_name(t) << " " << av[k] << "%" << bv[k];
      EXPECT_EQ(q3t.get_int(at_k), want_q3[k]) << dtype_name(t) << " " << av[k] << "/-3";
      EXPECT_EQ(r3t.get_int(at_k), want_r3[k]) << dtype_name(t) << " " << av[k] << "%-3";
    }
  }
  // Float floor-mod, vectorized.
  Buf a = make_buf("a", DType::F32), b = make_buf("b", DType::F32), r = make_buf("r", DType::F32);
  Expr idx = ramp(make_int(0), 8);
  KernelFn fn = compile({Kernel{
      "fmod", {a, b, r}, {}, Store::make(r, idx, Load::make(a, idx) % Load::make(b, idx))}});
  const float av[] = {-7.5f, 7.5f, 7.5f, -7.5f, 6.0f, -1.0f, 5.0f, 1.0f};
  const float bv[] = {2.0f, -2.0f, 2.0f, -2.0f, 3.0f, INFINITY, 0.0f, 0.25f};
  Tensor at = Tensor::empty({8}), bt = Tensor::empty({8}), rt = Tensor::zeros({8});
  std::memcpy(at.data_ptr(), av, sizeof av);
  std::memcpy(bt.data_ptr(), bv, sizeof bv);
  run(fn, {at, bt, rt});
  const float want[] = {0.5f, -0.5f, 1.5f, -1.5f, 0.0f, INFINITY};
  for (int k = 0; k < 6; ++k) EXPECT_EQ(rt.data<float>()[k], want[k]) << k;
  EXPECT_TRUE(std::isnan(rt.data<float>()[6]));
  EXPECT_EQ(rt.data<float>()[7], 0.0f);
}

// A zero divisor stores 0 and ORs its bit into the status word after the
// buffers (runtime/kernel_status.h): scalar, vector, unsigned and parallel
// loops; kernels whose divisors are nonzero constants take no status word.
TEST_F(LlvmBackendTest, IntegerDivisionByZeroSetsStatusWord) {
  const int32_t div_bit = runtime::kStatusIntDivByZero, mod_bit = runtime::kStatusIntModByZero;
  Expr i = var("i"), n = var("n");
  for (DType t : {DType::I32, DType::I64, DType::U8}) {
    Buf a = make_buf("a", t), b = make_buf("b", t), q = make_buf("q", t), r = make_buf("r", t);
    Stmt body = Block::make({Store::make(q, i, Load::make(a, i) / Load::make(b, i)),
                             Store::make(r, i, Load::make(a, i) % Load::make(b, i))});
    KernelFn fn = compile({Kernel{std::string("dz_") + dtype_name(t),
                                  {a, b, q, r},
                                  {n},
                                  For::make(i, make_int(0), n, ForKind::Serial, body)}});
    Tensor at = Tensor::full({4}, 7, t), bt = Tensor::full({4}, 2, t);
    Tensor qt = Tensor::full({4}, 9, t), rt = Tensor::full({4}, 9, t);
    EXPECT_EQ(run(fn, {at, bt, qt, rt}, {4}), 0) << dtype_name(t);
    bt.set_int(std::vector<int64_t>{2}, 0);
    EXPECT_EQ(run(fn, {at, bt, qt, rt}, {4}), div_bit | mod_bit) << dtype_name(t);
    EXPECT_EQ(qt.get_int(std::vector<int64_t>{2}), 0);
    EXPECT_EQ(rt.get_int(std::vector<int64_t>{2}), 0);
    EXPECT_EQ(qt.get_int(std::vector<int64_t>{3}), 3);
    EXPECT_EQ(run(fn, {at, bt, qt, rt}, {2}), 0) << "element 2 is not reached";
  }
  // Eight lanes, remainder only.
  Buf a = make_buf("a", DType::I32), b = make_buf("b", DType::I32), q = make_buf("q", DType::I32);
  Expr idx = ramp(make_int(0), 8);
  KernelFn vec = compile({Kernel{
      "dz_vec", {a, b, q}, {}, Store::make(q, idx, Load::make(a, idx) % Load::make(b, idx))}});
  Tensor at = Tensor::full({8}, 5, DType::I32), bt = Tensor::full({8}, 3, DType::I32);
  Tensor qt = Tensor::zeros({8}, DType::I32);
  EXPECT_EQ(run(vec, {at, bt, qt}), 0);
  bt.set_int(std::vector<int64_t>{7}, 0);
  EXPECT_EQ(run(vec, {at, bt, qt}), mod_bit);
  EXPECT_EQ(qt.get_int(std::vector<int64_t>{0}), 2);
  // A parallel loop: one zero among many chunks.
  const int64_t count = 100000;
  KernelFn par =
      compile({Kernel{"dz_par",
                      {a, b, q},
                      {n},
                      For::make(i, make_int(0), n, ForKind::Parallel,
                                Store::make(q, i, Load::make(a, i) / Load::make(b, i)))}});
  Tensor pa = Tensor::full({count}, 9, DType::I32), pb = Tensor::full({count}, 2, DType::I32);
  Tensor pq = Tensor::zeros({count}, DType::I32);
  EXPECT_EQ(run(par, {pa, pb, pq}, {count}), 0);
  pb.set_int(std::vector<int64_t>{77777}, 0);
  EXPECT_EQ(run(par, {pa, pb, pq}, {count}), div_bit);
  EXPECT_EQ(pq.get_int(std::vector<int64_t>{77776}), 4);
  // Constant nonzero divisors need no check: the kernel reads only its buffers.
  Stmt by_const =
      For::make(i, make_int(0), make_int(4), ForKind::Serial,
                Store::make(q, i, Load::make(a, i) / IntImm::make({DType::I32, 1}, -3)));
  EXPECT_FALSE(loop::has_checked_division(by_const));
  EXPECT_TRUE(loop::has_checked_division(
      Store::make(q, i, Load::make(a, i) % IntImm::make({DType::I32, 1}, 0))));
  KernelFn konst = compile({Kernel{"dz_const", {a, q}, {}, by_const}});
  void* ptrs[] = {at.data_ptr(), qt.data_ptr()};
  konst(ptrs, nullptr);
  EXPECT_EQ(qt.get_int(std::vector<int64_t>{0}), -2);
}

TEST_F(LlvmBackendTest, MinMaxPropagateNaN) {
  Buf a = make_buf("a", DType::F32), b = make_buf("b", DType::F32);
  Buf lo = make_buf("lo", DType::F32), hi = make_buf("hi", DType::F32);
  Expr idx = ramp(make_int(0), 4);
  Expr i = var("i");
  Stmt body =
      Block::make({Store::make(lo, idx, min(Load::make(a, idx), Load::make(b, idx))),
                   Store::make(hi, make_int(4) + i * 0, max(Load::make(a, i), Load::make(b, i)))});
  KernelFn fn = compile({Kernel{"minmax",
                                {a, b, lo, hi},
                                {},
                                For::make(i, make_int(0), make_int(4), ForKind::Serial, body)}});
  const float av[] = {1, NAN, 3, NAN};
  const float bv[] = {2, 5, NAN, NAN};
  Tensor at = Tensor::empty({4}), bt = Tensor::empty({4}), lt = Tensor::zeros({4}),
         ht = Tensor::zeros({5});
  std::memcpy(at.data_ptr(), av, sizeof av);
  std::memcpy(bt.data_ptr(), bv, sizeof bv);
  run(fn, {at, bt, lt, ht});
  EXPECT_EQ(lt.data<float>()[0], 1.0f);
  for (int k = 1; k < 4; ++k) EXPECT_TRUE(std::isnan(lt.data<float>()[k])) << k;
  EXPECT_TRUE(std::isnan(ht.data<float>()[4]));  // the last i (NaN, NaN)

  // Integer min/max respect signedness.
  Buf ua = make_buf("ua", DType::U8), ub = make_buf("ub", DType::U8),
      um = make_buf("um", DType::U8);
  KernelFn ufn =
      compile({Kernel{"umax",
                      {ua, ub, um},
                      {},
                      Store::make(um, make_int(0),
                                  max(Load::make(ua, make_int(0)), Load::make(ub, make_int(0))))}});
  Tensor uat = Tensor::full({1}, 200, DType::U8), ubt = Tensor::full({1}, 100, DType::U8),
         umt = Tensor::zeros({1}, DType::U8);
  run(ufn, {uat, ubt, umt});
  EXPECT_EQ(umt.data<uint8_t>()[0], 200);
}

TEST_F(LlvmBackendTest, ParallelLoopMatchesSerial) {
  const int64_t count = 100000;
  Buf x = make_buf("x", DType::F32), y = make_buf("y", DType::F32);
  Expr i = var("i"), n = var("n"), s = var("s", {DType::F32, 1}), t = var("t", {DType::F32, 1});
  // let t = s * 2 in: for i parallel: y[i] = x[i] * t + cast(i % 7), with min 0
  auto make = [&](ForKind kind) {
    Stmt loop = For::make(
        i, make_int(0), n, kind,
        Store::make(y, i, Load::make(x, i) * t + Cast::make({DType::F32, 1}, i % make_int(7))));
    return LetStmt::make(t, s * f32(2), loop);
  };
  KernelFn par = compile({Kernel{"par", {x, y}, {n, s}, make(ForKind::Parallel)}});
  KernelFn ser = compile({Kernel{"ser", {x, y}, {n, s}, make(ForKind::Serial)}});
  Tensor xt = Tensor::rand({count}, 7), yp = Tensor::zeros({count}), ys = Tensor::zeros({count});
  run(par, {xt, yp}, {count, bits_of(0.75f)});
  run(ser, {xt, ys}, {count, bits_of(0.75f)});
  EXPECT_TRUE(yp.equal(ys));
  EXPECT_EQ(yp.data<float>()[12345], xt.data<float>()[12345] * 1.5f + float(12345 % 7));

  // A parallel outer loop with a non-zero min over rows, serial vector inner loop.
  Buf m = make_buf("m", DType::I32);
  Expr r = var("r"), c = var("c");
  Stmt nest =
      For::make(r, make_int(2), make_int(98), ForKind::Parallel,
                For::make(c, make_int(0), make_int(4), ForKind::Serial,
                          Store::make(m, ramp(r * 32 + c * 8, 8),
                                      Cast::make({DType::I32, 8}, ramp(r * 1000 + c * 8, 8)))));
  KernelFn rows = compile({Kernel{"rows", {m}, {}, nest}});
  Tensor mt = Tensor::full({100 * 32}, -1, DType::I32);
  run(rows, {mt});
  for (int64_t row = 0; row < 100; ++row) {
    for (int64_t col = 0; col < 32; ++col) {
      int32_t want = row >= 2 ? int32_t(row * 1000 + col) : -1;
      ASSERT_EQ(mt.data<int32_t>()[row * 32 + col], want) << row << "," << col;
    }
  }
}

TEST_F(LlvmBackendTest, NestedLetsAndSelect) {
  Buf x = make_buf("x", DType::F64), y = make_buf("y", DType::F64);
  Expr i = var("i");
  Expr a = var("a", {DType::F64, 1}), b = var("b", {DType::F64, 1});
  Expr f2 = FloatImm::make({DType::F64, 1}, 2), f1 = FloatImm::make({DType::F64, 1}, 1);
  // y[i] = let a = x[i] * 2 in let b = a + 1 in (a > 3 ? a * b : -b)
  Expr e = Let::make(a, Load::make(x, i) * f2,
                     Let::make(b, a + f1,
                               Select::make(a > FloatImm::make({DType::F64, 1}, 3), a * b,
                                            FloatImm::make({DType::F64, 1}, 0) - b)));
  KernelFn fn = compile(
      {Kernel{"lets",
              {x, y},
              {},
              For::make(i, make_int(0), make_int(4), ForKind::Serial, Store::make(y, i, e))}});
  Tensor xt = Tensor::empty({4}, DType::F64), yt = Tensor::zeros({4}, DType::F64);
  const double xv[] = {0.5, 1.5, 2.0, 3.0};
  std::memcpy(xt.data_ptr(), xv, sizeof xv);
  run(fn, {xt, yt});
  EXPECT_EQ(yt.data<double>()[0], -2.0);
  EXPECT_EQ(yt.data<double>()[1], -4.0);
  EXPECT_EQ(yt.data<double>()[2], 20.0);
  EXPECT_EQ(yt.data<double>()[3], 42.0);
}

TEST_F(LlvmBackendTest, AllocateStackAndHeapScratch) {
  for (MemoryScope scope : {MemoryScope::Stack, MemoryScope::Heap}) {
    Buf x = make_buf("x", DType::F32), y = make_buf("y", DType::F32);
    Buf tmp = make_buf("tmp", DType::F32);
    Expr i = var("i"), j = var("j"), n = var("n");
    // Per row of 8: tmp[j] = x[i*8+j] * 2; y[i*8+j] = tmp[7-j]  (reverse)
    Expr size = scope == MemoryScope::Stack ? make_int(8) : n * 0 + make_int(8);
    Stmt row = Allocate::make(
        tmp, size, scope,
        Block::make({For::make(j, make_int(0), make_int(8), ForKind::Serial,
                               Store::make(tmp, j, Load::make(x, i * 8 + j) * f32(2))),
                     For::make(j, make_int(0), make_int(8), ForKind::Serial,
                               Store::make(y, i * 8 + j, Load::make(tmp, make_int(7) - j)))}));
    KernelFn fn = compile({Kernel{scope == MemoryScope::Stack ? "stack" : "heap",
                                  {x, y},
                                  {n},
                                  For::make(i, make_int(0), n, ForKind::Parallel, row)}});
    Tensor xt = Tensor::arange(0, 64, 1, DType::F32), yt = Tensor::zeros({64});
    run(fn, {xt, yt}, {8});
    for (int k = 0; k < 64; ++k) {
      EXPECT_EQ(yt.data<float>()[k], 2.0f * float((k / 8) * 8 + 7 - k % 8)) << k;
    }
  }
}

TEST_F(LlvmBackendTest, IfThenElseUnrolledAndBoolBuffers) {
  Buf x = make_buf("x", DType::I16), y = make_buf("y", DType::I16), f = make_buf("f", DType::Bool);
  Expr i = var("i"), u = var("u");
  Expr xi = Load::make(x, i);
  Stmt body =
      Block::make({IfThenElse::make(i % make_int(2) == make_int(0), Store::make(y, i, xi),
                                    Store::make(y, i, IntImm::make({DType::I16, 1}, 0) - xi)),
                   Store::make(f, i,
                               xi > IntImm::make({DType::I16, 1}, 2) &&
                                   !(xi == IntImm::make({DType::I16, 1}, 5)))});
  Stmt unrolled = For::make(u, make_int(0), make_int(2), ForKind::Unrolled,
                            For::make(i, u * 4, make_int(4), ForKind::Serial, body));
  KernelFn fn = compile({Kernel{"branches", {x, y, f}, {}, unrolled}});
  Tensor xt = Tensor::arange(0, 8, 1, DType::I16), yt = Tensor::zeros({8}, DType::I16);
  Tensor ft = Tensor::full({8}, 7, DType::Bool);
  run(fn, {xt, yt, ft});
  for (int k = 0; k < 8; ++k) {
    EXPECT_EQ(yt.data<int16_t>()[k], k % 2 == 0 ? k : -k) << k;
    EXPECT_EQ(ft.data<uint8_t>()[k], (k > 2 && k != 5) ? 1 : 0) << k;  // stored as 0/1 bytes
  }
}

TEST_F(LlvmBackendTest, HalfAndBFloatArithmetic) {
  for (DType t : {DType::F16, DType::BF16}) {
    Buf a = make_buf("a", t), b = make_buf("b", t), c = make_buf("c", t);
    Expr idx = ramp(make_int(0), 4);
    KernelFn fn = compile({Kernel{
        std::string("half_") + dtype_name(t),
        {a, b, c},
        {},
        Store::make(c, idx, Load::make(a, idx) * Load::make(b, idx) + Load::make(a, idx))}});
    Tensor at = Tensor::empty({4}, t), bt = Tensor::empty({4}, t), ct = Tensor::zeros({4}, t);
    const double av[] = {1.5, -3.0, 100.0, 0.1}, bv[] = {2.0, 0.5, 1000.0, 3.0};
    for (int64_t k = 0; k < 4; ++k) {
      at.set(std::vector<int64_t>{k}, av[k]);
      bt.set(std::vector<int64_t>{k}, bv[k]);
    }
    run(fn, {at, bt, ct});
    for (int64_t k = 0; k < 4; ++k) {
      std::vector<int64_t> ix{k};
      // Each op rounds to the type, like the interpreter.
      char prod[2], sum[2];
      store_double(t, prod, at.get(ix) * bt.get(ix));
      store_double(t, sum, load_as_double(t, prod) + at.get(ix));
      EXPECT_EQ(ct.get(ix), load_as_double(t, sum)) << dtype_name(t) << " " << k;
    }
  }
}

extern "C" void kiln_test_extern_axpy(void* x, void* y, int64_t n, double a) {
  for (int64_t k = 0; k < n; ++k) static_cast<float*>(y)[k] += float(a) * static_cast<float*>(x)[k];
}

TEST_F(LlvmBackendTest, ExternCallResolvesRegisteredSymbol) {
  register_extern_symbol("kiln_test_extern_axpy", reinterpret_cast<void*>(&kiln_test_extern_axpy));
  Buf x = make_buf("x", DType::F32), y = make_buf("y", DType::F32);
  Expr n = var("n");
  KernelFn fn =
      compile({Kernel{"ext",
                      {x, y},
                      {n},
                      ExternCall::make("kiln_test_extern_axpy",
                                       {n, FloatImm::make({DType::F64, 1}, 2.0)}, {x, y})}});
  Tensor xt = Tensor::arange(0, 7, 1, DType::F32), yt = Tensor::ones({7});
  run(fn, {xt, yt}, {7});
  for (int k = 0; k < 7; ++k) EXPECT_EQ(yt.data<float>()[k], 1.0f + 2.0f * k);
}

TEST_F(LlvmBackendTest, CompilesConcurrentlyFromThreads) {
  std::vector<std::thread> threads;
  std::vector<int> ok(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([t, &ok] {
      auto be = make_llvm_backend();
      Buf x = make_buf("x", DType::I64);
      Expr i = var("i");
      // The same kernel name in every module: modules are separate namespaces.
      Kernel k{"same_name",
               {x},
               {},
               For::make(i, make_int(0), make_int(16), ForKind::Serial,
                         Store::make(x, i, i * make_int(t + 1)))};
      auto mod = be->compile({k}, {});
      Tensor xt = Tensor::zeros({16}, DType::I64);
      void* p = xt.data_ptr();
      mod->lookup("same_name")(&p, nullptr);
      ok[t] = xt.data<int64_t>()[15] == 15 * (t + 1);
    });
  }
  for (std::thread& th : threads) th.join();
  for (int t = 0; t < 4; ++t) EXPECT_TRUE(ok[t]) << t;
}

// stream(value, big) (mark_stream_stores): a dense unmasked vector store is
// non-temporal when big holds and the address is a multiple of the vector's
// size, a plain store otherwise (an odd offset, big false, a masked tail);
// the values are the same either way, and the function fences once.
TEST_F(LlvmBackendTest, StreamStoresKeepValuesAtAnyAlignment) {
  Buf x = make_buf("x", DType::F32), y = make_buf("y", DType::F32);
  Expr o = var("o"), n = var("n"), off = var("off"), big = var("big", {DType::Bool, 1});
  Expr idx = ramp(o * 16 + off, 16);
  Expr pred = idx < bcast(n + off, 16);
  Expr value = Load::make(x, idx, pred) * bcast(f32(2), 16);
  Stmt main = Store::make(y, idx, Call::make({DType::F32, 16}, "stream", {value, big}));
  Stmt tail = Store::make(y, idx, Call::make({DType::F32, 16}, "stream", {value, big}), pred);
  std::vector<Kernel> ks = {Kernel{
      "streamed",
      {x, y},
      {n, off, big},
      Block::make({For::make(o, make_int(0), n / make_int(16), ForKind::Parallel, main),
                   For::make(o, n / make_int(16), make_int(1), ForKind::Serial, tail)})}};
  std::string ir = backend_->dump(ks, {}, DumpStage::LLVM);
  EXPECT_NE(ir.find("!nontemporal"), std::string::npos) << ir;
  EXPECT_NE(ir.find("fence seq_cst"), std::string::npos) << ir;
  KernelFn fn = compile(ks);
  for (int64_t count : {0, 5, 16, 1000, 4096}) {
    for (int64_t offset : {0, 3}) {
      for (int64_t on : {0, 1}) {
        Tensor xt = Tensor::empty({4200}), yt = Tensor::full({4200}, -7.0);
        for (int64_t k = 0; k < 4200; ++k) xt.data<float>()[k] = float(k) - 99.5f;
        run(fn, {xt, yt}, {count, offset, on});
        for (int64_t k = 0; k < 4200; ++k) {
          float want = k >= offset && k < offset + count ? 2 * (float(k) - 99.5f) : -7.0f;
          ASSERT_EQ(yt.data<float>()[k], want)
              << "n=" << count << " off=" << offset << " big=" << on << " k=" << k;
        }
      }
    }
  }
  // The loop evaluator reads the mark as its value.
  Tensor xt = Tensor::empty({64}), a = Tensor::full({64}, -7.0), b = Tensor::full({64}, -7.0);
  for (int64_t k = 0; k < 64; ++k) xt.data<float>()[k] = float(k);
  run(fn, {xt, a}, {40, 0, 1});
  std::vector<Tensor> bufs = {xt, b};
  std::vector<int64_t> scalars = {40, 0, 1};
  loop::eval_kernel(ks[0], bufs, scalars);
  EXPECT_TRUE(a.equal(b));
}

TEST_F(LlvmBackendTest, DumpStages) {
  Buf x = make_buf("x", DType::F32), y = make_buf("y", DType::F32);
  Expr o = var("o"), n = var("n");
  Expr idx = ramp(o * 8, 8);
  std::vector<Kernel> ks = {Kernel{
      "dumped",
      {x, y},
      {n},
      For::make(o, make_int(0), n, ForKind::Parallel,
                Store::make(y, idx, Call::make({DType::F32, 8}, "exp", {Load::make(x, idx)})))}};
  std::string ir = backend_->dump(ks, {}, DumpStage::LLVM);
  EXPECT_NE(ir.find("define void @kernel.dumped(ptr"), std::string::npos) << ir;
  EXPECT_NE(ir.find("<8 x float>"), std::string::npos);
  EXPECT_NE(ir.find("@kiln_parallel_for"), std::string::npos);
  EXPECT_NE(ir.find("noalias"), std::string::npos);
  std::string opt = backend_->dump(ks, {}, DumpStage::LLVMOpt);
  EXPECT_NE(opt.find("define void @kernel.dumped"), std::string::npos);
  EXPECT_NE(opt.find("<8 x float>"), std::string::npos);
  EXPECT_EQ(opt.find("@dumped.body("), std::string::npos) << "body not inlined";
  std::string as = backend_->dump(ks, {}, DumpStage::Asm);
  EXPECT_NE(as.find("kernel.dumped:"), std::string::npos);
  EXPECT_NE(as.find("ret"), std::string::npos);
  EXPECT_THROW(backend_->dump(ks, {}, DumpStage::Cuda), Error);
}

TEST_F(LlvmBackendTest, OptLevelsAndErrors) {
  Buf x = make_buf("x", DType::I32);
  Expr i = var("i");
  std::vector<Kernel> ks = {
      Kernel{"inc",
             {x},
             {},
             For::make(i, make_int(0), make_int(9), ForKind::Vectorized,
                       Store::make(x, i, Load::make(x, i) + IntImm::make({DType::I32, 1}, 1)))}};
  for (int level = 0; level <= 3; ++level) {
    CodegenOptions opt;
    opt.opt_level = level;
    KernelFn fn = compile(ks, opt);
    Tensor xt = Tensor::arange(0, 9, 1, DType::I32);
    run(fn, {xt});
    for (int k = 0; k < 9; ++k) EXPECT_EQ(xt.data<int32_t>()[k], k + 1) << "O" << level;
  }
  CodegenOptions generic;
  generic.cpu = "x86-64";
  KernelFn fn = compile(ks, generic);
  Tensor xt = Tensor::zeros({9}, DType::I32);
  run(fn, {xt});
  EXPECT_EQ(xt.data<int32_t>()[8], 1);

  CodegenOptions bad;
  bad.cpu = "no-such-cpu";
  EXPECT_THROW(backend_->compile(ks, bad), Error);
  bad = {};
  bad.opt_level = 7;
  EXPECT_THROW(backend_->compile(ks, bad), Error);
  auto module = backend_->compile(ks, {});
  EXPECT_THROW(module->lookup("nope"), InternalError);
  // Unbound variable: an internal error, not a crash.
  std::vector<Kernel> unbound = {
      Kernel{"unbound", {x}, {}, Store::make(x, var("zz"), IntImm::make({DType::I32, 1}, 1))}};
  EXPECT_THROW(backend_->compile(unbound, {}), InternalError);
  std::vector<Kernel> dup = {ks[0], ks[0]};
  EXPECT_THROW(backend_->compile(dup, {}), InternalError);
  EXPECT_EQ(backend_->name(), "llvm");
}

}  // namespace
}  // namespace kiln::codegen
