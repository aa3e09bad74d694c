// The generated matmul algorithms (gemm.packed, gemm.small, gemv, naive)
// against the reference interpreter: each candidate that claims to apply, on a
// grid of odd sizes (M, N, K of 1, 3, 17, 255, 1000; each case at most ~1e7
// multiply-adds so the sanitizer build stays quick), every torch.matmul rank
// case, bmm, linear (bias, 1-D weight, batched input), f32/f64/bf16/f16,
// transposed and strided inputs (views and inlined transposes), and symbolic
// dims compiled once and run at several sizes. The heuristic's choices and
// their reasons are checked too.
#include <cmath>
#include <regex>

#include "api/target.h"
#include "gemm_test_util.h"
#include "passes/lower/cpu/gemm.h"

namespace kiln::test {
namespace {

using ir::Dim;
using ir::Type;

struct Mm {
  std::unique_ptr<ir::Graph> g = std::make_unique<ir::Graph>("mm");
  std::vector<Tensor> feed;
  ir::Value* input(const Tensor& t, ir::Dims dims = {}) {
    if (dims.empty()) dims = ir::dims_from_shape(t.sizes());
    feed.push_back(t);
    return g->add_input("in" + std::to_string(feed.size()), Type::tensor(t.dtype(), dims));
  }
  void out(ir::Value* v) { g->set_outputs({v}); }
};

Tensor rnd(const Shape& s, DType t = DType::F32, uint64_t seed = 1) {
  return random_tensor(s, t, seed);
}

// a[M, K] @ b[K, N] (a vector when M or N is 0 in `shape`).
void check_matmul(Shape a, Shape b, DType t = DType::F32,
                  const std::vector<std::string>& only = {}) {
  Mm m;
  ir::Value* x = m.input(rnd(a, t, 1));
  ir::Value* y = m.input(rnd(b, t, 2));
  m.out(m.g->apply1("matmul", {x, y}));
  check_algorithms(*m.g, {m.feed}, a.back(), only);
}

// --- the size grid ----------------------------------------------------------------------------

struct Size3 {
  int64_t M, N, K;
};

class GemmGrid : public ::testing::TestWithParam<Size3> {};

TEST_P(GemmGrid, EveryApplicableAlgorithmMatchesTheInterpreter) {
  const Size3 s = GetParam();
  check_matmul({s.M, s.K}, {s.K, s.N});
}

std::string size_name(const ::testing::TestParamInfo<Size3>& p) {
  return std::to_string(p.param.M) + "x" + std::to_string(p.param.N) + "x" +
         std::to_string(p.param.K);
}

INSTANTIATE_TEST_SUITE_P(
    Sizes, GemmGrid,
    ::testing::Values(Size3{1, 1, 1}, Size3{3, 3, 3}, Size3{17, 17, 17}, Size3{1, 17, 255},
                      Size3{255, 1, 17}, Size3{1, 1000, 3}, Size3{1000, 1, 255}, Size3{3, 255, 17},
                      Size3{255, 3, 17}, Size3{17, 3, 1000}, Size3{255, 17, 3}, Size3{17, 255, 255},
                      Size3{255, 255, 17}, Size3{1000, 17, 255}, Size3{17, 1000, 255},
                      Size3{255, 17, 1000}, Size3{1000, 1000, 3}, Size3{3, 1000, 1000},
                      Size3{1000, 3, 1000}, Size3{100, 100, 1000}, Size3{129, 130, 257}),
    size_name);

// --- dtypes -------------------------------------------------------------------------------------

TEST(Gemm, F64) {
  check_matmul({255, 17}, {17, 100}, DType::F64);
  check_matmul({33, 300}, {300, 70}, DType::F64);
  check_matmul({1, 300}, {300, 70}, DType::F64);
}

TEST(Gemm, Bf16AccumulatesInF32) {
  check_matmul({100, 300}, {300, 70}, DType::BF16);
  check_matmul({17, 255}, {255, 1}, DType::BF16);
}

TEST(Gemm, F16AccumulatesInF32) {
  check_matmul({100, 300}, {300, 70}, DType::F16);
  check_matmul({1, 255}, {255, 17}, DType::F16);
}

TEST(Gemm, IntegersRunTheNaiveNest) {
  Mm m;
  ir::Value* x = m.input(random_tensor({17, 9}, DType::I32, 3));
  ir::Value* y = m.input(random_tensor({9, 5}, DType::I32, 4));
  ir::Value* out = m.g->apply1("matmul", {x, y});
  m.out(out);
  passes::AlgorithmChoice c = passes::choose_algorithm(*out->producer(), api::host_target());
  EXPECT_EQ(c.name, "naive");
  EXPECT_EQ(passes::applicable_algorithms(*out->producer(), api::host_target()),
            std::vector<std::string>{"naive"});
  check_algorithms(*m.g, {m.feed}, 9);
}

// --- rank cases -------------------------------------------------------------------------------

TEST(Gemm, VectorTimesVector) {
  check_matmul({255}, {255});
}
TEST(Gemm, VectorTimesMatrix) {
  check_matmul({255}, {255, 17});
}
TEST(Gemm, MatrixTimesVector) {
  check_matmul({17, 255}, {255});
}
TEST(Gemm, VectorTimesBatch) {
  check_matmul({33}, {3, 33, 20});
}
TEST(Gemm, BatchTimesVector) {
  check_matmul({3, 20, 33}, {33});
}
TEST(Gemm, Batched) {
  check_matmul({2, 3, 17, 33}, {2, 3, 33, 20});
}
TEST(Gemm, BroadcastBatchDims) {
  check_matmul({4, 1, 17, 9}, {3, 9, 50});
}
TEST(Gemm, BatchedTimesMatrixFoldsTheBatchIntoM) {
  check_matmul({3, 70, 33}, {33, 65});
}
TEST(Gemm, MatrixTimesBatched) {
  check_matmul({70, 33}, {3, 33, 65});
}

TEST(Gemm, Bmm) {
  Mm m;
  ir::Value* x = m.input(rnd({5, 17, 33}));
  ir::Value* y = m.input(rnd({5, 33, 19}, DType::F32, 2));
  m.out(m.g->apply1("bmm", {x, y}));
  check_algorithms(*m.g, {m.feed}, 33);
}

// linear(x, w, bias); an empty `bias` shape means no bias.
void check_linear(Shape x, Shape w, Shape bias) {
  Mm m;
  ir::Value* xv = m.input(rnd(x));
  ir::Value* wv = m.input(rnd(w, DType::F32, 2));
  ir::Value* bv = bias.empty() ? m.g->constant(ir::AttrValue{}) : m.input(rnd(bias, DType::F32, 3));
  m.out(m.g->apply1("linear", {xv, wv, bv}));
  check_algorithms(*m.g, {m.feed}, x.back());
}

TEST(Gemm, Linear) {
  check_linear({17, 33}, {40, 33}, {40});
  check_linear({100, 255}, {64, 255}, {64});
  check_linear({2, 5, 33}, {40, 33}, {});
  check_linear({33}, {40, 33}, {40});
  check_linear({17, 33}, {33}, {});
  check_linear({17, 33}, {40, 33}, {17, 40});  // a bias of the output's shape
}

// --- operand layouts --------------------------------------------------------------------------

// A graph input that is a transposed view: [M, K] with strides (1, M).
TEST(Gemm, TransposedAndStridedViews) {
  const int64_t M = 70, K = 90, N = 50;
  Tensor at = rnd({K, M});
  Tensor a = at.view_as_strided({M, K}, {1, M}, 0);
  Tensor wide = rnd({K, 2 * N}, DType::F32, 2);
  Tensor b = wide.view_as_strided({K, N}, {2 * N, 2}, 1);  // every other column
  Mm m;
  ir::Value* x = m.input(a);
  ir::Value* y = m.input(b);
  m.out(m.g->apply1("matmul", {x, y}));
  check_algorithms(*m.g, {m.feed}, K);
  // A broadcast (stride 0) row as the whole of A.
  Tensor row = rnd({1, K}, DType::F32, 5).view_as_strided({M, K}, {0, 1}, 0);
  Mm r;
  ir::Value* rx = r.input(row);
  ir::Value* ry = r.input(rnd({K, N}, DType::F32, 6));
  r.out(r.g->apply1("matmul", {rx, ry}));
  check_algorithms(*r.g, {r.feed}, K);
}

// transpose inlined into the matmul's operands (one kernel: a layout-inlined operand).
TEST(Gemm, InlinedTransposes) {
  Mm m;
  ir::Value* x = m.input(rnd({90, 70}));
  ir::Value* y = m.input(rnd({50, 90}, DType::F32, 2));
  ir::Value* xt = m.g->apply1("transpose", {x}, {{"dim0", int64_t(0)}, {"dim1", int64_t(1)}});
  ir::Value* yt = m.g->apply1("transpose", {y}, {{"dim0", int64_t(0)}, {"dim1", int64_t(1)}});
  m.out(m.g->apply1("matmul", {xt, yt}));
  check_algorithms(*m.g, {m.feed}, 90);
}

// The attention output as a linear's input: ctx [B, H, T, D] with heads moved
// back, `ctx.transpose(1, 2).reshape(B, T, H * D)`, inlined into the operand.
// Its rows step by 1 within each head's D elements, so from D = 16 on the
// micro-kernel reads them in place (no A panel is packed); a narrower head is
// packed. Both against the interpreter, odd T and N included.
TEST(Gemm, TransposedHeadsReadInPlace) {
  struct Case {
    int64_t B, H, T, D, N;
    int in_place;  // 1 read in place, 0 packed, -1 either (one row: values only)
  };
  for (const Case& c : {Case{2, 4, 7, 16, 33, 1}, Case{1, 3, 33, 64, 65, 1}, Case{1, 2, 3, 32, 17, 1},
                        Case{1, 2, 1, 32, 17, -1}, Case{2, 3, 5, 8, 20, 0}}) {
    SCOPED_TRACE("B H T D N " + std::to_string(c.B) + " " + std::to_string(c.H) + " " +
                 std::to_string(c.T) + " " + std::to_string(c.D) + " " + std::to_string(c.N));
    const int64_t C = c.H * c.D;
    Mm m;
    ir::Value* ctx = m.input(rnd({c.B, c.H, c.T, c.D}));
    ir::Value* w = m.input(rnd({c.N, C}, DType::F32, 2));
    ir::Value* bias = m.input(rnd({c.N}, DType::F32, 3));
    ir::Value* t = m.g->apply1("transpose", {ctx}, {{"dim0", int64_t(1)}, {"dim1", int64_t(2)}});
    ir::Value* r = m.g->apply1("reshape", {t}, {{"shape", std::vector<int64_t>{c.B, c.T, C}}});
    m.out(m.g->apply1("linear", {r, w, bias}));
    // Lowered as compile() lowers for a CPU: innermost strides the constant 1.
    check_algorithms(*m.g, {m.feed}, C, {"gemm.packed"}, Exec::Llvm, api::host_cpu_target(), true);
    const std::string text =
        loop::to_string(lower_as_one(*m.g, "gemm.packed", api::host_cpu_target(), true).kernel);
    const bool packs_a = std::regex_search(text, std::regex(R"(\bAp[0-9]*\[)"));
    if (c.in_place >= 0) {
      EXPECT_EQ(packs_a, c.in_place == 0) << text;
    }
  }
}

// --- symbolic dims ----------------------------------------------------------------------------

TEST(Gemm, SymbolicDimsCompileOnceForEverySize) {
  Mm m;
  ir::Value* x = m.g->add_input("a", Type::tensor(DType::F32, {Dim::sym("M"), Dim::sym("K")}));
  ir::Value* y = m.g->add_input("b", Type::tensor(DType::F32, {Dim::sym("K"), Dim::sym("N")}));
  m.out(m.g->apply1("matmul", {x, y}));
  std::vector<std::vector<Tensor>> feeds;
  for (Size3 s : {Size3{1, 1, 1}, Size3{3, 17, 255}, Size3{255, 17, 3}, Size3{17, 1000, 300},
                  Size3{300, 200, 600}, Size3{5, 7, 0}, Size3{0, 7, 5}}) {
    feeds.push_back({rnd({s.M, s.K}, DType::F32, 7), rnd({s.K, s.N}, DType::F32, 8)});
  }
  check_algorithms(*m.g, feeds, 1000);
}

TEST(Gemm, SymbolicBatch) {
  Mm m;
  ir::Value* x = m.g->add_input("a", Type::tensor(DType::F32, {Dim::sym("B"), Dim::sym("M"), 40}));
  ir::Value* y = m.g->add_input("b", Type::tensor(DType::F32, {40, 33}));
  m.out(m.g->apply1("matmul", {x, y}));
  check_algorithms(*m.g,
                   {{rnd({3, 17, 40}), rnd({40, 33}, DType::F32, 2)},
                    {rnd({1, 100, 40}), rnd({40, 33}, DType::F32, 3)}},
                   40);
}

// --- other targets: AVX2 tiles, K split into blocks -----------------------------------------

TEST(Gemm, Avx2SizedTiles) {
  for (Shape a : {Shape{255, 33}, Shape{1, 33}, Shape{17, 33}}) {
    Mm m;
    ir::Value* x = m.input(rnd(a));
    ir::Value* y = m.input(rnd({33, 70}, DType::F32, 2));
    m.out(m.g->apply1("matmul", {x, y}));
    check_algorithms(*m.g, {m.feed}, 33, {}, Exec::Llvm, avx2_target());
  }
}

TEST(Gemm, KSplitIntoBlocks) {
  for (DType t : {DType::F32, DType::F64, DType::BF16}) {
    Mm m;
    ir::Value* x = m.input(rnd({70, 1000}, t));
    ir::Value* y = m.input(rnd({1000, 130}, t, 2));
    m.out(m.g->apply1("matmul", {x, y}));
    check_algorithms(*m.g, {m.feed}, 1000, {"gemm.packed"}, Exec::Llvm, tiny_cache_target());
  }
  // Symbolic K: the number of blocks is known only at run time.
  Mm s;
  ir::Value* x = s.g->add_input("a", Type::tensor(DType::F32, {Dim::sym("M"), Dim::sym("K")}));
  ir::Value* y = s.g->add_input("b", Type::tensor(DType::F32, {Dim::sym("K"), 40}));
  s.out(s.g->apply1("matmul", {x, y}));
  check_algorithms(*s.g,
                   {{rnd({30, 100}), rnd({100, 40}, DType::F32, 2)},
                    {rnd({50, 700}), rnd({700, 40}, DType::F32, 3)},
                    {rnd({5, 0}), rnd({0, 40}, DType::F32, 4)}},
                   700, {"gemm.packed"}, Exec::Llvm, tiny_cache_target());
}

// Symbolic M and K: the width of the column blocks each task packs is picked
// at run time (narrow while A fits a quarter of L3, 1 MiB here); both widths
// run, with column-block counts that split evenly over the cores and not.
TEST(Gemm, ColumnBlockWidthChosenAtRunTime) {
  Mm s;
  ir::Value* x = s.g->add_input("a", Type::tensor(DType::F32, {Dim::sym("M"), Dim::sym("K")}));
  ir::Value* y = s.g->add_input("b", Type::tensor(DType::F32, {Dim::sym("K"), Dim::sym("N")}));
  s.out(s.g->apply1("matmul", {x, y}));
  check_algorithms(*s.g,
                   {{rnd({30, 100}), rnd({100, 700}, DType::F32, 2)},    // A 12 KB: narrow
                    {rnd({300, 300}), rnd({300, 700}, DType::F32, 3)},   // A 360 KB: wide
                    {rnd({301, 257}), rnd({257, 1100}, DType::F32, 4)},  // wide, 3 blocks
                    {rnd({7, 3}), rnd({3, 129}, DType::F32, 5)}},        // narrow, 2 blocks
                   300, {"gemm.packed"}, Exec::Llvm, tiny_cache_target());
}

// A K block longer than 2048 (an L2 of 2 MiB allows KC up to 4096) takes the
// 12 x 2 micro-tile instead of 6 x 4: fixed sizes with one K block, a linear
// (bias, weight contiguous along K), f64 and bf16, and symbolic K (one block
// or two at run time, and K = 0).
TEST(Gemm, TallTileForALongKBlock) {
  passes::CpuTarget t = api::host_cpu_target();
  t.vector_bits = 512, t.vector_registers = 32, t.l2_bytes = 2 << 20, t.l3_bytes = 32 << 20;
  passes::lower::GemmBlocking b = passes::lower::gemm_blocking(t, DType::F32, 256, 1024, 4096);
  EXPECT_EQ(b.mr, 12);
  EXPECT_EQ(b.nr(), 32);
  EXPECT_EQ(b.kc, 4096);
  b = passes::lower::gemm_blocking(t, DType::F32, 2048, 2048, 2048);
  EXPECT_EQ(b.mr, 6);
  EXPECT_EQ(b.nr(), 64);
  b = passes::lower::gemm_blocking(t, DType::F64, 256, 1024, 3000);
  EXPECT_EQ(b.mr, 12);
  EXPECT_EQ(b.nr(), 16);
  if (api::host_cpu_target().vector_bits < 512) GTEST_SKIP() << "runs 512-bit tiles";
  for (DType dt : {DType::F32, DType::F64, DType::BF16}) {
    Mm m;
    ir::Value* x = m.input(rnd({25, 2049}, dt));
    ir::Value* y = m.input(rnd({2049, 33}, dt, 2));
    m.out(m.g->apply1("matmul", {x, y}));
    check_algorithms(*m.g, {m.feed}, 2049, {"gemm.packed", "gemm.small"}, Exec::Llvm, t);
  }
  Mm l;
  ir::Value* x = l.input(rnd({13, 2100}));
  ir::Value* w = l.input(rnd({37, 2100}, DType::F32, 2));
  ir::Value* bias = l.input(rnd({37}, DType::F32, 3));
  l.out(l.g->apply1("linear", {x, w, bias}));
  check_algorithms(*l.g, {l.feed}, 2100, {"gemm.packed", "gemm.small"}, Exec::Llvm, t);
  Mm s;
  ir::Value* a = s.g->add_input("a", Type::tensor(DType::F32, {Dim::sym("M"), Dim::sym("K")}));
  ir::Value* c = s.g->add_input("b", Type::tensor(DType::F32, {Dim::sym("K"), 40}));
  s.out(s.g->apply1("matmul", {a, c}));
  check_algorithms(*s.g,
                   {{rnd({1, 7}), rnd({7, 40}, DType::F32, 2)},
                    {rnd({30, 2100}), rnd({2100, 40}, DType::F32, 3)},
                    {rnd({7, 4100}), rnd({4100, 40}, DType::F32, 4)},
                    {rnd({5, 0}), rnd({0, 40}, DType::F32, 5)}},
                   4100, {"gemm.packed"}, Exec::Llvm, t);
}

// The narrow column block (while A fits a quarter of L3) is also kept to a
// quarter of L2 (KC x NC): 1 NR for the 12 x 2 tile at K = 4096 and for 6 x 4
// at K = 2048 with a 2 MiB L2, 2 NR at K = 1024 and for symbolic K. Linears
// with 1, 7, 1023 and 0 rows (fixed and symbolic M) over column blocks of
// one NR, one of them partial, on one core and two.
TEST(Gemm, ColumnBlockOfOnePanelForALongK) {
  passes::CpuTarget t = api::host_cpu_target();
  t.vector_bits = 512, t.vector_registers = 32, t.l2_bytes = 2 << 20, t.l3_bytes = 32 << 20;
  passes::lower::GemmBlocking b = passes::lower::gemm_blocking(t, DType::F32, 256, 1024, 4096);
  EXPECT_EQ(b.nr(), 32);
  EXPECT_EQ(b.nc, 32);
  b = passes::lower::gemm_blocking(t, DType::F32, 256, 2048, 2048);
  EXPECT_EQ(b.nr(), 64);
  EXPECT_EQ(b.nc, 64);
  b = passes::lower::gemm_blocking(t, DType::F32, 256, 2048, 1024);
  EXPECT_EQ(b.nc, 128);
  b = passes::lower::gemm_blocking(t, DType::F32, -1, 2048, -1);
  EXPECT_EQ(b.nc_narrow, 2 * b.nr());
  if (api::host_cpu_target().vector_bits < 512) GTEST_SKIP() << "runs 512-bit tiles";
  for (int cores : {1, 2}) {
    SCOPED_TRACE("cores " + std::to_string(cores));
    t.cores = cores;
    for (auto [K, N] : {std::pair<int64_t, int64_t>{2100, 33}, {1500, 65}}) {
      SCOPED_TRACE("K " + std::to_string(K));
      for (int64_t rows : {1, 1023}) {
        Mm l;
        ir::Value* x = l.input(rnd({rows, K}));
        ir::Value* w = l.input(rnd({N, K}, DType::F32, 2));
        ir::Value* bias = l.input(rnd({N}, DType::F32, 3));
        l.out(l.g->apply1("linear", {x, w, bias}));
        check_algorithms(*l.g, {l.feed}, K, {"gemm.packed"}, Exec::Llvm, t);
      }
      Mm s;
      ir::Value* x = s.g->add_input("x", Type::tensor(DType::F32, {Dim::sym("M"), K}));
      ir::Value* w = s.g->add_input("w", Type::tensor(DType::F32, {N, K}));
      ir::Value* bias = s.g->add_input("b", Type::tensor(DType::F32, {N}));
      s.out(s.g->apply1("linear", {x, w, bias}));
      std::vector<std::vector<Tensor>> feeds;
      for (int64_t rows : {7, 1023, 0}) {
        feeds.push_back({rnd({rows, K}), rnd({N, K}, DType::F32, 2), rnd({N}, DType::F32, 3)});
      }
      check_algorithms(*s.g, feeds, K, {"gemm.packed"}, Exec::Llvm, t);
    }
  }
}

// --- the loop-IR evaluator runs the same nests ------------------------------------------------

TEST(Gemm, LoopEvalAgrees) {
  Mm m;
  ir::Value* x = m.input(rnd({19, 21}));
  ir::Value* y = m.input(rnd({21, 50}, DType::F32, 2));
  m.out(m.g->apply1("matmul", {x, y}));
  check_algorithms(*m.g, {m.feed}, 21, {"gemm.packed", "gemm.small"}, Exec::LoopEval);
  Mm v;
  ir::Value* vx = v.input(rnd({19, 21}));
  ir::Value* vy = v.input(rnd({21}, DType::F32, 2));
  v.out(v.g->apply1("matmul", {vx, vy}));
  check_algorithms(*v.g, {v.feed}, 21, {"gemv"}, Exec::LoopEval);
}

// --- the heuristic ----------------------------------------------------------------------------

std::string chosen(Shape a, Shape b, std::string* reason = nullptr) {
  ir::Graph g("choice");  // types only: the choice never looks at data
  ir::Value* x = g.add_input("a", Type::tensor(DType::F32, ir::dims_from_shape(a)));
  ir::Value* y = g.add_input("b", Type::tensor(DType::F32, ir::dims_from_shape(b)));
  ir::Value* out = g.apply1("matmul", {x, y});
  passes::AlgorithmChoice c = passes::choose_algorithm(*out->producer(), api::host_target());
  if (reason) *reason = c.reason;
  return c.name;
}

TEST(Gemm, HeuristicPicksByShape) {
  std::string why;
  EXPECT_EQ(chosen({1024, 1024}, {1024, 1024}, &why), "gemm.packed");
  EXPECT_NE(why.find("packing pays"), std::string::npos) << why;
  EXPECT_EQ(chosen({8, 16}, {16, 8}, &why), "gemm.small");
  EXPECT_NE(why.find("too small"), std::string::npos) << why;
  EXPECT_EQ(chosen({4096, 256}, {256, 256}, &why), "gemm.small");  // B fits in L2
  EXPECT_NE(why.find("fits in L2"), std::string::npos) << why;
  EXPECT_EQ(chosen({8, 2048}, {2048, 2048}, &why), "gemm.small");  // few rows
  // B fits in L2 but not in a quarter of it: read in place it streams a row
  // stride apart, so it is packed (SGEMM 512 on a 2 MiB L2).
  const int64_t half_l2 = int64_t(std::sqrt(double(api::host_target().cpu.l2_bytes) / 8));
  EXPECT_EQ(chosen({2048, half_l2}, {half_l2, half_l2}, &why), "gemm.packed") << why;

  EXPECT_EQ(chosen({1, 512}, {512, 512}), "gemv");
  EXPECT_EQ(chosen({512, 512}, {512}), "gemv");
}

}  // namespace
}  // namespace kiln::test
