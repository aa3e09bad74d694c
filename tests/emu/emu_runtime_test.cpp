// The CUDA emulator's runtime on kernels compiled into this test (no compiler
// run): coordinates, barrier phases, shared memory and its checks, warp
// collectives in lock step, per-thread arrays across phases, and the launch's
// own checks. Each report is asserted by kind and by what it says.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <vector>

// Last: it defines CUDA's names (threadIdx, __global__, ...) as macros.
#include "codegen/cuda/emulation.h"

namespace {

using kiln::emu::ErrorKind;
using ::testing::HasSubstr;

// Runs `f` and returns the emulator's error (kind None when there was none).
template <class F>
kiln::emu::Error error_of(F&& f) {
  try {
    f();
  } catch (const kiln::emu::Error& e) {
    return e;
  }
  return kiln::emu::Error(ErrorKind::None, "");
}

__global__ void coordinates(unsigned* out) {
  const unsigned t = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  const unsigned b = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  const unsigned threads = blockDim.x * blockDim.y * blockDim.z;
  out[b * threads + t] = b * 1000 + t;
}

TEST(EmuRuntime, EveryThreadOfEveryBlockRunsWithItsCoordinates) {
  const dim3 grid(3, 2, 1), block(4, 2, 2);
  std::vector<unsigned> out(6 * 16, 0);
  kiln::emu::launch(coordinates, grid, block, 0, out.data());
  for (unsigned b = 0; b < 6; ++b) {
    for (unsigned t = 0; t < 16; ++t) EXPECT_EQ(out[b * 16 + t], b * 1000 + t);
  }
}

__global__ void add_one(const float* __restrict__ in, float* __restrict__ out, long long n) {
  const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i] + 1.0f;
}

TEST(EmuRuntime, GridStrideElementwise) {
  const long long n = 1000;
  std::vector<float> in(n), out(n, NAN);
  std::iota(in.begin(), in.end(), 0.0f);
  kiln::emu::launch(add_one, dim3(4), dim3(256), 0, in.data(), out.data(), n);
  for (long long i = 0; i < n; ++i) EXPECT_EQ(out[i], i + 1.0f);
}

// Phase 1 stages the input in shared memory, phase 2 reads a neighbour's element.
template <bool kBarrier>
__global__ void rotate(const float* in, float* out) {
  KILN_SHARED(float, stage, 64);
  const unsigned t = threadIdx.x;
  stage[t] = in[blockIdx.x * 64 + t];
  if (kBarrier) __syncthreads();
  out[blockIdx.x * 64 + t] = stage[(t + 1) % 64];
}

TEST(EmuRuntime, BarrierSeparatesPhases) {
  std::vector<float> in(128), out(128, NAN);
  std::iota(in.begin(), in.end(), 0.0f);
  kiln::emu::launch(rotate<true>, dim3(2), dim3(64), 0, in.data(), out.data());
  for (unsigned b = 0; b < 2; ++b) {
    for (unsigned t = 0; t < 64; ++t) EXPECT_EQ(out[b * 64 + t], in[b * 64 + (t + 1) % 64]);
  }
}

TEST(EmuRuntime, MissingBarrierIsARace) {
  std::vector<float> in(64, 1.0f), out(64);
  const kiln::emu::Error e = error_of([&] {
    kiln::emu::launch_named("rotate", rotate<false>, dim3(1), dim3(64), 0, in.data(), out.data());
  });
  EXPECT_EQ(e.kind(), ErrorKind::Race) << e.what();
  // Thread 0 reads stage[1] before thread 1 writes it: the write finds the read.
  EXPECT_THAT(e.what(), HasSubstr("kernel 'rotate' block (0, 0, 0)"));
  EXPECT_THAT(e.what(), HasSubstr("shared-memory race on stage[1]"));
  EXPECT_THAT(e.what(), HasSubstr("thread 1 writes it and thread 0 read it"));
  EXPECT_THAT(e.what(), HasSubstr("before the block's first __syncthreads()"));
  EXPECT_THAT(e.what(), HasSubstr("a __syncthreads() is missing"));
}

