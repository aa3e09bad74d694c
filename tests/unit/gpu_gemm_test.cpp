// The tiled SIMT GEMM for GPU targets ("gemm.simt", passes/lower/gpu/
// gpu_gemm.h) on the sim device: each function is compiled once with
// symbolic dims and run as GPU-mapped loop IR through the evaluator, with the
// plan's copies and launches, against the interpreter, for sizes around the
// 64x64 tiles and 16-wide K slabs (0, 1, 7, 33, 64, 100: empty, ragged and
// several tiles and slabs), batched and broadcast batch dims, transposed
// operands, linear's bias and fused epilogues, and f16/bf16/f64 operands.
// Also the nest's form (shared tiles, barriers, register accumulators, one
// barrier per slab), the heuristic's choice and its reasons in `explain`.
#include <gtest/gtest.h>

#include <array>
#include <string>
#include <vector>

#include "kiln/kiln.h"
#include "lower_test_util.h"
#include "passes/lower/gpu/gpu_gemm.h"

namespace kiln::test {
namespace {

constexpr const char* kScript = R"(
def mm(a: Tensor, b: Tensor):
    return a @ b

def mm_bias_relu(a: Tensor, b: Tensor, c: Tensor):
    return torch.relu(a @ b + c)

def mm_ta(a: Tensor, b: Tensor):
    return a.t() @ b

def mm_tb(a: Tensor, b: Tensor):
    return a @ b.t()

def bmm(a: Tensor, b: Tensor):
    return torch.bmm(a, b)

def lin(x: Tensor, w: Tensor, b: Tensor):
    return F.linear(x, w, b)

def lin_gelu(x: Tensor, w: Tensor, b: Tensor):
    return F.gelu(F.linear(x, w, b)) * 2.0
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
  return {1e-4, 1e-4};
}

void expect_match(const Both& f, const std::vector<Tensor>& inputs, const std::string& what,
                  Tol tol = {1e-4, 1e-4}) {
  std::vector<Tensor> want = f.ref(inputs);
  std::vector<Tensor> got = f.sim(inputs);
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_TRUE(tensors_close(got[i], want[i], tol.rtol, tol.atol)) << what << " output " << i;
  }
}

#define EXPECT_HAS(text, part) EXPECT_NE((text).find(part), std::string::npos) << (text)
#define EXPECT_LACKS(text, part) EXPECT_EQ((text).find(part), std::string::npos) << (text)

std::string dims_text(int64_t m, int64_t n, int64_t k) {
  return std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k);
}

struct Mnk {
  int64_t m, n, k;
};
// Around the tiles (64) and slabs (16): empty, single, ragged, exact, several.
const std::vector<Mnk> kShapes = {{0, 5, 3},    {4, 0, 3},     {3, 4, 0},   {1, 1, 1},
                                  {7, 7, 7},    {1, 33, 17},   {33, 1, 5},  {64, 64, 16},
                                  {65, 63, 33}, {100, 7, 100}, {7, 100, 9}, {33, 130, 31}};

TEST(GpuGemm, MatmulMatchesForEverySizeFromOneCompile) {
  Both f = both("mm", {{"a", {sym("M"), sym("K")}}, {"b", {sym("K"), sym("N")}}});
  const std::string loops = f.loops();
  // The tiled nest: slabs in shared memory, register accumulators, the K loop
  // over slabs with one barrier each, guarded stores.
  EXPECT_HAS(loops, "gpu_block");
  EXPECT_HAS(loops, "for (thr");
  EXPECT_HAS(loops, "in gpu_shared");
  EXPECT_HAS(loops, "in gpu_local");
  EXPECT_HAS(loops, "for (slab");
  EXPECT_HAS(loops, "barrier()");
  EXPECT_HAS(loops, "fma(");
  for (const Mnk& s : kShapes) {
    expect_match(f,
                 {random_tensor({s.m, s.k}, DType::F32, uint64_t(s.m * 31 + s.k)),
                  random_tensor({s.k, s.n}, DType::F32, uint64_t(s.n * 17 + s.k + 1))},
                 "mm " + dims_text(s.m, s.n, s.k));
  }
}

