// Selection ops of issue 13 (sort, topk, kthvalue, median): the reference's
// order on ties and NaN written out by hand, and the internals of the
// lowering (passes/lower/lower_selection.cpp): the merge sort over a row of
// run-time size at every power-of-two boundary, topk's two strategies, and
// the cuda refusal.
#include <cmath>
#include <limits>

#include "lower_test_util.h"
#include "op_test_util.h"
#include "passes/target.h"

namespace kiln {
namespace {

using test::make_tensor;
using test::run_op;
using test::values_of;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

void expect_same(const Tensor& t, const std::vector<double>& want) {
  std::vector<double> got = values_of(t);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << "element " << i << " = " << got[i];
    } else {
      EXPECT_EQ(got[i], want[i]) << "element " << i;
    }
  }
}

TEST(OpsSelection, StableOrderWithNaNAsTheLargest) {
  // As torch.sort(x, stable=True) prints them.
  Tensor x = make_tensor({6}, {1, kNaN, 3, 1, -kInf, kNaN});
  std::vector<Tensor> up = run_op("sort", {x});
  expect_same(up[0], {-kInf, 1, 1, 3, kNaN, kNaN});
  expect_same(up[1], {4, 0, 3, 2, 1, 5});
  std::vector<Tensor> down = run_op("sort", {x}, {{"descending", true}});
  expect_same(down[0], {kNaN, kNaN, 3, 1, 1, -kInf});
  expect_same(down[1], {1, 5, 2, 0, 3, 4});
  std::vector<Tensor> top = run_op("topk", {x}, {{"k", int64_t{3}}, {"largest", false}});
  expect_same(top[1], {4, 0, 3});
  std::vector<Tensor> kth = run_op("kthvalue", {x}, {{"k", int64_t{3}}});
  expect_same(kth[0], {1});
  expect_same(kth[1], {3});
  // A row with NaN: its first NaN (torch.median).
  std::vector<Tensor> med = run_op("median", {x}, {{"dim", int64_t{0}}});
  expect_same(med[0], {kNaN});
  expect_same(med[1], {1});
  // The lower median of an even row.
  med = run_op("median", {make_tensor({4}, {4, 1, 3, 2}, DType::I32)}, {{"dim", int64_t{0}}});
  expect_same(med[0], {2});
  expect_same(med[1], {3});
}

TEST(OpsSelection, NanMedianLeavesNaNsOut) {
  // torch.nanmedian: the lower median of the numbers; an all-NaN row is NaN at 0.
  Tensor x = make_tensor({3, 4}, {kNaN, kNaN, kNaN, kNaN, 3, kNaN, 1, 2, 2, 2, kNaN, 1});
  std::vector<Tensor> med = run_op("nanmedian", {x}, {{"dim", int64_t{1}}});
  expect_same(med[0], {kNaN, 2, 2});
  expect_same(med[1], {0, 3, 0});
  med = run_op("nanmedian", {x}, {{"dim", int64_t{0}}, {"keepdim", true}});
  expect_same(med[0], {2, 2, 1, 1});
  expect_same(med[1], {2, 2, 1, 2});
  // Integers have no NaN: the same as median.
  med = run_op("nanmedian", {make_tensor({4}, {5, 3, 3, 1}, DType::I64)}, {{"dim", int64_t{0}}});
  expect_same(med[0], {3});
  expect_same(med[1], {1});
}

// Values with many ties (and NaN for floats) along a row of `n`.
Tensor tied_rows(int64_t rows, int64_t n, DType t, uint64_t seed) {
  Tensor x = test::random_tensor({rows, n}, t, seed);
  std::vector<double> v = values_of(x);
  for (size_t i = 0; i < v.size(); ++i) {
    v[i] = std::floor(v[i] / 2);
    if (is_floating(t) && i % 7 == 3) v[i] = kNaN;
  }
  return make_tensor({rows, n}, v, t);
}

