// Op family: binary arithmetic — add, sub, mul, div, pow, maximum, minimum,
// remainder — and the entry point that also registers the comparison/logical/
// bitwise ops (elementwise_compare.cpp) and the select ops where, clamp and
// masked_fill (elementwise_select.cpp).
//
// Dtypes follow PyTorch's result_type: dimensioned tensors outrank 0-dim
// tensors, which outrank scalars (wrapped numbers), and a lower group only
// counts when it lifts the category (bool < integral < floating). True division
// of integers gives the default float dtype (f32). Integer division and
// remainder by zero cannot be seen at inference time, so the references throw
// kiln::Error for them (PyTorch raises too).
//
// Operands are converted to the compute dtype (= output dtype) before the math,
// except that f16/bf16 add, sub, mul and div read 0-dim operands at f32
// precision, as PyTorch's CPU kernels do.
#include <algorithm>
#include <array>
#include <cmath>
#include <functional>

#include "ir/ops/elementwise_util.h"

namespace kiln::ir {
namespace {

using ew::LoopInput;

// The scalar math of one op, in both compute domains. Either may be empty when
// inference has already ruled that domain out.
struct Kernels {
  std::function<double(double, double)> f;
  std::function<int64_t(int64_t, int64_t)> i;
};

// Output dtype from the promoted dtype of (a, b); fails for unsupported dtypes.
using DTypeRule = std::function<DType(const InferContext&, DType promoted)>;
using KernelFactory = std::function<Kernels(const RefContext&)>;

struct BinarySpec {
  const char* name;
  const char* doc;
  OperandKind kind = OperandKind::TensorOrScalar;
  std::vector<AttrSpec> attrs = {};
  DTypeRule dtype_rule = nullptr;  // none: the promoted dtype
  KernelFactory kernels = nullptr;
  bool opmath = false;  // f16/bf16 compute reads 0-dim operands at f32 precision
};

std::vector<Tensor> run_binary(const RefContext& ctx, const Kernels& k, bool opmath) {
  DType out = ctx.output_types[0].dtype();
  std::array<LoopInput, 2> ins;
  for (size_t n = 0; n < 2; ++n) {
    ins[n] = {ctx.inputs[n], opmath ? ew::opmath_dtype(out, ctx.input_types[n]) : out};
  }
  Shape shape = ew::output_shape(ctx);
  if (is_floating(out)) {
    KILN_INTERNAL_CHECK(k.f, ctx.op.name << ": no floating kernel");
    return {ew::map_elements<double>(ins, shape, out,
                                     [&](const double* a) { return k.f(a[0], a[1]); })};
  }
  KILN_INTERNAL_CHECK(k.i, ctx.op.name << ": no integral kernel");
  return {ew::map_elements<int64_t>(ins, shape, out,
                                    [&](const int64_t* a) { return k.i(a[0], a[1]); })};
}

void add_binary(OpRegistry& r, BinarySpec spec) {
  DTypeRule rule = spec.dtype_rule;
  KernelFactory kernels = spec.kernels;
  bool opmath = spec.opmath;
  r.add(OpDef{
      .name = spec.name,
      .operands = {{"a", spec.kind}, {"b", spec.kind}},
      .attrs = std::move(spec.attrs),
      .category = OpCategory::Elementwise,
      .doc = spec.doc,
      .infer =
          [rule](const InferContext& ctx) {
            ew::require_tensor(ctx, {0, 1});
            DType promoted = ew::promote_operands(ctx, {0, 1});
            return ew::elementwise_output(ctx, {0, 1}, rule ? rule(ctx, promoted) : promoted);
          },
      .reference = [kernels, opmath](const RefContext& ctx) -> std::vector<Tensor> {
        return run_binary(ctx, kernels(ctx), opmath);
      },
  });
}

std::string operands_str(const InferContext& ctx) {
  return ew::describe(ctx, 0) + " and " + ew::describe(ctx, 1);
}

// --- add / sub -------------------------------------------------------------------------

// PyTorch: "For integral input tensors, argument alpha must not be a floating point number."
void check_alpha(const InferContext& ctx, DType dtype) {
  const AttrValue* alpha = ctx.attrs.find("alpha");
  if (ew::int_compute(dtype) && alpha && std::holds_alternative<double>(*alpha)) {
    ctx.fail("attribute 'alpha' must be an integer for " + std::string(dtype_name(dtype)) +
             " operands " + operands_str(ctx) + ", got " + attr_str(*alpha));
  }
}

Kernels add_sub_kernels(const RefContext& ctx, bool subtract) {
  DType out = ctx.output_types[0].dtype();
  Kernels k;
  if (is_floating(out)) {
    double alpha =
        ew::round_to(ew::opmath_dtype(out, Type::float_()), ctx.attrs.get_float("alpha"));
    if (subtract) alpha = -alpha;
    k.f = [alpha](double a, double b) { return a + alpha * b; };
  } else {
    int64_t alpha = ctx.attrs.get_int("alpha");
    if (subtract) alpha = ew::wrap_sub(0, alpha);
    k.i = [alpha](int64_t a, int64_t b) { return ew::wrap_add(a, ew::wrap_mul(alpha, b)); };
  }
  return k;
}

std::vector<AttrSpec> alpha_attr() {
  // Built step by step: GCC 12 with -fsanitize reports a false maybe-uninitialized
  // on the variant inside a braced AttrSpec temporary here.
  std::vector<AttrSpec> attrs(1);
  attrs[0].name = "alpha";
  attrs[0].kind = AttrKind::Float;
  attrs[0].default_value.emplace(int64_t{1});
  return attrs;
}

// --- div ---------------------------------------------------------------------------------

enum class Rounding { True, Trunc, Floor };

Rounding rounding_mode(const Attrs& attrs, const std::function<void(const std::string&)>& fail) {
  if (attrs.is_none("rounding_mode")) return Rounding::True;
  const std::string& mode = attrs.get_string("rounding_mode");
  if (mode.empty()) return Rounding::True;
  if (mode == "trunc") return Rounding::Trunc;
  if (mode == "floor") return Rounding::Floor;
  fail("attribute 'rounding_mode' must be \"\" (true division), \"trunc\" or \"floor\", got \"" +
       mode + "\"");
  return Rounding::True;
}

DType div_dtype(const InferContext& ctx, DType promoted) {
  Rounding mode = rounding_mode(ctx.attrs, [&](const std::string& m) { ctx.fail(m); });
  if (mode == Rounding::True) return is_floating(promoted) ? promoted : DType::F32;
  if (promoted == DType::Bool) {
    ctx.fail("rounding_mode \"" + ctx.attrs.get_string("rounding_mode") +
             "\" is not supported for bool operands " + operands_str(ctx));
  }
  return promoted;
}

// Python's floor division of floats, computed as PyTorch does (via fmod) so the
// result is exact even where floor(a / b) would round the wrong way.
double floor_divide(double a, double b) {
  if (b == 0) return a / b;
  double mod = std::fmod(a, b);
  double div = (a - mod) / b;
  if (mod != 0 && (b < 0) != (mod < 0)) div -= 1;
  if (div == 0) return std::copysign(0.0, a / b);
  double floordiv = std::floor(div);
  if (div - floordiv > 0.5) floordiv += 1.0;
  return floordiv;
}

Kernels div_kernels(const RefContext& ctx) {
  Rounding mode =
      rounding_mode(ctx.attrs, [](const std::string& m) { KILN_USER_ERROR("div: " << m); });
  Kernels k;
  switch (mode) {
    case Rounding::True:
      k.f = [](double a, double b) { return a / b; };
      break;
    case Rounding::Trunc:
      k.f = [](double a, double b) { return std::trunc(a / b); };
      k.i = [](int64_t a, int64_t b) {
        KILN_USER_CHECK(b != 0, "div: integer division by zero");
        return b == -1 ? ew::wrap_sub(0, a) : a / b;  // INT64_MIN / -1 wraps
      };
      break;
    case Rounding::Floor:
      k.f = floor_divide;
      k.i = [](int64_t a, int64_t b) {
        KILN_USER_CHECK(b != 0, "div: integer division by zero");
        if (b == -1) return ew::wrap_sub(0, a);
        int64_t q = a / b;
        return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
      };
      break;
  }
  return k;
}

// --- pow ---------------------------------------------------------------------------------

// Integer power by squaring, wrapping like PyTorch's integer kernels. Negative
// exponents follow PyTorch's tensor-exponent rule: 1 and -1 stay (+-1), others give 0.
int64_t int_pow(int64_t base, int64_t exp) {
  if (exp < 0) {
    if (base == 1) return 1;
    if (base == -1) return (exp % 2) ? -1 : 1;
    return 0;
  }
  uint64_t result = 1, b = static_cast<uint64_t>(base);
  for (uint64_t e = static_cast<uint64_t>(exp); e; e >>= 1) {
    if (e & 1) result *= b;
    b *= b;
  }
  return static_cast<int64_t>(result);
}

// x ** e for the exponents ATen strength-reduces, in T's arithmetic; false for
// any other e. The compiled form is passes/lower/lower_elementwise.cpp's.
template <typename T>
bool pow_special(T x, double e, T* r) {
  if (e == 2) {
    *r = x * x;
  } else if (e == 3) {
    *r = x * x * x;
  } else if (e == 0.5) {
    *r = std::sqrt(x);
  } else if (e == -0.5) {
    *r = T(1) / std::sqrt(x);
  } else if (e == -1) {
    *r = T(1) / x;
  } else if (e == -2) {
    *r = T(1) / (x * x);
  } else {
    return false;
  }
  return true;
}

Kernels pow_kernels(const RefContext& ctx) {
  // PyTorch rejects a negative Python-int exponent of an integer base outright.
  bool scalar_exponent = ctx.input_types[1].is_scalar();
  Kernels k;
  // A scalar exponent of 2, 3, 0.5, -0.5 or -1 (or -2) takes ATen's
  // strength-reduced form (PowKernel.cpp): x*x, x*x*x, sqrt(x), 1/sqrt(x), 1/x,
  // 1/(x*x), each step rounded in the compiled code's working precision (f64
  // for f64, else f32), so every backend matches bit for bit. They differ from
  // pow at the edges: sqrt(-0.0) = -0.0 and sqrt(-inf) = nan where pow gives
  // +0.0 and +inf, and x*x*x rounds twice. A tensor exponent keeps pow.
  bool wide = ctx.output_types[0].dtype() == DType::F64;
  k.f = [scalar_exponent, wide](double a, double b) {
    if (scalar_exponent) {
      if (wide) {
        if (double r; pow_special(a, b, &r)) return r;
      } else if (float r; pow_special(static_cast<float>(a), b, &r)) {
        return static_cast<double>(r);
      }
    }
    return std::pow(a, b);
  };
  k.i = [scalar_exponent](int64_t a, int64_t b) {
    KILN_USER_CHECK(
        !(scalar_exponent && b < 0),
        "pow: integers to negative integer powers are not allowed (exponent " << b << ")");
    return int_pow(a, b);
  };
  return k;
}

// --- remainder -------------------------------------------------------------------------

Kernels remainder_kernels(const RefContext&) {
  Kernels k;
  // Python semantics: the result takes the divisor's sign.
  k.f = [](double a, double b) {
    double mod = std::fmod(a, b);
    if (mod != 0 && (b < 0) != (mod < 0)) mod += b;
    return mod;
  };
  k.i = [](int64_t a, int64_t b) {
    KILN_USER_CHECK(b != 0, "remainder: integer division by zero");
    if (b == -1) return int64_t{0};  // INT64_MIN % -1 would overflow
    int64_t mod = a % b;
    return (mod != 0 && (mod < 0) != (b < 0)) ? mod + b : mod;
  };
  return k;
}

DType reject_bool(const InferContext& ctx, DType promoted) {
  if (promoted == DType::Bool) ctx.fail("not supported for bool operands " + operands_str(ctx));
  return promoted;
}

}  // namespace

void register_binary_ops(OpRegistry& r) {
  add_binary(r, {.name = "add",
                 .doc = "a + alpha * b",
                 .attrs = alpha_attr(),
                 .dtype_rule =
                     [](const InferContext& ctx, DType t) {
                       check_alpha(ctx, t);
                       return t;
                     },
                 .kernels = [](const RefContext& ctx) { return add_sub_kernels(ctx, false); },
                 .opmath = true});
  add_binary(r, {.name = "sub",
                 .doc = "a - alpha * b (not for bool)",
                 .attrs = alpha_attr(),
                 .dtype_rule =
                     [](const InferContext& ctx, DType t) {
                       for (size_t i = 0; i < 2; ++i) {
                         if (ctx.inputs[i].dtype() == DType::Bool) {
                           ctx.fail("subtraction with bool operand " + ew::describe(ctx, i) +
                                    " is not supported; use logical_xor or logical_not");
                         }
                       }
                       check_alpha(ctx, t);
                       return t;
                     },
                 .kernels = [](const RefContext& ctx) { return add_sub_kernels(ctx, true); },
                 .opmath = true});
  add_binary(r, {.name = "mul",
                 .doc = "a * b",
                 .kernels =
                     [](const RefContext&) {
                       return Kernels{[](double a, double b) { return a * b; }, ew::wrap_mul};
                     },
                 .opmath = true});
  add_binary(r, {.name = "div",
                 .doc = "a / b; rounding_mode \"\" (true division, integers give f32), "
                        "\"trunc\" or \"floor\"",
                 .attrs = {{"rounding_mode", AttrKind::String, AttrValue(std::string()),
                            /*optional=*/true}},
                 .dtype_rule = div_dtype,
                 .kernels = div_kernels,
                 .opmath = true});
  add_binary(
      r, {.name = "pow", .doc = "a raised to b (integers stay integral)", .kernels = pow_kernels});
  add_binary(r, {.name = "remainder",
                 .doc = "Python-style a mod b, with the sign of b (not for bool)",
                 .dtype_rule = reject_bool,
                 .kernels = remainder_kernels});
  add_binary(r, {.name = "maximum",
                 .doc = "elementwise max, NaN propagates",
                 .kind = OperandKind::Tensor,
                 .kernels = [](const RefContext&) {
                   return Kernels{[](double a, double b) {
                                    return std::isnan(a) || std::isnan(b) ? a + b : std::max(a, b);
                                  },
                                  [](int64_t a, int64_t b) { return std::max(a, b); }};
                 }});
  add_binary(r, {.name = "minimum",
                 .doc = "elementwise min, NaN propagates",
                 .kind = OperandKind::Tensor,
                 .kernels = [](const RefContext&) {
                   return Kernels{[](double a, double b) {
                                    return std::isnan(a) || std::isnan(b) ? a + b : std::min(a, b);
                                  },
                                  [](int64_t a, int64_t b) { return std::min(a, b); }};
                 }});
  register_compare_ops(r);
  register_select_ops(r);
}

}  // namespace kiln::ir
