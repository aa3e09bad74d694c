// Dim-list checking and the [rows, cols] element walk shared by the reduction
// and normalization reference implementations. Assumes CPU tensors.
#include "ir/ops/reduction_util.h"

#include <algorithm>
#include <string>

#include "ir/ops/ops.h"
#include "kiln/error.h"

namespace kiln::ir {

namespace {

std::string ints_str(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

}  // namespace

std::vector<bool> reduced_dims(const InferContext& ctx, const std::vector<int64_t>& dims,
                               int64_t rank) {
  std::vector<bool> mask(static_cast<size_t>(rank), dims.empty());
  // A 0-dim tensor wraps dims as if it had one dim (PyTorch's rule), so dim 0
  // and -1 are valid and name "the" element.
  const int64_t wrap_rank = std::max<int64_t>(rank, 1);
  std::vector<bool> seen(static_cast<size_t>(wrap_rank), false);
  for (int64_t d : dims) {
    int64_t n = normalize_dim(ctx, d, rank);
    if (seen[static_cast<size_t>(n)]) {
      ctx.fail("dim " + std::to_string(n) + " appears more than once in dim " + ints_str(dims) +
               " for operand of rank " + std::to_string(rank));
    }
    seen[static_cast<size_t>(n)] = true;
    if (rank > 0) mask[static_cast<size_t>(n)] = true;
  }
  return mask;
}

std::vector<bool> reduced_dims_checked(const std::vector<int64_t>& dims, int64_t rank) {
  std::vector<bool> mask(static_cast<size_t>(rank), dims.empty());
  if (rank == 0) return mask;
  for (int64_t d : dims) {
    int64_t n = d < 0 ? d + rank : d;
    KILN_INTERNAL_CHECK(n >= 0 && n < rank,
                        "reduction dim " << d << " unchecked for rank " << rank);
    mask[static_cast<size_t>(n)] = true;
  }
  return mask;
}

std::vector<bool> single_dim_mask(int64_t dim, int64_t rank) {
  std::vector<bool> mask(static_cast<size_t>(rank), false);
  if (rank == 0) return mask;
  int64_t n = dim < 0 ? dim + rank : dim;
  KILN_INTERNAL_CHECK(n >= 0 && n < rank, "dim " << dim << " unchecked for rank " << rank);
  mask[static_cast<size_t>(n)] = true;
  return mask;
}

Dims reduce_dims(const Dims& in, const std::vector<bool>& reduced, bool keepdim) {
  Dims out;
  for (size_t i = 0; i < in.size(); ++i) {
    if (!reduced[i]) {
      out.push_back(in[i]);
    } else if (keepdim) {
      out.push_back(Dim(1));
    }
  }
  return out;
}

void check_nonempty_reduced(const InferContext& ctx, const TensorType& x,
                            const std::vector<bool>& reduced) {
  for (size_t i = 0; i < reduced.size(); ++i) {
    if (reduced[i] && x.dims[i].is_static() && x.dims[i].value == 0) {
      ctx.fail("cannot reduce over a zero-size dim " + std::to_string(i) + " of operand '" +
               ctx.op.operands[0].name + "' " + x.str() + " (the result has no identity)");
    }
  }
}

void require_floating(const InferContext& ctx, const char* operand, DType t) {
  if (!is_floating(t)) {
    ctx.fail(std::string("operand '") + operand + "' has dtype " + dtype_name(t) +
             "; expected a floating dtype (f16, bf16, f32, f64)");
  }
}

RowLayout row_layout(const Tensor& t, const std::vector<bool>& reduced) {
  const int64_t rank = t.dim();
  KILN_INTERNAL_CHECK(static_cast<int64_t>(reduced.size()) == rank,
                      "reduction mask of " << reduced.size() << " dims for rank " << rank);
  // Kept dims first, then reduced dims: a row-major walk over this order lists
  // each output element's inputs contiguously.
  Shape sizes, strides;
  RowLayout layout;
  for (int pass = 0; pass < 2; ++pass) {
    for (int64_t d = 0; d < rank; ++d) {
      if (reduced[static_cast<size_t>(d)] != (pass == 1)) continue;
      sizes.push_back(t.size(d));
      strides.push_back(t.stride(d));
      (pass == 0 ? layout.rows : layout.cols) *= t.size(d);
    }
  }
  const int64_t total = layout.rows * layout.cols;
  if (total == 0) return layout;
  layout.offsets.reserve(static_cast<size_t>(total));
  std::vector<int64_t> index(sizes.size(), 0);
  int64_t offset = 0;
  for (int64_t n = 0; n < total; ++n) {
    layout.offsets.push_back(offset);
    // Odometer step from the innermost dim.
    for (size_t d = sizes.size(); d-- > 0;) {
      if (++index[d] < sizes[d]) {
        offset += strides[d];
        break;
      }
      offset -= strides[d] * (sizes[d] - 1);
      index[d] = 0;
    }
  }
  return layout;
}

std::vector<double> load_rows_double(const Tensor& t, const RowLayout& layout) {
  std::vector<double> out;
  out.reserve(layout.offsets.size());
  const char* base = static_cast<const char*>(t.data_ptr());
  const int64_t size = static_cast<int64_t>(t.element_size());
  for (int64_t off : layout.offsets) out.push_back(load_as_double(t.dtype(), base + off * size));
  return out;
}

std::vector<int64_t> load_rows_int(const Tensor& t, const RowLayout& layout) {
  std::vector<int64_t> out;
  out.reserve(layout.offsets.size());
  const char* base = static_cast<const char*>(t.data_ptr());
  const int64_t size = static_cast<int64_t>(t.element_size());
  for (int64_t off : layout.offsets) out.push_back(load_as_int(t.dtype(), base + off * size));
  return out;
}

void store_rows_double(const Tensor& t, const RowLayout& layout,
                       const std::vector<double>& values) {
  KILN_INTERNAL_CHECK(values.size() == layout.offsets.size(),
                      "storing " << values.size() << " values into " << layout.offsets.size());
  char* base = static_cast<char*>(t.data_ptr());
  const int64_t size = static_cast<int64_t>(t.element_size());
  for (size_t i = 0; i < values.size(); ++i) {
    store_double(t.dtype(), base + layout.offsets[i] * size, values[i]);
  }
}

Tensor empty_like_type(const Type& type) {
  return Tensor::empty(static_shape(type.dims()), type.dtype());
}

}  // namespace kiln::ir
