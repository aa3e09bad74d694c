// The GPU schedules (passes/schedule/gpu_schedule.h) on the sim device: each
// compiled function runs as GPU-mapped loop IR through the evaluator, with
// the plan's copies and launches, and is checked against the interpreter
// (the reference), for sizes 0, 1, 7, 33 and 1023 through symbolic dims (one
// compile per function), rows shorter and longer than a block, several
// dtypes, and NaN/Inf inside reductions. The scheduled loops are checked for
// the form each schedule promises (teams and trees, registers, dense
// stores); tests/ir/gpu_schedules.kiln shows the whole nests.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "ir/loop/loop_eval.h"
#include "ir/loop/verifier.h"
#include "ir/loop/visitor.h"
#include "kiln/kiln.h"
#include "lower_test_util.h"
#include "passes/schedule/gpu_schedule.h"
#include "passes/schedule/schedule.h"

namespace kiln::test {
namespace {

constexpr const char* kScript = R"(
def rowsum(x: Tensor):
    return x.sum(-1)

def rowmean(x: Tensor):
    return x.mean(-1, keepdim=True)

def rowmax(x: Tensor):
    return x.amax(-1)

def colsum(x: Tensor):
    return x.sum(0)

def colmax(x: Tensor):
    return x.amax(0)

def fullsum(x: Tensor):
    return x.sum()

def fullmean(x: Tensor):
    return x.mean()

def softmax(x: Tensor):
    return torch.softmax(x, -1)

def log_softmax(x: Tensor):
    return torch.log_softmax(x, -1)

def manual_softmax(x: Tensor):
    e = torch.exp(x - x.amax(-1, keepdim=True))
    return e / e.sum(-1, keepdim=True)

def layer_norm(x: Tensor, w: Tensor, b: Tensor):
    return F.layer_norm(x, [x.shape[-1]], w, b, 1e-5)

def manual_layer_norm(x: Tensor, w: Tensor, b: Tensor):
    mean = x.mean(-1, keepdim=True)
    centered = x - mean
    var = (centered * centered).mean(-1, keepdim=True)
    return centered * torch.rsqrt(var + 1e-5) * w + b

def rms_norm(x: Tensor, w: Tensor):
    return F.rms_norm(x, [x.shape[-1]], w, 1e-6)

def chain(x: Tensor, y: Tensor):
    z = x * torch.sigmoid(x) + 0.5 * y
    z = torch.clamp(z, min=-3.0, max=3.0)
    return torch.tanh(z) * 2.0 - z.abs() / (1.0 + z * z)

def middle(x: Tensor):
    return x.sum(1)
)";

struct Bind {
  std::string name;
  std::vector<Dim> dims;
  DType dtype = DType::F32;
};

CompiledFunction compile_for(const std::string& fn, const std::vector<Bind>& binds,
                             const std::string& backend) {
  std::vector<Binding> b;
  for (const Bind& x : binds) b.push_back(bind_tensor(x.name, x.dtype, x.dims));
  Function f = load_script(kScript, fn, b);
  CompileOptions o;
  o.backend = backend;
  if (backend == "loop-eval") o.device = Device::sim(0);
  return compile(f, o);
}

// One function compiled for the sim device and for the interpreter.
struct Both {
  CompiledFunction sim, ref;
  std::string loops() const { return sim.dump("loops-scheduled"); }
};

Both both(const std::string& fn, const std::vector<Bind>& binds) {
  return {compile_for(fn, binds, "loop-eval"), compile_for(fn, binds, "interp")};
}

struct Tol {
  double rtol, atol;
};
Tol tol_for(DType t) {
  if (t == DType::F16) return {4e-3, 4e-3};
  if (t == DType::BF16) return {3.2e-2, 3.2e-2};
  if (t == DType::F64) return {1e-10, 1e-12};
  return {1e-4, 1e-5};
}

// Runs both on `inputs` and compares every output; a run the reference
// refuses (e.g. amax of an empty row) is skipped. Returns whether it ran.
bool expect_match(const Both& f, const std::vector<Tensor>& inputs, const std::string& what,
                  Tol tol = {1e-4, 1e-5}) {
  std::vector<Tensor> want;
  try {
    want = f.ref(inputs);
  } catch (const Error&) {
    return false;
  }
  std::vector<Tensor> got = f.sim(inputs);
  EXPECT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size() && i < want.size(); ++i) {
    EXPECT_TRUE(tensors_close(got[i], want[i], tol.rtol, tol.atol))
        << what << " output " << i << "\n"
        << f.loops();
  }
  return true;
}

