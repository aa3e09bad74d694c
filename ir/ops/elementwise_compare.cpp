// Comparison, logical and bitwise elementwise ops (part of register_binary_ops):
//   - eq, ne, lt, le, gt, ge compare in the promoted dtype of their operands
//     (so an i32 tensor is compared with a float scalar as f32) and give bool;
//   - logical_and/or/xor take any dtypes (nonzero, NaN included, is true) and
//     give bool;
//   - bitwise_and/or/xor/not take integral and bool operands only and keep the
//     promoted dtype.
#include <array>
#include <cmath>
#include <functional>

#include "ir/ops/elementwise_util.h"

namespace kiln::ir {
namespace {

using ew::LoopInput;

// --- comparisons -----------------------------------------------------------------------

template <typename Compare>
void add_compare(OpRegistry& r, const char* name, const char* doc, Compare cmp) {
  r.add(OpDef{
      .name = name,
      .operands = {{"a", OperandKind::TensorOrScalar}, {"b", OperandKind::TensorOrScalar}},
      .attrs = {},
      .category = OpCategory::Elementwise,
      .doc = doc,
      .infer =
          [](const InferContext& ctx) {
            ew::require_tensor(ctx, {0, 1});
            return ew::elementwise_output(ctx, {0, 1}, DType::Bool);
          },
      .reference = [cmp](const RefContext& ctx) -> std::vector<Tensor> {
        DType compute = result_type(ctx.input_types);
        std::array<LoopInput, 2> ins{LoopInput{ctx.inputs[0], compute},
                                     LoopInput{ctx.inputs[1], compute}};
        Shape shape = ew::output_shape(ctx);
        if (is_floating(compute)) {
          return {ew::map_elements<double>(
              ins, shape, DType::Bool, [&](const double* a) { return int64_t(cmp(a[0], a[1])); })};
        }
        return {ew::map_elements<int64_t>(
            ins, shape, DType::Bool, [&](const int64_t* a) { return int64_t(cmp(a[0], a[1])); })};
      },
  });
}

// --- logical ---------------------------------------------------------------------------

void add_logical(OpRegistry& r, const char* name, const char* doc, bool (*combine)(bool, bool)) {
  r.add(OpDef{
      .name = name,
      .operands = {{"a", OperandKind::Tensor}, {"b", OperandKind::Tensor}},
      .attrs = {},
      .category = OpCategory::Elementwise,
      .doc = doc,
      .infer =
          [](const InferContext& ctx) {
            return ew::elementwise_output(ctx, {0, 1}, DType::Bool);
          },
      .reference = [combine](const RefContext& ctx) -> std::vector<Tensor> {
        // Each operand is read in its own dtype: only "is it nonzero" matters.
        std::array<LoopInput, 2> ins{LoopInput{ctx.inputs[0], ctx.inputs[0].dtype()},
                                     LoopInput{ctx.inputs[1], ctx.inputs[1].dtype()}};
        return {ew::map_elements<double>(
            ins, ew::output_shape(ctx), DType::Bool,
            [&](const double* a) { return int64_t(combine(a[0] != 0.0, a[1] != 0.0)); })};
      },
  });
}

// --- bitwise ---------------------------------------------------------------------------

DType require_integral(const InferContext& ctx, std::initializer_list<size_t> which) {
  DType t = ew::promote_operands(ctx, which);
  bool ok = !is_floating(t);
  for (size_t i : which) ok = ok && !is_floating(ctx.inputs[i].dtype());
  if (!ok) {
    std::string names;
    for (size_t i : which) names += (names.empty() ? "" : ", ") + ew::describe(ctx, i);
    ctx.fail("operands must be integral or bool, got " + names);
  }
  return t;
}

void add_bitwise(OpRegistry& r, const char* name, const char* doc,
                 int64_t (*combine)(int64_t, int64_t)) {
  r.add(OpDef{
      .name = name,
      .operands = {{"a", OperandKind::TensorOrScalar}, {"b", OperandKind::TensorOrScalar}},
      .attrs = {},
      .category = OpCategory::Elementwise,
      .doc = doc,
      .infer =
          [](const InferContext& ctx) {
            ew::require_tensor(ctx, {0, 1});
            return ew::elementwise_output(ctx, {0, 1}, require_integral(ctx, {0, 1}));
          },
      .reference = [combine](const RefContext& ctx) -> std::vector<Tensor> {
        DType out = ctx.output_types[0].dtype();
        std::array<LoopInput, 2> ins{LoopInput{ctx.inputs[0], out}, LoopInput{ctx.inputs[1], out}};
        return {ew::map_elements<int64_t>(ins, ew::output_shape(ctx), out,
                                          [&](const int64_t* a) { return combine(a[0], a[1]); })};
      },
  });
}

void add_bitwise_not(OpRegistry& r) {
  r.add(OpDef{
      .name = "bitwise_not",
      .operands = {{"x", OperandKind::Tensor}},
      .attrs = {},
      .category = OpCategory::Elementwise,
      .doc = "~x for integers, logical not for bool",
      .infer =
          [](const InferContext& ctx) {
            return ew::elementwise_output(ctx, {0}, require_integral(ctx, {0}));
          },
      .reference = [](const RefContext& ctx) -> std::vector<Tensor> {
        DType out = ctx.output_types[0].dtype();
        LoopInput in{ctx.inputs[0], out};
        bool is_bool = out == DType::Bool;
        return {ew::map_elements<int64_t>(
            {&in, 1}, ew::output_shape(ctx), out,
            [&](const int64_t* a) { return is_bool ? int64_t(a[0] == 0) : ~a[0]; })};
      },
  });
}

}  // namespace

void register_compare_ops(OpRegistry& r) {
  add_compare(r, "eq", "a == b in the promoted dtype, as bool",
              [](auto a, auto b) { return a == b; });
  add_compare(r, "ne", "a != b in the promoted dtype, as bool",
              [](auto a, auto b) { return a != b; });
  add_compare(r, "lt", "a < b in the promoted dtype, as bool",
              [](auto a, auto b) { return a < b; });
  add_compare(r, "le", "a <= b in the promoted dtype, as bool",
              [](auto a, auto b) { return a <= b; });
  add_compare(r, "gt", "a > b in the promoted dtype, as bool",
              [](auto a, auto b) { return a > b; });
  add_compare(r, "ge", "a >= b in the promoted dtype, as bool",
              [](auto a, auto b) { return a >= b; });

  add_logical(r, "logical_and", "a && b (nonzero is true), as bool",
              [](bool a, bool b) { return a && b; });
  add_logical(r, "logical_or", "a || b (nonzero is true), as bool",
              [](bool a, bool b) { return a || b; });
  add_logical(r, "logical_xor", "a != b as truth values (nonzero is true), as bool",
              [](bool a, bool b) { return a != b; });

  add_bitwise(r, "bitwise_and", "a & b (integral and bool only)",
              [](int64_t a, int64_t b) { return a & b; });
  add_bitwise(r, "bitwise_or", "a | b (integral and bool only)",
              [](int64_t a, int64_t b) { return a | b; });
  add_bitwise(r, "bitwise_xor", "a ^ b (integral and bool only)",
              [](int64_t a, int64_t b) { return a ^ b; });
  add_bitwise_not(r);
}

}  // namespace kiln::ir
