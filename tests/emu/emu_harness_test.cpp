// CUDA C text through the emulation harness: kernels in the CUDA emitter's
// style (extern "C" __global__ __launch_bounds__ kernels, typed __restrict__
// buffers, 64-bit scalar slots, KILN_SHARED arrays, per-thread arrays across
// barrier phases, warp shuffles) compiled as C++ in one batch and run against
// reference values, and acceptance 2 of issue 12: a kernel with a planted
// missing __syncthreads() and one with a planted divergent barrier are each
// reported, while the same kernels with the barrier in place pass.
#include "tests/emu/harness.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

namespace {

using kiln::emu::ErrorKind;
using kiln::emutest::Buffer;
using kiln::emutest::Library;
using kiln::emutest::Program;
using ::testing::HasSubstr;

// Helpers in the CUDA prelude's style, as extra prelude text (the harness
// takes any; Kiln's own prelude comes through emulation.h).
constexpr const char* kPrelude = R"(
__device__ __forceinline__ float test_max_f32(float a, float b) {
  return (a != a || b != b) ? __int_as_float(0x7fc00000) : fmaxf(a, b);
}
__device__ __forceinline__ float test_f32_from_slot(long long slot) {
  return __int_as_float(static_cast<int>(slot));
}
)";

// A row softmax as the GPU schedules map it: one block of 128 threads per
// row, each phase a thread loop, block reductions through shared memory, the
// per-thread partials in arrays that live across the phases. The marked
// lines are where the tests plant bugs.
constexpr const char* kSoftmax = R"(
extern "C" __global__ void __launch_bounds__(128) softmax_rows(const float* __restrict__ x, float* __restrict__ y, long long rows, long long cols) {
  KILN_SHARED(float, red, 128);
  float part_max[1];
  float part_sum[1];
  const long long row = blockIdx.x;
  const long long t = threadIdx.x;
  part_max[0] = -INFINITY;
  for (long long c = t; c < cols; c += 128) {
    part_max[0] = test_max_f32(part_max[0], x[row * cols + c]);
  }
  red[t] = part_max[0];
  __syncthreads();  // PLANT: after-stage
  for (long long stride = 64; stride > 0; stride /= 2) {
    if (t < stride) {
      red[t] = test_max_f32(red[t], red[t + stride]);
    }
    __syncthreads();  // PLANT: tree
  }
  const float m = red[0];
  __syncthreads();  // PLANT: before-reuse
  part_sum[0] = 0.0f;
  for (long long c = t; c < cols; c += 128) {
    part_sum[0] += expf(x[row * cols + c] - m);
  }
  red[t] = part_sum[0];
  __syncthreads();
  for (long long stride = 64; stride > 0; stride /= 2) {
    if (t < stride) {
      red[t] = red[t] + red[t + stride];
    }
    __syncthreads();
  }
  const float s = red[0];
  for (long long c = t; c < cols; c += 128) {
    y[row * cols + c] = expf(x[row * cols + c] - m) / s;
  }
}
)";

// One warp per row: the row's sum by xor shuffles, no shared memory.
constexpr const char* kWarpRowSum = R"(
extern "C" __global__ void __launch_bounds__(32) row_sum_warp(const float* __restrict__ x, float* __restrict__ y, long long cols) {
  const long long row = blockIdx.x;
  const long long lane = threadIdx.x;
  float acc = 0.0f;
  for (long long c = lane; c < cols; c += 32) {
    acc += x[row * cols + c];
  }
  for (int offset = 16; offset > 0; offset /= 2) {
    acc += __shfl_xor_sync(0xffffffffu, acc, offset);
  }
  if (lane == 0) {
    y[row] = acc;
  }
}
)";