TEST(EmuRuntime, ReportsAreDeterministic) {
  std::vector<float> in(64, 1.0f), out(64);
  auto run = [&] {
    return std::string(error_of([&] {
                         kiln::emu::launch(rotate<false>, dim3(1), dim3(64), 0, in.data(),
                                           out.data());
                       }).what());
  };
  const std::string first = run();
  EXPECT_FALSE(first.empty());
  EXPECT_EQ(run(), first);
}

// A block-wide tree sum, the shape the GPU schedules' reductions take.
template <bool kBarrierInLoop>
__global__ void block_sum(const float* in, float* out, long long n) {
  KILN_SHARED(float, partial, 128);
  const unsigned t = threadIdx.x;
  float acc = 0.0f;
  for (long long i = t; i < n; i += blockDim.x) acc += in[i];
  partial[t] = acc;
  __syncthreads();
  for (unsigned stride = blockDim.x / 2; stride > 0; stride /= 2) {
    if (t < stride) partial[t] = partial[t] + partial[t + stride];
    if (kBarrierInLoop) __syncthreads();
  }
  if (t == 0) out[0] = partial[0];
}

TEST(EmuRuntime, SharedTreeReduction) {
  std::vector<float> in(1000);
  std::iota(in.begin(), in.end(), 1.0f);
  float out = NAN;
  kiln::emu::launch(block_sum<true>, dim3(1), dim3(128), 0, in.data(), &out, 1000LL);
  EXPECT_EQ(out, 500500.0f);
}

TEST(EmuRuntime, TreeReductionWithoutItsLoopBarrierIsARace) {
  std::vector<float> in(128, 1.0f);
  float out = NAN;
  const kiln::emu::Error e = error_of(
      [&] { kiln::emu::launch(block_sum<false>, dim3(1), dim3(128), 0, in.data(), &out, 128LL); });
  EXPECT_EQ(e.kind(), ErrorKind::Race) << e.what();
  EXPECT_THAT(e.what(), HasSubstr("shared-memory race on partial["));
  EXPECT_THAT(e.what(), HasSubstr("after the __syncthreads() at"));
}

__global__ void early_exit(float* out) {
  if (threadIdx.x >= 40) return;
  KILN_SHARED(float, s, 64);
  s[threadIdx.x] = 1.0f;
  __syncthreads();
  out[threadIdx.x] = s[0];
}

TEST(EmuRuntime, ThreadsExitingBeforeABarrierIsDivergence) {
  std::vector<float> out(64);
  const kiln::emu::Error e = error_of(
      [&] { kiln::emu::launch_named("early_exit", early_exit, dim3(2), dim3(64), 0, out.data()); });
  EXPECT_EQ(e.kind(), ErrorKind::Divergence) << e.what();
  EXPECT_THAT(e.what(),
              HasSubstr("kernel 'early_exit' block (0, 0, 0): divergent __syncthreads()"));
  EXPECT_THAT(e.what(), HasSubstr("threads 0-39 wait at the barrier at"));
  EXPECT_THAT(e.what(), HasSubstr("threads 40-63 exited without reaching it"));
}

__global__ void two_barriers(float* out) {
  if (threadIdx.x % 2 == 0) {
    __syncthreads();
  } else {
    __syncthreads();
  }
  out[threadIdx.x] = 1.0f;
}

TEST(EmuRuntime, ThreadsAtDifferentBarriersIsDivergence) {
  std::vector<float> out(8);
  const kiln::emu::Error e =
      error_of([&] { kiln::emu::launch(two_barriers, dim3(1), dim3(8), 0, out.data()); });
  EXPECT_EQ(e.kind(), ErrorKind::Divergence) << e.what();
  EXPECT_THAT(e.what(), HasSubstr("threads 0, 2, 4, 6 wait at the barrier at"));
  EXPECT_THAT(e.what(), HasSubstr("threads 1, 3, 5, 7 wait at the barrier at"));
  // Call sites are the kernel source's file and line.
  EXPECT_THAT(e.what(), HasSubstr("emu_runtime_test.cpp:"));
}

__global__ void read_unwritten(float* out) {
  KILN_SHARED(float, s, 32);
  if (threadIdx.x < 16) s[threadIdx.x] = 2.0f;
  __syncthreads();
  out[threadIdx.x] = s[threadIdx.x];
}

