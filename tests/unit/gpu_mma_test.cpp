// The tensor-core GEMM for GPU targets ("gemm.mma", passes/lower/gpu/
// gpu_mma.h) on the sim device: f16 and bf16 matmul/bmm/linear compiled once
// with symbolic dims and run as GPU-mapped loop IR (the warp MMA evaluated
// lane by lane, ir/loop/warp_mma.h) against the interpreter, for sizes around
// the 128x128 tiles and 32-wide K slabs (0, 1, 7, 33, 129, 1023: empty,
// ragged, several tiles and slabs), batched and broadcast batch dims,
// transposed operands, linear's bias and fused epilogues. Also the nest's
// form, the heuristic's choice and its reasons, and the warp MMA's serial
// meaning on one 16x8x16 tile.
#include <gtest/gtest.h>

#include <array>
#include <string>
#include <vector>

#include "ir/loop/loop_eval.h"
#include "ir/loop/warp_mma.h"
#include "kiln/kiln.h"
#include "lower_test_util.h"
#include "passes/lower/gpu/gpu_mma.h"

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

def lin_gelu(x: Tensor, w: Tensor, b: Tensor):
    return F.gelu(F.linear(x, w, b)) * 2.0

def mm_f32(a: Tensor, b: Tensor):
    return (a @ b).float()
)";

struct Bind {
  std::string name;
  std::vector<Dim> dims;
  DType dtype;
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
};

Both both(const std::string& fn, const std::vector<Bind>& binds) {
  return {compile_for(fn, binds, "loop-eval"), compile_for(fn, binds, "interp")};
}

// f32 sums of exact products in another order, then one rounding to the
// output's dtype: within a unit or two of the 16-bit type's last place.
double tol_for(DType t) {
  return t == DType::BF16 ? 3.2e-2 : 4e-3;
}