// Elementwise with 128-bit loads and stores, a f32 scalar in its slot, a tail.
// One 16x8x16 tensor-core product through the prelude's warp MMA: A (16x16,
// row-major) and B (stored [n][k]) staged in shared memory with rows of 24,
// every warp of the block computing the same tile into its lanes' four
// accumulators (c holds 4 per thread, read and written back).
constexpr const char* kMmaTile = R"(
extern "C" __global__ void __launch_bounds__(64, 1) mma_tile(const kiln_f16* __restrict__ a, const kiln_f16* __restrict__ b, float* __restrict__ c) {
  KILN_SHARED(kiln_f16, As, 384);
  KILN_SHARED(kiln_f16, Bs, 192);
  const kiln_i64 t = (kiln_i64)threadIdx.x;
  for (kiln_i64 i = t; i < 384; i += (kiln_i64)blockDim.x) As[i] = a[i];
  for (kiln_i64 i = t; i < 192; i += (kiln_i64)blockDim.x) Bs[i] = b[i];
  __syncthreads();
  float acc[4];
  for (int r = 0; r < 4; ++r) acc[r] = c[t * 4 + r];
  kiln_mma_m16n8k16_f16(acc, As, Bs, 0, 0, 24, 0, 24, t % 32);
  for (int r = 0; r < 4; ++r) c[t * 4 + r] = acc[r];
}
)";

constexpr const char* kAxpy = R"(
extern "C" __global__ void __launch_bounds__(256) axpy_vec4(const float* __restrict__ x, float* __restrict__ y, long long n, long long alpha_slot) {
  const float alpha = test_f32_from_slot(alpha_slot);
  const long long i = (static_cast<long long>(blockIdx.x) * 256 + threadIdx.x) * 4;
  if (i + 3 < n) {
    const float4 a = *reinterpret_cast<const float4*>(x + i);
    float4 b = *reinterpret_cast<const float4*>(y + i);
    b.x += alpha * a.x; b.y += alpha * a.y; b.z += alpha * a.z; b.w += alpha * a.w;
    *reinterpret_cast<float4*>(y + i) = b;
  } else {
    for (long long j = i; j < n; ++j) y[j] += alpha * x[j];
  }
}
)";

// Two programs may both have a kernel named k0 (the harness renames them).
constexpr const char* kFill1 = R"(
extern "C" __global__ void __launch_bounds__(32) k0(int* __restrict__ out) { out[threadIdx.x] = 1; }
)";
constexpr const char* kFill2 = R"(
extern "C" __global__ void __launch_bounds__(32) k0(int* __restrict__ out) { out[threadIdx.x] = 2; }
)";

// Memory errors for ASan and UBSan in the sanitizer build: a global buffer
// overrun, a per-thread array overrun read after a barrier (the fiber was
// switched out and back in between), a misaligned 128-bit load.
constexpr const char* kMemoryErrors = R"(
extern "C" __global__ void __launch_bounds__(64) write_all(float* __restrict__ out) {
  out[threadIdx.x] = 1.0f;
}
// (UBSan's bounds and object-size checks would see this one first: off, so
// that the test shows ASan's redzones intact on a fiber's stack.)
extern "C" __attribute__((no_sanitize("undefined"))) __global__ void __launch_bounds__(64) local_overrun(float* __restrict__ out, long long k) {
  float acc[4];
  for (int j = 0; j < 4; ++j) acc[j] = 1.0f * threadIdx.x;
  __syncthreads();
  out[threadIdx.x] = acc[k];
}
extern "C" __global__ void __launch_bounds__(64) load_vec4(const float* __restrict__ x, float* __restrict__ out) {
  const float4 v = *reinterpret_cast<const float4*>(x + 4 * threadIdx.x);
  out[threadIdx.x] = v.x + v.y + v.z + v.w;
}
)";

// `text` without the line carrying `marker`.
std::string without_line(std::string text, const std::string& marker) {
  const size_t at = text.find(marker);
  EXPECT_NE(at, std::string::npos) << marker;
  const size_t begin = text.rfind('\n', at) + 1;
  const size_t end = text.find('\n', at);
  return text.erase(begin, end - begin + 1);
}

std::string replace_once(std::string text, const std::string& from, const std::string& to) {
  const size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return text.replace(at, from.size(), to);
}

enum ProgramIndex : size_t {
  kSoftmaxGood,
  kSoftmaxNoStageBarrier,
  kSoftmaxNoTreeBarrier,
  kSoftmaxNoReuseBarrier,
  kSoftmaxDivergent,
  kWarpGood,
  kWarpDivergent,
  kAxpyGood,
  kFillOne,
  kFillTwo,
  kMemory,
  kMmaTileProgram,
  kNumPrograms,
};

