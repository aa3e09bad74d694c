// Op family: selection — sort, topk, kthvalue, median, nanmedian along one
// dim, each giving (values, i64 indices) as PyTorch does.
//
// Order: PyTorch's stable order. Ascending, NaN sorts after every number;
// descending, before every number; equal elements (and NaNs among
// themselves) keep their original order, so indices are deterministic and
// match torch.sort(stable=True). topk, kthvalue and median pick from that
// same order (PyTorch leaves the index of a tie unspecified there; Kiln gives
// the first). median is the lower median, and a row holding NaN gives its
// first NaN (as torch.median does). nanmedian is the lower median of the
// row's numbers, NaNs left out (they sort last, so it is position (m-1)/2 of
// the order for m numbers); an all-NaN row gives NaN and index 0.
//
// Shapes: sort keeps x's dims; topk has k along dim; kthvalue and (nan)median drop
// dim (keep it as 1 with keepdim). A 0-dim x accepts dim 0/-1 and is one
// element. topk and kthvalue need a static size along dim so that k is
// checked at compile time.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <type_traits>

#include "ir/ops/ops.h"
#include "ir/ops/reduction_util.h"
#include "kiln/error.h"

namespace kiln::ir {

namespace {

AttrSpec int_attr(const char* name, std::optional<int64_t> def) {
  AttrSpec a;
  a.name = name;
  a.kind = AttrKind::Int;
  if (def) a.default_value.emplace(*def);
  return a;
}
AttrSpec bool_attr(const char* name, bool def) {
  return {name, AttrKind::Bool, AttrValue(def)};
}

// The size of x along the checked dim `d` (1 for a 0-dim x).
Dim size_along(const TensorType& x, int64_t d) {
  if (x.rank() == 0) return Dim(1);
  return x.dims[static_cast<size_t>(d < 0 ? d + x.rank() : d)];
}

// Validates `dim`, returns the reduced mask.
std::vector<bool> checked_dim(const InferContext& ctx) {
  return reduced_dims(ctx, {ctx.attrs.get_int("dim")}, ctx.tensor(0).rank());
}

// k must be in [lo, size] of a static size along dim.
void check_k(const InferContext& ctx, int64_t lo) {
  const TensorType& x = ctx.tensor(0);
  const int64_t k = ctx.attrs.get_int("k");
  const Dim n = size_along(x, ctx.attrs.get_int("dim"));
  if (!n.is_static()) {
    ctx.fail("the size along dim " + std::to_string(ctx.attrs.get_int("dim")) + " of x " + x.str() +
             " is known only at run time; " + ctx.op.name +
             " needs a static size there so that k is checked when compiling");
  }
  if (k < lo || k > n.value) {
    ctx.fail("k = " + std::to_string(k) + " is out of range for dim " +
             std::to_string(ctx.attrs.get_int("dim")) + " of size " + std::to_string(n.value) +
             " (x is " + x.str() + "; k must be in [" + std::to_string(lo) + ", " +
             std::to_string(n.value) + "])");
  }
}

template <typename T>
bool nan_of(T v) {
  if constexpr (std::is_floating_point_v<T>) {
    return std::isnan(v);
  } else {
    return false;
  }
}

// The stable order of one row: positions of row[] in sorted order.
template <typename T>
std::vector<int64_t> stable_order(const T* row, int64_t n, bool descending) {
  std::vector<int64_t> p(static_cast<size_t>(n));
  std::iota(p.begin(), p.end(), int64_t{0});
  std::stable_sort(p.begin(), p.end(), [&](int64_t a, int64_t b) {
    T x = row[a], y = row[b];
    if (descending) return x > y || (nan_of(x) && !nan_of(y));
    return x < y || (nan_of(y) && !nan_of(x));
  });
  return p;
}

// Calls emit(row, order, first_nan, nans) for every row of x along `dim`
// (first_nan: the column of the row's first NaN, or -1; nans: their count).
template <typename Emit>
void for_each_sorted_row(const Tensor& x, const RowLayout& l, bool descending, Emit&& emit) {
  auto run = [&](const auto& v) {
    for (int64_t r = 0; r < l.rows; ++r) {
      const auto* row = v.data() + r * l.cols;
      int64_t first_nan = -1, nans = 0;
      for (int64_t c = 0; c < l.cols; ++c) {
        if (!nan_of(row[c])) continue;
        if (first_nan < 0) first_nan = c;
        ++nans;
      }
      emit(r, stable_order(row, l.cols, descending), first_nan, nans);
    }
  };
  if (is_floating(x.dtype())) {
    run(load_rows_double(x, l));
  } else {
    run(load_rows_int(x, l));
  }
}

// Copies element (r, c) of x's layout to element `at` (in elements) of out.
void copy_to(const Tensor& x, const RowLayout& l, int64_t r, int64_t c, const Tensor& out,
             int64_t at) {
  const int64_t off = l.offsets[static_cast<size_t>(r * l.cols + c)];
  const char* src = static_cast<const char*>(x.data_ptr()) + off * int64_t(x.element_size());
  std::memcpy(element_ptr(out, at), src, x.element_size());
}

RowLayout dim_layout(const RefContext& ctx, const Tensor& t) {
  return row_layout(t, single_dim_mask(ctx.attrs.get_int("dim"), t.dim()));
}

// sort and topk: the first `count` of each row's order into (values, indices).
std::vector<Tensor> ref_leading(const RefContext& ctx, bool descending, int64_t count) {
  const Tensor& x = ctx.inputs[0];
  RowLayout l = dim_layout(ctx, x);
  Tensor values = empty_like_type(ctx.output_types[0]);
  Tensor indices = empty_like_type(ctx.output_types[1]);
  RowLayout o = dim_layout(ctx, values);  // contiguous: offsets are element numbers
  auto put = [&](int64_t r, const std::vector<int64_t>& order, int64_t, int64_t) {
    for (int64_t c = 0; c < count; ++c) {
      const int64_t at = o.offsets[static_cast<size_t>(r * o.cols + c)];
      copy_to(x, l, r, order[static_cast<size_t>(c)], values, at);
      indices.data<int64_t>()[at] = order[static_cast<size_t>(c)];
    }
  };
  for_each_sorted_row(x, l, descending, put);
  return {values, indices};
}

enum class Pick { Kth, Median, NanMedian };

// kthvalue and (nan)median: one element of each row's ascending order.
std::vector<Tensor> ref_pick(const RefContext& ctx, Pick pick) {
  const bool is_median = pick != Pick::Kth;
  const Tensor& x = ctx.inputs[0];
  RowLayout l = dim_layout(ctx, x);
  KILN_USER_CHECK(l.rows == 0 || l.cols > 0,
                  ctx.op.name << ": cannot take the median of a zero-size dim of x "
                              << ctx.input_types[0].str());
  Tensor values = empty_like_type(ctx.output_types[0]);
  Tensor indices = empty_like_type(ctx.output_types[1]);
  const int64_t pos = is_median ? (l.cols - 1) / 2 : ctx.attrs.get_int("k") - 1;
  for_each_sorted_row(
      x, l, false,
      [&](int64_t r, const std::vector<int64_t>& order, int64_t first_nan, int64_t nans) {
        int64_t at = pos;
        // NaNs sort last: the numbers are the first m of the order.
        const int64_t m = l.cols - nans;
        if (pick == Pick::NanMedian) at = m > 0 ? (m - 1) / 2 : 0;
        int64_t c = order[static_cast<size_t>(at)];
        if (pick == Pick::Median && first_nan >= 0) c = first_nan;
        copy_to(x, l, r, c, values, r);
        indices.data<int64_t>()[r] = c;
      });
  return {values, indices};
}

std::vector<Type> pair(const TensorType& x, Dims dims) {
  return {Type::tensor(x.dtype, dims, x.device), Type::tensor(DType::I64, dims, x.device)};
}

OpDef sort_op() {
  OpDef d;
  d.name = "sort";
  d.operands = {{"x"}};
  d.attrs = {int_attr("dim", -1), bool_attr("descending", false), bool_attr("stable", false)};
  d.category = OpCategory::Other;
  d.doc = "(values, i64 indices) of x sorted along dim; always stable, NaN largest";
  d.infer = [](const InferContext& ctx) {
    checked_dim(ctx);
    return pair(ctx.tensor(0), ctx.tensor(0).dims);
  };
  d.reference = [](const RefContext& ctx) {
    const Tensor& x = ctx.inputs[0];
    return ref_leading(ctx, ctx.attrs.get_bool("descending"), dim_layout(ctx, x).cols);
  };
  return d;
}

OpDef topk_op() {
  OpDef d;
  d.name = "topk";
  d.operands = {{"x"}};
  d.attrs = {int_attr("k", std::nullopt), int_attr("dim", -1), bool_attr("largest", true),
             bool_attr("sorted", true)};
  d.category = OpCategory::Other;
  d.doc = "(values, i64 indices) of the k largest (smallest) along dim, in sorted order";
  d.infer = [](const InferContext& ctx) {
    const TensorType& x = ctx.tensor(0);
    std::vector<bool> mask = checked_dim(ctx);
    check_k(ctx, 0);
    Dims out = x.dims;
    for (size_t i = 0; i < mask.size(); ++i) {
      if (mask[i]) out[i] = Dim(ctx.attrs.get_int("k"));
    }
    return pair(x, out);
  };
  d.reference = [](const RefContext& ctx) {
    return ref_leading(ctx, ctx.attrs.get_bool("largest"), ctx.attrs.get_int("k"));
  };
  return d;
}

OpDef pick_op(Pick pick) {
  const bool is_median = pick != Pick::Kth;
  OpDef d;
  d.name = pick == Pick::Kth ? "kthvalue" : pick == Pick::Median ? "median" : "nanmedian";
  d.operands = {{"x"}};
  if (pick == Pick::Median) {
    d.attrs = {int_attr("dim", std::nullopt), bool_attr("keepdim", false)};
    d.doc = "(values, i64 indices) of the lower median along dim; NaN if the row has one";
  } else if (pick == Pick::NanMedian) {
    d.attrs = {int_attr("dim", std::nullopt), bool_attr("keepdim", false)};
    d.doc = "(values, i64 indices) of the lower median along dim of the non-NaN elements";
  } else {
    d.attrs = {int_attr("k", std::nullopt), int_attr("dim", -1), bool_attr("keepdim", false)};
    d.doc = "(values, i64 indices) of the k-th smallest along dim (k from 1)";
  }
  d.category = OpCategory::Other;
  d.infer = [is_median](const InferContext& ctx) {
    const TensorType& x = ctx.tensor(0);
    std::vector<bool> mask = checked_dim(ctx);
    if (is_median) {
      check_nonempty_reduced(ctx, x, mask);
    } else {
      check_k(ctx, 1);
    }
    return pair(x, reduce_dims(x.dims, mask, ctx.attrs.get_bool("keepdim")));
  };
  d.reference = [pick](const RefContext& ctx) { return ref_pick(ctx, pick); };
  return d;
}

}  // namespace

void register_selection_ops(OpRegistry& r) {
  r.add(sort_op());
  r.add(topk_op());
  r.add(pick_op(Pick::Kth));
  r.add(pick_op(Pick::Median));
  r.add(pick_op(Pick::NanMedian));
}

}  // namespace kiln::ir
