// Op family: elementwise math beyond exp/log/sin/cos/erf (issue 13) — tan,
// asin, acos, atan, sinh, cosh, asinh, acosh, atanh, log2, log10, exp2, erfc,
// lgamma, digamma, erfinv, trunc, atan2, copysign, hypot. Each is one loop-IR
// intrinsic (ir/loop/extra_math.h) whose double function is also the
// reference here. Dtypes follow PyTorch:
//   - the unary math and atan2/copysign compute in the default float (f32)
//     for integer and bool inputs; floating inputs keep their dtype;
//   - hypot takes floating operands only (PyTorch has no integer kernel);
//   - trunc keeps integral dtypes (they are whole already) and rejects bool.
// PyTorch's values at poles: lgamma(0) = lgamma(negative integer) = inf,
// digamma(+-0) = -+inf, digamma(negative integer) = NaN, erfinv(+-1) = +-inf.
#include <array>
#include <cmath>

#include "ir/loop/extra_math.h"
#include "ir/ops/elementwise_util.h"

namespace kiln::ir {
namespace {

using ew::LoopInput;

void add_unary_math(OpRegistry& r, const char* name, const char* doc) {
  const loop::ExtraMath* m = loop::find_extra_math(name);
  KILN_INTERNAL_CHECK(m && m->arity == 1, "math op " << name << " has no unary intrinsic");
  double (*f)(double) = m->f1;
  r.add(OpDef{
      .name = name,
      .operands = {{"x", OperandKind::Tensor}},
      .attrs = {},
      .category = OpCategory::Elementwise,
      .doc = doc,
      .infer =
          [](const InferContext& ctx) {
            const TensorType& x = ctx.tensor(0);
            DType t = is_floating(x.dtype) ? x.dtype : DType::F32;
            return std::vector<Type>{Type::tensor(t, x.dims, x.device)};
          },
      .reference = [f](const RefContext& ctx) -> std::vector<Tensor> {
        DType out = ctx.output_types[0].dtype();
        LoopInput in{ctx.inputs[0], out};
        return {ew::map_elements<double>({&in, 1}, ew::output_shape(ctx), out,
                                         [f](const double* a) { return f(a[0]); })};
      },
  });
}

void add_binary_math(OpRegistry& r, const char* name, const char* doc, bool float_only) {
  const loop::ExtraMath* m = loop::find_extra_math(name);
  KILN_INTERNAL_CHECK(m && m->arity == 2, "math op " << name << " has no binary intrinsic");
  double (*f)(double, double) = m->f2;
  r.add(OpDef{
      .name = name,
      .operands = {{"a", OperandKind::TensorOrScalar}, {"b", OperandKind::TensorOrScalar}},
      .attrs = {},
      .category = OpCategory::Elementwise,
      .doc = doc,
      .infer =
          [float_only](const InferContext& ctx) {
            ew::require_tensor(ctx, {0, 1});
            DType t = ew::promote_operands(ctx, {0, 1});
            if (float_only && !is_floating(t)) {
              ctx.fail("operands " + ew::describe(ctx, 0) + " and " + ew::describe(ctx, 1) +
                       " are " + dtype_name(t) + "; " + ctx.op.name +
                       " takes floating operands only (as in PyTorch)");
            }
            return ew::elementwise_output(ctx, {0, 1}, is_floating(t) ? t : DType::F32);
          },
      .reference = [f](const RefContext& ctx) -> std::vector<Tensor> {
        DType out = ctx.output_types[0].dtype();
        std::array<LoopInput, 2> ins = {LoopInput{ctx.inputs[0], out},
                                        LoopInput{ctx.inputs[1], out}};
        return {ew::map_elements<double>(ins, ew::output_shape(ctx), out,
                                         [f](const double* a) { return f(a[0], a[1]); })};
      },
  });
}

void add_trunc(OpRegistry& r) {
  r.add(OpDef{
      .name = "trunc",
      .operands = {{"x", OperandKind::Tensor}},
      .attrs = {},
      .category = OpCategory::Elementwise,
      .doc = "x rounded toward zero; integers unchanged (not for bool)",
      .infer =
          [](const InferContext& ctx) {
            const TensorType& x = ctx.tensor(0);
            if (x.dtype == DType::Bool) {
              ctx.fail("operand " + ew::describe(ctx, 0) +
                       " is bool; trunc does not support bool tensors");
            }
            return std::vector<Type>{Type::tensor(x.dtype, x.dims, x.device)};
          },
      .reference = [](const RefContext& ctx) -> std::vector<Tensor> {
        DType out = ctx.output_types[0].dtype();
        LoopInput in{ctx.inputs[0], out};
        if (is_floating(out)) {
          return {ew::map_elements<double>({&in, 1}, ew::output_shape(ctx), out,
                                           [](const double* a) { return std::trunc(a[0]); })};
        }
        return {ew::map_elements<int64_t>({&in, 1}, ew::output_shape(ctx), out,
                                          [](const int64_t* a) { return a[0]; })};
      },
  });
}

}  // namespace

void register_math_ops(OpRegistry& r) {
  add_unary_math(r, "tan", "tangent");
  add_unary_math(r, "asin", "inverse sine (NaN outside [-1, 1])");
  add_unary_math(r, "acos", "inverse cosine (NaN outside [-1, 1])");
  add_unary_math(r, "atan", "inverse tangent");
  add_unary_math(r, "sinh", "hyperbolic sine");
  add_unary_math(r, "cosh", "hyperbolic cosine");
  add_unary_math(r, "asinh", "inverse hyperbolic sine");
  add_unary_math(r, "acosh", "inverse hyperbolic cosine (NaN below 1)");
  add_unary_math(r, "atanh", "inverse hyperbolic tangent (+-inf at +-1)");
  add_unary_math(r, "log2", "base-2 logarithm");
  add_unary_math(r, "log10", "base-10 logarithm");
  add_unary_math(r, "exp2", "2 raised to x");
  add_unary_math(r, "erfc", "complementary error function 1 - erf(x), accurate in the tail");
  add_unary_math(r, "lgamma", "log |Gamma(x)| (inf at 0 and the negative integers)");
  add_unary_math(r, "digamma", "d/dx log Gamma(x) (-+inf at +-0, NaN at negative integers)");
  add_unary_math(r, "erfinv", "inverse error function (+-inf at +-1, NaN outside)");
  add_binary_math(r, "atan2", "angle of the point (b, a): atan(a / b) in the right quadrant",
                  false);
  add_binary_math(r, "copysign", "|a| with the sign of b (including -0.0 and NaN signs)", false);
  add_binary_math(r, "hypot", "sqrt(a^2 + b^2) without overflow (floating operands)", true);
  add_trunc(r);
}

}  // namespace kiln::ir