#define EXPECT_HAS(text, part) EXPECT_NE((text).find(part), std::string::npos) << (text)
#define EXPECT_LACKS(text, part) EXPECT_EQ((text).find(part), std::string::npos) << (text)

const std::vector<int64_t> kSizes = {0, 1, 7, 33, 1023};

TEST(GpuReduce, RowReductionsMatchForEverySize) {
  for (const char* fn : {"rowsum", "rowmean", "rowmax"}) {
    Both f = both(fn, {{"x", {sym("N"), sym("D")}}});
    std::string loops = f.loops();
    // A block per row: each warp reduces its partials with shuffles, the
    // warps' results meet in shared memory after one barrier.
    EXPECT_HAS(loops, "in gpu_shared");
    EXPECT_HAS(loops, "in gpu_local");
    EXPECT_HAS(loops, "barrier()");
    EXPECT_HAS(loops, "warp_reduce_");
    EXPECT_HAS(loops, "red0_0[(i0_thr / 32)] = acc0_w[0]");
    EXPECT_LACKS(loops, "(i0_thr + 128)");
    int runs = 0;
    for (int64_t n : {0, 1, 3}) {
      for (int64_t d : kSizes) {
        Tensor x = random_tensor({n, d}, DType::F32, uint64_t(n * 1000 + d));
        runs += expect_match(f, {x},
                             std::string(fn) + " " + std::to_string(n) + "x" + std::to_string(d));
      }
    }
    EXPECT_GT(runs, 10) << fn;
  }
}

TEST(GpuReduce, ShortRowsShareABlockLongRowsGetOne) {
  // 64 elements: a warp per row, 8 rows per block of 256 threads.
  Both short_rows = both("softmax", {{"x", {sym("N"), 64}}});
  std::string loops = short_rows.loops();
  EXPECT_HAS(loops, "for (i0_blk, 0, ((N + 7) / 8)) gpu_block");
  EXPECT_HAS(loops, "gpu_thread");
  EXPECT_HAS(loops, "(i0_thr % 32)");
  // A warp per row: shuffles only, no shared memory and no barrier.
  EXPECT_HAS(loops, "warp_reduce_max(acc0_p[0], 32)");
  EXPECT_HAS(loops, "warp_reduce_add(acc1_p[0], 32)");
  EXPECT_LACKS(loops, "gpu_shared");
  EXPECT_LACKS(loops, "barrier()");
  // 4000 elements: 512 threads per row, each keeping 8 of them in registers.
  Both long_rows = both("softmax", {{"x", {sym("N"), 4000}}});
  std::string long_loops = long_rows.loops();
  EXPECT_HAS(long_loops, "for (i0_blk, 0, N) gpu_block");
  EXPECT_HAS(long_loops, "for (i0_thr, 0, 512) gpu_thread");
  EXPECT_HAS(long_loops, "x_r[7]");
  EXPECT_HAS(long_loops, "allocate red0_0[f32 * 16] in gpu_shared");
  for (int64_t n : {0, 1, 9}) {
    expect_match(short_rows, {random_tensor({n, 64}, DType::F32, uint64_t(n) + 1)},
                 "64 wide, " + std::to_string(n) + " rows");
    expect_match(long_rows, {random_tensor({n, 4000}, DType::F32, uint64_t(n) + 2)},
                 "4000 wide, " + std::to_string(n) + " rows");
  }
}

