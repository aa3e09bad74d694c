// `kiln ops` metadata derived from the registry: families from the file that
// registers an op, dtypes from its type inference.
#include <gtest/gtest.h>

#include <algorithm>

#include "ir/op_registry.h"

namespace kiln::ir {
namespace {

TEST(OpFamily, FromTheRegisteringFile) {
  EXPECT_EQ(family_for("/src/ir/ops/activation.cpp", OpCategory::Elementwise), "activation");
  EXPECT_EQ(family_for("ir/ops/unary.cpp", OpCategory::Elementwise), "elementwise");
  EXPECT_EQ(family_for("ir/ops/constant.cpp", OpCategory::Other), "creation");
  EXPECT_EQ(family_for("ir/ops/layout_view.cpp", OpCategory::Layout), "layout");
  EXPECT_EQ(family_for("ir/ops/layout_index.cpp", OpCategory::Layout), "indexing");
  EXPECT_EQ(family_for("ir/ops/reduction_util.cpp", OpCategory::Reduction), "reduction");
  // A new family file needs no edit; shared helpers fall back to the category.
  EXPECT_EQ(family_for("ir/ops/scan.cpp", OpCategory::Reduction), "scan");
  EXPECT_EQ(family_for("ir/ops/fancy_new.cpp", OpCategory::Other), "fancy_new");
  EXPECT_EQ(family_for("ir/ops/helpers.cpp", OpCategory::Contraction), "contraction");
  EXPECT_EQ(family_for("ir/ops/elementwise_util.cpp", OpCategory::Elementwise), "elementwise");
}

TEST(OpFamily, EveryRegisteredOpHasOne) {
  const OpRegistry& r = OpRegistry::global();
  for (const OpDef* d : r.all()) EXPECT_FALSE(r.family(*d).empty()) << d->name;
  EXPECT_EQ(r.family(*r.find("elu")), "activation");
  EXPECT_EQ(r.family(*r.find("add")), "elementwise");
  EXPECT_EQ(r.family(*r.find("matmul")), "contraction");
}

TEST(OpFamily, DtypesFromTypeInference) {
  const OpRegistry& r = OpRegistry::global();
  std::vector<DType> add = probe_dtypes(*r.find("add"));
  EXPECT_EQ(add.size(), size_t(kNumDTypes));
  std::vector<DType> elu = probe_dtypes(*r.find("elu"));  // floating only, as PyTorch
  EXPECT_EQ(elu, (std::vector<DType>{DType::F16, DType::BF16, DType::F32, DType::F64}));
  // where(cond: bool, a, b): found with a bool first operand.
  std::vector<DType> where = probe_dtypes(*r.find("where"));
  EXPECT_NE(std::find(where.begin(), where.end(), DType::F32), where.end());
}

}  // namespace
}  // namespace kiln::ir
