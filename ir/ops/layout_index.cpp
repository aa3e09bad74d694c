// Layout ops that pick a strided part of one dim: slice (Python's x[start:end:step]
// along one dim) and select (x[..., index, ...], removing the dim). PyTorch
// semantics: slice bounds count from the end when negative and clamp to the dim
// like Python; select's index must be in range.
//
// A symbolic dim survives a full slice (0 to the end, step 1) and any select;
// other slices of it would need arithmetic on the symbol and fail.
#include <algorithm>
#include <string>
#include <vector>

#include "ir/ops/layout_internal.h"

namespace kiln::ir::layout {

namespace {

using std::to_string;

struct SliceRange {
  int64_t start = 0;
  int64_t length = 0;
};

// Python's clamping rules for x[start:end:step] over a dim of `size`, step > 0.
SliceRange slice_range(int64_t size, int64_t start, int64_t end, int64_t step) {
  if (start < 0) start += size;
  if (end < 0) end += size;
  start = std::clamp<int64_t>(start, 0, size);
  end = std::clamp<int64_t>(end, start, size);
  // (end - start + step - 1) / step could overflow for a huge step.
  return {start, end > start ? (end - start - 1) / step + 1 : 0};
}

std::vector<Type> infer_slice(const InferContext& ctx) {
  const TensorType& x = ctx.tensor(0);
  if (x.rank() == 0) ctx.fail("cannot slice 0-dim " + operand_str("x", x.dims));
  const int64_t d = check_dim(ctx, ctx.attrs.get_int("dim"), x.dims, "x");
  const int64_t start = ctx.attrs.get_int("start");
  const int64_t end = ctx.attrs.get_int("end");
  const int64_t step = ctx.attrs.get_int("step");
  if (step <= 0) {
    ctx.fail("step must be > 0, got " + to_string(step) + " (" + operand_str("x", x.dims) + ")");
  }
  Dims out = x.dims;
  Dim& od = out[static_cast<size_t>(d)];
  if (!od.is_static()) {
    if (start != 0 || end != INT64_MAX || step != 1) {
      ctx.fail("dim " + to_string(d) + " of " + operand_str("x", x.dims) + " is symbolic (" +
               od.symbol + "); only the full slice keeps it (start 0, no end, step 1)");
    }
    return {like(x, std::move(out))};
  }
  od = Dim(slice_range(od.value, start, end, step).length);
  return {like(x, std::move(out))};
}

std::vector<Tensor> ref_slice(const RefContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  const auto d = static_cast<size_t>(wrap(ctx.attrs.get_int("dim"), x.dim()));
  const int64_t step = ctx.attrs.get_int("step");
  const SliceRange range =
      slice_range(x.sizes()[d], ctx.attrs.get_int("start"), ctx.attrs.get_int("end"), step);
  View v = whole(x);
  v.offset += range.start * v.strides[d];
  v.sizes[d] = range.length;
  v.strides[d] *= step;
  return {materialize(ctx, 0, x, v)};
}

std::vector<Type> infer_select(const InferContext& ctx) {
  const TensorType& x = ctx.tensor(0);
  if (x.rank() == 0) ctx.fail("cannot select from 0-dim " + operand_str("x", x.dims));
  const int64_t d = check_dim(ctx, ctx.attrs.get_int("dim"), x.dims, "x");
  const int64_t index = ctx.attrs.get_int("index");
  const Dim& size = x.dims[static_cast<size_t>(d)];
  // A symbolic size is checked when the interpreter re-infers with real shapes.
  if (size.is_static() && (index < -size.value || index >= size.value)) {
    ctx.fail("index " + to_string(index) + " is out of range for dim " + to_string(d) +
             " of size " + to_string(size.value) + " (" + operand_str("x", x.dims) + ")");
  }
  Dims out = x.dims;
  out.erase(out.begin() + d);
  return {like(x, std::move(out))};
}

std::vector<Tensor> ref_select(const RefContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  const auto d = static_cast<size_t>(wrap(ctx.attrs.get_int("dim"), x.dim()));
  const int64_t index = wrap(ctx.attrs.get_int("index"), x.sizes()[d]);
  View v = whole(x);
  v.offset += index * v.strides[d];
  v.sizes.erase(v.sizes.begin() + static_cast<int64_t>(d));
  v.strides.erase(v.strides.begin() + static_cast<int64_t>(d));
  return {materialize(ctx, 0, x, v)};
}

}  // namespace

void register_layout_index_ops(OpRegistry& r) {
  r.add(OpDef{"slice",
              {{"x", OperandKind::Tensor, false}},
              {{"dim", AttrKind::Int, std::nullopt, false},
               {"start", AttrKind::Int, AttrValue(int64_t{0}), false},
               {"end", AttrKind::Int, AttrValue(int64_t{INT64_MAX}), false},
               {"step", AttrKind::Int, AttrValue(int64_t{1}), false}},
              OpCategory::Layout,
              "x[start:end:step] along dim; bounds count from the end when negative and clamp",
              infer_slice,
              ref_slice});
  r.add(OpDef{
      "select",
      {{"x", OperandKind::Tensor, false}},
      {{"dim", AttrKind::Int, std::nullopt, false}, {"index", AttrKind::Int, std::nullopt, false}},
      OpCategory::Layout,
      "x[index] along dim, which is removed; a negative index counts from the end",
      infer_select,
      ref_select});
}

}  // namespace kiln::ir::layout