TEST(GpuGemm, BiasAndActivationRunAsTheEpilogue) {
  Both f = both("mm_bias_relu",
                {{"a", {sym("M"), sym("K")}}, {"b", {sym("K"), sym("N")}}, {"c", {sym("N")}}});
  // One kernel: the add and the relu are stored from the accumulators.
  EXPECT_EQ(f.sim.num_kernels(), 1) << f.sim.explain();
  EXPECT_HAS(f.sim.explain(), "algorithm: gemm.simt");
  for (const Mnk& s : std::vector<Mnk>{{1, 1, 1}, {7, 33, 5}, {100, 70, 40}, {0, 3, 2}}) {
    expect_match(f,
                 {random_tensor({s.m, s.k}, DType::F32, 3),
                  random_tensor({s.k, s.n}, DType::F32, 4), random_tensor({s.n}, DType::F32, 5)},
                 "mm+bias+relu " + dims_text(s.m, s.n, s.k));
  }
  // linear: the bias joins in the store, a gelu and a scale after it.
  for (const char* fn : {"lin", "lin_gelu"}) {
    Both l = both(
        fn,
        {{"x", {sym("B"), sym("T"), sym("C")}}, {"w", {sym("O"), sym("C")}}, {"b", {sym("O")}}});
    EXPECT_EQ(l.sim.num_kernels(), 1) << l.sim.explain();
    EXPECT_HAS(l.sim.explain(), "algorithm: gemm.simt");
    for (auto [bt, t, c, o] : std::vector<std::array<int64_t, 4>>{
             {1, 1, 1, 1}, {2, 7, 33, 65}, {3, 30, 17, 20}, {2, 0, 4, 5}}) {
      expect_match(l,
                   {random_tensor({bt, t, c}, DType::F32, 6), random_tensor({o, c}, DType::F32, 7),
                    random_tensor({o}, DType::F32, 8)},
                   std::string(fn) + " " + std::to_string(bt) + "x" + std::to_string(t) + "x" +
                       std::to_string(c) + " -> " + std::to_string(o));
    }
  }
}

TEST(GpuGemm, BatchedAndBroadcastBatch) {
  Both b =
      both("bmm", {{"a", {sym("B"), sym("M"), sym("K")}}, {"b", {sym("B"), sym("K"), sym("N")}}});
  EXPECT_HAS(b.sim.explain(), "algorithm: gemm.simt");
  for (int64_t batch : {0, 1, 3}) {
    expect_match(b,
                 {random_tensor({batch, 33, 20}, DType::F32, 9),
                  random_tensor({batch, 20, 70}, DType::F32, 10)},
                 "bmm batch " + std::to_string(batch));
  }
  // A batch of A over one B, and batch dims that broadcast against each other.
  Both shared_b = both("mm", {{"a", {sym("B"), sym("M"), sym("K")}}, {"b", {sym("K"), sym("N")}}});
  expect_match(
      shared_b,
      {random_tensor({3, 20, 17}, DType::F32, 11), random_tensor({17, 40}, DType::F32, 12)},
      "[3, 20, 17] @ [17, 40]");
  Both bcast = both("mm", {{"a", {2, 1, sym("M"), sym("K")}}, {"b", {3, sym("K"), sym("N")}}});
  EXPECT_HAS(bcast.sim.explain(), "algorithm: gemm.simt");
  expect_match(
      bcast,
      {random_tensor({2, 1, 19, 9}, DType::F32, 13), random_tensor({3, 9, 21}, DType::F32, 14)},
      "[2, 1, 19, 9] @ [3, 9, 21]");
}

TEST(GpuGemm, TransposedOperandsAndStridedInputs) {
  Both ta = both("mm_ta", {{"a", {sym("K"), sym("M")}}, {"b", {sym("K"), sym("N")}}});
  Both tb = both("mm_tb", {{"a", {sym("M"), sym("K")}}, {"b", {sym("N"), sym("K")}}});
  EXPECT_EQ(ta.sim.num_kernels(), 1) << ta.sim.explain();
  EXPECT_EQ(tb.sim.num_kernels(), 1) << tb.sim.explain();
  for (const Mnk& s : std::vector<Mnk>{{1, 1, 1}, {7, 33, 17}, {70, 65, 20}}) {
    expect_match(
        ta, {random_tensor({s.k, s.m}, DType::F32, 15), random_tensor({s.k, s.n}, DType::F32, 16)},
        "a.t() @ b " + dims_text(s.m, s.n, s.k));
    expect_match(
        tb, {random_tensor({s.m, s.k}, DType::F32, 17), random_tensor({s.n, s.k}, DType::F32, 18)},
        "a @ b.t() " + dims_text(s.m, s.n, s.k));
  }
  // Views read in place through their strides.
  Both f = both("mm", {{"a", {sym("M"), sym("K")}}, {"b", {sym("K"), sym("N")}}});
  Tensor at = random_tensor({40, 70}, DType::F32, 19).view_as_strided({70, 40}, {1, 70}, 0);
  Tensor bt = random_tensor({33, 40}, DType::F32, 20).view_as_strided({40, 33}, {1, 40}, 0);
  expect_match(f, {at, bt}, "transposed views");
}

