// Registration entry points of the op families (one file each) and the helpers
// they share: broadcasting, dim normalization, PyTorch's result_type.
#pragma once

#include <span>
#include <vector>

#include "ir/op_registry.h"

namespace kiln::ir {

void register_constant_ops(OpRegistry& r);       // constant, arange, full  (ops/constant.cpp)
void register_unary_ops(OpRegistry& r);          // neg, exp, ..., cast     (ops/unary.cpp)
void register_binary_ops(OpRegistry& r);         // add, ..., where, clamp  (ops/binary.cpp)
void register_reduction_ops(OpRegistry& r);      // sum, mean, max, var, .. (ops/reduction.cpp)
void register_normalization_ops(OpRegistry& r);  // softmax, layer_norm, .. (ops/normalization.cpp)
void register_contraction_ops(OpRegistry& r);    // matmul, bmm, linear     (ops/contraction.cpp)
void register_conv_ops(OpRegistry& r);           // conv2d, max/avg_pool2d  (ops/conv.cpp)
void register_layout_ops(OpRegistry& r);         // reshape, permute, cat.. (ops/layout.cpp)
void register_activation_ops(OpRegistry& r);     // leaky_relu, elu, isnan.. (ops/activation.cpp)
void register_scan_ops(OpRegistry& r);           // cumsum, cummax, ..      (ops/scan.cpp)
void register_pointwise_ops(OpRegistry& r);      // fmod, xlogy, addcmul,.. (ops/pointwise.cpp)
void register_indexing_ops(OpRegistry& r);       // gather, scatter          (ops/indexing.cpp)
void register_layout_stride_ops(OpRegistry& r);  // flip, diagonal, unfold (ops/layout_stride.cpp)
void register_math_ops(OpRegistry& r);           // tan, atan2, lgamma, ..  (ops/math.cpp)
void register_selection_ops(OpRegistry& r);      // sort, topk, median, .. (ops/selection.cpp)

// SELU's fixed constants (Klambauer et al.), as PyTorch spells them.
inline constexpr double kSeluAlpha = 1.6732632423543772848170429916717;
inline constexpr double kSeluScale = 1.0507009873554804934193349852946;
// The largest finite value of a floating dtype (nan_to_num's +inf default).
double dtype_max_finite(DType t);

// --- shared helpers (ops/helpers.cpp) ---------------------------------------------

// Broadcasts two dim lists the NumPy/PyTorch way (symbolic dims broadcast when
// equal or against 1). Returns nullopt when they do not broadcast.
std::optional<Dims> broadcast_dims(const Dims& a, const Dims& b);
// Normalizes a possibly negative dim against `rank`; fails through ctx.
int64_t normalize_dim(const InferContext& ctx, int64_t dim, int64_t rank);

// PyTorch's result_type over operands: dimensioned tensors, then 0-dim tensors,
// then scalars, each group counting only when it lifts the category
// (bool < integral < floating). Int scalars alone give i64, float scalars f32.
DType result_type(std::span<const Type> operands);

// Broadcasting view: `t` viewed with `sizes` (t's dims aligned right, size-1 and
// missing dims given stride 0). No copy.
Tensor broadcast_to(const Tensor& t, const Shape& sizes);

// Calls f(index) for every index of `sizes` in row-major order (nothing for 0 elements).
void for_each_index(const Shape& sizes, const std::function<void(std::span<const int64_t>)>& f);

}  // namespace kiln::ir
