// Helpers shared by the reduction and normalization op families: checking a
// reduction's dim list, the output dims it gives, and reading a tensor as a
// [rows, cols] matrix whose rows run over the kept dims and whose columns run
// over the reduced dims. Reference implementations use these so that any
// strided input view (transposed, broadcast) is handled in one place.
#pragma once

#include <cstdint>
#include <vector>

#include "ir/op_registry.h"
#include "kiln/element.h"
#include "kiln/tensor.h"

namespace kiln::ir {

// Which of `rank` dims the dim list `dims` names; an empty list names all dims.
// Negative dims count from the end. A 0-dim tensor accepts dim 0 and -1 (like
// PyTorch) and reduces nothing. Fails through ctx on an out-of-range or
// repeated dim.
std::vector<bool> reduced_dims(const InferContext& ctx, const std::vector<int64_t>& dims,
                               int64_t rank);
// The same for a dim list already checked by inference (reference side).
std::vector<bool> reduced_dims_checked(const std::vector<int64_t>& dims, int64_t rank);
// Only `dim` reduced (already checked).
std::vector<bool> single_dim_mask(int64_t dim, int64_t rank);

// Output dims of a reduction: reduced dims are dropped, or become 1 with
// keepdim; kept dims (symbolic ones included) pass through.
Dims reduce_dims(const Dims& in, const std::vector<bool>& reduced, bool keepdim);

// For reductions without an identity (amax, max, argmax): fails when a reduced
// dim is statically of size zero, naming the dim and the operand's type.
void check_nonempty_reduced(const InferContext& ctx, const TensorType& x,
                            const std::vector<bool>& reduced);

// Fails unless `t` is floating, naming the operand and its dtype.
void require_floating(const InferContext& ctx, const char* operand, DType t);

// Element offsets (in elements, from t.data_ptr()) of `t` listed row by row:
// kept dims outer, reduced dims inner, each in their original order. Element c
// of row r is offsets[r * cols + c].
struct RowLayout {
  int64_t rows = 1;
  int64_t cols = 1;
  std::vector<int64_t> offsets;
};
RowLayout row_layout(const Tensor& t, const std::vector<bool>& reduced);

// All elements of `t` in layout order, widened: double for any dtype, or
// int64 (floats truncate toward zero).
std::vector<double> load_rows_double(const Tensor& t, const RowLayout& layout);
std::vector<int64_t> load_rows_int(const Tensor& t, const RowLayout& layout);
// Writes `values` (layout order) into `t`, each rounded once to t's dtype.
void store_rows_double(const Tensor& t, const RowLayout& layout, const std::vector<double>& values);

// A fresh contiguous tensor with the static shape and dtype of `type`.
Tensor empty_like_type(const Type& type);

// Element i of a contiguous tensor, as a raw pointer for load_/store_ calls.
inline void* element_ptr(const Tensor& t, int64_t i) {
  return static_cast<char*>(t.data_ptr()) + i * static_cast<int64_t>(t.element_size());
}

}  // namespace kiln::ir