TEST(EmuRuntime, ReadingUnwrittenSharedMemoryIsReported) {
  std::vector<float> out(32);
  const kiln::emu::Error e =
      error_of([&] { kiln::emu::launch(read_unwritten, dim3(1), dim3(32), 0, out.data()); });
  EXPECT_EQ(e.kind(), ErrorKind::Uninitialized) << e.what();
  EXPECT_THAT(e.what(), HasSubstr("thread 16 reads s[16]"));
  EXPECT_THAT(e.what(), HasSubstr("which no thread of the block has written"));
}

// Shared memory is fresh for every block: block 1 cannot see block 0's values.
__global__ void read_previous_block(float* out) {
  KILN_SHARED(float, s, 1);
  if (blockIdx.x == 0) s[0] = 5.0f;
  out[blockIdx.x] = s[0];
}

TEST(EmuRuntime, SharedMemoryIsFreshPerBlock) {
  std::vector<float> out(2);
  const kiln::emu::Error e =
      error_of([&] { kiln::emu::launch(read_previous_block, dim3(2), dim3(1), 0, out.data()); });
  EXPECT_EQ(e.kind(), ErrorKind::Uninitialized) << e.what();
  EXPECT_THAT(e.what(), HasSubstr("block (1, 0, 0)"));
}

__global__ void shared_out_of_bounds(float* out) {
  KILN_SHARED(float, s, 16);
  s[threadIdx.x] = 1.0f;
  out[0] = 0.0f;
}

TEST(EmuRuntime, SharedIndexOutsideTheArrayIsReported) {
  float out = 0;
  const kiln::emu::Error e =
      error_of([&] { kiln::emu::launch(shared_out_of_bounds, dim3(1), dim3(17), 0, &out); });
  EXPECT_EQ(e.kind(), ErrorKind::OutOfBounds) << e.what();
  EXPECT_THAT(e.what(), HasSubstr("thread 16 writes s[16], outside its 16 elements"));
}

__global__ void too_much_shared(float* out) {
  KILN_SHARED(float, big, 12288);  // 48 KiB: with 16 bytes of dynamic shared memory, too much
  big[0] = 1.0f;
  out[0] = big[0];
}

TEST(EmuRuntime, SharedMemoryBeyondTheDefaultLimitIsReported) {
  float out = 0;
  EXPECT_NO_THROW(kiln::emu::launch(too_much_shared, dim3(1), dim3(1), 0, &out));
  const kiln::emu::Error e =
      error_of([&] { kiln::emu::launch(too_much_shared, dim3(1), dim3(1), 16, &out); });
  EXPECT_EQ(e.kind(), ErrorKind::Launch) << e.what();
  EXPECT_THAT(e.what(), HasSubstr("without opting in"));
}

// `name + offset` (what the prelude's vector accesses take) indexes the same
// checked elements.
__global__ void shared_offsets(float* out, int past) {
  KILN_SHARED(float, s, 64);
  const auto four = s + 4 * threadIdx.x;
  for (int j = 0; j < 4; ++j) four[j] = 1.0f * threadIdx.x;
  __syncthreads();
  out[threadIdx.x] = *(s + 4 * ((threadIdx.x + 1) % 16)) + (s + past)[0];
}

TEST(EmuRuntime, SharedOffsetsAreCheckedLikeTheArray) {
  std::vector<float> out(16, NAN);
  kiln::emu::launch(shared_offsets, dim3(1), dim3(16), 0, out.data(), 0);
  for (unsigned t = 0; t < 16; ++t) EXPECT_EQ(out[t], (t + 1) % 16 + 0.0f);
  const kiln::emu::Error e =
      error_of([&] { kiln::emu::launch(shared_offsets, dim3(1), dim3(16), 0, out.data(), 64); });
  EXPECT_EQ(e.kind(), ErrorKind::OutOfBounds) << e.what();
  EXPECT_THAT(e.what(), HasSubstr("thread 0 reads s[64], outside its 64 elements"));
}

