// Shared pieces of the layout op family (ir/ops/layout*.cpp): a strided element
// copy for the reference implementations, and dim checks whose errors name the
// operand and its shape. Internal to the family; nothing else includes this.
//
// Reference implementations never return views: each builds a strided window
// onto its input (a View) and copies it into a fresh contiguous output, since
// the interpreter owns its outputs and backends later turn layout into indexing.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/ops/ops.h"
#include "kiln/tensor.h"

namespace kiln::ir::layout {

// A strided window onto a tensor's memory: sizes, strides and offset in
// elements, relative to the tensor's data_ptr().
struct View {
  Shape sizes;
  Shape strides;
  int64_t offset = 0;
};

// The window covering all of `t` as it is (its own sizes and strides).
View whole(const Tensor& t);

// Copies the elements of `sv` over `src` into `dv` over `dst` (same sizes),
// converting the dtype when the two tensors differ in it.
void copy_view(const Tensor& src, const View& sv, const Tensor& dst, const View& dv);

// A fresh contiguous tensor with the static shape and dtype inferred for output i.
Tensor alloc_output(const RefContext& ctx, size_t i);

// A fresh output i holding the elements of `sv` over `src` in row-major order
// (output i must have as many elements as `sv`).
Tensor materialize(const RefContext& ctx, size_t i, const Tensor& src, const View& sv);

// A tensor type with x's dtype and device and the given dims.
inline Type like(const TensorType& x, Dims dims) {
  return Type::tensor(x.dtype, std::move(dims), x.device);
}

// `d` wrapped into [0, rank) for a dim already validated by inference.
inline int64_t wrap(int64_t d, int64_t rank) {
  return d < 0 ? d + rank : d;
}

// Validates `dim` against [-rank, rank) — or [-1, 0] for a 0-dim operand when
// `scalar_ok`, like torch — and returns it normalized. The error names the
// operand `what` and its dims.
int64_t check_dim(const InferContext& ctx, int64_t dim, const Dims& dims, const char* what,
                  bool scalar_ok = false);

// "[1, -1, 3]"
std::string ints_str(const std::vector<int64_t>& v);
// "operand 'x' of shape [N, 4]"
std::string operand_str(const char* what, const Dims& dims);

// Registration of the family's parts (one file each).
void register_layout_view_ops(OpRegistry& r);   // reshape, permute, ..., copy (layout_view.cpp)
void register_layout_index_ops(OpRegistry& r);  // slice, select              (layout_index.cpp)
void register_layout_join_ops(OpRegistry& r);   // cat, stack, split, chunk   (layout_join.cpp)

}  // namespace kiln::ir::layout