TEST(OpsSelection, MergeSortOfARunTimeRowAtEveryPowerOfTwoBoundary) {
  // The sort runs 62 guarded passes when n is symbolic: every boundary of the
  // pass count, and rows whose last run is short, must match the reference.
  for (bool descending : {false, true}) {
    for (DType t : {DType::F32, DType::I64}) {
      auto g = std::make_unique<ir::Graph>("rows");
      ir::Value* x = g->add_input("x", ir::Type::tensor(t, {3, ir::Dim::sym("N")}));
      std::vector<ir::Value*> outs = g->apply("sort", {x}, {{"descending", descending}});
      ir::Value* med = g->apply("median", {x}, {{"dim", int64_t{1}}}).at(1);
      ir::Value* nanmed = g->apply("nanmedian", {x}, {{"dim", int64_t{1}}}).at(1);
      g->set_outputs({outs[0], outs[1], med, nanmed});
      std::vector<passes::KernelPlan> plans;
      std::vector<loop::Kernel> ks = passes::lower_graph(*g, {}, &plans);
      for (int64_t n : {1, 2, 3, 4, 5, 8, 9, 16, 17, 31, 33, 100}) {
        SCOPED_TRACE(std::string(dtype_name(t)) + " n=" + std::to_string(n) +
                     (descending ? " descending" : ""));
        std::vector<Tensor> in{tied_rows(3, n, t, uint64_t(n))};
        std::vector<Tensor> got = test::run_kernels(*g, ks, plans, in);
        std::vector<Tensor> want = ir::interpret(*g, in);
        for (size_t i = 0; i < want.size(); ++i) {
          EXPECT_TRUE(test::tensors_close(got[i], want[i], 0, 0)) << "output " << i;
        }
      }
    }
  }
}

std::string lowered_text(const std::string& op, const ir::Attrs& attrs, ir::Dims dims,
                         const passes::LowerOptions& options = {}) {
  auto g = std::make_unique<ir::Graph>("t");
  ir::Value* x = g->add_input("x", ir::Type::tensor(DType::F32, std::move(dims)));
  g->set_outputs(g->apply(op, {x}, attrs));
  std::string s;
  for (const loop::Kernel& k : passes::lower_graph(*g, options)) s += loop::to_string(k);
  return s;
}

TEST(OpsSelection, TopkWithASmallKSelectsWithoutSortingTheRow) {
  // k <= 16: k passes over the row with scalar state only.
  std::string small = lowered_text("topk", {{"k", int64_t{3}}}, {4, 50});
  EXPECT_EQ(small.find("keys"), std::string::npos) << small;
  EXPECT_EQ(small.find("perm"), std::string::npos) << small;
  // A larger k sorts the row and keeps the first k.
  std::string large = lowered_text("topk", {{"k", int64_t{20}}}, {4, 50});
  EXPECT_NE(large.find("allocate keys0[f32 * 50] in stack"), std::string::npos) << large;
  EXPECT_NE(large.find("allocate perm0[i64 * 100] in stack"), std::string::npos) << large;
}

TEST(OpsSelection, CudaRefusesASortAlongARunTimeSize) {
  passes::LowerOptions o;
  o.target = passes::Target::for_gpu({});
  try {
    lowered_text("sort", {{"dim", int64_t{0}}}, {ir::Dim::sym("N"), 4}, o);
    ADD_FAILURE() << "no error";
  } catch (const InternalError& e) {
    ADD_FAILURE() << "an internal error: " << e.what();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("run-time size is not supported on cuda yet"),
              std::string::npos)
        << e.what();
  }
  // A static row is fine: each thread sorts one row in a local array.
  EXPECT_NE(lowered_text("sort", {{"dim", int64_t{1}}}, {ir::Dim::sym("N"), 4}, o).find("keys0"),
            std::string::npos);
}

}  // namespace
}  // namespace kiln
