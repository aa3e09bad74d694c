// Advanced indexing with integer index tensors, shared by subscripts
// (lower_index.cpp: x[idx], x[:, i0, i1], x[idx] = v) and the op table
// (lower_ops_index.cpp: index_put, index_select, ...). Both compose the
// registry's gather and scatter (ir/ops/indexing.cpp).
#pragma once

#include <vector>

#include "frontend/lower.h"

namespace kiln::frontend {

// One index tensor and the dim of x it indexes (dims ascending).
struct DimIndex {
  int64_t dim = 0;
  ir::Value* index = nullptr;
  Span span;  // where the index was written, for its errors
};

// x[..., i0, ..., i1, ...] with the other dims taken whole, as PyTorch places
// the result: the broadcast index shape replaces the indexed dims when they
// are adjacent, else it comes first. Negative indices count from the end.
ir::Value* index_get(Lowerer& L, ir::Value* x, const std::vector<DimIndex>& indices,
                     const Span& at);

// x with the same elements set to `value` (broadcast to what index_get
// returns, converted to x's dtype), or with it added (accumulate: duplicates
// all count, in order).
ir::Value* index_put(Lowerer& L, ir::Value* x, const std::vector<DimIndex>& indices,
                     ir::Value* value, bool accumulate, const Span& at);

// Fails at `at` unless `index` is an integer tensor; a bool (or uint8) mask
// gets the data-dependent-shape error naming the static alternatives.
void check_index_tensor(Lowerer& L, ir::Value* index, const Span& at);

}  // namespace kiln::frontend