// A warp reduction with xor shuffles, then one value per warp through shared memory.
__global__ void warp_sums(const float* in, float* out) {
  KILN_SHARED(float, per_warp, 4);
  float v = in[threadIdx.x];
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
  if (threadIdx.x % 32 == 0) per_warp[threadIdx.x / 32] = v;
  __syncthreads();
  out[threadIdx.x] = per_warp[threadIdx.x / 32];
}

TEST(EmuRuntime, XorShuffleReduction) {
  std::vector<float> in(128), out(128, NAN);
  std::iota(in.begin(), in.end(), 0.0f);
  kiln::emu::launch(warp_sums, dim3(1), dim3(128), 0, in.data(), out.data());
  for (unsigned t = 0; t < 128; ++t) {
    const unsigned w = t / 32;
    const float expect = 32.0f * (32 * w) + 31 * 32 / 2.0f;
    EXPECT_EQ(out[t], expect) << t;
  }
}

__global__ void shuffles(int* out, int width) {
  const int lane = static_cast<int>(threadIdx.x);
  const int v = 100 + lane;
  out[0 * 32 + lane] = __shfl_sync(0xffffffffu, v, 3, width);
  out[1 * 32 + lane] = __shfl_up_sync(0xffffffffu, v, 2, width);
  out[2 * 32 + lane] = __shfl_down_sync(0xffffffffu, v, 2, width);
  out[3 * 32 + lane] = __shfl_xor_sync(0xffffffffu, v, 5, width);
  out[4 * 32 + lane] = static_cast<int>(__ballot_sync(0xffffffffu, lane % 3 == 0));
  out[5 * 32 + lane] = __any_sync(0xffffffffu, lane == 7);
  out[6 * 32 + lane] = __all_sync(0xffffffffu, lane < 31);
}

TEST(EmuRuntime, ShuffleAndVoteSemantics) {
  for (int width : {32, 8}) {
    std::vector<int> out(7 * 32, -1);
    kiln::emu::launch(shuffles, dim3(1), dim3(32), 0, out.data(), width);
    unsigned ballot = 0;
    for (int lane = 0; lane < 32; lane += 3) ballot |= 1u << lane;
    for (int lane = 0; lane < 32; ++lane) {
      const int seg = lane / width * width;
      SCOPED_TRACE("width " + std::to_string(width) + " lane " + std::to_string(lane));
      EXPECT_EQ(out[lane], 100 + seg + 3 % width);
      EXPECT_EQ(out[32 + lane], 100 + (lane - 2 >= seg ? lane - 2 : lane));
      EXPECT_EQ(out[64 + lane], 100 + (lane + 2 < seg + width ? lane + 2 : lane));
      // xor may reach an earlier segment, never a later one.
      const int x = lane ^ 5;
      EXPECT_EQ(out[96 + lane], 100 + (x < seg + width ? x : lane));
      EXPECT_EQ(static_cast<unsigned>(out[128 + lane]), ballot);
      EXPECT_EQ(out[160 + lane], 1);
      EXPECT_EQ(out[192 + lane], 0);
    }
  }
}

__global__ void shuffle_after_exit(float* out) {
  if (threadIdx.x == 17) return;
  out[threadIdx.x] = __shfl_xor_sync(0xffffffffu, 1.0f, 1);
}

TEST(EmuRuntime, ALaneMissingFromAShuffleIsReported) {
  std::vector<float> out(32);
  const kiln::emu::Error e =
      error_of([&] { kiln::emu::launch(shuffle_after_exit, dim3(1), dim3(32), 0, out.data()); });
  EXPECT_EQ(e.kind(), ErrorKind::Warp) << e.what();
  EXPECT_THAT(e.what(), HasSubstr("thread 0 waits at __shfl_xor_sync at"));
  EXPECT_THAT(e.what(), HasSubstr("thread 17, named in the mask, exited"));
}

__global__ void partial_warp_shuffle(float* out, unsigned mask) {
  out[threadIdx.x] = __shfl_down_sync(mask, 1.0f * threadIdx.x, 1);
}