class EmuHarness : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!kiln::emutest::unavailable_reason().empty()) return;
    const std::string softmax = kSoftmax;
    std::vector<Program> programs(kNumPrograms);
    programs[kSoftmaxGood] = {"softmax.cu", softmax};
    programs[kSoftmaxNoStageBarrier] = {"softmax_no_stage_barrier.cu",
                                        without_line(softmax, "PLANT: after-stage")};
    programs[kSoftmaxNoTreeBarrier] = {"softmax_no_tree_barrier.cu",
                                       without_line(softmax, "PLANT: tree")};
    programs[kSoftmaxNoReuseBarrier] = {"softmax_no_reuse_barrier.cu",
                                        without_line(softmax, "PLANT: before-reuse")};
    // The first phase's barrier only for the threads that had a column: a
    // guard an emitter might wrongly put around a whole phase.
    programs[kSoftmaxDivergent] = {
        "softmax_divergent.cu",
        replace_once(softmax, "  __syncthreads();  // PLANT: after-stage",
                     "  if (t < cols) { __syncthreads(); }  // PLANT: after-stage")};
    programs[kWarpGood] = {"row_sum_warp.cu", kWarpRowSum};
    programs[kWarpDivergent] = {
        "row_sum_warp_divergent.cu",
        replace_once(kWarpRowSum, "  for (int offset = 16;",
                     "  if (lane >= cols) return;\n  for (int offset = 16;")};
    programs[kAxpyGood] = {"axpy.cu", kAxpy};
    programs[kFillOne] = {"fill1.cu", kFill1};
    programs[kFillTwo] = {"fill2.cu", kFill2};
    programs[kMemory] = {"memory_errors.cu", kMemoryErrors};
    programs[kMmaTileProgram] = {"mma_tile.cu", kMmaTile};
    lib_ = Library::build(programs, kPrelude);
  }

  void SetUp() override {
    const std::string why = kiln::emutest::unavailable_reason();
    if (!why.empty()) GTEST_SKIP() << "CUDA emulation harness unavailable: " << why;
  }

  static std::vector<float> softmax_reference(const std::vector<float>& x, long long rows,
                                              long long cols) {
    std::vector<float> y(x.size());
    for (long long r = 0; r < rows; ++r) {
      double m = -INFINITY, s = 0;
      for (long long c = 0; c < cols; ++c) m = std::max<double>(m, x[r * cols + c]);
      for (long long c = 0; c < cols; ++c) s += std::exp(x[r * cols + c] - m);
      for (long long c = 0; c < cols; ++c)
        y[r * cols + c] = static_cast<float>(std::exp(x[r * cols + c] - m) / s);
    }
    return y;
  }

  // Runs the softmax program `p` on rows x cols; returns its output.
  static std::vector<float> run_softmax(size_t p, long long rows, long long cols) {
    std::vector<float> xs(rows * cols);
    for (size_t i = 0; i < xs.size(); ++i) xs[i] = std::sin(0.37f * i) * 4.0f;
    Buffer x = Buffer::of(xs);
    Buffer y = Buffer::poisoned<float>(xs.size());
    void* buffers[] = {x.data(), y.data()};
    const int64_t scalars[] = {rows, cols};
    lib_->launch(lib_->kernel(p, "softmax_rows"), {static_cast<unsigned>(rows)}, {128}, buffers,
                 scalars);
    return y.values<float>();
  }

  static kiln::emu::Error softmax_error(size_t p, long long rows, long long cols) {
    try {
      run_softmax(p, rows, cols);
    } catch (const kiln::emu::Error& e) {
      return e;
    }
    return kiln::emu::Error(ErrorKind::None, "");
  }

  static inline std::shared_ptr<const Library> lib_;
};