TEST(GpuReduce, NormalizationsMatchInEveryDtype) {
  for (DType dt : {DType::F32, DType::F64, DType::F16, DType::BF16}) {
    Tol tol = tol_for(dt);
    for (const char* fn : {"softmax", "log_softmax", "manual_softmax"}) {
      Both f = both(fn, {{"x", {sym("N"), sym("D")}, dt}});
      // Rows up to 2048 elements stay in registers; 2049 takes the streaming version.
      EXPECT_HAS(f.loops(), "(D <= 2048)");
      for (int64_t d : {1, 7, 33, 1023, 2049}) {
        expect_match(f, {random_tensor({3, d}, dt, uint64_t(d) + 5)},
                     std::string(fn) + " " + dtype_name(dt) + " D=" + std::to_string(d), tol);
      }
    }
    // The normalized shape is a number in the script: one compile per width
    // (rows shorter than a warp, a warp, several warps, more than 8 per thread
    // of a full block).
    for (int64_t d : {1, 7, 33, 1023, 9000}) {
      for (const char* fn : {"layer_norm", "manual_layer_norm"}) {
        Both f = both(fn, {{"x", {sym("N"), d}, dt}, {"w", {d}, dt}, {"b", {d}, dt}});
        // A row of one element lowers without a loop over the row: nothing
        // to share, gpu_map's one thread per row.
        if (d > 1) {
          EXPECT_HAS(f.loops(), "in gpu_local");
        }
        for (int64_t n : {1, 9}) {
          std::vector<Tensor> in = {random_tensor({n, d}, dt, uint64_t(d) + 6),
                                    random_tensor({d}, dt, uint64_t(d) + 7),
                                    random_tensor({d}, dt, uint64_t(d) + 8)};
          expect_match(f, in, std::string(fn) + " " + dtype_name(dt) + " D=" + std::to_string(d),
                       tol);
        }
      }
      Both rms = both("rms_norm", {{"x", {sym("N"), d}, dt}, {"w", {d}, dt}});
      expect_match(
          rms, {random_tensor({2, d}, dt, uint64_t(d) + 9), random_tensor({d}, dt, uint64_t(d))},
          std::string("rms_norm ") + dtype_name(dt) + " D=" + std::to_string(d), tol);
    }
  }
}

TEST(GpuReduce, NaNAndInfinityInsideReductions) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  Tensor x = random_tensor({4, 300}, DType::F32, 11);
  std::vector<int64_t> at0{0, 17}, at1{1, 299}, at2{2, 0}, at2b{2, 150};
  x.set(at0, nan);   // row 0: NaN -> max, sum and softmax NaN
  x.set(at1, inf);   // row 1: +inf
  x.set(at2, -inf);  // row 2: -inf entries softmax to 0
  x.set(at2b, -inf);
  for (const char* fn : {"rowsum", "rowmax", "softmax", "log_softmax", "colmax", "fullsum"}) {
    Both f = both(fn, {{"x", {sym("N"), sym("D")}}});
    EXPECT_TRUE(expect_match(f, {x}, fn)) << fn;
  }
  Both f = both("rowmax", {{"x", {sym("N"), sym("D")}}});
  std::vector<Tensor> out = f.sim({x});
  EXPECT_TRUE(std::isnan(out[0].get(std::vector<int64_t>{0})));
  EXPECT_EQ(out[0].get(std::vector<int64_t>{1}), inf);
}

TEST(GpuReduce, ColumnReductionsGiveAdjacentThreadsAdjacentColumns) {
  for (const char* fn : {"colsum", "colmax"}) {
    Both f = both(fn, {{"x", {sym("N"), sym("D")}}});
    std::string loops = f.loops();
    // 32 columns per block, 8 threads per column whose partials meet in a tree.
    EXPECT_HAS(loops, "for (i0_blk, 0, ((D + 31) / 32)) gpu_block");
    EXPECT_HAS(loops, "let i0 = ((i0_blk * 32) + (i0_thr % 32))");
    EXPECT_HAS(loops, "red0_0[(i0_thr + 128)]");
    for (auto [n, d] : std::vector<std::pair<int64_t, int64_t>>{
             {0, 3}, {1, 1}, {7, 33}, {1023, 7}, {33, 1023}, {3, 0}}) {
      Tensor x = random_tensor({n, d}, DType::F32, uint64_t(n * 7 + d));
      expect_match(f, {x}, std::string(fn) + " " + std::to_string(n) + "x" + std::to_string(d));
    }
  }
  // Over the middle dim of three: the two kept dims are one row number, and
  // adjacent threads take adjacent elements of the last.
  Both mid = both("middle", {{"x", {sym("A"), sym("B"), sym("C")}}});
  EXPECT_HAS(mid.loops(), "for (gpu_row_blk, 0, (((A * C) + 31) / 32)) gpu_block");
  EXPECT_HAS(mid.loops(), "let i1 = (gpu_row % C)");
  for (int64_t c : {1, 7, 300}) {
    expect_match(mid, {random_tensor({3, 5, c}, DType::F32, uint64_t(c))},
                 "middle C=" + std::to_string(c));
  }
}

