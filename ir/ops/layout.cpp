// Op family: layout (reshape, permute, transpose, expand, squeeze, unsqueeze,
// flatten, slice, select, cat, stack, split, chunk, contiguous, copy), with
// PyTorch semantics. This file holds the family's entry point and the pieces
// its parts share (see layout_internal.h); the ops live in layout_*.cpp.
#include <cstring>

#include "ir/ops/layout_internal.h"
#include "kiln/element.h"
#include "kiln/error.h"

namespace kiln::ir {

namespace layout {

View whole(const Tensor& t) {
  return View{t.sizes(), t.strides(), 0};
}

namespace {

// One element from `s` (dtype st) to `d` (dtype dt). Integers go through int64
// so i64 values beyond 2^53 survive; anything touching a float goes through double.
void convert_element(DType st, const char* s, DType dt, char* d) {
  if (!is_floating(st) && !is_floating(dt)) {
    store_int(dt, d, load_as_int(st, s));
  } else {
    store_double(dt, d, load_as_double(st, s));
  }
}

}  // namespace

void copy_view(const Tensor& src, const View& sv, const Tensor& dst, const View& dv) {
  KILN_INTERNAL_CHECK(sv.sizes == dv.sizes, "layout copy between windows of different sizes "
                                                << shape_str(sv.sizes) << " and "
                                                << shape_str(dv.sizes));
  const int64_t total = shape_numel(sv.sizes);
  // Empty windows may sit past the end of their storage; never form a pointer.
  if (total == 0) return;
  const auto* sbase = static_cast<const char*>(src.data_ptr());
  auto* dbase = static_cast<char*>(dst.data_ptr());
  const DType st = src.dtype(), dt = dst.dtype();
  const auto ses = static_cast<int64_t>(dtype_size(st));
  const auto des = static_cast<int64_t>(dtype_size(dt));
  const bool same = st == dt;
  const auto rank = static_cast<int64_t>(sv.sizes.size());

  // Odometer over the window: offsets move incrementally, so each element costs
  // one add per dim that rolls over rather than a dot product.
  std::vector<int64_t> idx(static_cast<size_t>(rank), 0);
  int64_t so = sv.offset, doff = dv.offset;
  for (int64_t n = 0; n < total; ++n) {
    const char* s = sbase + so * ses;
    char* d = dbase + doff * des;
    if (same) {
      std::memcpy(d, s, static_cast<size_t>(ses));
    } else {
      convert_element(st, s, dt, d);
    }
    for (int64_t k = rank - 1; k >= 0; --k) {
      const auto ku = static_cast<size_t>(k);
      if (++idx[ku] < sv.sizes[ku]) {
        so += sv.strides[ku];
        doff += dv.strides[ku];
        break;
      }
      so -= sv.strides[ku] * (sv.sizes[ku] - 1);
      doff -= dv.strides[ku] * (sv.sizes[ku] - 1);
      idx[ku] = 0;
    }
  }
}

Tensor alloc_output(const RefContext& ctx, size_t i) {
  KILN_INTERNAL_CHECK(i < ctx.output_types.size(), ctx.op.name << ": no output type " << i);
  const Type& t = ctx.output_types[i];
  return Tensor::empty(static_shape(t.dims()), t.dtype());
}

Tensor materialize(const RefContext& ctx, size_t i, const Tensor& src, const View& sv) {
  Tensor out = alloc_output(ctx, i);
  KILN_INTERNAL_CHECK(out.numel() == shape_numel(sv.sizes),
                      ctx.op.name << ": output " << i << " of shape " << shape_str(out.sizes())
                                  << " cannot hold a window of shape " << shape_str(sv.sizes));
  // The output is packed, so its memory read in the window's own row-major
  // order is the same sequence of elements whatever the output's shape.
  copy_view(src, sv, out, View{sv.sizes, contiguous_strides(sv.sizes), 0});
  return out;
}

std::string ints_str(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(v[i]);
  }
  return s + "]";
}

std::string operand_str(const char* what, const Dims& dims) {
  return std::string("operand '") + what + "' of shape " + dims_str(dims);
}

int64_t check_dim(const InferContext& ctx, int64_t dim, const Dims& dims, const char* what,
                  bool scalar_ok) {
  auto rank = static_cast<int64_t>(dims.size());
  // torch lets a 0-dim tensor be addressed as if it had one dim of size 1.
  if (rank == 0 && scalar_ok) rank = 1;
  if (dim < -rank || dim >= rank) {
    if (rank == 0) {
      ctx.fail("dim " + std::to_string(dim) + " given for 0-dim " + operand_str(what, dims));
    }
    ctx.fail("dim " + std::to_string(dim) + " is out of range [" + std::to_string(-rank) + ", " +
             std::to_string(rank - 1) + "] for " + operand_str(what, dims));
  }
  return normalize_dim(ctx, dim, rank);
}

}  // namespace layout

void register_layout_ops(OpRegistry& r) {
  layout::register_layout_view_ops(r);
  layout::register_layout_index_ops(r);
  layout::register_layout_join_ops(r);
}

}  // namespace kiln::ir