TEST_F(EmuHarness, SoftmaxMatchesTheReference) {
  for (long long cols : {1LL, 100LL, 128LL, 300LL}) {
    const long long rows = 3;
    const std::vector<float> y = run_softmax(kSoftmaxGood, rows, cols);
    std::vector<float> xs(rows * cols);
    for (size_t i = 0; i < xs.size(); ++i) xs[i] = std::sin(0.37f * i) * 4.0f;
    const std::vector<float> ref = softmax_reference(xs, rows, cols);
    for (size_t i = 0; i < y.size(); ++i)
      EXPECT_NEAR(y[i], ref[i], 1e-6f) << "cols " << cols << " i " << i;
  }
}

// Acceptance 2: a planted missing __syncthreads() is reported as a race.
TEST_F(EmuHarness, PlantedMissingBarrierIsReported) {
  struct Case {
    size_t program;
    const char* file;
    const char* what;
  };
  for (const Case& c : {Case{kSoftmaxNoStageBarrier, "softmax_no_stage_barrier.cu", "red[64]"},
                        Case{kSoftmaxNoTreeBarrier, "softmax_no_tree_barrier.cu", "red[1]"},
                        Case{kSoftmaxNoReuseBarrier, "softmax_no_reuse_barrier.cu", "red[0]"}}) {
    SCOPED_TRACE(c.file);
    const kiln::emu::Error e = softmax_error(c.program, 2, 300);
    EXPECT_EQ(e.kind(), ErrorKind::Race) << e.what();
    EXPECT_THAT(e.what(),
                HasSubstr("kernel 'softmax_rows' block (0, 0, 0): shared-memory race on "));
    EXPECT_THAT(e.what(), HasSubstr(c.what));
    EXPECT_THAT(e.what(), HasSubstr(std::string("(KILN_SHARED at ") + c.file + ":3)"));
    EXPECT_THAT(e.what(), HasSubstr("a __syncthreads() is missing"));
  }
  // With the barrier in place the same shapes pass (SoftmaxMatchesTheReference).
  EXPECT_EQ(softmax_error(kSoftmaxGood, 2, 300).kind(), ErrorKind::None);
}

// Acceptance 2: a planted divergent barrier is reported with both call sites.
TEST_F(EmuHarness, PlantedDivergentBarrierIsReported) {
  const kiln::emu::Error e = softmax_error(kSoftmaxDivergent, 2, 100);
  EXPECT_EQ(e.kind(), ErrorKind::Divergence) << e.what();
  EXPECT_THAT(e.what(),
              HasSubstr("kernel 'softmax_rows' block (0, 0, 0): divergent __syncthreads()"));
  EXPECT_THAT(e.what(), HasSubstr("threads 0-99 wait at the barrier at softmax_divergent.cu:13"));
  EXPECT_THAT(e.what(),
              HasSubstr("threads 100-127 wait at the barrier at softmax_divergent.cu:18"));
  // Where every thread has a column the guard is harmless, and nothing is reported.
  EXPECT_EQ(softmax_error(kSoftmaxDivergent, 2, 300).kind(), ErrorKind::None);
}

TEST_F(EmuHarness, WarpShuffleRowSum) {
  const long long rows = 4, cols = 70;
  std::vector<float> xs(rows * cols);
  std::iota(xs.begin(), xs.end(), 0.0f);
  Buffer x = Buffer::of(xs);
  Buffer y = Buffer::poisoned<float>(rows);
  void* buffers[] = {x.data(), y.data()};
  const int64_t scalars[] = {cols};
  lib_->launch(lib_->kernel(kWarpGood, "row_sum_warp"), {rows}, {32}, buffers, scalars);
  const std::vector<float> got = y.values<float>();
  for (long long r = 0; r < rows; ++r) {
    const float expect = static_cast<float>(cols * (r * cols) + cols * (cols - 1) / 2);
    EXPECT_EQ(got[r], expect) << r;
  }
}

TEST_F(EmuHarness, LaneLeavingAShuffleIsReported) {
  std::vector<float> xs(20, 1.0f);
  Buffer x = Buffer::of(xs);
  Buffer y = Buffer::poisoned<float>(1);
  void* buffers[] = {x.data(), y.data()};
  const int64_t scalars[] = {20};
  try {
    lib_->launch(lib_->kernel(kWarpDivergent, "row_sum_warp"), {1}, {32}, buffers, scalars);
    ADD_FAILURE() << "no report";
  } catch (const kiln::emu::Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Warp) << e.what();
    EXPECT_THAT(e.what(), HasSubstr("waits at __shfl_xor_sync at row_sum_warp_divergent.cu:"));
    EXPECT_THAT(e.what(), HasSubstr("thread 20, named in the mask, exited"));
  }
}