TEST(GpuReduce, NestedRowLoopsRunAsOneLoopOverRows) {
  // layer_norm of [B, T, 64] over its last dim: a warp per (b, t) row.
  std::vector<Binding> b = {bind_tensor("x", DType::F32, {sym("B"), sym("T"), 64}),
                            bind_tensor("w", DType::F32, {64}), bind_tensor("b", DType::F32, {64})};
  const char* src =
      "def ln(x: Tensor, w: Tensor, b: Tensor):\n"
      "    return F.layer_norm(x, [64], w, b, 1e-5)\n";
  Function fn = load_script(src, "ln", b);
  CompileOptions sim;
  sim.backend = "loop-eval";
  sim.device = Device::sim(0);
  CompileOptions ref;
  ref.backend = "interp";
  Both f{compile(fn, sim), compile(fn, ref)};
  EXPECT_HAS(f.loops(), "for (gpu_row_blk, 0, (((B * T) + 7) / 8)) gpu_block");
  EXPECT_HAS(f.loops(), "let i0 = (gpu_row / T)");
  for (auto [bs, t] : std::vector<std::pair<int64_t, int64_t>>{{0, 3}, {1, 1}, {2, 7}, {3, 0}}) {
    expect_match(f,
                 {random_tensor({bs, t, 64}, DType::F32, uint64_t(bs * 10 + t)),
                  random_tensor({64}, DType::F32, 1), random_tensor({64}, DType::F32, 2)},
                 "ln " + std::to_string(bs) + "x" + std::to_string(t));
  }
}

TEST(GpuReduce, WholeTensorReductionIsOneBlockWithAFixedTree) {
  for (const char* fn : {"fullsum", "fullmean"}) {
    Both f = both(fn, {{"x", {sym("N"), sym("D")}}});
    std::string loops = f.loops();
    EXPECT_HAS(loops, "for (gpu_blk, 0, 1) gpu_block");
    EXPECT_HAS(loops, "for (gpu_thr, 0, 1024) gpu_thread");
    // 32 warps reduce with shuffles; every thread folds their 32 results.
    EXPECT_HAS(loops, "warp_reduce_add(acc0_p[0], 32)");
    EXPECT_HAS(loops, "allocate red0_0[f32 * 32] in gpu_shared");
    EXPECT_HAS(loops, "red0_0[31]");
    for (int64_t n : {0, 1, 7, 33, 1023}) {
      Tensor x = random_tensor({n, 33}, DType::F32, uint64_t(n) + 3);
      expect_match(f, {x}, std::string(fn) + " " + std::to_string(n) + "x33");
    }
    Both f64 = both(fn, {{"x", {sym("N"), sym("D")}, DType::F64}});
    expect_match(f64, {random_tensor({1023, 7}, DType::F64, 4)}, std::string(fn) + " f64",
                 tol_for(DType::F64));
  }
}

TEST(GpuReduce, IntegerReductionsAreExact) {
  for (DType dt : {DType::I32, DType::I8, DType::I64}) {
    for (const char* fn : {"rowsum", "rowmax", "colsum", "colmax", "fullsum"}) {
      Both f = both(fn, {{"x", {sym("N"), sym("D")}, dt}});
      for (int64_t d : {1, 33, 1023}) {
        Tensor x = random_tensor({3, d}, dt, uint64_t(d) + 12);
        expect_match(f, {x}, std::string(fn) + " " + dtype_name(dt) + " D=" + std::to_string(d),
                     {0, 0});
      }
    }
  }
}

TEST(GpuPointwise, ElementwiseChainMatchesForEverySize) {
  for (DType dt : {DType::F32, DType::F16, DType::F64}) {
    Both flat = both("chain", {{"x", {sym("N")}, dt}, {"y", {sym("N")}, dt}});
    std::string loops = flat.loops();
    // Four elements per thread, one dense store of the four, 32-bit
    // coordinates only where there are coordinates to compute (2-D below).
    EXPECT_HAS(loops, "for (gpu_blk, 0, ((N + 1023) / 1024)) gpu_block");
    EXPECT_HAS(loops, "[ramp(gpu_e, 1, 4)] = ");
    for (int64_t n : kSizes) {
      expect_match(
          flat, {random_tensor({n}, dt, uint64_t(n) + 1), random_tensor({n}, dt, uint64_t(n) + 2)},
          std::string("chain ") + dtype_name(dt) + " " + std::to_string(n), tol_for(dt));
    }
  }
  // Rows broadcast against a vector: coordinates from the flat element, in
  // 32-bit math when the sizes allow; rows of a multiple of 4 take one
  // coordinate computation per thread.
  Both rows = both("chain", {{"x", {sym("N"), sym("D")}}, {"y", {sym("D")}}});
  std::string loops = rows.loops();
  EXPECT_HAS(loops, "((D % 4) == 0)");
  EXPECT_HAS(loops, "(i32(gpu_e) / i32(D))");
  EXPECT_HAS(loops, "(gpu_e / D)");
  for (int64_t n : {0, 1, 7}) {
    for (int64_t d : {1, 4, 33, 64}) {
      expect_match(rows,
                   {random_tensor({n, d}, DType::F32, uint64_t(n + d)),
                    random_tensor({d}, DType::F32, uint64_t(d))},
                   "chain rows " + std::to_string(n) + "x" + std::to_string(d));
    }
  }
}

