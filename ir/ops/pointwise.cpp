// Op family: pointwise math of two or three operands that PyTorch models use
// beyond plain arithmetic — fmod, xlogy, addcmul, addcdiv and lerp. Dtypes
// follow PyTorch:
//   - fmod: result_type of the operands, C semantics (the result has the sign
//     of the dividend); bool is rejected; integer fmod by zero raises the same
//     error as remainder;
//   - xlogy: a float op (integers and bool compute in f32); NaN in y gives NaN,
//     else x == 0 gives 0;
//   - addcmul / addcdiv: input + value * t1 * t2 (or t1 / t2) in result_type of
//     the three tensors; `value` must be an integer for integral dtypes, and
//     addcdiv rejects integral t1 and t2 ("integer division");
//   - lerp: start + weight * (end - start), for floating tensors of one dtype
//     (weight a tensor of that dtype or a number), with PyTorch's two-sided
//     formula so weight 1 gives end exactly.
// References compute in double or int64 and round once into the output dtype.
#include <array>
#include <cmath>

#include "ir/ops/elementwise_util.h"

namespace kiln::ir {
namespace {

using ew::LoopInput;

template <size_t N, typename F>
Tensor run_double(const RefContext& ctx, F f) {
  DType out = ctx.output_types[0].dtype();
  std::array<LoopInput, N> ins;
  for (size_t n = 0; n < N; ++n) ins[n] = {ctx.inputs[n], out};
  return ew::map_elements<double>(ins, ew::output_shape(ctx), out, f);
}

template <size_t N, typename F>
Tensor run_int(const RefContext& ctx, F f) {
  DType out = ctx.output_types[0].dtype();
  std::array<LoopInput, N> ins;
  for (size_t n = 0; n < N; ++n) ins[n] = {ctx.inputs[n], out};
  return ew::map_elements<int64_t>(ins, ew::output_shape(ctx), out, f);
}

// --- fmod, xlogy --------------------------------------------------------------------------

void add_fmod(OpRegistry& r) {
  r.add(OpDef{
      .name = "fmod",
      .operands = {{"a", OperandKind::TensorOrScalar}, {"b", OperandKind::TensorOrScalar}},
      .attrs = {},
      .category = OpCategory::Elementwise,
      .doc = "C-style a mod b, with the sign of a (not for bool)",
      .infer =
          [](const InferContext& ctx) {
            ew::require_tensor(ctx, {0, 1});
            DType t = ew::promote_operands(ctx, {0, 1});
            if (t == DType::Bool) {
              ctx.fail("not supported for bool operands " + ew::describe(ctx, 0) + " and " +
                       ew::describe(ctx, 1));
            }
            return ew::elementwise_output(ctx, {0, 1}, t);
          },
      .reference = [](const RefContext& ctx) -> std::vector<Tensor> {
        if (is_floating(ctx.output_types[0].dtype())) {
          return {run_double<2>(ctx, [](const double* a) { return std::fmod(a[0], a[1]); })};
        }
        return {run_int<2>(ctx, [](const int64_t* a) {
          // The compiled kernels report this through the remainder status bit.
          KILN_USER_CHECK(a[1] != 0, "remainder: integer division by zero (in fmod)");
          return a[1] == -1 ? int64_t{0} : a[0] % a[1];  // INT64_MIN % -1 would overflow
        })};
      },
  });
}

void add_xlogy(OpRegistry& r) {
  r.add(OpDef{
      .name = "xlogy",
      .operands = {{"x", OperandKind::TensorOrScalar}, {"y", OperandKind::TensorOrScalar}},
      .attrs = {},
      .category = OpCategory::Elementwise,
      .doc = "x * log(y), 0 where x == 0 unless y is NaN (integers compute in f32)",
      .infer =
          [](const InferContext& ctx) {
            ew::require_tensor(ctx, {0, 1});
            DType t = ew::promote_operands(ctx, {0, 1});
            return ew::elementwise_output(ctx, {0, 1}, is_floating(t) ? t : DType::F32);
          },
      .reference = [](const RefContext& ctx) -> std::vector<Tensor> {
        return {run_double<2>(ctx, [](const double* a) {
          if (std::isnan(a[1])) return a[1];
          return a[0] == 0 ? 0.0 : a[0] * std::log(a[1]);
        })};
      },
  });
}

// --- addcmul, addcdiv -----------------------------------------------------------------------

void add_addc(OpRegistry& r, const char* name, bool divide) {
  std::vector<AttrSpec> attrs(1);
  attrs[0].name = "value";
  attrs[0].kind = AttrKind::Float;
  attrs[0].default_value.emplace(int64_t{1});
  r.add(OpDef{
      .name = name,
      .operands = {{"input", OperandKind::Tensor},
                   {"tensor1", OperandKind::Tensor},
                   {"tensor2", OperandKind::Tensor}},
      .attrs = std::move(attrs),
      .category = OpCategory::Elementwise,
      .doc = divide ? "input + value * tensor1 / tensor2 (tensor1, tensor2 floating)"
                    : "input + value * tensor1 * tensor2",
      .infer =
          [divide](const InferContext& ctx) {
            DType t = ew::promote_operands(ctx, {0, 1, 2});
            if (divide && !is_floating(ctx.tensor(1).dtype) && !is_floating(ctx.tensor(2).dtype)) {
              ctx.fail("integer division with addcdiv is not supported (as in PyTorch): operands " +
                       ew::describe(ctx, 1) + " and " + ew::describe(ctx, 2) +
                       "; convert one to a floating dtype");
            }
            const AttrValue* value = ctx.attrs.find("value");
            if (!is_floating(t) && value && std::holds_alternative<double>(*value)) {
              ctx.fail("attribute 'value' must be an integer for " + std::string(dtype_name(t)) +
                       " operands, got " + attr_str(*value));
            }
            return ew::elementwise_output(ctx, {0, 1, 2}, t);
          },
      .reference = [divide](const RefContext& ctx) -> std::vector<Tensor> {
        if (is_floating(ctx.output_types[0].dtype())) {
          double v = ctx.attrs.get_float("value");
          return {run_double<3>(ctx, [=](const double* a) {
            return divide ? a[0] + v * a[1] / a[2] : a[0] + v * a[1] * a[2];
          })};
        }
        int64_t v = ctx.attrs.get_int("value");
        return {run_int<3>(ctx, [=](const int64_t* a) {
          return ew::wrap_add(a[0], ew::wrap_mul(ew::wrap_mul(v, a[1]), a[2]));
        })};
      },
  });
}

// --- lerp ---------------------------------------------------------------------------------

void add_lerp(OpRegistry& r) {
  r.add(OpDef{
      .name = "lerp",
      .operands = {{"input", OperandKind::Tensor},
                   {"end", OperandKind::Tensor},
                   {"weight", OperandKind::TensorOrScalar}},
      .attrs = {},
      .category = OpCategory::Elementwise,
      .doc = "input + weight * (end - input), for floating tensors of one dtype",
      .infer =
          [](const InferContext& ctx) {
            DType t = ctx.tensor(0).dtype;
            if (!is_floating(t)) {
              ctx.fail("operand " + ew::describe(ctx, 0) +
                       " must be floating: lerp takes floating tensors only (as in PyTorch)");
            }
            for (size_t i : {size_t{1}, size_t{2}}) {
              if (ctx.inputs[i].is_tensor() && ctx.inputs[i].dtype() != t) {
                ctx.fail("operand " + ew::describe(ctx, i) + " must have the dtype of " +
                         ew::describe(ctx, 0) + " (lerp does not promote)");
              }
            }
            return ew::elementwise_output(ctx, {0, 1, 2}, t);
          },
      .reference = [](const RefContext& ctx) -> std::vector<Tensor> {
        // A number weight of an f16/bf16 lerp stays at f32 precision, as in PyTorch.
        DType out = ctx.output_types[0].dtype();
        std::array<LoopInput, 3> ins = {
            LoopInput{ctx.inputs[0], out}, LoopInput{ctx.inputs[1], out},
            LoopInput{ctx.inputs[2], ew::opmath_dtype(out, ctx.input_types[2])}};
        return {ew::map_elements<double>(ins, ew::output_shape(ctx), out, [](const double* a) {
          double diff = a[1] - a[0], w = a[2];
          return std::fabs(w) < 0.5 ? a[0] + w * diff : a[1] - diff * (1 - w);
        })};
      },
  });
}

}  // namespace

void register_pointwise_ops(OpRegistry& r) {
  add_fmod(r);
  add_xlogy(r);
  add_addc(r, "addcmul", false);
  add_addc(r, "addcdiv", true);
  add_lerp(r);
}

}  // namespace kiln::ir
