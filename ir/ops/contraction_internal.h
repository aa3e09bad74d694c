// Shared pieces of the contraction op families (ir/ops/contraction.cpp, conv.cpp,
// pool.cpp): operand dtype checks whose errors name every operand with its type,
// int-list attribute parsing, the spatial output-size rule with symbolic dims,
// and widening inputs for the reference loops. Internal to these families.
//
// References compute in a wide type (f64 for floats, i64 for integers) and round
// once into the output dtype, so they are the accurate oracle backends are
// checked against, not a model of any backend's rounding.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "ir/ops/ops.h"
#include "kiln/tensor.h"

namespace kiln::ir::contraction {

// An operand name and its type, for checks and messages ("x is f32[1, 3, 4, 4]").
struct Named {
  const char* name;
  const TensorType* type;
};

// "a is f32[2, 3], b is f32[4, 5]"
std::string describe(std::initializer_list<Named> operands);

enum class DTypeRule : uint8_t { FloatingOnly, FloatingOrIntegral };

// The first operand's dtype must satisfy `rule`; every other operand must share
// it (torch does not promote for matmul or conv) and the device.
void check_operand_types(const InferContext& ctx, std::initializer_list<Named> operands,
                         DTypeRule rule);

// An int-list attribute with 1 or `n` entries (a single value is repeated), each
// at least `min_value`. Fails naming the attribute and the value it got.
std::vector<int64_t> ints_attr(const InferContext& ctx, const std::string& name, size_t n,
                               int64_t min_value);

// One spatial axis of a sliding window (conv or pooling).
struct Window {
  int64_t kernel = 1;
  int64_t stride = 1;
  int64_t dilation = 1;
  int64_t pad_before = 0;
  int64_t pad_after = 0;
  bool ceil_mode = false;

  int64_t extent() const { return dilation * (kernel - 1) + 1; }
  // PyTorch's pooling_output_shape: floor (or ceil, keeping the last window's
  // start inside the input or its leading padding) of the window count. May be
  // zero or negative when the window does not fit.
  int64_t output_size(int64_t input) const;
};

// The output dim of `input` under `w`. A symbolic input passes through when the
// window keeps every size (stride 1, padding totalling extent - 1); any other
// symbolic case fails, since its size is not expressible as a Dim. Fails when
// the output would be empty, with `what` ("input x is f32[...]") in the message.
Dim window_output_dim(const InferContext& ctx, const Dim& input, const Window& w, const char* axis,
                      const std::string& what);

// `t` converted to the wide compute type (f64 for floats, i64 otherwise). Not
// necessarily contiguous: the loops index through strides.
Tensor widen(const Tensor& t);

// The static shape inferred for output i; internal error unless it is `computed`,
// which the reference derived from the actual input sizes (guards the loops'
// indexing against mismatched types).
Shape checked_output_shape(const RefContext& ctx, size_t i, const Shape& computed);

// A 4-D view of a 3-D (C, H, W) or 4-D tensor: unbatched inputs get N = 1.
Tensor as_batched(const Tensor& t);

// max_pool2d and avg_pool2d (ops/pool.cpp); called by register_conv_ops.
void register_pool_ops(OpRegistry& r);

}  // namespace kiln::ir::contraction
