// Kernels in the CUDA emitter's exact style, on Kiln's CUDA prelude
// (codegen/cuda/kiln_prelude.cuh, which emulation.h includes): its integer
// typedefs, kiln_f16 in shared memory, and kiln_vload / kiln_vstore of shared
// memory (`name + offset`), checked lane by lane like scalar accesses. Skips,
// saying so, in a tree without the prelude.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "tests/emu/harness.h"

namespace {

using kiln::emu::ErrorKind;
using kiln::emutest::Buffer;
using kiln::emutest::Library;
using ::testing::HasSubstr;

// Each thread moves four floats through shared memory with 128-bit accesses
// and takes its right neighbour's four; the marked barrier is planted away.
constexpr const char* kVectorShared = R"(#include "kiln_prelude.cuh"

extern "C" __global__ void __launch_bounds__(64) neighbour4(const float* __restrict__ b0, float* __restrict__ b1) {
  KILN_SHARED(float, tile, 256);
  const kiln_i64 t = (kiln_i64)threadIdx.x;
  const kiln_vec<float, 4> a = kiln_vload<float, 4>(b0 + t * 4);
  kiln_vstore<float, 4>(tile + t * 4, a);
  __syncthreads();  // PLANT
  const kiln_vec<float, 4> c = kiln_vload<float, 4>(tile + ((t + 1) % 64) * 4);
  const kiln_vec<float, 4> d = {{c.v[0] * 2.0f, c.v[1] * 2.0f, c.v[2] * 2.0f, c.v[3] * 2.0f}};
  kiln_vstore<float, 4>(b1 + t * 4, d);
}
)";

// A block max over f16 values kept as kiln_f16 in shared memory.
constexpr const char* kHalfMax = R"(#include "kiln_prelude.cuh"

extern "C" __global__ void __launch_bounds__(32) half_max(const kiln_f16* __restrict__ b0, kiln_f16* __restrict__ b1) {
  KILN_SHARED(kiln_f16, red, 32);
  const kiln_i64 t = (kiln_i64)threadIdx.x;
  red[t] = b0[t];
  __syncthreads();
  for (kiln_i64 s = 16; s > 0; s = kiln_div(s, (kiln_i64)2)) {
    if (t < s) {
      red[t] = kiln_f32_to_f16(kiln_max(kiln_f16_to_f32(red[t]), kiln_f16_to_f32(red[t + s])));
    }
    __syncthreads();
  }
  if (t == 0) {
    b1[0] = red[0];
  }
}
)";

std::string without_line(std::string text, const std::string& marker) {
  const size_t at = text.find(marker);
  const size_t begin = text.rfind('\n', at) + 1;
  return text.erase(begin, text.find('\n', at) - begin + 1);
}

class EmuPrelude : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string why = kiln::emutest::unavailable_reason();
    if (!why.empty()) GTEST_SKIP() << "CUDA emulation harness unavailable: " << why;
    if (!std::filesystem::exists(std::filesystem::path(KILN_SOURCE_DIR) /
                                 "codegen/cuda/kiln_prelude.cuh")) {
      GTEST_SKIP() << "the CUDA prelude (codegen/cuda/kiln_prelude.cuh) is not in this tree";
    }
    if (lib_ == nullptr) {
      lib_ = Library::build({{"neighbour4.cu", kVectorShared},
                             {"neighbour4_race.cu", without_line(kVectorShared, "PLANT")},
                             {"half_max.cu", kHalfMax}});
    }
  }
  static inline std::shared_ptr<const Library> lib_;
};

TEST_F(EmuPrelude, VectorAccessesToSharedMemory) {
  std::vector<float> xs(256);
  for (size_t i = 0; i < xs.size(); ++i) xs[i] = static_cast<float>(i);
  Buffer x = Buffer::of(xs);
  Buffer y = Buffer::poisoned<float>(256);
  void* buffers[] = {x.data(), y.data()};
  lib_->launch(lib_->kernel(0, "neighbour4"), {1}, {64}, buffers, {});
  const std::vector<float> got = y.values<float>();
  for (size_t t = 0; t < 64; ++t) {
    for (size_t j = 0; j < 4; ++j) EXPECT_EQ(got[t * 4 + j], 2.0f * xs[(t + 1) % 64 * 4 + j]);
  }
}

TEST_F(EmuPrelude, VectorAccessRaceIsReported) {
  Buffer x = Buffer::of(std::vector<float>(256, 1.0f));
  Buffer y = Buffer::poisoned<float>(256);
  void* buffers[] = {x.data(), y.data()};
  try {
    lib_->launch(lib_->kernel(1, "neighbour4"), {1}, {64}, buffers, {});
    ADD_FAILURE() << "no report";
  } catch (const kiln::emu::Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Race) << e.what();
    EXPECT_THAT(e.what(),
                HasSubstr("shared-memory race on tile[4] (KILN_SHARED at neighbour4_race.cu:4): "
                          "thread 1 writes it and thread 0 read it"));
  }
}

TEST_F(EmuPrelude, HalfValuesInSharedMemory) {
  // f16 bit patterns of 0.5 * i for i in 0..31 (exact in f16), the largest at i = 31.
  std::vector<uint16_t> xs(32);
  for (int i = 0; i < 32; ++i) {
    const float v = 0.5f * static_cast<float>((i * 7) % 32);
    uint32_t bits;
    std::memcpy(&bits, &v, 4);
    const uint32_t exp = (bits >> 23) & 0xff;
    xs[i] = v == 0 ? 0 : static_cast<uint16_t>(((exp - 127 + 15) << 10) | ((bits >> 13) & 0x3ff));
  }
  Buffer x = Buffer::of(xs);
  Buffer y = Buffer::poisoned<uint16_t>(1);
  void* buffers[] = {x.data(), y.data()};
  lib_->launch(lib_->kernel(2, "half_max"), {1}, {32}, buffers, {});
  EXPECT_EQ(y.values<uint16_t>()[0], 0x4bc0);  // 15.5
}

}  // namespace
