// Op family: constants and tensor factories — constant, arange, full. They
// take no operands; everything comes from attributes, so every output shape is
// static. Default dtypes follow PyTorch: arange and full give i64 when their
// numeric attributes are all integers and f32 otherwise (full with a bool value
// is not expressible: `value` is a float attribute).
#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>

#include "ir/ops/elementwise_util.h"

namespace kiln::ir {
namespace {

bool holds_int(const Attrs& attrs, const std::string& name) {
  const AttrValue* v = attrs.find(name);
  return v && std::holds_alternative<int64_t>(*v);
}

// --- constant --------------------------------------------------------------------------

std::vector<Type> infer_constant(const InferContext& ctx) {
  const AttrValue* v = ctx.attrs.find("value");
  if (!v) ctx.fail("missing attribute 'value'");
  // none stands for an absent optional operand (linear's bias, clamp's bounds).
  if (std::holds_alternative<NoneAttr>(*v)) return {Type::none()};
  if (std::holds_alternative<int64_t>(*v)) return {Type::int_()};
  if (std::holds_alternative<double>(*v)) return {Type::float_()};
  if (std::holds_alternative<bool>(*v)) return {Type::bool_()};
  if (const Tensor* t = std::get_if<Tensor>(v)) {
    if (!t->defined()) ctx.fail("attribute 'value' is an undefined tensor");
    return {Type::tensor(t->dtype(), dims_from_shape(t->sizes()), t->device())};
  }
  ctx.fail("attribute 'value' must be an int, float, bool or tensor, got " + attr_str(*v));
}

std::vector<Tensor> ref_constant(const RefContext& ctx) {
  const AttrValue* v = ctx.attrs.find("value");
  KILN_INTERNAL_CHECK(v != nullptr, "constant without value");
  if (std::holds_alternative<NoneAttr>(*v)) return {Tensor()};
  if (const int64_t* i = std::get_if<int64_t>(v)) {
    Tensor t = Tensor::empty({}, DType::I64);
    store_int(DType::I64, t.data_ptr(), *i);  // exact, unlike a trip through double
    return {t};
  }
  if (const double* d = std::get_if<double>(v)) return {Tensor::scalar(*d, DType::F64)};
  if (const bool* b = std::get_if<bool>(v)) return {Tensor::scalar(*b ? 1 : 0, DType::Bool)};
  // A fresh packed copy: callers may write into outputs.
  return {std::get<Tensor>(*v).clone()};
}

// --- arange ----------------------------------------------------------------------------

// Number of elements of arange(start, end, step), checked like torch.arange.
int64_t arange_size(const Attrs& attrs, const std::function<void(const std::string&)>& fail) {
  double start = attrs.get_float("start"), end = attrs.get_float("end");
  double step = attrs.get_float("step");
  if (!std::isfinite(start) || !std::isfinite(end) || !std::isfinite(step)) {
    std::ostringstream os;
    os << "start, end and step must be finite, got start = " << start << ", end = " << end
       << ", step = " << step;
    fail(os.str());
  }
  if (step == 0) fail("step must be nonzero");
  if ((step > 0 && end < start) || (step < 0 && end > start)) {
    std::ostringstream os;
    os << "end " << end << " is on the wrong side of start " << start << " for step " << step;
    fail(os.str());
  }
  if (holds_int(attrs, "start") && holds_int(attrs, "end") && holds_int(attrs, "step")) {
    // Exact for integers beyond 2^53: ceil((end - start) / step) in 128 bits.
    __int128 diff = __int128(attrs.get_int("end")) - attrs.get_int("start");
    __int128 st = attrs.get_int("step");
    __int128 n = diff / st + (diff % st != 0 ? 1 : 0);  // same signs, so this rounds up
    if (n > std::numeric_limits<int64_t>::max()) fail("too many elements");
    return static_cast<int64_t>(n);
  }
  double size = std::ceil((end - start) / step);
  if (size >= double(std::numeric_limits<int64_t>::max())) {
    std::ostringstream os;
    os << "too many elements (" << size << ")";
    fail(os.str());
  }
  return static_cast<int64_t>(size);
}

DType default_dtype(const Attrs& attrs, std::initializer_list<const char*> numeric_attrs) {
  if (!attrs.is_none("dtype")) return attrs.get_dtype("dtype");
  for (const char* name : numeric_attrs) {
    if (attrs.has(name) && !holds_int(attrs, name)) return DType::F32;
  }
  return DType::I64;
}

std::vector<Type> infer_arange(const InferContext& ctx) {
  int64_t n = arange_size(ctx.attrs, [&](const std::string& m) { ctx.fail(m); });
  DType dtype = default_dtype(ctx.attrs, {"start", "end", "step"});
  if (dtype == DType::Bool) ctx.fail("dtype bool is not supported");
  return {Type::tensor(dtype, {n})};
}

std::vector<Tensor> ref_arange(const RefContext& ctx) {
  DType dtype = ctx.output_types[0].dtype();
  Tensor out = Tensor::empty(ew::output_shape(ctx), dtype);
  double start = ctx.attrs.get_float("start"), step = ctx.attrs.get_float("step");
  bool exact_ints = holds_int(ctx.attrs, "start") && holds_int(ctx.attrs, "step");
  char* dst = static_cast<char*>(out.data_ptr());
  for (int64_t i = 0; i < out.numel(); ++i, dst += dtype_size(dtype)) {
    if (exact_ints) {
      // Integer attributes stay exact beyond 2^53.
      int64_t v =
          ew::wrap_add(ctx.attrs.get_int("start"), ew::wrap_mul(i, ctx.attrs.get_int("step")));
      store_int(dtype, dst, v);
    } else {
      store_double(dtype, dst, start + double(i) * step);
    }
  }
  return {out};
}

// --- full ------------------------------------------------------------------------------

std::vector<Type> infer_full(const InferContext& ctx) {
  std::vector<int64_t> size = ctx.attrs.get_ints("size");
  for (int64_t s : size) {
    if (s < 0) ctx.fail("attribute 'size' must not hold negative sizes, got " + shape_str(size));
  }
  return {Type::tensor(default_dtype(ctx.attrs, {"value"}), dims_from_shape(size))};
}

std::vector<Tensor> ref_full(const RefContext& ctx) {
  DType dtype = ctx.output_types[0].dtype();
  Tensor out = Tensor::empty(ew::output_shape(ctx), dtype);
  // Store one element, then copy its bytes, so an int64 value stays exact.
  alignas(8) unsigned char value[8];
  if (holds_int(ctx.attrs, "value")) {
    store_int(dtype, value, ctx.attrs.get_int("value"));
  } else {
    store_double(dtype, value, ctx.attrs.get_float("value"));
  }
  char* dst = static_cast<char*>(out.data_ptr());
  for (int64_t i = 0; i < out.numel(); ++i) {
    std::memcpy(dst + i * int64_t(dtype_size(dtype)), value, dtype_size(dtype));
  }
  return {out};
}

}  // namespace

void register_constant_ops(OpRegistry& r) {
  r.add(OpDef{
      .name = "constant",
      .operands = {},
      .attrs = {{"value", AttrKind::Any, std::nullopt}},
      .category = OpCategory::Other,
      .doc = "a compile-time value: int, float or bool scalar, or a constant tensor",
      .infer = infer_constant,
      .reference = ref_constant,
  });
  r.add(OpDef{
      .name = "arange",
      .operands = {},
      .attrs = {{"start", AttrKind::Float, AttrValue(int64_t{0})},
                {"end", AttrKind::Float, std::nullopt},
                {"step", AttrKind::Float, AttrValue(int64_t{1})},
                {"dtype", AttrKind::DType, AttrValue(NoneAttr{}), /*optional=*/true}},
      .category = OpCategory::Other,
      .doc = "values start, start + step, ... below end, like torch.arange "
             "(dtype i64 for integer attributes, else f32, unless given)",
      .infer = infer_arange,
      .reference = ref_arange,
  });
  r.add(OpDef{
      .name = "full",
      .operands = {},
      .attrs = {{"size", AttrKind::Ints, std::nullopt},
                {"value", AttrKind::Float, std::nullopt},
                {"dtype", AttrKind::DType, AttrValue(NoneAttr{}), /*optional=*/true}},
      .category = OpCategory::Other,
      .doc = "a tensor of `size` filled with `value` (dtype i64 for an int value, else f32, "
             "unless given)",
      .infer = infer_full,
      .reference = ref_full,
  });
}

}  // namespace kiln::ir