TEST(GpuPointwise, NonContiguousInputsAreReadThroughTheirStrides) {
  Both rows = both("chain", {{"x", {sym("N"), sym("D")}}, {"y", {sym("D")}}});
  Tensor base = random_tensor({8, 12}, DType::F32, 21);
  Tensor transposed = base.view_as_strided({12, 8}, {1, 12}, 0);  // the transpose
  expect_match(rows, {transposed, random_tensor({8}, DType::F32, 22)}, "transposed input");
}

// Inputs along the innermost dim: one dense 4-lane load each on the fast
// path, in a version taken when their stride parameters are 1 in the call
// (views at any offset too: the CUDA C checks alignment per access); other
// strides (a step of 2, a broadcast's 0) take the scalar version.
TEST(GpuPointwise, InputsAreReadWithDenseVectorLoadsWhenTheirStrideIsOne) {
  Both flat = both("chain", {{"x", {sym("N")}}, {"y", {sym("N")}}});
  std::string loops = flat.loops();
  EXPECT_HAS(loops, "if (((x_s0 == 1) && (y_s0 == 1))) {");
  EXPECT_HAS(loops, "x_v[ramp(0, 1, 4)] = x[ramp(gpu_e, 1, 4)]");
  EXPECT_HAS(loops, "y_v[ramp(0, 1, 4)] = y[ramp(gpu_e, 1, 4)]");
  EXPECT_HAS(loops, "sigmoid(x_v[3])");
  Both rows = both("chain", {{"x", {sym("N"), sym("D")}}, {"y", {sym("D")}}});
  EXPECT_HAS(rows.loops(), "x_v[ramp(0, 1, 4)] = x[ramp(");
  EXPECT_HAS(rows.loops(), "y_v[ramp(0, 1, 4)] = y[ramp(");
  for (int64_t n : {1, 7, 33, 1023}) {
    Tensor xb = random_tensor({2 * n + 3}, DType::F32, uint64_t(n) + 30);
    Tensor yb = random_tensor({2 * n + 3}, DType::F32, uint64_t(n) + 31);
    const std::string at = " n=" + std::to_string(n);
    expect_match(flat, {xb.view_as_strided({n}, {1}, 1), yb.view_as_strided({n}, {1}, 3)},
                 "offset views" + at);
    expect_match(flat, {xb.view_as_strided({n}, {2}, 0), yb.view_as_strided({n}, {1}, 0)},
                 "a stride of 2" + at);
    expect_match(flat, {xb.view_as_strided({n}, {0}, 2), yb.view_as_strided({n}, {1}, 2)},
                 "a broadcast" + at);
  }
  for (int64_t d : {4, 8, 12, 36}) {
    Tensor xb = random_tensor({3 * d + 1}, DType::F32, uint64_t(d) + 32);
    expect_match(rows, {xb.view_as_strided({3, d}, {d, 1}, 1), random_tensor({d}, DType::F32, 5)},
                 "rows at an offset, D=" + std::to_string(d));
  }
}

// Hand-built kernels: what each schedule refuses stays for gpu_map.
loop::Expr v(const char* n) {
  return loop::Var::make(loop::i64_t(), n);
}

