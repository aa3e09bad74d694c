// Shared machinery of the elementwise op families; see elementwise_util.h.
#include "ir/ops/elementwise_util.h"

#include <cstring>

namespace kiln::ir::ew {

Dims dims_of(const Type& t) {
  return t.is_tensor() ? t.dims() : Dims{};
}

std::string describe(const InferContext& ctx, size_t i) {
  std::string name = i < ctx.op.operands.size() ? ctx.op.operands[i].name : std::to_string(i);
  return "'" + name + "' (" + ctx.inputs[i].str() + ")";
}

void require_tensor(const InferContext& ctx, std::initializer_list<size_t> which) {
  std::string names;
  for (size_t i : which) {
    if (ctx.inputs[i].is_tensor()) return;
    names += (names.empty() ? "" : ", ") + describe(ctx, i);
  }
  ctx.fail("at least one operand must be a tensor, got " + names);
}

Dims broadcast_operands(const InferContext& ctx, std::initializer_list<size_t> which) {
  Dims out;
  std::string so_far;  // the operands folded into `out`, for the message
  for (size_t i : which) {
    if (!ctx.inputs[i].is_tensor()) continue;
    std::optional<Dims> b = broadcast_dims(out, ctx.inputs[i].dims());
    if (!b) {
      ctx.fail("operand " + describe(ctx, i) + " does not broadcast with " + so_far +
               (so_far.find(',') != std::string::npos ? " (broadcast " + dims_str(out) + ")"
                                                      : std::string()));
    }
    out = std::move(*b);
    so_far += (so_far.empty() ? "" : ", ") + describe(ctx, i);
  }
  return out;
}

DType promote_operands(const InferContext& ctx, std::initializer_list<size_t> which) {
  std::vector<Type> types;
  for (size_t i : which) {
    if (!ctx.inputs[i].is_none()) types.push_back(ctx.inputs[i]);
  }
  return result_type(types);
}

Device device_of(const InferContext& ctx, std::initializer_list<size_t> which) {
  const Type* first = nullptr;
  size_t first_index = 0;
  for (size_t i : which) {
    if (!ctx.inputs[i].is_tensor()) continue;
    if (!first) {
      first = &ctx.inputs[i];
      first_index = i;
    } else if (ctx.inputs[i].tensor_type().device != first->tensor_type().device) {
      ctx.fail("operands " + describe(ctx, first_index) + " on " +
               first->tensor_type().device.str() + " and " + describe(ctx, i) + " on " +
               ctx.inputs[i].tensor_type().device.str() + " are on different devices");
    }
  }
  return first ? first->tensor_type().device : Device::cpu();
}

std::vector<Type> elementwise_output(const InferContext& ctx, std::initializer_list<size_t> which,
                                     DType dtype) {
  Device device = device_of(ctx, which);
  return {Type::tensor(dtype, broadcast_operands(ctx, which), device)};
}

double round_to(DType t, double v) {
  switch (t) {
    case DType::F64:
      return v;
    case DType::F32:
      return static_cast<double>(static_cast<float>(v));
    default: {
      alignas(8) unsigned char buf[8];
      store_double(t, buf, v);
      return load_as_double(t, buf);
    }
  }
}

int64_t wrap_to(DType t, int64_t v) {
  switch (t) {
    case DType::Bool:
      return v != 0 ? 1 : 0;
    case DType::I8:
      return static_cast<int8_t>(v);
    case DType::U8:
      return static_cast<uint8_t>(v);
    case DType::I16:
      return static_cast<int16_t>(v);
    case DType::I32:
      return static_cast<int32_t>(v);
    case DType::I64:
      return v;
    default:
      KILN_INTERNAL_CHECK(false, "wrap_to: " << dtype_name(t) << " is not integral");
  }
}

DType opmath_dtype(DType compute, const Type& operand_type) {
  bool reduced = compute == DType::F16 || compute == DType::BF16;
  bool wrapped = operand_type.is_scalar() || (operand_type.is_tensor() && operand_type.rank() == 0);
  return reduced && wrapped ? DType::F32 : compute;
}

LoopInputs::LoopInputs(std::span<const LoopInput> inputs, const Shape& shape) {
  for (const LoopInput& in : inputs) {
    KILN_INTERNAL_CHECK(in.value.defined(), "reference loop input is undefined");
    Tensor view = broadcast_to(in.value, shape);
    views_.push_back(
        {static_cast<const char*>(view.data_ptr()), view.strides(), view.dtype(), in.as});
  }
}

const char* LoopInputs::element(size_t k, std::span<const int64_t> index) const {
  const View& v = views_[k];
  int64_t offset = 0;
  for (size_t d = 0; d < index.size(); ++d) offset += index[d] * v.strides[d];
  return v.base + offset * static_cast<int64_t>(dtype_size(v.dtype));
}

double LoopInputs::load_double(size_t k, std::span<const int64_t> index) const {
  const View& v = views_[k];
  double x = load_as_double(v.dtype, element(k, index));
  if (v.as == v.dtype || v.as == DType::F64) return x;
  if (v.as == DType::Bool) return x != 0 ? 1.0 : 0.0;  // NaN is true, as in a C cast
  if (int_compute(v.as)) {
    return static_cast<double>(wrap_to(v.as, load_as_int(v.dtype, element(k, index))));
  }
  return round_to(v.as, x);
}

int64_t LoopInputs::load_int(size_t k, std::span<const int64_t> index) const {
  const View& v = views_[k];
  int64_t x = load_as_int(v.dtype, element(k, index));
  return v.as == v.dtype || v.as == DType::I64 ? x : wrap_to(v.as, x);
}

Shape output_shape(const RefContext& ctx) {
  return static_shape(ctx.output_types[0].dims());
}

}  // namespace kiln::ir::ew
