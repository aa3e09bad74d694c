// Tests of the reduction op family (ir/ops/reduction.cpp): hand-computed
// values for every op and dtype class, keepdim, negative dim lists, empty and
// 1023-element inputs, strided views, symbolic dims and error messages.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "op_test_util.h"
#include "reduction_test_checks.h"

namespace kiln::test {
namespace {

using ir::Attrs;
using Ints = std::vector<int64_t>;

Attrs dims(Ints d, bool keepdim = false) {
  return {{"dim", d}, {"keepdim", keepdim}};
}

// 0, 1, ..., n-1 as `dtype` with the given shape.
Tensor iota(const Shape& shape, DType dtype = DType::F32) {
  std::vector<double> v(static_cast<size_t>(shape_numel(shape)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = double(i);
  return make_tensor(shape, v, dtype);
}

// x = [[1, 2, 3], [4, 5, 6]]
Tensor small(DType dtype = DType::F32) {
  return make_tensor({2, 3}, {1, 2, 3, 4, 5, 6}, dtype);
}

// --- sum --------------------------------------------------------------------------------

TEST(Sum, OverEachDimAndAll) {
  Tensor x = small();
  Tensor rows = run_op1("sum", {x}, dims({1}));
  EXPECT_EQ(rows.sizes(), Shape({2}));
  expect_values(rows, {6, 15});
  expect_values(run_op1("sum", {x}, dims({0})), {5, 7, 9});
  Tensor all = run_op1("sum", {x});
  EXPECT_EQ(all.dim(), 0);
  EXPECT_EQ(all.dtype(), DType::F32);
  expect_values(all, {21});
  Tensor kept = run_op1("sum", {x}, dims({1}, true));
  EXPECT_EQ(kept.sizes(), Shape({2, 1}));
  expect_values(kept, {6, 15});
  Tensor all_kept = run_op1("sum", {x}, dims({}, true));
  EXPECT_EQ(all_kept.sizes(), Shape({1, 1}));
  expect_values(all_kept, {21});
}

TEST(Sum, NegativeDimList) {
  // x[i][j][k] = 12i + 4j + k; sum over i and k = 32j + 60.
  Tensor x = iota({2, 3, 4});
  Tensor s = run_op1("sum", {x}, dims({-3, -1}));
  EXPECT_EQ(s.sizes(), Shape({3}));
  expect_values(s, {60, 92, 124});
  Tensor k = run_op1("sum", {x}, dims({-1, 0}, true));
  EXPECT_EQ(k.sizes(), Shape({1, 3, 1}));
  expect_values(k, {60, 92, 124});
  // A single int is accepted where a list is expected.
  // Over j alone: 3(12i + k) + 12.
  expect_values(run_op1("sum", {x}, {{"dim", int64_t{1}}}), {12, 15, 18, 21, 48, 51, 54, 57});
}

TEST(Sum, IntegersAndBoolSumInI64) {
  Tensor i8 = make_tensor({3}, {100, 100, 100}, DType::I8);
  Tensor s = run_op1("sum", {i8});
  EXPECT_EQ(s.dtype(), DType::I64);
  expect_values(s, {300});  // no i8 wrap-around
  Tensor i32 = small(DType::I32);
  Tensor rows = run_op1("sum", {i32}, dims({1}));
  EXPECT_EQ(rows.dtype(), DType::I64);
  expect_values(rows, {6, 15});
  Tensor b = make_tensor({2, 3}, {1, 0, 1, 1, 1, 1}, DType::Bool);
  Tensor bs = run_op1("sum", {b}, dims({1}));
  EXPECT_EQ(bs.dtype(), DType::I64);
  expect_values(bs, {2, 3});
  // i64 sums are exact beyond 2^53.
  Tensor big = Tensor::empty({2}, DType::I64);
  big.data<int64_t>()[0] = (int64_t{1} << 53) + 1;
  big.data<int64_t>()[1] = 1;
  EXPECT_EQ(run_op1("sum", {big}).data<int64_t>()[0], (int64_t{1} << 53) + 2);
}

TEST(Sum, DtypeOverride) {
  Tensor s = run_op1("sum", {small(DType::I32)}, {{"dtype", DType::F64}});
  EXPECT_EQ(s.dtype(), DType::F64);
  expect_values(s, {21});
  // torch casts to dtype first: 1.7 + 2.7 in i32 is 1 + 2.
  Tensor f = make_tensor({2}, {1.7, 2.7}, DType::F32);
  Tensor si = run_op1("sum", {f}, {{"dtype", DType::I32}});
  EXPECT_EQ(si.dtype(), DType::I32);
  expect_values(si, {3});
}

TEST(Sum, HalfAccumulatesWide) {
  // 1023 x f16(0.1) = 102.275..., rounded once to f16 -> 102.25. Accumulating
  // in f16 would stall far from it.
  Tensor x = Tensor::full({1023}, 0.1, DType::F16);
  Tensor s = run_op1("sum", {x});
  EXPECT_EQ(s.dtype(), DType::F16);
  expect_values(s, {102.25}, 0);
  Tensor bf = Tensor::full({4}, 1.5, DType::BF16);
  expect_values(run_op1("sum", {bf}), {6}, 0);
}

TEST(Sum, F64AndOneElement) {
  Tensor x = make_tensor({2, 2}, {0.1, 0.2, 0.3, 0.4}, DType::F64);
  Tensor s = run_op1("sum", {x}, dims({0}));
  EXPECT_EQ(s.dtype(), DType::F64);
  expect_values(s, {0.4, 0.6000000000000001}, 1e-15);
  Tensor one = make_tensor({1}, {7.5});
  Tensor s1 = run_op1("sum", {one});
  EXPECT_EQ(s1.dim(), 0);
  expect_values(s1, {7.5});
  // A 0-dim input accepts dim 0 / -1 and reduces nothing.
  Tensor scalar = Tensor::scalar(3.0);
  expect_values(run_op1("sum", {scalar}, dims({-1})), {3});
  EXPECT_EQ(run_op1("sum", {scalar}, dims({0}, true)).dim(), 0);
}

TEST(Reductions, Full1023) {
  Tensor x = iota({1023});
  expect_values(run_op1("sum", {x}), {522753});
  expect_values(run_op1("mean", {x}), {511});
  expect_values(run_op1("amax", {x}), {1022});
  expect_values(run_op1("amin", {x}), {0});
  // Unbiased variance of 0..n-1 is n(n+1)/12.
  expect_values(run_op1("var", {x}), {87296});
  expect_values(run_op1("std", {x}), {std::sqrt(87296.0)});
  expect_values(run_op1("argmax", {x}), {1022});
  std::vector<Tensor> mx = run_op("max", {x}, {{"dim", int64_t{0}}});
  expect_values(mx[0], {1022});
  expect_values(mx[1], {1022});
}

TEST(Reductions, EmptyDims) {
  Tensor x = Tensor::zeros({0, 5});
  Tensor s = run_op1("sum", {x}, dims({0}));
  EXPECT_EQ(s.sizes(), Shape({5}));
  expect_values(s, {0, 0, 0, 0, 0});
  expect_values(run_op1("prod", {x}, dims({0})), {1, 1, 1, 1, 1});
  expect_values(run_op1("mean", {x}, dims({0})), {kNaN, kNaN, kNaN, kNaN, kNaN});
  expect_values(run_op1("var", {x}, dims({0})), {kNaN, kNaN, kNaN, kNaN, kNaN});
  expect_values(run_op1("any", {x}, dims({0})), {0, 0, 0, 0, 0});
  expect_values(run_op1("all", {x}, dims({0})), {1, 1, 1, 1, 1});
  // Reducing the non-empty dim of an empty tensor gives an empty result.
  EXPECT_EQ(run_op1("sum", {x}, dims({1})).sizes(), Shape({0}));
  EXPECT_EQ(run_op1("amax", {x}, dims({1})).sizes(), Shape({0}));
  EXPECT_EQ(run_op("max", {x}, {{"dim", int64_t{1}}})[1].sizes(), Shape({0}));
  expect_values(run_op1("sum", {x}), {0});
  expect_values(run_op1("mean", {x}), {kNaN});
  expect_values(run_op1("sum", {Tensor::zeros({0}, DType::I32)}), {0});
}

// --- prod, mean -------------------------------------------------------------------------

TEST(Prod, ValuesAndDtypes) {
  Tensor x = small();
  expect_values(run_op1("prod", {x}, dims({1})), {6, 120});
  Tensor k = run_op1("prod", {x}, dims({0}, true));
  EXPECT_EQ(k.sizes(), Shape({1, 3}));
  expect_values(k, {4, 10, 18});
  expect_values(run_op1("prod", {x}), {720});
  Tensor i = run_op1("prod", {small(DType::I16)});
  EXPECT_EQ(i.dtype(), DType::I64);
  expect_values(i, {720});
  Tensor b = run_op1("prod", {make_tensor({3}, {1, 1, 0}, DType::Bool)});
  EXPECT_EQ(b.dtype(), DType::I64);
  expect_values(b, {0});
  Tensor h = run_op1("prod", {make_tensor({3}, {0.5, 4, -3}, DType::F16)});
  EXPECT_EQ(h.dtype(), DType::F16);
  expect_values(h, {-6}, 0);
}

TEST(Mean, ValuesKeepdimAndDtype) {
  Tensor x = small();
  expect_values(run_op1("mean", {x}, dims({1})), {2, 5});
  Tensor k = run_op1("mean", {x}, dims({-1}, true));
  EXPECT_EQ(k.sizes(), Shape({2, 1}));
  expect_values(k, {2, 5});
  expect_values(run_op1("mean", {x}), {3.5});
  Tensor d = run_op1("mean", {make_tensor({2}, {1, 2}, DType::I32)}, {{"dtype", DType::F64}});
  EXPECT_EQ(d.dtype(), DType::F64);
  expect_values(d, {1.5});
  Tensor h = run_op1("mean", {make_tensor({4}, {1, 2, 3, 5}, DType::F16)});
  EXPECT_EQ(h.dtype(), DType::F16);
  expect_values(h, {2.75}, 0);
}

// --- amax, amin -------------------------------------------------------------------------

// x[2][3][2] = [[[1, 5], [3, -2], [0, 4]], [[7, -1], [2, 2], [6, -3]]]
Tensor cube(DType dtype = DType::F32) {
  return make_tensor({2, 3, 2}, {1, 5, 3, -2, 0, 4, 7, -1, 2, 2, 6, -3}, dtype);
}

TEST(Amax, DimListsAndKeepdim) {
  Tensor x = cube();
  expect_values(run_op1("amax", {x}, dims({0, 2})), {7, 3, 6});
  Tensor mn = run_op1("amin", {x}, dims({-1}, true));
  EXPECT_EQ(mn.sizes(), Shape({2, 3, 1}));
  expect_values(mn, {1, -2, 0, -1, 2, -3});
  expect_values(run_op1("amax", {x}, dims({1, 2})), {5, 7});
  expect_values(run_op1("amin", {x}), {-3});
}

TEST(Amax, IntegerBoolAndNaN) {
  Tensor i = run_op1("amax", {cube(DType::I32)}, dims({0}));
  EXPECT_EQ(i.dtype(), DType::I32);
  expect_values(i, {7, 5, 3, 2, 6, 4});
  Tensor b = run_op1("amax", {make_tensor({2, 2}, {0, 1, 0, 0}, DType::Bool)}, dims({1}));
  EXPECT_EQ(b.dtype(), DType::Bool);
  expect_values(b, {1, 0});
  Tensor n = make_tensor({2, 3}, {1, kNaN, 3, 4, 5, 6}, DType::F64);
  expect_values(run_op1("amax", {n}, dims({1})), {kNaN, 6});
  expect_values(run_op1("amin", {n}, dims({1})), {kNaN, 4});
  Tensor h = run_op1("amin", {make_tensor({3}, {0.5, -0.25, 2}, DType::BF16)});
  EXPECT_EQ(h.dtype(), DType::BF16);
  expect_values(h, {-0.25}, 0);
}

// --- max, min, argmax, argmin -------------------------------------------------------------

TEST(MaxMin, ValuesAndFirstIndexOnTies) {
  Tensor x = make_tensor({2, 3}, {1, 3, 3, 5, 0, 5});
  std::vector<Tensor> mx = run_op("max", {x}, {{"dim", int64_t{1}}});
  ASSERT_EQ(mx.size(), 2u);
  EXPECT_EQ(mx[0].dtype(), DType::F32);
  EXPECT_EQ(mx[1].dtype(), DType::I64);
  expect_values(mx[0], {3, 5});
  expect_values(mx[1], {1, 0});
  std::vector<Tensor> mn = run_op("min", {x}, {{"dim", int64_t{-1}}, {"keepdim", true}});
  EXPECT_EQ(mn[0].sizes(), Shape({2, 1}));
  EXPECT_EQ(mn[1].sizes(), Shape({2, 1}));
  expect_values(mn[0], {1, 0});
  expect_values(mn[1], {0, 1});
  std::vector<Tensor> cols = run_op("max", {x}, {{"dim", int64_t{0}}});
  expect_values(cols[0], {5, 3, 5});
  expect_values(cols[1], {1, 0, 1});
}

TEST(MaxMin, NaNWinsAndIntegers) {
  Tensor x = make_tensor({1, 4}, {1, kNaN, 7, kNaN});
  std::vector<Tensor> mx = run_op("max", {x}, {{"dim", int64_t{1}}});
  expect_values(mx[0], {kNaN});
  expect_values(mx[1], {1});
  std::vector<Tensor> mn = run_op("min", {x}, {{"dim", int64_t{1}}});
  expect_values(mn[0], {kNaN});
  expect_values(mn[1], {1});
  std::vector<Tensor> iv = run_op("min", {cube(DType::I64)}, {{"dim", int64_t{1}}});
  EXPECT_EQ(iv[0].dtype(), DType::I64);
  expect_values(iv[0], {0, -2, 2, -3});
  expect_values(iv[1], {2, 1, 1, 2});
  // 0-dim input: the value and index 0.
  std::vector<Tensor> s = run_op("max", {Tensor::scalar(4.0)}, {{"dim", int64_t{0}}});
  EXPECT_EQ(s[0].dim(), 0);
  expect_values(s[0], {4});
  expect_values(s[1], {0});
}

TEST(ArgMax, FlattenedAndAlongDim) {
  Tensor x = make_tensor({2, 2}, {1, 9, 9, 2});
  Tensor flat = run_op1("argmax", {x});
  EXPECT_EQ(flat.dtype(), DType::I64);
  EXPECT_EQ(flat.dim(), 0);
  expect_values(flat, {1});
  Tensor flat_k = run_op1("argmax", {x}, {{"keepdim", true}});
  EXPECT_EQ(flat_k.sizes(), Shape({1, 1}));
  expect_values(flat_k, {1});
  expect_values(run_op1("argmax", {x}, {{"dim", int64_t{0}}}), {1, 0});
  Tensor mn = run_op1("argmin", {x}, {{"dim", int64_t{-1}}, {"keepdim", true}});
  EXPECT_EQ(mn.sizes(), Shape({2, 1}));
  expect_values(mn, {0, 1});
  expect_values(run_op1("argmin", {x}), {0});
  expect_values(run_op1("argmin", {cube(DType::I8)}), {11});
  expect_values(run_op1("argmax", {make_tensor({3}, {1, kNaN, 2}, DType::F16)}), {1});
}

// --- var, std ---------------------------------------------------------------------------

TEST(Var, CorrectionKeepdimAndFull) {
  Tensor x = make_tensor({2, 4}, {1, 2, 3, 4, 2, 4, 6, 8});
  expect_values(run_op1("var", {x}, dims({1})), {5.0 / 3, 20.0 / 3});
  Tensor biased =
      run_op1("var", {x}, {{"dim", Ints{-1}}, {"correction", int64_t{0}}, {"keepdim", true}});
  EXPECT_EQ(biased.sizes(), Shape({2, 1}));
  expect_values(biased, {1.25, 5});
  expect_values(run_op1("std", {x}, dims({1})), {std::sqrt(5.0 / 3), std::sqrt(20.0 / 3)});
  // Mean 3.75, squared deviations sum to 37.5.
  expect_values(run_op1("var", {x}), {37.5 / 7});
  expect_values(run_op1("std", {x}, {{"correction", int64_t{0}}}), {std::sqrt(37.5 / 8)});
  expect_values(run_op1("var", {x}, dims({0})), {0.5, 2, 4.5, 8});
}

TEST(Var, EdgeCasesAndPrecision) {
  Tensor one = make_tensor({1}, {3});
  expect_values(run_op1("var", {one}), {kNaN});  // N - 1 == 0: 0/0
  expect_values(run_op1("var", {one}, {{"correction", int64_t{0}}}), {0});
  Tensor two = make_tensor({2}, {1, 3});
  expect_values(run_op1("var", {two}, {{"correction", int64_t{2}}}), {kInf});
  // Two-pass accumulation keeps the spread of data with a large mean.
  Tensor off = make_tensor({3}, {1e8 + 1, 1e8 + 2, 1e8 + 3}, DType::F64);
  expect_values(run_op1("var", {off}), {1}, 1e-12);
  Tensor h = run_op1("std", {make_tensor({2}, {1, 3}, DType::F16)});
  EXPECT_EQ(h.dtype(), DType::F16);
  expect_values(h, {std::sqrt(2.0)}, 1e-3);
}

// --- any, all ---------------------------------------------------------------------------

TEST(AnyAll, BoolIntFloat) {
  Tensor b = make_tensor({2, 3}, {1, 0, 0, 0, 0, 0}, DType::Bool);
  Tensor any = run_op1("any", {b}, dims({1}));
  EXPECT_EQ(any.dtype(), DType::Bool);
  expect_values(any, {1, 0});
  Tensor b2 = make_tensor({2, 2}, {1, 1, 1, 0}, DType::Bool);
  expect_values(run_op1("all", {b2}, dims({0})), {1, 0});
  Tensor k = run_op1("all", {b2}, dims({1}, true));
  EXPECT_EQ(k.sizes(), Shape({2, 1}));
  expect_values(k, {1, 0});
  expect_values(run_op1("all", {b2}), {0});
  expect_values(run_op1("any", {make_tensor({3}, {0, -2, 0}, DType::I32)}), {1});
  expect_values(run_op1("all", {make_tensor({2}, {kNaN, 0.5}, DType::F32)}), {1});
  expect_values(run_op1("any", {make_tensor({2}, {0, -0.0}, DType::F64)}), {0});
}

// --- strided inputs, symbolic dims ---------------------------------------------------------

TEST(Reductions, TransposedView) {
  // base [3, 2] = [[1, 2], [3, 4], [5, 6]]; view = base^T = [[1, 3, 5], [2, 4, 6]].
  Tensor base = make_tensor({3, 2}, {1, 2, 3, 4, 5, 6});
  Tensor t = base.view_as_strided({2, 3}, {1, 2}, 0);
  ASSERT_FALSE(t.is_contiguous());
  expect_values(run_op1("sum", {t}, dims({1})), {9, 12});
  expect_values(run_op1("amax", {t}, dims({0})), {2, 4, 6});
  std::vector<Tensor> mn = run_op("min", {t}, {{"dim", int64_t{1}}});
  expect_values(mn[0], {1, 2});
  expect_values(mn[1], {0, 0});
  expect_values(run_op1("argmax", {t}), {5});  // flat index in the view's order
  expect_values(run_op1("var", {t}, dims({1})), {4, 4});
  // A view with a storage offset: the last two rows of base.
  Tensor tail = base.view_as_strided({2, 2}, {2, 1}, 2);
  expect_values(run_op1("prod", {tail}, dims({0})), {15, 24});
}

TEST(Reductions, SymbolicDimsKept) {
  Arg x{Tensor()};
  x.type = ir::Type::tensor(DType::F32, {ir::Dim::sym("N"), 3, 4});
  auto t = infer_op("sum", {x}, dims({1}));
  EXPECT_EQ(t[0].str(), "f32[N, 4]");
  EXPECT_EQ(infer_op("mean", {x}, dims({-1}, true))[0].str(), "f32[N, 3, 1]");
  EXPECT_EQ(infer_op("amax", {x}, dims({0}))[0].str(), "f32[3, 4]");
  auto mx = infer_op("max", {x}, {{"dim", int64_t{2}}});
  ASSERT_EQ(mx.size(), 2u);
  EXPECT_EQ(mx[1].str(), "i64[N, 3]");
  EXPECT_EQ(infer_op("argmax", {x})[0].str(), "i64[]");
  EXPECT_EQ(infer_op("any", {x}, dims({0, 1}))[0].str(), "bool[4]");
}

// --- errors ---------------------------------------------------------------------------------

TEST(ReductionErrors, DimsOutOfRangeAndDuplicate) {
  Tensor x = small();
  expect_error([&] { run_op("sum", {x}, dims({2})); }, {"sum", "dim 2", "rank 2"});
  expect_error([&] { run_op("amax", {x}, dims({-3})); }, {"amax", "dim -3", "rank 2"});
  expect_error([&] { run_op("max", {x}, {{"dim", int64_t{5}}}); }, {"max", "dim 5", "rank 2"});
  expect_error([&] { run_op("argmin", {x}, {{"dim", int64_t{2}}}); }, {"argmin", "dim 2"});
  expect_error(
      [&] {
        run_op("sum", {x}, dims({1, -1}));
      },
      {"sum", "dim 1", "more than once", "[1, -1]"});
  expect_error(
      [&] {
        run_op("var", {iota({2, 3, 4})}, dims({-3, 0}));
      },
      {"var", "dim 0", "more than once"});
}

TEST(ReductionErrors, DtypesAndEmpty) {
  expect_error([&] { run_op("mean", {small(DType::I32)}); },
               {"mean: input dtype i32 is not floating; pass dtype="});
  expect_error([&] { run_op("mean", {small(DType::Bool)}); }, {"bool", "not floating"});
  expect_error([&] { run_op("mean", {small()}, {{"dtype", DType::I64}}); }, {"mean", "i64"});
  expect_error([&] { run_op("var", {small(DType::I32)}); }, {"var", "i32", "floating"});
  expect_error([&] { run_op("std", {small(DType::Bool)}); }, {"std", "bool"});
  Tensor e = Tensor::zeros({3, 0});
  expect_error([&] { run_op("amax", {e}, dims({1})); },
               {"amax: cannot reduce over a zero-size dim 1", "f32[3, 0]"});
  expect_error([&] { run_op("amin", {e}); }, {"amin", "zero-size dim 1"});
  expect_error([&] { run_op("max", {e}, {{"dim", int64_t{-1}}}); }, {"max", "zero-size dim 1"});
  expect_error([&] { run_op("argmax", {e}); }, {"argmax", "zero-size"});
  expect_error([&] { run_op("max", {small()}); }, {"max", "missing", "dim"});
  expect_error([&] { run_op("sum", {small()}, {{"dim", 1.5}}); }, {"sum", "dim"});
  expect_error([&] { run_op("sum", {Arg::f(2.0)}); }, {"sum", "operand 'x'"});
}

TEST(ReductionRegistry, CategoryAndSignature) {
  for (const char* name : {"sum", "mean", "prod", "amax", "amin", "max", "min", "argmax", "argmin",
                           "var", "std", "any", "all"}) {
    const ir::OpDef& d = op_def(name);
    EXPECT_EQ(d.category, ir::OpCategory::Reduction) << name;
    EXPECT_FALSE(d.doc.empty()) << name;
  }
  EXPECT_EQ(op_def("sum").signature(),
            "sum(x: Tensor) {dim: int[] = [], keepdim: bool = false, dtype: dtype? = none} -> "
            "reduction");
}

// --- PyTorch conformance cases ----------------------------------------------------------------
// Each call mirrors one expression of the case's TorchScript function.

const double kAccRtol = 1e-3, kAccAtol = 1e-4;  // the corpus's f32_accumulate class

TEST(ReductionConformance, SumMeanDims) {
  KILN_SKIP_WITHOUT_CORPUS();
  const char* id = "red_sum_mean_dims";
  Tensor x = case_input(id, "x");
  expect_case_output(run_op1("sum", {x}, dims({1})), id, 0, kAccRtol, kAccAtol);
  expect_case_output(run_op1("mean", {x}, dims({-1}, true)), id, 1, kAccRtol, kAccAtol);
  expect_case_output(run_op1("sum", {x}, dims({0, 2})), id, 2, kAccRtol, kAccAtol);
  expect_case_output(run_op1("mean", {x}, dims({-3, -1})), id, 3, kAccRtol, kAccAtol);
}

TEST(ReductionConformance, Full1023AndF64Stats) {
  KILN_SKIP_WITHOUT_CORPUS();
  const char* id = "red_full_1023";
  Tensor x = case_input(id, "x");
  expect_case_output(run_op1("sum", {x}), id, 0, kAccRtol, kAccAtol);
  expect_case_output(run_op1("mean", {x}), id, 1, kAccRtol, kAccAtol);
  expect_case_output(run_op1("amax", {x}), id, 2, kAccRtol, kAccAtol);
  expect_case_output(run_op1("amin", {x}), id, 3, kAccRtol, kAccAtol);
  const char* f64 = "red_f64_stats";
  Tensor y = case_input(f64, "x");
  expect_case_output(run_op1("sum", {y}, dims({-1})), f64, 0, 1e-7, 1e-9);
  expect_case_output(run_op1("var", {y}, dims({0})), f64, 1, 1e-7, 1e-9);
  expect_case_output(run_op1("mean", {y}), f64, 2, 1e-7, 1e-9);
}

TEST(ReductionConformance, AmaxAminProd) {
  KILN_SKIP_WITHOUT_CORPUS();
  const char* id = "red_amax_amin";
  Tensor x = case_input(id, "x");
  expect_case_output(run_op1("amax", {x}, dims({0, 2})), id, 0, kAccRtol, kAccAtol);
  expect_case_output(run_op1("amin", {x}, dims({-1}, true)), id, 1, kAccRtol, kAccAtol);
  expect_case_output(run_op1("amax", {x}, dims({1, 2})), id, 2, kAccRtol, kAccAtol);
  const char* pid = "red_prod";
  Tensor p = case_input(pid, "x");
  expect_case_output(run_op1("prod", {p}, dims({1})), pid, 0, kAccRtol, kAccAtol);
  expect_case_output(run_op1("prod", {p}, dims({0}, true)), pid, 1, kAccRtol, kAccAtol);
  expect_case_output(run_op1("prod", {p}), pid, 2, kAccRtol, kAccAtol);
}

TEST(ReductionConformance, MaxMinIndices) {
  KILN_SKIP_WITHOUT_CORPUS();
  const char* id = "red_max_min_indices";
  Tensor x = case_input(id, "x");
  std::vector<Tensor> mx = run_op("max", {x}, {{"dim", int64_t{1}}});
  expect_case_output(mx[0], id, 0, kAccRtol, kAccAtol);
  expect_case_output(mx[1], id, 1, 0, 0);
  std::vector<Tensor> mn = run_op("min", {x}, {{"dim", int64_t{-1}}, {"keepdim", true}});
  expect_case_output(mn[0], id, 2, kAccRtol, kAccAtol);
  expect_case_output(mn[1], id, 3, 0, 0);
  expect_case_output(run_op1("argmax", {x}, {{"dim", int64_t{0}}}), id, 4, 0, 0);
  expect_case_output(run_op1("argmin", {x}, {{"dim", int64_t{-1}}, {"keepdim", true}}), id, 5, 0,
                     0);
  expect_case_output(run_op1("argmax", {x}), id, 6, 0, 0);
}

TEST(ReductionConformance, VarStd) {
  KILN_SKIP_WITHOUT_CORPUS();
  const char* id = "red_var_std";
  Tensor x = case_input(id, "x");
  Attrs biased_keep = {{"dim", Ints{0}}, {"correction", int64_t{0}}, {"keepdim", true}};
  expect_case_output(run_op1("var", {x}, dims({1})), id, 0, kAccRtol, kAccAtol);
  expect_case_output(run_op1("var", {x}, biased_keep), id, 1, kAccRtol, kAccAtol);
  expect_case_output(run_op1("std", {x}, dims({-1})), id, 2, kAccRtol, kAccAtol);
  expect_case_output(run_op1("std", {x}, {{"correction", int64_t{0}}}), id, 3, kAccRtol, kAccAtol);
}

TEST(ReductionConformance, IntBoolAndZeroSize) {
  KILN_SKIP_WITHOUT_CORPUS();
  const char* id = "red_int_bool";
  Tensor i = case_input(id, "i"), m = case_input(id, "m");
  expect_case_output(run_op1("sum", {i}, dims({1})), id, 0, 0, 0);
  expect_case_output(run_op1("amax", {i}, dims({0})), id, 1, 0, 0);
  expect_case_output(run_op1("any", {m}, dims({1})), id, 2, 0, 0);
  expect_case_output(run_op1("all", {m}, dims({0})), id, 3, 0, 0);
  expect_case_output(run_op1("sum", {m}), id, 4, 0, 0);
  const char* z = "red_zero_size";
  Tensor x = case_input(z, "x");
  expect_case_output(run_op1("sum", {x}, dims({1})), z, 0, kAccRtol, kAccAtol);
  expect_case_output(run_op1("prod", {x}, dims({1})), z, 1, kAccRtol, kAccAtol);
  expect_case_output(run_op1("sum", {x}, dims({0})), z, 2, kAccRtol, kAccAtol);
  expect_case_output(run_op1("mean", {x}, dims({1})), z, 3, kAccRtol, kAccAtol);
}

}  // namespace
}  // namespace kiln::test