TEST(GpuSchedules, KernelsOfOtherShapesAreLeftAlone) {
  using namespace kiln::loop;  // NOLINT
  Buf x = make_buf("x", DType::F32), y = make_buf("y", DType::F32), z = make_buf("z", DType::F32);
  // The second nest reads what the first writes, at another element: not
  // side by side on a grid.
  Stmt first = For::make(v("i"), make_int(0), v("n"), ForKind::Serial,
                         Store::make(y, v("i"), Load::make(x, v("i"))));
  Stmt second = For::make(v("j"), make_int(0), v("n"), ForKind::Serial,
                          Store::make(z, v("j"), Load::make(y, v("n") - v("j") - make_int(1))));
  Kernel k{"flip", {x, y, z}, {v("n")}, Block::make({first, second})};
  passes::GpuTarget gpu;
  EXPECT_TRUE(passes::gpu_pointwise(k, ir::OpCategory::Elementwise, gpu).body.same_as(k.body));
  // Not a reduction: nothing for gpu_reduce either.
  EXPECT_TRUE(passes::gpu_reduce(k, gpu).body.same_as(k.body));
  // A row whose elements another thread of the team would read: left alone.
  Buf acc = make_buf("acc", DType::F32);
  Expr r = v("r"), c = v("c");
  Stmt row = For::make(
      r, make_int(0), v("n"), ForKind::Serial,
      Allocate::make(
          acc, make_int(1), MemoryScope::Stack,
          Block::make({Store::make(acc, make_int(0), FloatImm::make({DType::F32, 1}, 0)),
                       For::make(c, make_int(0), make_int(8), ForKind::Serial,
                                 Store::make(acc, make_int(0),
                                             Load::make(acc, make_int(0)) +
                                                 Load::make(x, r * make_int(8) + c))),
                       For::make(c, make_int(0), make_int(8), ForKind::Serial,
                                 Store::make(y, r * make_int(8) + c, Load::make(acc, make_int(0)))),
                       For::make(c, make_int(0), make_int(8), ForKind::Serial,
                                 Store::make(z, r * make_int(8) + c,
                                             Load::make(y, r * make_int(8) + make_int(7) - c)))})));
  Kernel rk{"cross", {x, y, z}, {v("n")}, row};
  EXPECT_TRUE(passes::gpu_reduce(rk, gpu).body.same_as(rk.body));
  // A kernel mapped already is left alone.
  Kernel mapped = passes::gpu_map(k, gpu);
  EXPECT_TRUE(passes::gpu_reduce(mapped, gpu).body.same_as(mapped.body));
  EXPECT_TRUE(
      passes::gpu_pointwise(mapped, ir::OpCategory::Elementwise, gpu).body.same_as(mapped.body));
}

TEST(GpuSchedules, ArgmaxKeepsTheGpuMapForm) {
  // Its update is a branch, not an accumulation: one thread per row, as before.
  std::vector<Binding> b = {bind_tensor("x", DType::F32, {sym("N"), sym("D")})};
  Function fn = load_script("def am(x: Tensor):\n    return x.argmax(-1)\n", "am", b);
  CompileOptions o;
  o.backend = "loop-eval";
  o.device = Device::sim(0);
  CompiledFunction f = compile(fn, o);
  std::string loops = f.dump("loops-scheduled");
  EXPECT_LACKS(loops, "gpu_shared");
  EXPECT_HAS(loops, "for (i0_blk, 0, ((N + 255) / 256)) gpu_block");
}

TEST(GpuSchedules, ContractionsKeepTheGpuMapForm) {
  // A matmul's naive nest reduces along K per output element; gpu-reduce
  // could take it, but contractions are scheduled by their own candidates.
  // (With 5 columns the heuristic picks the naive nest over the tiled GEMM,
  // which is mapped by its lowering: tests/unit/gpu_gemm_test.cpp.)
  std::vector<Binding> b = {bind_tensor("a", DType::F32, {sym("M"), sym("K")}),
                            bind_tensor("w", DType::F32, {sym("K"), 5})};
  Function fn = load_script("def mm(a: Tensor, w: Tensor):\n    return a @ w\n", "mm", b);
  CompileOptions o;
  o.backend = "loop-eval";
  o.device = Device::sim(0);
  CompiledFunction f = compile(fn, o);
  std::string loops = f.dump("loops-scheduled");
  EXPECT_LACKS(loops, "gpu_shared");
  EXPECT_HAS(loops, "gpu_block");
  CompileOptions r;
  r.backend = "interp";
  Both both_mm{f, compile(fn, r)};
  expect_match(both_mm,
               {random_tensor({7, 33}, DType::F32, 1), random_tensor({33, 5}, DType::F32, 2)},
               "mm 7x33x5");
}

}  // namespace
}  // namespace kiln::test
