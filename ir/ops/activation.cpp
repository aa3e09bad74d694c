// Op family: PyTorch's pointwise activations with parameters (leaky_relu, elu,
// selu, celu, softplus, hardswish, hardsigmoid, mish, logsigmoid), logit, the
// float classifiers isnan/isinf/isfinite and nan_to_num. Formulas are
// PyTorch's CPU kernels' (softplus keeps x above the threshold; logsigmoid is
// min(x, 0) - log1p(exp(-|x|)) so it never overflows; mish is
// x * tanh(log1p(exp(x)))). Dtypes:
//   - the activations take floating tensors only, as PyTorch has no integer
//     kernels for them; logit lifts integers and bool to f32 like log;
//   - isnan/isinf/isfinite give bool for any dtype (integers are finite);
//   - nan_to_num keeps the dtype (integers and bool pass through), and its
//     defaults for +-inf are the dtype's largest and lowest finite values.
// References compute in double and round once into the output dtype.
#include <cmath>
#include <limits>

#include "ir/ops/elementwise_util.h"

namespace kiln::ir {
namespace {

using ew::LoopInput;
using ew::map_elements;
using ew::output_shape;

using ActivationFn = std::function<double(double x, const Attrs& attrs)>;

Tensor map_double(const RefContext& ctx, const std::function<double(double)>& f) {
  DType out = ctx.output_types[0].dtype();
  LoopInput in{ctx.inputs[0], out};
  return map_elements<double>({&in, 1}, output_shape(ctx), out,
                              [&](const double* a) { return f(a[0]); });
}

std::vector<Type> same_shape(const InferContext& ctx, DType dtype) {
  const TensorType& x = ctx.tensor(0);
  return {Type::tensor(dtype, x.dims, x.device)};
}

AttrSpec float_attr(const char* name, double value) {
  AttrSpec a;
  a.name = name;
  a.kind = AttrKind::Float;
  a.default_value.emplace(value);
  return a;
}

AttrSpec optional_float(const char* name) {
  AttrSpec a;
  a.name = name;
  a.kind = AttrKind::Float;
  a.default_value.emplace(NoneAttr{});
  a.optional = true;
  return a;
}

void add_activation(OpRegistry& r, const char* name, const char* doc, std::vector<AttrSpec> attrs,
                    ActivationFn f) {
  r.add(OpDef{
      .name = name,
      .operands = {{"x", OperandKind::Tensor}},
      .attrs = std::move(attrs),
      .category = OpCategory::Elementwise,
      .doc = doc,
      .infer =
          [](const InferContext& ctx) {
            DType in = ctx.tensor(0).dtype;
            if (!is_floating(in)) {
              ctx.fail("operand " + ew::describe(ctx, 0) + " is " + dtype_name(in) + "; " +
                       ctx.op.name +
                       " takes floating tensors only (as in PyTorch); convert with .float()");
            }
            return same_shape(ctx, in);
          },
      .reference = [f](const RefContext& ctx) -> std::vector<Tensor> {
        const Attrs& attrs = ctx.attrs;
        return {map_double(ctx, [&](double x) { return f(x, attrs); })};
      },
  });
}

// PyTorch's elu kernel: x <= 0 ? expm1(x * input_scale) * alpha * scale : x * scale.
double elu(double x, double alpha, double scale, double input_scale) {
  return x <= 0 ? std::expm1(x * input_scale) * (alpha * scale) : x * scale;
}

double softplus(double x, double beta, double threshold) {
  return x * beta > threshold ? x : std::log1p(std::exp(x * beta)) / beta;
}

void add_classifier(OpRegistry& r, const char* name, const char* doc, bool (*f)(double)) {
  r.add(OpDef{
      .name = name,
      .operands = {{"x", OperandKind::Tensor}},
      .attrs = {},
      .category = OpCategory::Elementwise,
      .doc = doc,
      .infer = [](const InferContext& ctx) { return same_shape(ctx, DType::Bool); },
      .reference = [f](const RefContext& ctx) -> std::vector<Tensor> {
        LoopInput in{ctx.inputs[0], ctx.inputs[0].dtype()};
        return {map_elements<double>({&in, 1}, output_shape(ctx), DType::Bool,
                                     [f](const double* a) { return int64_t(f(a[0])); })};
      },
  });
}

void add_nan_to_num(OpRegistry& r) {
  r.add(OpDef{
      .name = "nan_to_num",
      .operands = {{"x", OperandKind::Tensor}},
      .attrs = {float_attr("nan", 0.0), optional_float("posinf"), optional_float("neginf")},
      .category = OpCategory::Elementwise,
      .doc = "NaN, +inf and -inf replaced (defaults 0 and the dtype's largest/lowest finite "
             "values); integers unchanged",
      .infer = [](const InferContext& ctx) { return same_shape(ctx, ctx.tensor(0).dtype); },
      .reference = [](const RefContext& ctx) -> std::vector<Tensor> {
        DType out = ctx.output_types[0].dtype();
        if (!is_floating(out)) {
          LoopInput in{ctx.inputs[0], out};
          return {map_elements<int64_t>({&in, 1}, output_shape(ctx), out,
                                        [](const int64_t* a) { return a[0]; })};
        }
        const Attrs& a = ctx.attrs;
        double nan = a.get_float("nan");
        double hi = a.is_none("posinf") ? dtype_max_finite(out) : a.get_float("posinf");
        double lo = a.is_none("neginf") ? -dtype_max_finite(out) : a.get_float("neginf");
        return {map_double(ctx, [=](double x) {
          if (std::isnan(x)) return nan;
          if (std::isinf(x)) return x > 0 ? hi : lo;
          return x;
        })};
      },
  });
}

void add_logit(OpRegistry& r) {
  r.add(OpDef{
      .name = "logit",
      .operands = {{"x", OperandKind::Tensor}},
      .attrs = {optional_float("eps")},
      .category = OpCategory::Elementwise,
      .doc = "log(x / (1 - x)), x first clamped to [eps, 1 - eps] when eps is given",
      .infer =
          [](const InferContext& ctx) {
            DType in = ctx.tensor(0).dtype;
            return same_shape(ctx, is_floating(in) ? in : DType::F32);
          },
      .reference = [](const RefContext& ctx) -> std::vector<Tensor> {
        bool clamp = !ctx.attrs.is_none("eps");
        double eps = clamp ? ctx.attrs.get_float("eps") : 0.0;
        return {map_double(ctx, [=](double x) {
          if (clamp) x = x < eps ? eps : (x > 1 - eps ? 1 - eps : x);
          return std::log(x / (1 - x));
        })};
      },
  });
}

}  // namespace

// The largest finite value of a floating dtype (nan_to_num's +inf default).
double dtype_max_finite(DType t) {
  switch (t) {
    case DType::F16:
      return 65504.0;
    case DType::BF16:
      return 3.3895313892515355e38;
    case DType::F32:
      return std::numeric_limits<float>::max();
    default:
      return std::numeric_limits<double>::max();
  }
}

void register_activation_ops(OpRegistry& r) {
  add_activation(
      r, "leaky_relu", "x > 0 ? x : negative_slope * x", {float_attr("negative_slope", 0.01)},
      [](double x, const Attrs& a) { return x > 0 ? x : x * a.get_float("negative_slope"); });
  add_activation(r, "elu", "x > 0 ? x : alpha * (exp(x) - 1)", {float_attr("alpha", 1.0)},
                 [](double x, const Attrs& a) { return elu(x, a.get_float("alpha"), 1.0, 1.0); });
  add_activation(r, "selu", "scale * elu(x, alpha) with SELU's fixed alpha and scale", {},
                 [](double x, const Attrs&) { return elu(x, kSeluAlpha, kSeluScale, 1.0); });
  add_activation(r, "celu", "x > 0 ? x : alpha * (exp(x / alpha) - 1)", {float_attr("alpha", 1.0)},
                 [](double x, const Attrs& a) {
                   double alpha = a.get_float("alpha");
                   return elu(x, alpha, 1.0, 1.0 / alpha);
                 });
  add_activation(r, "softplus", "log(1 + exp(beta * x)) / beta; x where beta * x > threshold",
                 {float_attr("beta", 1.0), float_attr("threshold", 20.0)},
                 [](double x, const Attrs& a) {
                   return softplus(x, a.get_float("beta"), a.get_float("threshold"));
                 });
  add_activation(r, "hardswish", "x * min(max(x + 3, 0), 6) / 6", {}, [](double x, const Attrs&) {
    return std::isnan(x) ? x : x * std::min(std::max(x + 3.0, 0.0), 6.0) / 6.0;
  });
  add_activation(r, "hardsigmoid", "min(max(x + 3, 0), 6) / 6", {}, [](double x, const Attrs&) {
    return std::isnan(x) ? x : std::min(std::max(x + 3.0, 0.0), 6.0) / 6.0;
  });
  add_activation(r, "mish", "x * tanh(softplus(x))", {},
                 [](double x, const Attrs&) { return x * std::tanh(std::log1p(std::exp(x))); });
  add_activation(r, "logsigmoid", "log(sigmoid(x)), as min(x, 0) - log1p(exp(-|x|))", {},
                 [](double x, const Attrs&) {
                   return std::min(x, 0.0) - std::log1p(std::exp(-std::fabs(x)));
                 });
  add_logit(r);
  add_classifier(r, "isnan", "x != x, as bool (false for integers)",
                 [](double x) { return std::isnan(x); });
  add_classifier(r, "isinf", "|x| == inf, as bool (false for integers)",
                 [](double x) { return std::isinf(x); });
  add_classifier(r, "isfinite", "neither NaN nor +-inf, as bool (true for integers)",
                 [](double x) { return std::isfinite(x); });
  add_nan_to_num(r);
}

}  // namespace kiln::ir
