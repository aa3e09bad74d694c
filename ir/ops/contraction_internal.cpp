// Shared checks and helpers of the contraction, conv and pooling op families
// (see contraction_internal.h).
#include "ir/ops/contraction_internal.h"

#include <sstream>

#include "kiln/error.h"

namespace kiln::ir::contraction {

std::string describe(std::initializer_list<Named> operands) {
  std::string s;
  for (const Named& o : operands) {
    if (!s.empty()) s += ", ";
    s += std::string(o.name) + " is " + o.type->str();
  }
  return s;
}

void check_operand_types(const InferContext& ctx, std::initializer_list<Named> operands,
                         DTypeRule rule) {
  const Named& first = *operands.begin();
  DType dt = first.type->dtype;
  bool ok = is_floating(dt) || (rule == DTypeRule::FloatingOrIntegral && is_integral(dt));
  if (!ok) {
    ctx.fail(std::string("operand '") + first.name + "' must be a floating" +
             (rule == DTypeRule::FloatingOrIntegral ? " or integer" : "") + " tensor, got " +
             describe(operands));
  }
  for (const Named& o : operands) {
    if (o.type->dtype != dt) {
      ctx.fail(std::string("operand dtypes differ (") + dtype_name(dt) + " vs " +
               dtype_name(o.type->dtype) + "): " + describe(operands));
    }
    if (o.type->device != first.type->device) {
      ctx.fail(std::string("operands are on different devices (") + first.type->device.str() +
               " vs " + o.type->device.str() + "): " + describe(operands));
    }
  }
}

std::vector<int64_t> ints_attr(const InferContext& ctx, const std::string& name, size_t n,
                               int64_t min_value) {
  std::vector<int64_t> v = ctx.attrs.get_ints(name);
  if (v.size() == 1) v.assign(n, v[0]);
  if (v.size() != n) {
    ctx.fail("attribute '" + name + "' must have 1 or " + std::to_string(n) + " values, got " +
             attr_str(AttrValue(ctx.attrs.get_ints(name))));
  }
  for (int64_t x : v) {
    if (x < min_value) {
      ctx.fail("attribute '" + name + "' values must be at least " + std::to_string(min_value) +
               ", got " + attr_str(AttrValue(ctx.attrs.get_ints(name))));
    }
  }
  return v;
}

namespace {
int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
}  // namespace

int64_t Window::output_size(int64_t input) const {
  int64_t span = input + pad_before + pad_after - extent() + (ceil_mode ? stride - 1 : 0);
  int64_t out = floor_div(span, stride) + 1;
  // torch: in ceil mode the last window must start inside the input or its
  // leading padding, never entirely in the trailing padding.
  if (ceil_mode && (out - 1) * stride >= input + pad_before) --out;
  return out;
}

Dim window_output_dim(const InferContext& ctx, const Dim& input, const Window& w, const char* axis,
                      const std::string& what) {
  if (!input.is_static()) {
    if (w.stride == 1 && w.pad_before + w.pad_after == w.extent() - 1) return input;
    ctx.fail(std::string("output size along ") + axis + " is not expressible: " + what + " (" +
             axis + " = " + input.symbol + ", symbolic); only stride 1 and padding totalling " +
             "dilation*(kernel-1) keep a symbolic size");
  }
  int64_t out = w.output_size(input.value);
  if (out < 1) {
    std::ostringstream os;
    os << "output would be empty along " << axis << ": " << what << " (" << axis << " = "
       << input.value << "), kernel " << w.kernel << ", dilation " << w.dilation << ", padding "
       << w.pad_before << "+" << w.pad_after << ", stride " << w.stride;
    int64_t padded = input.value + w.pad_before + w.pad_after;
    if (padded < w.extent()) {
      os << ": padded size " << padded << " is smaller than the kernel extent " << w.extent();
    } else {
      os << " give " << out << " windows";
    }
    ctx.fail(os.str());
  }
  return Dim(out);
}

Tensor widen(const Tensor& t) {
  return t.to(is_floating(t.dtype()) ? DType::F64 : DType::I64);
}

Shape checked_output_shape(const RefContext& ctx, size_t i, const Shape& computed) {
  KILN_INTERNAL_CHECK(i < ctx.output_types.size(), ctx.op.name << ": no output type " << i);
  Shape s = static_shape(ctx.output_types[i].dims());
  KILN_INTERNAL_CHECK(s == computed, ctx.op.name << ": inferred output shape " << shape_str(s)
                                                 << " differs from the inputs' "
                                                 << shape_str(computed));
  return s;
}

Tensor as_batched(const Tensor& t) {
  if (t.dim() == 4) return t;
  KILN_INTERNAL_CHECK(t.dim() == 3, "as_batched: rank " << t.dim());
  return t.view_as_strided({1, t.size(0), t.size(1), t.size(2)},
                           {0, t.stride(0), t.stride(1), t.stride(2)}, t.storage_offset());
}

}  // namespace kiln::ir::contraction