TEST(GpuGemm, HalfInputsAccumulateInF32AndF64InF64) {
  for (DType dt : {DType::F16, DType::BF16, DType::F64}) {
    Both f = both(
        "mm_bias_relu",
        {{"a", {sym("M"), sym("K")}, dt}, {"b", {sym("K"), sym("N")}, dt}, {"c", {sym("N")}, dt}});
    // f16/bf16 run on tensor cores (gemm.mma, gpu_mma_test) when the
    // heuristic chooses; gemm.simt remains their candidate.
    EXPECT_HAS(f.sim.explain(), dt == DType::F64 ? "algorithm: gemm.simt" : "algorithm: gemm.mma");
    EXPECT_HAS(f.sim.explain(), "candidate gemm.simt: score 2");
    // The slabs and accumulators are in the accumulation dtype.
    EXPECT_HAS(f.loops(), dt == DType::F64 ? "[f64 * 16] in gpu_local" : "[f32 * 64] in gpu_local");
    for (const Mnk& s : std::vector<Mnk>{{1, 1, 1}, {7, 65, 33}, {66, 9, 40}}) {
      expect_match(f,
                   {random_tensor({s.m, s.k}, dt, 21), random_tensor({s.k, s.n}, dt, 22),
                    random_tensor({s.n}, dt, 23)},
                   std::string(dtype_name(dt)) + " " + dims_text(s.m, s.n, s.k), tol_for(dt));
    }
  }
}

TEST(GpuGemm, HeuristicPrefersTilesUnlessASideIsSmall) {
  // Symbolic sizes are assumed large.
  Both big = both("mm", {{"a", {sym("M"), sym("K")}}, {"b", {sym("K"), sym("N")}}});
  std::string e = big.sim.explain();
  EXPECT_HAS(e, "algorithm: gemm.simt (heuristic: M ?, N ? (known at run time, assumed large)");
  EXPECT_HAS(e, "64x64 tiles, K slabs of 16, 4x4 per thread, 256 threads");
  EXPECT_HAS(e, "candidate naive: score 0");
  // The CPU's candidates are not offered to a GPU target.
  EXPECT_LACKS(e, "gemm.packed");
  Both sized = both("mm", {{"a", {128, 64}}, {"b", {64, 96}}});
  EXPECT_HAS(sized.sim.explain(), "algorithm: gemm.simt (heuristic: M 128, N 96:");
  // Static sizes let the simplifier drop the guards it can prove: the ones
  // it keeps must still cover the ragged tiles.
  expect_match(sized,
               {random_tensor({128, 64}, DType::F32, 26), random_tensor({64, 96}, DType::F32, 27)},
               "128x96x64");
  Both ragged = both("mm", {{"a", {100, 40}}, {"b", {40, 70}}});
  EXPECT_HAS(ragged.sim.explain(), "algorithm: gemm.simt");
  expect_match(ragged,
               {random_tensor({100, 40}, DType::F32, 28), random_tensor({40, 70}, DType::F32, 29)},
               "100x70x40");
  // A row vector times a matrix, and a thin product: the naive nest.
  Both row = both("mm", {{"a", {1, 300}}, {"b", {300, 70}}});
  e = row.sim.explain();
  EXPECT_HAS(e, "algorithm: naive");
  EXPECT_HAS(e, "candidate gemm.simt: score -1");
  EXPECT_HAS(e, "M 1, N 70: a side under 16 leaves most of a 64x64 tile idle");
  expect_match(row,
               {random_tensor({1, 300}, DType::F32, 24), random_tensor({300, 70}, DType::F32, 25)},
               "1x70x300");
  // Integers stay on the naive nest (exact wrapping).
  Both ints = both(
      "mm", {{"a", {sym("M"), sym("K")}, DType::I32}, {"b", {sym("K"), sym("N")}, DType::I32}});
  e = ints.sim.explain();
  EXPECT_HAS(e, "algorithm: naive");
  EXPECT_HAS(e, "candidate gemm.simt: does not apply - integer matmul runs the naive nest");
}

TEST(GpuGemm, TilingFitsTheTarget) {
  namespace lower = passes::lower;
  passes::GpuTarget sm90;  // 48 KiB of shared memory, 1024 threads
  lower::GpuGemmTiling t = lower::gpu_gemm_tiling(sm90, DType::F32);
  EXPECT_EQ(t.str(), "64x64 tiles, K slabs of 16, 4x4 per thread, 256 threads");
  EXPECT_LE(t.shared_bytes(DType::F32), 17 << 10);
  EXPECT_EQ(lower::gpu_gemm_tiling(sm90, DType::F64).str(), t.str());
  EXPECT_LE(lower::gpu_gemm_tiling(sm90, DType::F64).shared_bytes(DType::F64), 48 << 10);
  // A smaller machine gets thinner slabs, then fewer threads.
  passes::GpuTarget small = sm90;
  small.shared_memory_per_block = 12 << 10;
  small.max_threads_per_block = 128;
  lower::GpuGemmTiling s = lower::gpu_gemm_tiling(small, DType::F32);
  EXPECT_LE(s.shared_bytes(DType::F32), small.shared_memory_per_block) << s.str();
  EXPECT_LE(s.threads(), 128) << s.str();
  EXPECT_EQ((s.bm * s.bk) % s.threads(), 0) << s.str();
  EXPECT_EQ((s.bn * s.bk) % s.threads(), 0) << s.str();
}

}  // namespace
}  // namespace kiln::test