// The prelude's fragment gather and the emulator's mma.sync collective
// against the product written out: C[row][col] += sum_k A[row][k] B[k][col]
// for lane l's elements (row l/4 + 8(r/2), column 2(l%4) + r%2). Small
// integers, so every sum is exact. A block whose last warp is partial is
// reported: mma.sync needs all 32 lanes.
TEST_F(EmuHarness, WarpMmaMatchesTheProductAndNeedsAFullWarp) {
  const uint16_t half_of[5] = {0xC000, 0xBC00, 0x0000, 0x3C00, 0x4000};  // -2..2
  std::vector<uint16_t> as(384, 0), bs(192, 0);
  float A[16][16], B[16][8];
  for (int m = 0; m < 16; ++m) {
    for (int k = 0; k < 16; ++k) {
      const int v = (m * 7 + k * 3) % 5;
      as[size_t(m * 24 + k)] = half_of[v];
      A[m][k] = float(v - 2);
    }
  }
  for (int n = 0; n < 8; ++n) {
    for (int k = 0; k < 16; ++k) {
      const int v = (n * 5 + k * 2 + 1) % 5;
      bs[size_t(n * 24 + k)] = half_of[v];
      B[k][n] = float(v - 2);
    }
  }
  std::vector<float> cs(64 * 4);
  for (size_t i = 0; i < cs.size(); ++i) cs[i] = float(i % 7);
  Buffer a = Buffer::of(as), b = Buffer::of(bs), c = Buffer::of(cs);
  void* buffers[] = {a.data(), b.data(), c.data()};
  lib_->launch(lib_->kernel(kMmaTileProgram, "mma_tile"), {1}, {64}, buffers, {});
  const std::vector<float> got = c.values<float>();
  for (int t = 0; t < 64; ++t) {
    const int l = t % 32;
    for (int r = 0; r < 4; ++r) {
      const int row = l / 4 + 8 * (r / 2), col = 2 * (l % 4) + r % 2;
      float want = cs[size_t(t * 4 + r)];
      for (int k = 0; k < 16; ++k) want += A[row][k] * B[k][col];
      EXPECT_EQ(got[size_t(t * 4 + r)], want) << "thread " << t << " element " << r;
    }
  }
  Buffer c2 = Buffer::of(cs);
  void* buffers2[] = {a.data(), b.data(), c2.data()};
  try {
    lib_->launch(lib_->kernel(kMmaTileProgram, "mma_tile"), {1}, {48}, buffers2, {});
    ADD_FAILURE() << "no report";
  } catch (const kiln::emu::Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Warp) << e.what();
    EXPECT_THAT(e.what(), HasSubstr("mma.sync.m16n8k16 (f16)"));
    EXPECT_THAT(e.what(), HasSubstr("names lanes its warp does not have"));
  }
}

TEST_F(EmuHarness, VectorLoadsAndScalarSlots) {
  const long long n = 1030;  // not a multiple of 4: the tail takes the scalar path
  std::vector<float> xs(n), ys(n);
  for (long long i = 0; i < n; ++i) xs[i] = 0.5f * i, ys[i] = 1.0f;
  Buffer x = Buffer::of(xs);
  Buffer y = Buffer::of(ys);
  void* buffers[] = {x.data(), y.data()};
  float alpha = 2.0f;
  uint32_t bits;
  std::memcpy(&bits, &alpha, 4);
  const int64_t scalars[] = {n, static_cast<int64_t>(bits)};
  const auto& k = lib_->kernel(kAxpyGood, "axpy_vec4");
  EXPECT_EQ(k.launch_bound, 256u);
  ASSERT_EQ(k.params.size(), 4u);
  EXPECT_TRUE(k.params[0].pointer && k.params[0].floating && k.params[0].elem_size == 4);
  EXPECT_TRUE(!k.params[2].pointer && k.params[2].elem_size == 8);
  lib_->launch(k, {2}, {256}, buffers, scalars);
  const std::vector<float> got = y.values<float>();
  for (long long i = 0; i < n; ++i) EXPECT_EQ(got[i], 1.0f + 2.0f * 0.5f * i) << i;
}

