// Select-like elementwise ops (part of register_binary_ops):
//   - where(cond, a, b): cond must be bool; dtype = result_type(a, b); shape is
//     the broadcast of all three.
//   - clamp(x, min, max): bounds are tensors, scalars or none (not both none);
//     dtype = result_type of x and the given bounds, as PyTorch; NaN in x or a
//     bound gives NaN; min > max gives max.
//   - masked_fill(x, mask, value): mask is bool and broadcasts to x's shape;
//     the output keeps x's dtype and shape; value is a scalar or 0-dim tensor,
//     converted to x's dtype with PyTorch's overflow check (-1e9 into f16 fails).
#include <array>
#include <cmath>
#include <limits>
#include <vector>

#include "ir/ops/elementwise_util.h"

namespace kiln::ir {
namespace {

using ew::LoopInput;

// --- where -----------------------------------------------------------------------------

std::vector<Type> infer_where(const InferContext& ctx) {
  if (ctx.tensor(0).dtype != DType::Bool) {
    ctx.fail("condition " + ew::describe(ctx, 0) + " must be a bool tensor");
  }
  return ew::elementwise_output(ctx, {0, 1, 2}, ew::promote_operands(ctx, {1, 2}));
}

std::vector<Tensor> ref_where(const RefContext& ctx) {
  DType out = ctx.output_types[0].dtype();
  std::array<LoopInput, 3> ins{LoopInput{ctx.inputs[0], DType::Bool}, LoopInput{ctx.inputs[1], out},
                               LoopInput{ctx.inputs[2], out}};
  Shape shape = ew::output_shape(ctx);
  if (is_floating(out)) {
    return {ew::map_elements<double>(ins, shape, out,
                                     [](const double* a) { return a[0] != 0 ? a[1] : a[2]; })};
  }
  return {ew::map_elements<int64_t>(ins, shape, out,
                                    [](const int64_t* a) { return a[0] != 0 ? a[1] : a[2]; })};
}

// --- clamp -----------------------------------------------------------------------------

std::vector<Type> infer_clamp(const InferContext& ctx) {
  ctx.tensor(0);
  if (ctx.inputs[1].is_none() && ctx.inputs[2].is_none()) {
    ctx.fail("at least one of 'min' and 'max' must be given (both are none)");
  }
  DType dtype = ew::promote_operands(ctx, {0, 1, 2});
  if (dtype == DType::Bool) {
    ctx.fail("not supported for bool: operands " + ew::describe(ctx, 0) + ", " +
             ew::describe(ctx, 1) + ", " + ew::describe(ctx, 2));
  }
  return ew::elementwise_output(ctx, {0, 1, 2}, dtype);
}

std::vector<Tensor> ref_clamp(const RefContext& ctx) {
  DType out = ctx.output_types[0].dtype();
  std::vector<LoopInput> ins{{ctx.inputs[0], out}};
  bool has_lo = !ctx.input_types[1].is_none(), has_hi = !ctx.input_types[2].is_none();
  if (has_lo) ins.push_back({ctx.inputs[1], out});
  if (has_hi) ins.push_back({ctx.inputs[2], out});
  const size_t hi_at = has_lo ? 2 : 1;
  Shape shape = ew::output_shape(ctx);
  if (is_floating(out)) {
    return {ew::map_elements<double>(ins, shape, out, [&](const double* a) {
      double x = a[0];
      if (std::isnan(x)) return x;
      if (has_lo) x = std::isnan(a[1]) ? a[1] : std::max(x, a[1]);
      if (has_hi) x = std::isnan(a[hi_at]) ? a[hi_at] : std::min(x, a[hi_at]);
      return x;
    })};
  }
  return {ew::map_elements<int64_t>(ins, shape, out, [&](const int64_t* a) {
    int64_t x = a[0];
    if (has_lo) x = std::max(x, a[1]);
    if (has_hi) x = std::min(x, a[hi_at]);
    return x;
  })};
}

// --- masked_fill -----------------------------------------------------------------------

std::vector<Type> infer_masked_fill(const InferContext& ctx) {
  const TensorType& x = ctx.tensor(0);
  const TensorType& mask = ctx.tensor(1);
  if (mask.dtype != DType::Bool) ctx.fail("mask " + ew::describe(ctx, 1) + " must be bool");
  if (ctx.inputs[2].is_tensor() && ctx.inputs[2].rank() != 0) {
    ctx.fail("value " + ew::describe(ctx, 2) + " must be a scalar or a 0-dim tensor");
  }
  std::optional<Dims> b = broadcast_dims(x.dims, mask.dims);
  if (!b || *b != x.dims) {
    ctx.fail("mask " + ew::describe(ctx, 1) + " does not broadcast to the shape of " +
             ew::describe(ctx, 0));
  }
  return {Type::tensor(x.dtype, x.dims, ew::device_of(ctx, {0, 1, 2}))};
}

// Bounds of the finite values of `t`, as PyTorch's checked scalar conversion uses.
std::pair<double, double> finite_range(DType t) {
  switch (t) {
    case DType::I8:
      return {-128.0, 127.0};
    case DType::U8:
      return {0.0, 255.0};
    case DType::I16:
      return {-32768.0, 32767.0};
    case DType::I32:
      return {-2147483648.0, 2147483647.0};
    case DType::I64:
      return {-9223372036854775808.0, 9223372036854775807.0};
    case DType::F16:
      return {-65504.0, 65504.0};
    case DType::BF16:
      return {-3.3895313892515355e38, 3.3895313892515355e38};
    case DType::F32:
      return {-double(std::numeric_limits<float>::max()),
              double(std::numeric_limits<float>::max())};
    default:
      return {-std::numeric_limits<double>::infinity(), std::numeric_limits<double>::infinity()};
  }
}

std::vector<Tensor> ref_masked_fill(const RefContext& ctx) {
  const Tensor& value = ctx.inputs[2];
  DType out = ctx.output_types[0].dtype();
  const std::span<const int64_t> scalar_index;
  double v = value.get(scalar_index);
  if (out != DType::Bool) {
    auto [lo, hi] = finite_range(out);
    bool is_float_out = is_floating(out);
    // Integer targets truncate, so anything below hi + 1 fits (and stays below
    // 2^63 for i64, where hi + 1 rounds to 2^63 itself).
    bool fits = is_float_out ? (std::isnan(v) || std::isinf(v) || (v >= lo && v <= hi))
                             : (v >= lo && v < hi + 1);
    if (ew::int_compute(value.dtype()) && !is_float_out) {
      int64_t iv = value.get_int(scalar_index);  // exact, even beyond 2^53
      fits = out == DType::I64 || (double(iv) >= lo && double(iv) <= hi);
    }
    KILN_USER_CHECK(fits, "masked_fill: value " << v << " cannot be converted to "
                                                << dtype_name(out) << " without overflow");
  }
  std::array<LoopInput, 2> ins{LoopInput{ctx.inputs[0], out},
                               LoopInput{ctx.inputs[1], DType::Bool}};
  Shape shape = ew::output_shape(ctx);
  if (is_floating(out)) {
    double fill = ew::round_to(out, v);
    return {ew::map_elements<double>(ins, shape, out,
                                     [fill](const double* a) { return a[1] != 0 ? fill : a[0]; })};
  }
  int64_t fill = ew::int_compute(value.dtype()) ? value.get_int(scalar_index)
                                                : static_cast<int64_t>(std::trunc(v));
  if (out == DType::Bool) fill = is_floating(value.dtype()) ? (v != 0) : (fill != 0);
  return {ew::map_elements<int64_t>(ins, shape, out,
                                    [fill](const int64_t* a) { return a[1] != 0 ? fill : a[0]; })};
}

}  // namespace

void register_select_ops(OpRegistry& r) {
  r.add(OpDef{
      .name = "where",
      .operands = {{"cond", OperandKind::Tensor},
                   {"a", OperandKind::TensorOrScalar},
                   {"b", OperandKind::TensorOrScalar}},
      .attrs = {},
      .category = OpCategory::Elementwise,
      .doc = "a where cond is true, else b (cond must be bool)",
      .infer = infer_where,
      .reference = ref_where,
  });
  r.add(OpDef{
      .name = "clamp",
      .operands = {{"x", OperandKind::Tensor},
                   {"min", OperandKind::Optional},
                   {"max", OperandKind::Optional}},
      .attrs = {},
      .category = OpCategory::Elementwise,
      .doc = "min(max(x, min), max); either bound may be none; NaN propagates",
      .infer = infer_clamp,
      .reference = ref_clamp,
  });
  r.add(OpDef{
      .name = "masked_fill",
      .operands = {{"x", OperandKind::Tensor},
                   {"mask", OperandKind::Tensor},
                   {"value", OperandKind::TensorOrScalar}},
      .attrs = {},
      .category = OpCategory::Elementwise,
      .doc = "x with value written where mask (bool, broadcast to x) is true",
      .infer = infer_masked_fill,
      .reference = ref_masked_fill,
  });
}

}  // namespace kiln::ir