TEST(EmuRuntime, AMaskNamingMissingLanesIsReported) {
  std::vector<float> out(48, NAN);
  const kiln::emu::Error e = error_of([&] {
    kiln::emu::launch(partial_warp_shuffle, dim3(1), dim3(48), 0, out.data(), 0xffffffffu);
  });
  EXPECT_EQ(e.kind(), ErrorKind::Warp) << e.what();
  EXPECT_THAT(e.what(), HasSubstr("names lanes its warp does not have"));
}

__global__ void half_warp_shuffle(float* out) {
  const unsigned lane = threadIdx.x % 32;
  const unsigned mask = lane < 16 ? 0x0000ffffu : 0xffff0000u;
  out[threadIdx.x] = __shfl_xor_sync(mask, 1.0f * threadIdx.x, 1);
}

TEST(EmuRuntime, DisjointMasksCompleteSeparately) {
  std::vector<float> out(32, NAN);
  kiln::emu::launch(half_warp_shuffle, dim3(1), dim3(32), 0, out.data());
  for (unsigned t = 0; t < 32; ++t) EXPECT_EQ(out[t], static_cast<float>(t ^ 1u));
}

// A per-thread array that lives across barrier phases (the GpuLocal scope):
// each fiber keeps its own.
__global__ void local_rows(const float* in, float* out) {
  float row[4];
  KILN_SHARED(float, sums, 64);
  for (int j = 0; j < 4; ++j) row[j] = in[threadIdx.x * 4 + j];
  sums[threadIdx.x] = row[0] + row[1] + row[2] + row[3];
  __syncthreads();
  const float total = sums[0] + sums[63];
  __syncthreads();
  for (int j = 0; j < 4; ++j) out[threadIdx.x * 4 + j] = row[j] / total;
}

TEST(EmuRuntime, PerThreadArraysSurviveBarriers) {
  std::vector<float> in(256), out(256, NAN);
  std::iota(in.begin(), in.end(), 0.0f);
  kiln::emu::launch(local_rows, dim3(1), dim3(64), 0, in.data(), out.data());
  const float total = (0 + 1 + 2 + 3) + (252 + 253 + 254 + 255);
  for (unsigned i = 0; i < 256; ++i) EXPECT_FLOAT_EQ(out[i], in[i] / total);
}

__global__ void noop(float*) {}

TEST(EmuRuntime, ImpossibleLaunchesAreRefused) {
  float x = 0;
  EXPECT_EQ(error_of([&] { kiln::emu::launch(noop, dim3(1), dim3(1025), 0, &x); }).kind(),
            ErrorKind::Launch);
  EXPECT_EQ(error_of([&] { kiln::emu::launch(noop, dim3(1), dim3(1, 1, 65), 0, &x); }).kind(),
            ErrorKind::Launch);
  EXPECT_EQ(error_of([&] { kiln::emu::launch(noop, dim3(0), dim3(32), 0, &x); }).kind(),
            ErrorKind::Launch);
  EXPECT_NO_THROW(kiln::emu::launch(noop, dim3(1), dim3(32, 32), 0, &x));
}

TEST(EmuRuntime, CudaNamesOutsideALaunchAreAnError) {
  const kiln::emu::Error e = error_of([] { (void)threadIdx.x; });
  EXPECT_EQ(e.kind(), ErrorKind::Launch);
  EXPECT_THAT(e.what(), HasSubstr("outside an emulated kernel launch"));
  EXPECT_EQ(error_of([] { __syncthreads(); }).kind(), ErrorKind::Launch);
}

__global__ void many_barriers(float* out, int rounds) {
  KILN_SHARED(float, s, 256);
  s[threadIdx.x] = 0.0f;
  for (int r = 0; r < rounds; ++r) {
    __syncthreads();
    const float left = s[(threadIdx.x + 255) % 256];
    __syncthreads();
    s[threadIdx.x] = left + 1.0f;
  }
  __syncthreads();
  out[blockIdx.x * 256 + threadIdx.x] = s[threadIdx.x];
}

TEST(EmuRuntime, ManyBlocksAndBarriers) {
  const unsigned blocks = 64;
  std::vector<float> out(blocks * 256, NAN);
  kiln::emu::launch(many_barriers, dim3(blocks), dim3(256), 0, out.data(), 8);
  for (float v : out) EXPECT_EQ(v, 8.0f);
}

}  // namespace