TEST_F(EmuHarness, ProgramsKeepTheirOwnKernels) {
  for (size_t p : {kFillOne, kFillTwo}) {
    Buffer out = Buffer::poisoned<int>(32);
    void* buffers[] = {out.data()};
    lib_->launch(lib_->kernel(p, "k0"), {1}, {32}, buffers, {});
    for (int v : out.values<int>()) EXPECT_EQ(v, p == kFillOne ? 1 : 2);
  }
  EXPECT_THROW(lib_->kernel(kFillOne, "k1"), std::out_of_range);
}

TEST_F(EmuHarness, LaunchesAreChecked) {
  Buffer out = Buffer::poisoned<int>(64);
  void* buffers[] = {out.data()};
  const auto& k = lib_->kernel(kFillOne, "k0");
  try {
    lib_->launch(k, {1}, {64}, buffers, {});
    ADD_FAILURE() << "no report";
  } catch (const kiln::emu::Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Launch);
    EXPECT_THAT(e.what(), HasSubstr("more than its __launch_bounds__(32)"));
  }
  try {
    const int64_t extra[] = {1};
    lib_->launch(k, {1}, {32}, buffers, extra);
    ADD_FAILURE() << "no report";
  } catch (const kiln::emu::Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Launch);
    EXPECT_THAT(e.what(), HasSubstr("takes 1 buffers and 0 scalars; the launch passed 1 and 1"));
  }
}

TEST_F(EmuHarness, MemoryErrorsOfKernels) {
  Buffer out = Buffer::poisoned<float>(32);
  Buffer x = Buffer::poisoned<float>(4 * 32 + 1);
  void* one[] = {out.data()};
  const int64_t in_bounds[] = {3};
  // Within bounds everything runs (and local_overrun keeps its values across the barrier).
  lib_->launch(lib_->kernel(kMemory, "write_all"), {1}, {32}, one, {});
  lib_->launch(lib_->kernel(kMemory, "local_overrun"), {1}, {32}, one, in_bounds);
  for (unsigned t = 0; t < 32; ++t) EXPECT_EQ(out.values<float>()[t], 1.0f * t);
#ifdef KILN_SANITIZE
  const int64_t past_end[] = {4};
  void* misaligned[] = {static_cast<float*>(x.data()) + 1, out.data()};
  EXPECT_DEATH(lib_->launch(lib_->kernel(kMemory, "write_all"), {1}, {33}, one, {}),
               "heap-buffer-overflow");
  EXPECT_DEATH(lib_->launch(lib_->kernel(kMemory, "local_overrun"), {1}, {32}, one, past_end),
               "stack-buffer-overflow");
  EXPECT_DEATH(lib_->launch(lib_->kernel(kMemory, "load_vec4"), {1}, {32}, misaligned, {}),
               "misaligned address");
#else
  GTEST_SKIP() << "global and per-thread memory errors are ASan's and UBSan's to catch: "
                  "the sanitizer build (scripts/build --sanitize) runs this";
#endif
}

TEST(EmuHarnessBuild, CompileErrorsNameTheProgramLine) {
  const std::string why = kiln::emutest::unavailable_reason();
  if (!why.empty()) GTEST_SKIP() << "CUDA emulation harness unavailable: " << why;
  const std::string bad =
      "extern \"C\" __global__ void k(float* out) {\n  out[0] = undefined_name;\n}\n";
  try {
    Library::build({{"bad.cu", bad}});
    ADD_FAILURE() << "compiled";
  } catch (const std::runtime_error& e) {
    EXPECT_THAT(e.what(), HasSubstr("do not compile"));
    EXPECT_THAT(e.what(), HasSubstr("bad.cu:2"));
    EXPECT_THAT(e.what(), HasSubstr("undefined_name"));
  }
}

}  // namespace
