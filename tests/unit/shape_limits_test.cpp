// Kiln's size limits (issue 15, items 1 and 16): at most kMaxRank dims and
// byte sizes within int64, enforced by shape_nbytes, the Tensor factories and
// constructor, ir::Type::tensor and the .npy reader; and float_stats, the
// copy-free summary used when printing outputs.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <string>

#include "ir/type.h"
#include "kiln/error.h"
#include "kiln/tensor.h"
#include "runtime/allocator.h"

namespace kiln {
namespace {

template <typename Fn>
std::string error_of(Fn&& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

#define EXPECT_ERROR(stmt, needle) \
  EXPECT_PRED_FORMAT2(testing::IsSubstring, needle, error_of([&] { stmt; }))

TEST(ShapeLimits, CheckRank) {
  EXPECT_NO_THROW(check_rank(kMaxRank));
  EXPECT_ERROR(check_rank(kMaxRank + 1), "tensor of rank 65: Kiln supports at most 64 dimensions");
}

TEST(ShapeLimits, ShapeNbytes) {
  EXPECT_EQ(shape_nbytes({2, 3}, DType::F32), 24u);
  EXPECT_EQ(shape_nbytes({}, DType::F64), 8u);
  // A zero dim empties the tensor whatever the others are, as in PyTorch.
  EXPECT_EQ(shape_nbytes({0, int64_t{1} << 62, int64_t{1} << 62}, DType::F32), 0u);
  EXPECT_EQ(shape_nbytes({int64_t{1} << 60}, DType::F32), size_t{1} << 62);
  EXPECT_ERROR(shape_nbytes({int64_t{1} << 61}, DType::F32), "needs 2^63 bytes: too large");
  EXPECT_ERROR(shape_nbytes({int64_t{1} << 31, int64_t{1} << 31}, DType::F32),
               "tensor of shape [2147483648, 2147483648] (f32) needs 2^64 bytes: too large");
  // Elements fit in int64 but bytes do not.
  EXPECT_ERROR(shape_nbytes({int64_t{1} << 62}, DType::F64), "needs 2^65 bytes: too large");
  EXPECT_ERROR(shape_nbytes({2, -1}, DType::F32), "negative size in shape [2, -1]");
  EXPECT_ERROR(shape_nbytes(Shape(65, 1), DType::F32), "at most 64 dimensions");
}

TEST(ShapeLimits, TensorFactoriesAndViews) {
  EXPECT_EQ(Tensor::zeros(Shape(64, 1)).dim(), 64);
  EXPECT_ERROR(Tensor::zeros(Shape(65, 1)), "Tensor::empty: tensor of rank 65");
  EXPECT_ERROR(Tensor::empty({int64_t{1} << 31, int64_t{1} << 31}), "needs 2^64 bytes: too large");
  float x = 1;
  EXPECT_ERROR(Tensor::from_blob(&x, Shape(65, 1), DType::F32), "from_blob: tensor of rank 65");
  Tensor t = Tensor::zeros({1});
  EXPECT_ERROR(t.view_as_strided(Shape(100, 1), Shape(100, 0), 0), "tensor of rank 100");
}

TEST(ShapeLimits, AllocationFailureIsAnError) {
  // Past Kiln's 64 TiB sanity limit. (A size under it that the OS refuses
  // takes the same message, but asking for one would abort under ASan.)
  std::string msg;
  msg = error_of([] { Storage::allocate(size_t{1} << 60); });
  EXPECT_NE(msg.find("out of memory: cannot allocate 1152921504606846976 bytes"), std::string::npos)
      << msg;
}

TEST(ShapeLimits, CachingAllocatorRefusesAbsurdSizes) {
  // Run-time buffers come from the host's caching pool; its size-class
  // rounding must not wrap a huge request into a small block.
  std::string msg = error_of([] { CachingAllocator::global().allocate(~size_t{0} - 8); });
  EXPECT_NE(msg.find("out of memory on cpu: cannot allocate 18446744073709551607 bytes"),
            std::string::npos)
      << msg;
  EXPECT_ERROR(empty_cached({int64_t{1} << 31, int64_t{1} << 31}, DType::F32),
               "needs 2^64 bytes: too large");
}

TEST(ShapeLimits, TensorType) {
  EXPECT_NO_THROW(ir::Type::tensor(DType::F32, ir::Dims(64, ir::Dim(1))));
  EXPECT_ERROR(ir::Type::tensor(DType::F32, ir::Dims(10000, ir::Dim(1))), "tensor of rank 10000");
  const int64_t big = std::numeric_limits<int64_t>::max();
  EXPECT_ERROR(ir::Type::tensor(DType::F32, {big, big}), "too large");
  // Symbolic dims are bound later; the static ones alone must fit.
  EXPECT_NO_THROW(ir::Type::tensor(DType::F32, {ir::Dim::sym("N"), int64_t{1} << 40}));
  EXPECT_ERROR(ir::Type::tensor(DType::F32, {ir::Dim::sym("N"), int64_t{1} << 62}),
               "needs 2^64 bytes");
}

std::string write_file(const std::string& name, const std::string& bytes) {
  std::string path = testing::TempDir() + name;
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

std::string npy_v2(const std::string& header) {
  std::string out = "\x93NUMPY\x02";
  out += '\0';
  uint32_t n = static_cast<uint32_t>(header.size());
  for (int i = 0; i < 4; ++i) out += static_cast<char>((n >> (8 * i)) & 0xff);
  return out + header;
}

TEST(ShapeLimits, NpyRank) {
  std::string dims;
  for (int i = 0; i < 10000; ++i) dims += "1, ";
  std::string path = write_file(
      "rank.npy", npy_v2("{'descr': '<f4', 'fortran_order': False, 'shape': (" + dims + "), }\n") +
                      std::string(4, '\0'));
  EXPECT_ERROR(read_npy(path), "shape of rank 10000: Kiln supports at most 64 dimensions");
}

TEST(ShapeLimits, NpyHugeShape) {
  std::string path = write_file(
      "huge.npy", npy_v2("{'descr': '<f4', 'fortran_order': False, 'shape': (2147483648, "
                         "2147483648), }\n"));
  EXPECT_ERROR(read_npy(path), "needs 2^64 bytes: too large");
}

TEST(ShapeLimits, NpyMalformedHeaderIsQuotedShortAndEscaped) {
  std::string header = "{\x1b[2J" + std::string(1 << 20, '\x1b') + "\n";
  std::string path = write_file("esc.npy", npy_v2(header));
  std::string msg = error_of([&] { read_npy(path); });
  EXPECT_NE(msg.find("malformed header dict"), std::string::npos) << msg.substr(0, 300);
  EXPECT_NE(msg.find("'{\\x1b[2J\\x1b"), std::string::npos) << msg.substr(0, 300);
  EXPECT_NE(msg.find("... (1048582 bytes)"), std::string::npos) << msg.substr(0, 300);
  EXPECT_EQ(msg.find('\x1b'), std::string::npos);
  EXPECT_LT(msg.size(), path.size() + 200);
}

TEST(ShapeLimits, FloatStats) {
  Tensor t = Tensor::arange(0, 10, 1, DType::F32);
  t.set(std::vector<int64_t>{3}, NAN);
  FloatStats s = float_stats(t);
  EXPECT_EQ(s.count, 9);
  EXPECT_EQ(s.nan_count, 1);
  EXPECT_EQ(s.min, 0);
  EXPECT_EQ(s.max, 9);
  EXPECT_DOUBLE_EQ(s.mean, 42.0 / 9);
  // A strided f16 view goes through the generic path: elements 1, 3, 5, 7, 9.
  Tensor h = Tensor::arange(0, 10, 1, DType::F16).view_as_strided({5}, {2}, 1);
  s = float_stats(h);
  EXPECT_EQ(s.count, 5);
  EXPECT_EQ(s.min, 1);
  EXPECT_EQ(s.max, 9);
  EXPECT_DOUBLE_EQ(s.mean, 5);
  s = float_stats(Tensor::full({3}, NAN));
  EXPECT_EQ(s.nan_count, 3);
  EXPECT_TRUE(std::isnan(s.min) && std::isnan(s.max) && std::isnan(s.mean));
  // Blocked accumulation: 10^7 x 0.1f stays accurate to the float's value.
  s = float_stats(Tensor::full({10'000'000}, 0.1, DType::F32));
  EXPECT_NEAR(s.mean, double(0.1f), 1e-12);
  EXPECT_ERROR(float_stats(Tensor::zeros({2}, DType::I32)), "floating dtype");
}

}  // namespace
}  // namespace kiln
