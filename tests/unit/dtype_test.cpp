// DType basics: sizes, names, parsing and promote_types against PyTorch's
// torch.promote_types table, written out by hand (dtype.cpp computes it from
// rules, so the two are independent).
#include <gtest/gtest.h>

#include "kiln/dtype.h"

namespace kiln {
namespace {

using enum DType;

constexpr DType kOrder[10] = {Bool, U8, I8, I16, I32, I64, F16, BF16, F32, F64};

// kPromote[i][j] == torch.promote_types(kOrder[i], kOrder[j]).
// clang-format off
constexpr DType kPromote[10][10] = {
    //        bool  u8    i8    i16   i32   i64   f16   bf16  f32   f64
    /*bool*/ {Bool, U8,   I8,   I16,  I32,  I64,  F16,  BF16, F32,  F64},
    /*u8  */ {U8,   U8,   I16,  I16,  I32,  I64,  F16,  BF16, F32,  F64},
    /*i8  */ {I8,   I16,  I8,   I16,  I32,  I64,  F16,  BF16, F32,  F64},
    /*i16 */ {I16,  I16,  I16,  I16,  I32,  I64,  F16,  BF16, F32,  F64},
    /*i32 */ {I32,  I32,  I32,  I32,  I32,  I64,  F16,  BF16, F32,  F64},
    /*i64 */ {I64,  I64,  I64,  I64,  I64,  I64,  F16,  BF16, F32,  F64},
    /*f16 */ {F16,  F16,  F16,  F16,  F16,  F16,  F16,  F32,  F32,  F64},
    /*bf16*/ {BF16, BF16, BF16, BF16, BF16, BF16, F32,  BF16, F32,  F64},
    /*f32 */ {F32,  F32,  F32,  F32,  F32,  F32,  F32,  F32,  F32,  F64},
    /*f64 */ {F64,  F64,  F64,  F64,  F64,  F64,  F64,  F64,  F64,  F64},
};
// clang-format on

TEST(DType, PromoteTypesMatchesTorchTable) {
  for (int i = 0; i < 10; ++i) {
    for (int j = 0; j < 10; ++j) {
      EXPECT_EQ(promote_types(kOrder[i], kOrder[j]), kPromote[i][j])
          << dtype_name(kOrder[i]) << " + " << dtype_name(kOrder[j]) << " gave "
          << dtype_name(promote_types(kOrder[i], kOrder[j])) << ", torch gives "
          << dtype_name(kPromote[i][j]);
    }
  }
}

TEST(DType, PromoteTypesIsSymmetric) {
  for (DType a : kOrder) {
    for (DType b : kOrder) EXPECT_EQ(promote_types(a, b), promote_types(b, a));
  }
}

TEST(DType, NamedExamples) {
  EXPECT_EQ(promote_types(U8, I8), I16);
  EXPECT_EQ(promote_types(I64, F16), F16);
  EXPECT_EQ(promote_types(F16, BF16), F32);
  EXPECT_EQ(promote_types(Bool, BF16), BF16);
}

TEST(DType, Sizes) {
  constexpr size_t kSizes[10] = {1, 1, 1, 2, 4, 8, 2, 2, 4, 8};
  for (int i = 0; i < 10; ++i) EXPECT_EQ(dtype_size(kOrder[i]), kSizes[i]) << i;
}

TEST(DType, NamesRoundTrip) {
  constexpr const char* kNames[10] = {"bool", "u8",  "i8",   "i16", "i32",
                                      "i64",  "f16", "bf16", "f32", "f64"};
  for (int i = 0; i < 10; ++i) {
    EXPECT_STREQ(dtype_name(kOrder[i]), kNames[i]);
    EXPECT_EQ(parse_dtype(dtype_name(kOrder[i])), kOrder[i]) << kNames[i];
  }
}

TEST(DType, ParsesTorchSpellings) {
  EXPECT_EQ(parse_dtype("float32"), F32);
  EXPECT_EQ(parse_dtype("float"), F32);
  EXPECT_EQ(parse_dtype("double"), F64);
  EXPECT_EQ(parse_dtype("half"), F16);
  EXPECT_EQ(parse_dtype("bfloat16"), BF16);
  EXPECT_EQ(parse_dtype("long"), I64);
  EXPECT_EQ(parse_dtype("int"), I32);
  EXPECT_EQ(parse_dtype("uint8"), U8);
  EXPECT_EQ(parse_dtype("int8"), I8);
  EXPECT_EQ(parse_dtype("short"), I16);
  EXPECT_FALSE(parse_dtype("f128").has_value());
  EXPECT_FALSE(parse_dtype("").has_value());
  EXPECT_FALSE(parse_dtype("F32").has_value());
}

TEST(DType, Classes) {
  EXPECT_TRUE(is_floating(BF16));
  EXPECT_FALSE(is_floating(I64));
  EXPECT_TRUE(is_integral(U8));
  EXPECT_FALSE(is_integral(Bool));
  EXPECT_FALSE(is_signed(U8));
  EXPECT_FALSE(is_signed(Bool));
  EXPECT_TRUE(is_signed(I8));
  EXPECT_TRUE(is_signed(F16));
}

TEST(DType, DeviceStr) {
  EXPECT_EQ(Device::cpu().str(), "cpu");
  EXPECT_EQ(Device::cuda(1).str(), "cuda:1");
  EXPECT_TRUE(Device::cpu().is_cpu());
  EXPECT_FALSE(Device::cuda().is_cpu());
}

}  // namespace
}  // namespace kiln