void expect_match(const Both& f, const std::vector<Tensor>& inputs, const std::string& what,
                  DType dt) {
  std::vector<Tensor> want = f.ref(inputs);
  std::vector<Tensor> got = f.sim(inputs);
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_TRUE(tensors_close(got[i], want[i], tol_for(dt), tol_for(dt))) << what << " output " << i;
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

const DType kHalves[] = {DType::F16, DType::BF16};

TEST(GpuMma, MatmulMatchesForEverySizeFromOneCompile) {
  for (DType dt : kHalves) {
    Both f = both("mm", {{"a", {sym("M"), sym("K")}, dt}, {"b", {sym("K"), sym("N")}, dt}});
    EXPECT_HAS(f.sim.explain(), "algorithm: gemm.mma");
    const std::string loops = f.sim.dump("loops-scheduled");
    EXPECT_HAS(loops, "gpu_block");
    EXPECT_HAS(loops, std::string("[") + dtype_name(dt) + " * 10240] in gpu_shared");
    EXPECT_HAS(loops, "[f32 * 64] in gpu_local");
    EXPECT_HAS(loops, "for (slab");
    EXPECT_HAS(loops, "barrier()");
    EXPECT_HAS(loops, "kiln_mma_m16n8k16(");
    for (const Mnk& s : std::vector<Mnk>{{0, 5, 3},
                                         {4, 0, 3},
                                         {3, 4, 0},
                                         {1, 1, 1},
                                         {7, 7, 7},
                                         {1, 33, 17},
                                         {33, 130, 31},
                                         {129, 7, 65},
                                         {128, 128, 32},
                                         {1023, 9, 40},
                                         {5, 1023, 33}}) {
      expect_match(f,
                   {random_tensor({s.m, s.k}, dt, uint64_t(s.m * 31 + s.k)),
                    random_tensor({s.k, s.n}, dt, uint64_t(s.n * 17 + s.k + 1))},
                   std::string(dtype_name(dt)) + " mm " + dims_text(s.m, s.n, s.k), dt);
    }
  }
}

TEST(GpuMma, EpiloguesBatchesAndTransposes) {
  for (DType dt : kHalves) {
    const std::string name = dtype_name(dt);
    Both f = both("mm_bias_relu", {{"a", {sym("M"), sym("K")}, dt},
                                   {"b", {sym("K"), sym("N")}, dt},
                                   {"c", {sym("N")}, dt}});
    EXPECT_EQ(f.sim.num_kernels(), 1) << f.sim.explain();
    for (const Mnk& s : std::vector<Mnk>{{1, 1, 1}, {7, 65, 33}, {130, 9, 40}}) {
      expect_match(f,
                   {random_tensor({s.m, s.k}, dt, 3), random_tensor({s.k, s.n}, dt, 4),
                    random_tensor({s.n}, dt, 5)},
                   name + " mm+bias+relu " + dims_text(s.m, s.n, s.k), dt);
    }
    Both l = both("lin_gelu", {{"x", {sym("B"), sym("T"), sym("C")}, dt},
                               {"w", {sym("O"), sym("C")}, dt},
                               {"b", {sym("O")}, dt}});
    EXPECT_EQ(l.sim.num_kernels(), 1) << l.sim.explain();
    EXPECT_HAS(l.sim.explain(), "algorithm: gemm.mma");
    for (auto [bt, t, c, o] : std::vector<std::array<int64_t, 4>>{
             {1, 1, 1, 1}, {2, 7, 33, 65}, {2, 0, 4, 5}, {1, 70, 48, 140}}) {
      expect_match(l,
                   {random_tensor({bt, t, c}, dt, 6), random_tensor({o, c}, dt, 7),
                    random_tensor({o}, dt, 8)},
                   name + " linear+gelu " + std::to_string(bt) + "x" + std::to_string(t) + "x" +
                       std::to_string(c) + " -> " + std::to_string(o),
                   dt);
    }
    Both b = both("bmm", {{"a", {sym("B"), sym("M"), sym("K")}, dt},
                          {"b", {sym("B"), sym("K"), sym("N")}, dt}});
    EXPECT_HAS(b.sim.explain(), "algorithm: gemm.mma");
    for (int64_t batch : {0, 1, 3}) {
      expect_match(b,
                   {random_tensor({batch, 33, 20}, dt, 9), random_tensor({batch, 20, 70}, dt, 10)},
                   name + " bmm batch " + std::to_string(batch), dt);
    }
    Both bcast = both("mm", {{"a", {2, 1, sym("M"), sym("K")}, dt}, {"b", {3, sym("K"), sym("N")}, dt}});
    EXPECT_HAS(bcast.sim.explain(), "algorithm: gemm.mma");
    expect_match(bcast, {random_tensor({2, 1, 19, 9}, dt, 13), random_tensor({3, 9, 21}, dt, 14)},
                 name + " [2, 1, 19, 9] @ [3, 9, 21]", dt);
    Both ta = both("mm_ta", {{"a", {sym("K"), sym("M")}, dt}, {"b", {sym("K"), sym("N")}, dt}});
    Both tb = both("mm_tb", {{"a", {sym("M"), sym("K")}, dt}, {"b", {sym("N"), sym("K")}, dt}});
    EXPECT_HAS(ta.sim.explain(), "algorithm: gemm.mma");
    EXPECT_HAS(tb.sim.explain(), "algorithm: gemm.mma");
    for (const Mnk& s : std::vector<Mnk>{{1, 1, 1}, {7, 33, 17}, {140, 65, 36}}) {
      expect_match(ta, {random_tensor({s.k, s.m}, dt, 15), random_tensor({s.k, s.n}, dt, 16)},
                   name + " a.t() @ b " + dims_text(s.m, s.n, s.k), dt);
      expect_match(tb, {random_tensor({s.m, s.k}, dt, 17), random_tensor({s.n, s.k}, dt, 18)},
                   name + " a @ b.t() " + dims_text(s.m, s.n, s.k), dt);
    }
    // A cast to f32 as the epilogue: the f32 sum stored without rounding to
    // the 16-bit type (compared with the interpreter's f32 of the rounded
    // product, within the 16-bit type's precision).
    Both wide = both("mm_f32", {{"a", {sym("M"), sym("K")}, dt}, {"b", {sym("K"), sym("N")}, dt}});
    EXPECT_HAS(wide.sim.explain(), "algorithm: gemm.mma");
    expect_match(wide, {random_tensor({20, 70}, dt, 19), random_tensor({70, 33}, dt, 20)},
                 name + " (a @ b).float()", dt);
  }
}

TEST(GpuMma, HeuristicPicksTensorCoresForHalvesOnly) {
  Both big = both("mm", {{"a", {sym("M"), sym("K")}, DType::F16}, {"b", {sym("K"), sym("N")}, DType::F16}});
  std::string e = big.sim.explain();
  EXPECT_HAS(e, "algorithm: gemm.mma (heuristic: M ?, N ? (known at run time, assumed large): f16 "
                "operands on tensor cores, f32 accumulation (128x128 tiles, K slabs of 32, 8 "
                "warps of 64x32, mma.m16n8k16))");
  EXPECT_HAS(e, "candidate gemm.simt: score 2");
  EXPECT_HAS(e, "candidate naive: score 0");
  Both sized = both("mm", {{"a", {100, 40}, DType::BF16}, {"b", {40, 70}, DType::BF16}});
  EXPECT_HAS(sized.sim.explain(), "algorithm: gemm.mma (heuristic: M 100, N 70: bf16 operands");
  // Static sizes let the simplifier drop the guards it can prove.
  expect_match(sized, {random_tensor({100, 40}, DType::BF16, 26), random_tensor({40, 70}, DType::BF16, 27)},
               "bf16 100x70x40", DType::BF16);
  // A row vector times a matrix: the naive nest.
  Both row = both("mm", {{"a", {1, 300}, DType::F16}, {"b", {300, 70}, DType::F16}});
  e = row.sim.explain();
  EXPECT_HAS(e, "algorithm: naive");
  EXPECT_HAS(e, "candidate gemm.mma: score -1 - M 1, N 70: a side under 16 leaves most of a "
                "128x128 tile idle");
  // f32 stays on the SIMT GEMM.
  Both f32 = both("mm", {{"a", {sym("M"), sym("K")}, DType::F32}, {"b", {sym("K"), sym("N")}, DType::F32}});
  e = f32.sim.explain();
  EXPECT_HAS(e, "algorithm: gemm.simt");
  EXPECT_HAS(e, "candidate gemm.mma: does not apply - tensor cores take f16 or bf16 operands (these "
                "are f32)");
}

TEST(GpuMma, TargetsWithoutTensorCoresOrSharedMemory) {
  namespace lower = passes::lower;
  passes::GpuTarget sm90;
  std::string why;
  EXPECT_TRUE(lower::gpu_mma_supported(sm90, &why)) << why;
  EXPECT_LE(lower::GpuMmaTiling().shared_bytes(), 48 << 10);
  passes::GpuTarget turing = sm90;
  turing.name = "sm_75";
  turing.compute_capability = 75;
  EXPECT_FALSE(lower::gpu_mma_supported(turing, &why));
  EXPECT_EQ(why, "sm_75 has no mma.m16n8k16 (compute capability 8.0 or more)");
  passes::GpuTarget small = sm90;
  small.shared_memory_per_block = 16 << 10;
  EXPECT_FALSE(lower::gpu_mma_supported(small, &why));
  EXPECT_HAS(why, "lacks the shared memory");
}

// The warp MMA's serial meaning (ir/loop/warp_mma.h): each of the 32 lanes
// gets its four elements of the 16x8 product of a row-major A tile and a
// column-major B tile, added to what C held.
TEST(GpuMma, WarpMmaEvaluatesEachLanesFragment) {
  using namespace loop;  // NOLINT
  for (DType dt : kHalves) {
    const int64_t lda = 20, ldb = 18, a0 = 4, b0 = 2;
    Buf a = make_buf("a", dt), b = make_buf("b", dt), c = make_buf("c", DType::F32);
    Tensor at = random_tensor({a0 + 16 * lda}, dt, 1), bt = random_tensor({b0 + 8 * ldb}, dt, 2);
    Tensor ct = random_tensor({32 * 4}, DType::F32, 3);
    Tensor c_in = ct.clone();
    Expr lane = loop::Var::make(i64_t(), "lane");
    Stmt s = For::make(
        lane, make_int(0), make_int(32), ForKind::Serial,
        ExternCall::make(kWarpMmaCall,
                         {lane * make_int(4), make_int(a0), make_int(lda), make_int(b0),
                          make_int(ldb), lane},
                         {c, a, b}));
    eval_stmt(s, {{a, at}, {b, bt}, {c, ct}});
    const Tensor af = at.to(DType::F32), bf = bt.to(DType::F32);
    const float* A = af.data<float>();
    const float* B = bf.data<float>();
    for (int64_t l = 0; l < 32; ++l) {
      for (int64_t r = 0; r < 4; ++r) {
        const int64_t row = l / 4 + 8 * (r / 2), col = 2 * (l % 4) + r % 2;
        double want = c_in.data<float>()[l * 4 + r];
        for (int64_t k = 0; k < 16; ++k) want += double(A[a0 + row * lda + k]) * B[b0 + col * ldb + k];
        EXPECT_NEAR(ct.data<float>()[l * 4 + r], want, 1e-4 * (1 + std::abs(want)))
            << dtype_name(dt) << " lane " << l << " element " << r;
      }
    }
  }
}

}  // namespace
}  // namespace kiln::test
