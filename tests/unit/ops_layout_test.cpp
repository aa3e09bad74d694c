// Tests of the layout op family (ir/ops/layout*.cpp): reshape, permute,
// transpose, expand, squeeze, unsqueeze, flatten, slice, select, cat, stack,
// split, chunk, contiguous, copy. Values are hand-computed on small
// arange-valued tensors; inputs include non-contiguous views, empty tensors,
// symbolic dims (inference only) and the error messages users see.
#include <cstdint>
#include <string>
#include <vector>

#include "ir/ops/ops.h"
#include "op_test_util.h"

namespace kiln::test {
namespace {

using ir::Attrs;
using ir::Dim;
using ir::Dims;
using Ints = std::vector<int64_t>;
using Vals = std::vector<double>;

int64_t I(int64_t v) {
  return v;
}

Vals iota(int64_t n, double start = 0) {
  Vals v;
  for (int64_t i = 0; i < n; ++i) v.push_back(start + double(i));
  return v;
}

// An arange-valued tensor of `sizes`.
Tensor ar(const Shape& sizes, DType dtype = DType::F32) {
  return make_tensor(sizes, iota(shape_numel(sizes)), dtype);
}

// [[0, 2, 4], [1, 3, 5]]: the transpose of ar({3, 2}), a non-contiguous view.
Tensor transposed_2x3(DType dtype = DType::F32) {
  Tensor t = ar({3, 2}, dtype);
  Tensor v = t.view_as_strided({2, 3}, {1, 2}, t.storage_offset());
  EXPECT_FALSE(v.is_contiguous());
  return v;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "<no error>";
}

void expect_error(const std::function<void()>& f, const std::vector<std::string>& parts) {
  std::string msg = error_of(f);
  for (const std::string& p : parts) {
    EXPECT_NE(msg.find(p), std::string::npos) << "missing '" << p << "' in: " << msg;
  }
}

ir::Type sym_type(Dims dims, DType dtype = DType::F32) {
  return ir::Type::tensor(dtype, std::move(dims));
}

// Inference on explicit (possibly symbolic) types.
std::vector<ir::Type> infer_types_of(const std::string& name, const std::vector<ir::Type>& types,
                                     const Attrs& attrs = {}) {
  const ir::OpDef& d = op_def(name);
  return ir::infer_types(d, types, ir::complete_attrs(d, attrs));
}

const Dim N = Dim::sym("N");

const std::vector<DType> kDTypes = {DType::Bool, DType::I64, DType::F16, DType::F32};

// ---- registry ----------------------------------------------------------------------------

TEST(LayoutOps, AllRegisteredAsLayout) {
  for (const char* name :
       {"reshape", "permute", "transpose", "expand", "squeeze", "unsqueeze", "flatten", "slice",
        "select", "cat", "stack", "split", "chunk", "contiguous", "copy"}) {
    const ir::OpDef& d = op_def(name);
    EXPECT_EQ(d.category, ir::OpCategory::Layout) << name;
    EXPECT_FALSE(d.doc.empty()) << name;
  }
  EXPECT_EQ(ir::OpRegistry::global().find("view"), nullptr);  // the frontend's alias
  EXPECT_EQ(op_def("slice").signature(),
            "slice(x: Tensor) {dim: int, start: int = 0, end: int = 9223372036854775807, "
            "step: int = 1} -> layout");
}

// ---- reshape ----------------------------------------------------------------------------------

TEST(LayoutOps, ReshapeInfersMinusOne) {
  Tensor y = run_op1("reshape", {ar({2, 3})}, {{"shape", Ints{3, -1}}});
  EXPECT_EQ(y.sizes(), (Shape{3, 2}));
  EXPECT_EQ(values_of(y), iota(6));
  EXPECT_TRUE(y.is_contiguous());
}

TEST(LayoutOps, ReshapeNonContiguousReadsRowMajor) {
  Tensor y = run_op1("reshape", {transposed_2x3()}, {{"shape", Ints{6}}});
  EXPECT_EQ(values_of(y), (Vals{0, 2, 4, 1, 3, 5}));
}

TEST(LayoutOps, ReshapeAcrossDTypes) {
  for (DType dt : kDTypes) {
    Tensor x = make_tensor({7}, {0, 1, 0, 3, 4, 0, 6}, dt);
    Tensor y = run_op1("reshape", {x}, {{"shape", Ints{1, 7, 1}}});
    EXPECT_EQ(y.dtype(), dt);
    EXPECT_EQ(y.sizes(), (Shape{1, 7, 1}));
    Vals want = dt == DType::Bool ? Vals{0, 1, 0, 1, 1, 0, 1} : Vals{0, 1, 0, 3, 4, 0, 6};
    EXPECT_EQ(values_of(y), want) << dtype_name(dt);
  }
}

TEST(LayoutOps, ReshapeOddSizesAndScalars) {
  Tensor y = run_op1("reshape", {ar({1023}, DType::I64)}, {{"shape", Ints{3, -1, 31}}});
  EXPECT_EQ(y.sizes(), (Shape{3, 11, 31}));
  EXPECT_EQ(values_of(y), iota(1023));
  Tensor s = Tensor::scalar(5, DType::F16);
  EXPECT_EQ(run_op1("reshape", {s}, {{"shape", Ints{-1}}}).sizes(), (Shape{1}));
  Tensor back = run_op1("reshape", {ar({1, 1})}, {{"shape", Ints{}}});
  EXPECT_EQ(back.sizes(), Shape{});
  EXPECT_EQ(values_of(back), (Vals{0}));
}

TEST(LayoutOps, ReshapeEmpty) {
  Tensor x = ar({0, 5});
  EXPECT_EQ(run_op1("reshape", {x}, {{"shape", Ints{5, 0}}}).sizes(), (Shape{5, 0}));
  EXPECT_EQ(run_op1("reshape", {x}, {{"shape", Ints{-1, 5}}}).sizes(), (Shape{0, 5}));
  expect_error(
      [&] {
        run_op("reshape", {x}, {{"shape", Ints{0, -1}}});
      },
      {"reshape:", "cannot infer the -1", "[0, -1]", "[0, 5]", "0 elements"});
}

TEST(LayoutOps, ReshapeErrors) {
  Tensor x = ar({2, 3});
  expect_error(
      [&] {
        run_op("reshape", {x}, {{"shape", Ints{-1, -1}}});
      },
      {"reshape:", "[-1, -1]", "more than one -1"});
  expect_error(
      [&] {
        run_op("reshape", {x}, {{"shape", Ints{5}}});
      },
      {"reshape:", "shape [5] (5 elements)", "operand 'x' of shape [2, 3] (6 elements)"});
  expect_error(
      [&] {
        run_op("reshape", {x}, {{"shape", Ints{4, -1}}});
      },
      {"reshape:", "[4, -1]", "6 elements"});
  expect_error(
      [&] {
        run_op("reshape", {x}, {{"shape", Ints{-2, 3}}});
      },
      {"reshape:", "invalid size -2"});
  expect_error(
      [&] {
        run_op("reshape", {x}, {{"shape", Ints{0, -1}}});
      },
      {"reshape:", "shape [0, -1]", "6 elements"});
}

TEST(LayoutOps, ReshapeSymbolic) {
  auto t = infer_types_of("reshape", {sym_type({N, 4, 8})}, {{"shape", Ints{-1, 32}}});
  EXPECT_EQ(t.at(0), sym_type({N, 32}));
  t = infer_types_of("reshape", {sym_type({2, N})}, {{"shape", Ints{1, 2, -1}}});
  EXPECT_EQ(t.at(0), sym_type({1, 2, N}));
  for (const Ints& shape : {Ints{-1, 8}, Ints{8, 32}, Ints{4, -1}}) {
    expect_error(
        [&] {
          infer_types_of("reshape", {sym_type({N, 4, 8})}, {{"shape", shape}});
        },
        {"reshape: symbolic dims not supported here", "[N, 4, 8]"});
  }
  expect_error(
      [&] {
        infer_types_of("reshape", {sym_type({N, Dim::sym("M")})}, {{"shape", Ints{-1}}});
      },
      {"reshape: symbolic dims not supported here", "[N, M]"});
}

// ---- permute / transpose --------------------------------------------------------------------

TEST(LayoutOps, Permute) {
  Tensor y = run_op1("permute", {ar({2, 3})}, {{"dims", Ints{1, 0}}});
  EXPECT_EQ(y.sizes(), (Shape{3, 2}));
  EXPECT_EQ(values_of(y), (Vals{0, 3, 1, 4, 2, 5}));
  // [2, 3, 2] -> dims [2, 0, -2]: out[k][i][j] = x[i][j][k] = 6i + 2j + k.
  Tensor z = run_op1("permute", {ar({2, 3, 2}, DType::I64)}, {{"dims", Ints{2, 0, -2}}});
  EXPECT_EQ(z.sizes(), (Shape{2, 2, 3}));
  EXPECT_EQ(values_of(z), (Vals{0, 2, 4, 6, 8, 10, 1, 3, 5, 7, 9, 11}));
  // Permuting a transposed view back gives the original order.
  EXPECT_EQ(values_of(run_op1("permute", {transposed_2x3()}, {{"dims", Ints{-1, 0}}})), iota(6));
  EXPECT_EQ(run_op1("permute", {ar({0, 5}, DType::Bool)}, {{"dims", Ints{1, 0}}}).sizes(),
            (Shape{5, 0}));
}

TEST(LayoutOps, PermuteErrorsAndSymbolic) {
  Tensor x = ar({2, 3});
  expect_error(
      [&] {
        run_op("permute", {x}, {{"dims", Ints{0, 0}}});
      },
      {"permute:", "[0, 0]", "not a permutation", "[2, 3]"});
  expect_error(
      [&] {
        run_op("permute", {x}, {{"dims", Ints{0}}});
      },
      {"permute:", "[0]", "rank 2", "[2, 3]"});
  expect_error(
      [&] {
        run_op("permute", {x}, {{"dims", Ints{0, 2}}});
      },
      {"permute:", "dim 2 is out of range", "operand 'x' of shape [2, 3]"});
  auto t = infer_types_of("permute", {sym_type({N, 3, 4}, DType::F16)}, {{"dims", Ints{2, 0, 1}}});
  EXPECT_EQ(t.at(0), sym_type({4, N, 3}, DType::F16));
}

TEST(LayoutOps, Transpose) {
  Tensor y = run_op1("transpose", {ar({2, 3}, DType::F16)}, {{"dim0", I(0)}, {"dim1", I(-1)}});
  EXPECT_EQ(y.sizes(), (Shape{3, 2}));
  EXPECT_EQ(values_of(y), (Vals{0, 3, 1, 4, 2, 5}));
  EXPECT_EQ(values_of(run_op1("transpose", {transposed_2x3()}, {{"dim0", I(1)}, {"dim1", I(0)}})),
            iota(6));
  Tensor s = run_op1("transpose", {Tensor::scalar(3)}, {{"dim0", I(0)}, {"dim1", I(-1)}});
  EXPECT_EQ(s.sizes(), Shape{});
  EXPECT_EQ(values_of(s), (Vals{3}));
  expect_error(
      [&] {
        run_op("transpose", {ar({2, 3})}, {{"dim0", I(0)}, {"dim1", I(2)}});
      },
      {"transpose:", "dim 2", "[2, 3]"});
  auto t = infer_types_of("transpose", {sym_type({N, 3})}, {{"dim0", I(0)}, {"dim1", I(1)}});
  EXPECT_EQ(t.at(0), sym_type({3, N}));
}

// ---- expand ---------------------------------------------------------------------------------

TEST(LayoutOps, Expand) {
  Tensor x = make_tensor({3, 1}, {0, 1, 2}, DType::I64);
  Tensor y = run_op1("expand", {x}, {{"size", Ints{2, -1, 2}}});
  EXPECT_EQ(y.sizes(), (Shape{2, 3, 2}));
  EXPECT_EQ(values_of(y), (Vals{0, 0, 1, 1, 2, 2, 0, 0, 1, 1, 2, 2}));
  // A column with an odd stride (elements 0, 2, 4 of a buffer).
  Tensor buf = ar({6});
  Tensor col = buf.view_as_strided({3, 1}, {2, 7}, buf.storage_offset());
  EXPECT_EQ(values_of(run_op1("expand", {col}, {{"size", Ints{3, 2}}})), (Vals{0, 0, 2, 2, 4, 4}));
  EXPECT_EQ(run_op1("expand", {ar({1})}, {{"size", Ints{0}}}).sizes(), (Shape{0}));
  Tensor s = run_op1("expand", {Tensor::scalar(1, DType::Bool)}, {{"size", Ints{2, 2}}});
  EXPECT_EQ(values_of(s), (Vals{1, 1, 1, 1}));
}

TEST(LayoutOps, ExpandErrorsAndSymbolic) {
  Tensor x = ar({2, 1});
  expect_error(
      [&] {
        run_op("expand", {x}, {{"size", Ints{3, 4}}});
      },
      {"expand:", "dim 0", "[2, 1]", "size 2", "cannot expand to 3"});
  expect_error(
      [&] {
        run_op("expand", {x}, {{"size", Ints{4}}});
      },
      {"expand:", "size [4]", "fewer than the rank 2", "[2, 1]"});
  expect_error(
      [&] {
        run_op("expand", {x}, {{"size", Ints{-1, 2, 4}}});
      },
      {"expand:", "new leading dim 0", "-1"});
  auto t = infer_types_of("expand", {sym_type({N, 1})}, {{"size", Ints{3, -1, 4}}});
  EXPECT_EQ(t.at(0), sym_type({3, N, 4}));
  expect_error(
      [&] {
        infer_types_of("expand", {sym_type({N})}, {{"size", Ints{5}}});
      },
      {"expand:", "symbolic (N)", "-1"});
}

// ---- squeeze / unsqueeze / flatten -------------------------------------------------------------

TEST(LayoutOps, Squeeze) {
  Tensor x = ar({1, 3, 1, 2});
  Tensor all = run_op1("squeeze", {x});
  EXPECT_EQ(all.sizes(), (Shape{3, 2}));
  EXPECT_EQ(values_of(all), iota(6));
  EXPECT_EQ(run_op1("squeeze", {x}, {{"dim", Ints{-2}}}).sizes(), (Shape{1, 3, 2}));
  EXPECT_EQ(run_op1("squeeze", {x}, {{"dim", I(0)}}).sizes(), (Shape{3, 1, 2}));
  // A listed dim that is not 1 stays, like torch.
  EXPECT_EQ(run_op1("squeeze", {x}, {{"dim", Ints{1, 2}}}).sizes(), (Shape{1, 3, 2}));
  EXPECT_EQ(run_op1("squeeze", {Tensor::scalar(2)}, {{"dim", Ints{-1}}}).sizes(), Shape{});
  EXPECT_EQ(run_op1("squeeze", {ar({0, 1})}).sizes(), (Shape{0}));
  expect_error(
      [&] {
        run_op("squeeze", {x}, {{"dim", Ints{0, -4}}});
      },
      {"squeeze:", "dim 0 appears twice", "[1, 3, 1, 2]"});
  expect_error(
      [&] {
        run_op("squeeze", {x}, {{"dim", Ints{4}}});
      },
      {"squeeze:", "dim 4 is out of range", "[1, 3, 1, 2]"});
  EXPECT_EQ(infer_types_of("squeeze", {sym_type({N, 1, 3})}).at(0), sym_type({N, 3}));
  expect_error(
      [&] {
        infer_types_of("squeeze", {sym_type({N, 1})}, {{"dim", Ints{0}}});
      },
      {"squeeze:", "symbolic (N)"});
}

TEST(LayoutOps, Unsqueeze) {
  Tensor x = ar({2, 3}, DType::I64);
  EXPECT_EQ(run_op1("unsqueeze", {x}, {{"dim", I(-1)}}).sizes(), (Shape{2, 3, 1}));
  EXPECT_EQ(run_op1("unsqueeze", {x}, {{"dim", I(2)}}).sizes(), (Shape{2, 3, 1}));
  EXPECT_EQ(run_op1("unsqueeze", {x}, {{"dim", I(-3)}}).sizes(), (Shape{1, 2, 3}));
  Tensor y = run_op1("unsqueeze", {transposed_2x3()}, {{"dim", I(1)}});
  EXPECT_EQ(y.sizes(), (Shape{2, 1, 3}));
  EXPECT_EQ(values_of(y), (Vals{0, 2, 4, 1, 3, 5}));
  EXPECT_EQ(run_op1("unsqueeze", {Tensor::scalar(1)}, {{"dim", I(-1)}}).sizes(), (Shape{1}));
  for (int64_t bad : {3, -4}) {
    expect_error(
        [&] {
          run_op("unsqueeze", {x}, {{"dim", I(bad)}});
        },
        {"unsqueeze:", "dim " + std::to_string(bad), "[-3, 2]", "[2, 3]"});
  }
  auto t = infer_types_of("unsqueeze", {sym_type({N, 3})}, {{"dim", I(-1)}});
  EXPECT_EQ(t.at(0), sym_type({N, 3, 1}));
}

TEST(LayoutOps, Flatten) {
  Tensor x = ar({2, 3, 4});
  EXPECT_EQ(run_op1("flatten", {x}).sizes(), (Shape{24}));
  Tensor y = run_op1("flatten", {x}, {{"start_dim", I(1)}});
  EXPECT_EQ(y.sizes(), (Shape{2, 12}));
  EXPECT_EQ(values_of(y), iota(24));
  EXPECT_EQ(run_op1("flatten", {x}, {{"start_dim", I(-3)}, {"end_dim", I(-2)}}).sizes(),
            (Shape{6, 4}));
  EXPECT_EQ(values_of(run_op1("flatten", {transposed_2x3(DType::F16)})), (Vals{0, 2, 4, 1, 3, 5}));
  Tensor s = run_op1("flatten", {Tensor::scalar(7, DType::I64)});
  EXPECT_EQ(s.sizes(), (Shape{1}));
  EXPECT_EQ(values_of(s), (Vals{7}));
  EXPECT_EQ(run_op1("flatten", {ar({0, 5})}).sizes(), (Shape{0}));
  expect_error(
      [&] {
        run_op("flatten", {x}, {{"start_dim", I(2)}, {"end_dim", I(1)}});
      },
      {"flatten:", "start_dim 2 comes after end_dim 1", "[2, 3, 4]"});
  auto t = infer_types_of("flatten", {sym_type({N, 3, 4})}, {{"start_dim", I(1)}});
  EXPECT_EQ(t.at(0), sym_type({N, 12}));
  EXPECT_EQ(infer_types_of("flatten", {sym_type({1, N, 1})}).at(0), sym_type({N}));
  expect_error(
      [&] {
        infer_types_of("flatten", {sym_type({N, 3})});
      },
      {"flatten:", "[N, 3]", "symbolic"});
}

// ---- slice / select -------------------------------------------------------------------------

Tensor slice7(int64_t start, int64_t end, int64_t step = 1) {
  return run_op1("slice", {ar({7})},
                 {{"dim", I(0)}, {"start", I(start)}, {"end", I(end)}, {"step", I(step)}});
}

TEST(LayoutOps, SliceBoundsLikePython) {
  EXPECT_EQ(values_of(slice7(1, -1, 2)), (Vals{1, 3, 5}));
  EXPECT_EQ(values_of(slice7(-3, INT64_MAX)), (Vals{4, 5, 6}));
  EXPECT_EQ(values_of(slice7(-100, 2)), (Vals{0, 1}));
  EXPECT_EQ(values_of(slice7(5, 100, 3)), (Vals{5}));
  EXPECT_EQ(values_of(slice7(0, 7, INT64_MAX)), (Vals{0}));
  EXPECT_EQ(slice7(10, 20).sizes(), (Shape{0}));
  EXPECT_EQ(slice7(5, 2).sizes(), (Shape{0}));
  EXPECT_EQ(slice7(INT64_MIN, -8).sizes(), (Shape{0}));
}

TEST(LayoutOps, SliceViewsAndDTypes) {
  for (DType dt : kDTypes) {
    Tensor y = run_op1("slice", {ar({2, 3}, dt)}, {{"dim", I(-1)}, {"start", I(1)}});
    EXPECT_EQ(y.sizes(), (Shape{2, 2}));
    Vals want = dt == DType::Bool ? Vals{1, 1, 1, 1} : Vals{1, 2, 4, 5};
    EXPECT_EQ(values_of(y), want) << dtype_name(dt);
  }
  Tensor t = run_op1("slice", {transposed_2x3()}, {{"dim", I(1)}, {"step", I(2)}});
  EXPECT_EQ(values_of(t), (Vals{0, 4, 1, 5}));
  Tensor big = run_op1("slice", {ar({1023}, DType::I64)}, {{"dim", I(0)}, {"step", I(7)}});
  ASSERT_EQ(big.sizes(), (Shape{147}));  // ceil(1023 / 7)
  Vals want;
  for (int64_t i = 0; i < 147; ++i) want.push_back(double(7 * i));
  EXPECT_EQ(values_of(big), want);
  // Slicing an empty tensor, and to empty along a non-empty dim.
  EXPECT_EQ(run_op1("slice", {ar({0, 5})}, {{"dim", I(1)}, {"start", I(1)}}).sizes(),
            (Shape{0, 4}));
  EXPECT_EQ(run_op1("slice", {ar({2, 3})}, {{"dim", I(1)}, {"start", I(3)}}).sizes(),
            (Shape{2, 0}));
}

TEST(LayoutOps, SliceErrorsAndSymbolic) {
  expect_error(
      [&] {
        run_op("slice", {ar({7})}, {{"dim", I(0)}, {"step", I(0)}});
      },
      {"slice:", "step must be > 0, got 0", "[7]"});
  expect_error(
      [&] {
        run_op("slice", {Tensor::scalar(1)}, {{"dim", I(0)}});
      },
      {"slice:", "0-dim", "[]"});
  expect_error(
      [&] {
        run_op("slice", {ar({2, 3})}, {{"dim", I(-3)}});
      },
      {"slice:", "dim -3 is out of range", "[2, 3]"});
  auto t = infer_types_of("slice", {sym_type({N, 8})}, {{"dim", I(1)}, {"start", I(2)}});
  EXPECT_EQ(t.at(0), sym_type({N, 6}));
  EXPECT_EQ(infer_types_of("slice", {sym_type({N, 8})}, {{"dim", I(0)}}).at(0), sym_type({N, 8}));
  expect_error(
      [&] {
        infer_types_of("slice", {sym_type({N, 8})}, {{"dim", I(0)}, {"start", I(1)}});
      },
      {"slice:", "dim 0", "[N, 8]", "symbolic (N)"});
}

TEST(LayoutOps, Select) {
  Tensor x = ar({2, 3}, DType::I64);
  EXPECT_EQ(values_of(run_op1("select", {x}, {{"dim", I(1)}, {"index", I(-1)}})), (Vals{2, 5}));
  Tensor row = run_op1("select", {x}, {{"dim", I(-2)}, {"index", I(1)}});
  EXPECT_EQ(row.sizes(), (Shape{3}));
  EXPECT_EQ(values_of(row), (Vals{3, 4, 5}));
  Tensor s = run_op1("select", {ar({7}, DType::F16)}, {{"dim", I(0)}, {"index", I(-7)}});
  EXPECT_EQ(s.sizes(), Shape{});
  EXPECT_EQ(values_of(s), (Vals{0}));
  EXPECT_EQ(values_of(run_op1("select", {transposed_2x3()}, {{"dim", I(0)}, {"index", I(1)}})),
            (Vals{1, 3, 5}));
  EXPECT_EQ(run_op1("select", {ar({0, 5})}, {{"dim", I(1)}, {"index", I(4)}}).sizes(), (Shape{0}));
  for (int64_t bad : {3, -4}) {
    expect_error(
        [&] {
          run_op("select", {x}, {{"dim", I(1)}, {"index", I(bad)}});
        },
        {"select:", "index " + std::to_string(bad), "out of range", "dim 1 of size 3", "[2, 3]"});
  }
  expect_error(
      [&] {
        run_op("select", {Tensor::scalar(1)}, {{"dim", I(0)}, {"index", I(0)}});
      },
      {"select:", "0-dim"});
  auto t = infer_types_of("select", {sym_type({N, 3})}, {{"dim", I(1)}, {"index", I(0)}});
  EXPECT_EQ(t.at(0), sym_type({N}));
}

// ---- cat / stack ------------------------------------------------------------------------------

TEST(LayoutOps, Cat) {
  Tensor a = ar({2, 2}), b = make_tensor({1, 2}, {10, 11});
  Tensor y = run_op1("cat", {a, b});
  EXPECT_EQ(y.sizes(), (Shape{3, 2}));
  EXPECT_EQ(values_of(y), (Vals{0, 1, 2, 3, 10, 11}));
  Tensor c = make_tensor({2, 1}, {20, 21});
  Tensor z = run_op1("cat", {a, c, transposed_2x3()}, {{"dim", I(-1)}});
  EXPECT_EQ(z.sizes(), (Shape{2, 6}));
  EXPECT_EQ(values_of(z), (Vals{0, 1, 20, 0, 2, 4, 2, 3, 21, 1, 3, 5}));
}

TEST(LayoutOps, CatPromotesDTypes) {
  Tensor i = make_tensor({2}, {1, 2}, DType::I64);
  Tensor f = make_tensor({1}, {0.5}, DType::F32);
  Tensor h = make_tensor({1}, {1.5}, DType::F16);
  Tensor b = make_tensor({2}, {1, 0}, DType::Bool);
  Tensor y = run_op1("cat", {i, f});
  EXPECT_EQ(y.dtype(), DType::F32);
  EXPECT_EQ(values_of(y), (Vals{1, 2, 0.5}));
  EXPECT_EQ(run_op1("cat", {b, i}).dtype(), DType::I64);
  EXPECT_EQ(values_of(run_op1("cat", {b, i})), (Vals{1, 0, 1, 2}));
  Tensor hf = run_op1("cat", {h, f, b});
  EXPECT_EQ(hf.dtype(), DType::F32);
  EXPECT_EQ(values_of(hf), (Vals{1.5, 0.5, 1, 0}));
  EXPECT_EQ(run_op1("cat", {b, b}).dtype(), DType::Bool);
}

TEST(LayoutOps, CatEmptyPieces) {
  Tensor a = ar({2, 2});
  // A 1-D [0] piece is skipped whatever its rank (torch's legacy rule) but still promotes.
  Tensor y = run_op1("cat", {Tensor::empty({0}, DType::F16), a, ar({2, 0})}, {{"dim", I(1)}});
  EXPECT_EQ(y.sizes(), (Shape{2, 2}));
  EXPECT_EQ(y.dtype(), DType::F32);
  EXPECT_EQ(values_of(y), iota(4));
  Tensor z = run_op1("cat", {ar({0, 2}), a, ar({0, 2})});
  EXPECT_EQ(values_of(z), iota(4));
  Tensor e = run_op1("cat", {Tensor::empty({0}, DType::I64), Tensor::empty({0}, DType::I64)});
  EXPECT_EQ(e.sizes(), (Shape{0}));
  EXPECT_EQ(e.dtype(), DType::I64);
  Tensor big = run_op1("cat", {ar({1023}, DType::I64), make_tensor({1}, {-1}, DType::I64)});
  Vals want = iota(1023);
  want.push_back(-1);
  EXPECT_EQ(values_of(big), want);
}

TEST(LayoutOps, CatErrorsAndSymbolic) {
  expect_error(
      [&] {
        run_op("cat", {ar({2, 2}), ar({2, 3})});
      },
      {"cat:", "piece 1 of shape [2, 3]", "piece 0 of shape [2, 2]", "dim 1"});
  expect_error(
      [&] {
        run_op("cat", {ar({2, 2}), ar({2})});
      },
      {"cat:", "piece 1 of shape [2]", "rank 1", "rank 2"});
  expect_error(
      [&] {
        run_op("cat", {ar({2}), Tensor::scalar(1)});
      },
      {"cat:", "piece 1 of shape []", "0-dim"});
  expect_error(
      [&] {
        run_op("cat", {ar({2, 2}), ar({2, 2})}, {{"dim", I(2)}});
      },
      {"cat:", "dim 2 is out of range", "[2, 2]"});
  auto t = infer_types_of("cat", {sym_type({N, 3}), sym_type({N, 2})}, {{"dim", I(1)}});
  EXPECT_EQ(t.at(0), sym_type({N, 5}));
  EXPECT_EQ(infer_types_of("cat", {sym_type({N, 3}), sym_type({0, 3})}).at(0), sym_type({N, 3}));
  expect_error(
      [&] {
        infer_types_of("cat", {sym_type({N, 3}), sym_type({2, 3})});
      },
      {"cat:", "symbolic", "dim 0"});
  expect_error(
      [&] {
        infer_types_of("cat", {sym_type({N, 3}), sym_type({2, 3})}, {{"dim", I(1)}});
      },
      {"cat:", "piece 1 of shape [2, 3]", "piece 0 of shape [N, 3]", "dim 0"});
}

TEST(LayoutOps, Stack) {
  Tensor a = make_tensor({2}, {0, 1}), b = make_tensor({2}, {2, 3});
  Tensor y = run_op1("stack", {a, b});
  EXPECT_EQ(y.sizes(), (Shape{2, 2}));
  EXPECT_EQ(values_of(y), (Vals{0, 1, 2, 3}));
  Tensor z = run_op1("stack", {a, b}, {{"dim", I(-1)}});
  EXPECT_EQ(values_of(z), (Vals{0, 2, 1, 3}));
  Tensor w =
      run_op1("stack", {ar({2, 3}, DType::I64), transposed_2x3(DType::I64)}, {{"dim", I(1)}});
  EXPECT_EQ(w.sizes(), (Shape{2, 2, 3}));
  EXPECT_EQ(values_of(w), (Vals{0, 1, 2, 0, 2, 4, 3, 4, 5, 1, 3, 5}));
  Tensor p =
      run_op1("stack", {make_tensor({1}, {1}, DType::Bool), make_tensor({1}, {2.5}, DType::F16)});
  EXPECT_EQ(p.dtype(), DType::F16);
  EXPECT_EQ(values_of(p), (Vals{1, 2.5}));
  EXPECT_EQ(run_op1("stack", {Tensor::scalar(1), Tensor::scalar(2)}).sizes(), (Shape{2}));
  EXPECT_EQ(run_op1("stack", {ar({0, 5}), ar({0, 5})}, {{"dim", I(2)}}).sizes(), (Shape{0, 5, 2}));
}

TEST(LayoutOps, StackErrorsAndSymbolic) {
  expect_error(
      [&] {
        run_op("stack", {ar({2}), ar({3})});
      },
      {"stack:", "piece 1 of shape [3]", "piece 0 of shape [2]"});
  expect_error(
      [&] {
        run_op("stack", {ar({2}), ar({2})}, {{"dim", I(-3)}});
      },
      {"stack:", "dim -3 is out of range", "[-2, 1]"});
  expect_error([&] { run_op("stack", {}); }, {"stack:", "at least 1"});
  auto t = infer_types_of("stack", {sym_type({N, 3}), sym_type({N, 3})}, {{"dim", I(1)}});
  EXPECT_EQ(t.at(0), sym_type({N, 2, 3}));
}

// ---- split / chunk ------------------------------------------------------------------------------

std::vector<Shape> shapes_of(const std::vector<Tensor>& ts) {
  std::vector<Shape> out;
  for (const Tensor& t : ts) out.push_back(t.sizes());
  return out;
}

TEST(LayoutOps, SplitBySize) {
  auto p = run_op("split", {ar({7}, DType::I64)}, {{"split_size", I(3)}});
  ASSERT_EQ(p.size(), 3u);
  EXPECT_EQ(values_of(p[0]), (Vals{0, 1, 2}));
  EXPECT_EQ(values_of(p[1]), (Vals{3, 4, 5}));
  EXPECT_EQ(values_of(p[2]), (Vals{6}));
  EXPECT_EQ(run_op("split", {ar({7})}, {{"split_size", I(10)}}).size(), 1u);
  auto q = run_op("split", {transposed_2x3()}, {{"split_size", I(2)}, {"dim", I(-1)}});
  ASSERT_EQ(q.size(), 2u);
  EXPECT_EQ(values_of(q[0]), (Vals{0, 2, 1, 3}));
  EXPECT_EQ(values_of(q[1]), (Vals{4, 5}));
  EXPECT_EQ(shapes_of(run_op("split", {ar({0, 5})}, {{"split_size", I(2)}})),
            (std::vector<Shape>{{0, 5}}));
  EXPECT_EQ(shapes_of(run_op("split", {ar({0})}, {{"split_size", I(0)}})),
            (std::vector<Shape>{{0}}));
  EXPECT_EQ(shapes_of(run_op("split", {ar({0, 5})}, {{"split_size", I(2)}, {"dim", I(1)}})),
            (std::vector<Shape>{{0, 2}, {0, 2}, {0, 1}}));
}

TEST(LayoutOps, SplitBySizes) {
  auto p = run_op("split", {ar({2, 5}, DType::F16)}, {{"sizes", Ints{2, 0, 3}}, {"dim", I(1)}});
  ASSERT_EQ(p.size(), 3u);
  EXPECT_EQ(values_of(p[0]), (Vals{0, 1, 5, 6}));
  EXPECT_EQ(p[1].sizes(), (Shape{2, 0}));
  EXPECT_EQ(values_of(p[2]), (Vals{2, 3, 4, 7, 8, 9}));
  EXPECT_EQ(p[2].dtype(), DType::F16);
}

TEST(LayoutOps, SplitErrors) {
  Tensor x = ar({5});
  expect_error(
      [&] {
        run_op("split", {x}, {{"sizes", Ints{2, 2}}});
      },
      {"split:", "sizes [2, 2] sum to 4", "dim 0 of operand 'x' of shape [5]", "size 5"});
  expect_error(
      [&] {
        run_op("split", {x}, {{"sizes", Ints{2}}, {"split_size", I(2)}});
      },
      {"split:", "exactly one of split_size and sizes", "both"});
  expect_error([&] { run_op("split", {x}); }, {"split:", "neither"});
  expect_error(
      [&] {
        run_op("split", {x}, {{"split_size", I(0)}});
      },
      {"split:", "split_size 0", "size 5"});
  expect_error(
      [&] {
        run_op("split", {x}, {{"split_size", I(-1)}});
      },
      {"split:", "split_size must be >= 0, got -1"});
  expect_error(
      [&] {
        run_op("split", {x}, {{"sizes", Ints{6, -1}}});
      },
      {"split:", "negative entry -1"});
  expect_error(
      [&] {
        run_op("split", {Tensor::scalar(1)}, {{"split_size", I(1)}});
      },
      {"split:", "0-dim"});
  expect_error(
      [&] {
        infer_types_of("split", {sym_type({N, 4})}, {{"split_size", I(2)}});
      },
      {"split:", "dim 0", "[N, 4]", "symbolic (N)"});
  auto t = infer_types_of("split", {sym_type({N, 4})}, {{"split_size", I(3)}, {"dim", I(1)}});
  EXPECT_EQ(t, (std::vector<ir::Type>{sym_type({N, 3}), sym_type({N, 1})}));
}

TEST(LayoutOps, Chunk) {
  auto p = run_op("chunk", {ar({7})}, {{"chunks", I(3)}});
  ASSERT_EQ(p.size(), 3u);
  EXPECT_EQ(values_of(p[0]), (Vals{0, 1, 2}));
  EXPECT_EQ(values_of(p[2]), (Vals{6}));
  // ceil(6 / 4) = 2, so only three pieces.
  EXPECT_EQ(shapes_of(run_op("chunk", {ar({6})}, {{"chunks", I(4)}})),
            (std::vector<Shape>{{2}, {2}, {2}}));
  EXPECT_EQ(
      shapes_of(run_op("chunk", {ar({2, 5}, DType::Bool)}, {{"chunks", I(5)}, {"dim", I(-1)}})),
      (std::vector<Shape>{{2, 1}, {2, 1}, {2, 1}, {2, 1}, {2, 1}}));
  EXPECT_EQ(shapes_of(run_op("chunk", {ar({0})}, {{"chunks", I(3)}})),
            (std::vector<Shape>{{0}, {0}, {0}}));
  auto q = run_op("chunk", {transposed_2x3()}, {{"chunks", I(2)}});
  ASSERT_EQ(q.size(), 2u);
  EXPECT_EQ(values_of(q[1]), (Vals{1, 3, 5}));
  expect_error(
      [&] {
        run_op("chunk", {ar({7})}, {{"chunks", I(0)}});
      },
      {"chunk:", "chunks must be > 0, got 0", "[7]"});
  expect_error(
      [&] {
        run_op("chunk", {ar({0})}, {{"chunks", I(int64_t{1} << 40)}});
      },
      {"chunk:", "pieces", "at most"});
  auto t = infer_types_of("chunk", {sym_type({N, 4})}, {{"chunks", I(2)}, {"dim", I(1)}});
  EXPECT_EQ(t, (std::vector<ir::Type>{sym_type({N, 2}), sym_type({N, 2})}));
}

// ---- contiguous / copy -------------------------------------------------------------------------

TEST(LayoutOps, ContiguousAndCopy) {
  for (const char* op : {"contiguous", "copy"}) {
    for (DType dt : kDTypes) {
      Tensor y = run_op1(op, {transposed_2x3(dt)});
      EXPECT_TRUE(y.is_contiguous());
      Vals want = dt == DType::Bool ? Vals{0, 1, 1, 1, 1, 1} : Vals{0, 2, 4, 1, 3, 5};
      EXPECT_EQ(values_of(y), want) << op << " " << dtype_name(dt);
    }
    Tensor x = ar({1023}, DType::I64);
    Tensor c = run_op1(op, {x});
    EXPECT_NE(c.data_ptr(), x.data_ptr()) << op;  // a fresh buffer, never an alias
    EXPECT_TRUE(c.equal(x)) << op;
    EXPECT_EQ(run_op1(op, {ar({0, 5})}).sizes(), (Shape{0, 5}));
    auto t = infer_types_of(op, {sym_type({N, 2}, DType::F16)});
    EXPECT_EQ(t.at(0), sym_type({N, 2}, DType::F16));
  }
  // Large i64 values survive exactly (no round trip through double).
  Tensor big = Tensor::empty({1}, DType::I64);
  big.set_int(std::vector<int64_t>{0}, (int64_t{1} << 62) + 1);
  EXPECT_EQ(run_op1("copy", {big}).get_int(std::vector<int64_t>{0}), (int64_t{1} << 62) + 1);
}

}  // namespace
}  // namespace kiln::test
