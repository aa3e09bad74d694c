// Op family: unary elementwise ops — math (exp, log, sqrt, erf, ...),
// activations (relu, sigmoid, gelu, silu), sign and rounding, logical_not and
// cast. Dtype rules follow PyTorch:
//   - float-only math on integer or bool inputs computes in the default float
//     dtype (f32); floating inputs keep their dtype;
//   - neg, abs, relu, floor, ceil, round keep integral dtypes and reject bool;
//     sign accepts bool;
//   - logical_not gives bool; cast converts like Tensor.to (float -> int
//     truncates toward zero, NaN -> 0, out of range saturates to int64 first).
// References compute in double (<cmath>) and round once into the output dtype.
#include <cmath>
#include <numbers>

#include "ir/ops/elementwise_util.h"

namespace kiln::ir {
namespace {

using ew::LoopInput;
using ew::map_elements;
using ew::output_shape;

using DoubleFn = double (*)(double);
using IntFn = int64_t (*)(int64_t);

std::vector<Type> same_shape(const InferContext& ctx, DType dtype) {
  const TensorType& x = ctx.tensor(0);
  return {Type::tensor(dtype, x.dims, x.device)};
}

Tensor map_double(const RefContext& ctx, const std::function<double(double)>& f) {
  DType out = ctx.output_types[0].dtype();
  LoopInput in{ctx.inputs[0], out};
  return map_elements<double>({&in, 1}, output_shape(ctx), out,
                              [&](const double* a) { return f(a[0]); });
}

Tensor map_int(const RefContext& ctx, IntFn f) {
  DType out = ctx.output_types[0].dtype();
  LoopInput in{ctx.inputs[0], out};
  return map_elements<int64_t>({&in, 1}, output_shape(ctx), out,
                               [&](const int64_t* a) { return ew::wrap_to(out, f(a[0])); });
}

// --- float-only math -----------------------------------------------------------------

std::vector<Type> infer_float_math(const InferContext& ctx) {
  DType in = ctx.tensor(0).dtype;
  return same_shape(ctx, is_floating(in) ? in : DType::F32);
}

void add_float_math(OpRegistry& r, const char* name, const char* doc, DoubleFn f) {
  r.add(OpDef{
      .name = name,
      .operands = {{"x", OperandKind::Tensor}},
      .attrs = {},
      .category = OpCategory::Elementwise,
      .doc = doc,
      .infer = infer_float_math,
      .reference = [f](const RefContext& ctx) -> std::vector<Tensor> {
        return {map_double(ctx, f)};
      },
  });
}

double sigmoid(double x) {
  return 1.0 / (1.0 + std::exp(-x));
}

double gelu_erf(double x) {
  return 0.5 * x * (1.0 + std::erf(x / std::numbers::sqrt2));
}

double gelu_tanh(double x) {
  const double k = std::sqrt(2.0 / std::numbers::pi);
  return 0.5 * x * (1.0 + std::tanh(k * (x + 0.044715 * x * x * x)));
}

void add_gelu(OpRegistry& r) {
  r.add(OpDef{
      .name = "gelu",
      .operands = {{"x", OperandKind::Tensor}},
      .attrs = {{"approximate", AttrKind::String, AttrValue(std::string("none"))}},
      .category = OpCategory::Elementwise,
      .doc = "Gaussian error linear unit: x * Phi(x), exact (erf) or the tanh approximation",
      .infer =
          [](const InferContext& ctx) {
            const std::string& mode = ctx.attrs.get_string("approximate");
            if (mode != "none" && mode != "tanh") {
              ctx.fail("attribute 'approximate' must be \"none\" or \"tanh\", got \"" + mode +
                       "\"");
            }
            return infer_float_math(ctx);
          },
      .reference = [](const RefContext& ctx) -> std::vector<Tensor> {
        bool tanh_form = ctx.attrs.get_string("approximate") == "tanh";
        return {map_double(ctx, tanh_form ? gelu_tanh : gelu_erf)};
      },
  });
}

// --- numeric ops that keep the input dtype ----------------------------------------------

// `bool_ok`: sign maps bool to itself; the others reject bool like PyTorch.
void add_numeric(OpRegistry& r, const char* name, const char* doc, bool bool_ok, DoubleFn float_fn,
                 IntFn int_fn) {
  r.add(OpDef{
      .name = name,
      .operands = {{"x", OperandKind::Tensor}},
      .attrs = {},
      .category = OpCategory::Elementwise,
      .doc = doc,
      .infer =
          [bool_ok](const InferContext& ctx) {
            DType in = ctx.tensor(0).dtype;
            if (in == DType::Bool && !bool_ok) {
              std::string hint = ctx.op.name == "neg" ? " (use logical_not to invert a mask)" : "";
              ctx.fail("operand " + ew::describe(ctx, 0) + " is bool; " + ctx.op.name +
                       " does not support bool tensors" + hint);
            }
            return same_shape(ctx, in);
          },
      .reference = [float_fn, int_fn](const RefContext& ctx) -> std::vector<Tensor> {
        if (is_floating(ctx.output_types[0].dtype())) return {map_double(ctx, float_fn)};
        return {map_int(ctx, int_fn)};
      },
  });
}

double relu_double(double x) {
  return std::isnan(x) ? x : (x > 0 ? x : 0.0);
}
// PyTorch's sign: (0 < x) - (x < 0), so NaN and -0 give 0.
double sign_double(double x) {
  return double(0.0 < x) - double(x < 0.0);
}
int64_t sign_int(int64_t x) {
  return int64_t(0 < x) - int64_t(x < 0);
}
int64_t identity_int(int64_t x) {
  return x;
}

// --- logical_not and cast ---------------------------------------------------------------

void add_logical_not(OpRegistry& r) {
  r.add(OpDef{
      .name = "logical_not",
      .operands = {{"x", OperandKind::Tensor}},
      .attrs = {},
      .category = OpCategory::Elementwise,
      .doc = "x == 0, as bool, for any input dtype",
      .infer = [](const InferContext& ctx) { return same_shape(ctx, DType::Bool); },
      .reference = [](const RefContext& ctx) -> std::vector<Tensor> {
        // Read as double so NaN (which is "true") compares unequal to zero.
        LoopInput in{ctx.inputs[0], ctx.inputs[0].dtype()};
        return {map_elements<double>({&in, 1}, output_shape(ctx), DType::Bool,
                                     [](const double* a) { return int64_t(a[0] == 0.0); })};
      },
  });
}

void add_cast(OpRegistry& r) {
  r.add(OpDef{
      .name = "cast",
      .operands = {{"x", OperandKind::Tensor}},
      .attrs = {{"dtype", AttrKind::DType, std::nullopt}},
      .category = OpCategory::Elementwise,
      .doc = "converts to another dtype like Tensor.to (float -> int truncates toward zero)",
      .infer =
          [](const InferContext& ctx) { return same_shape(ctx, ctx.attrs.get_dtype("dtype")); },
      .reference = [](const RefContext& ctx) -> std::vector<Tensor> {
        const Tensor& x = ctx.inputs[0];
        DType out = ctx.output_types[0].dtype();
        // Integral sources go through int64 so large i64 values round once into
        // a float target; floating sources go through double.
        LoopInput in{x, x.dtype()};
        if (ew::int_compute(x.dtype())) {
          return {map_elements<int64_t>({&in, 1}, output_shape(ctx), out,
                                        [](const int64_t* a) { return a[0]; })};
        }
        return {map_elements<double>({&in, 1}, output_shape(ctx), out,
                                     [](const double* a) { return a[0]; })};
      },
  });
}

}  // namespace

void register_unary_ops(OpRegistry& r) {
  add_float_math(r, "exp", "e raised to x", [](double x) { return std::exp(x); });
  add_float_math(r, "log", "natural logarithm", [](double x) { return std::log(x); });
  add_float_math(r, "log1p", "log(1 + x), accurate near 0", [](double x) { return std::log1p(x); });
  add_float_math(r, "expm1", "exp(x) - 1, accurate near 0", [](double x) { return std::expm1(x); });
  add_float_math(r, "sqrt", "square root", [](double x) { return std::sqrt(x); });
  add_float_math(r, "rsqrt", "1 / sqrt(x)", [](double x) { return 1.0 / std::sqrt(x); });
  add_float_math(r, "sin", "sine", [](double x) { return std::sin(x); });
  add_float_math(r, "cos", "cosine", [](double x) { return std::cos(x); });
  add_float_math(r, "tanh", "hyperbolic tangent", [](double x) { return std::tanh(x); });
  add_float_math(r, "sigmoid", "logistic function 1 / (1 + exp(-x))", sigmoid);
  add_float_math(r, "silu", "x * sigmoid(x)", [](double x) { return x * sigmoid(x); });
  add_float_math(r, "erf", "Gauss error function", [](double x) { return std::erf(x); });
  add_float_math(r, "reciprocal", "1 / x", [](double x) { return 1.0 / x; });
  add_gelu(r);

  add_numeric(
      r, "neg", "-x (not for bool)", false, [](double x) { return -x; },
      [](int64_t x) { return ew::wrap_sub(0, x); });
  add_numeric(
      r, "abs", "|x| (not for bool)", false, [](double x) { return std::fabs(x); },
      [](int64_t x) { return x < 0 ? ew::wrap_sub(0, x) : x; });
  add_numeric(r, "relu", "max(x, 0), NaN propagates (not for bool)", false, relu_double,
              [](int64_t x) { return x > 0 ? x : int64_t(0); });
  add_numeric(
      r, "floor", "largest integer <= x; integers unchanged (not for bool)", false,
      [](double x) { return std::floor(x); }, identity_int);
  add_numeric(
      r, "ceil", "smallest integer >= x; integers unchanged (not for bool)", false,
      [](double x) { return std::ceil(x); }, identity_int);
  // nearbyint uses the default rounding mode, round-half-to-even, like torch.round.
  add_numeric(
      r, "round", "nearest integer, ties to even; integers unchanged (not for bool)", false,
      [](double x) { return std::nearbyint(x); }, identity_int);
  add_numeric(r, "sign", "-1, 0 or 1 by the sign of x (NaN -> 0; bool unchanged)", true,
              sign_double, sign_int);

  add_logical_not(r);
  add_cast(r);
}

}  // namespace kiln::ir
