// Op family: reduction — sum, mean, prod, amax, amin, max, min, argmax,
// argmin, var, std, any, all (bool, or uint8 for uint8), with PyTorch's
// semantics (dtype rules, keepdim, empty dims, NaN propagation, first index on
// ties).
//
// References read the input as [rows, cols] (kept dims x reduced dims, see
// reduction_util.h) and accumulate wide: double for floating results, int64
// (wrapping, as torch does) for integer ones. Outputs are fresh contiguous
// tensors whose row-major order is the row order of that walk.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <type_traits>

#include "ir/ops/ops.h"
#include "ir/ops/reduction_util.h"
#include "kiln/error.h"

namespace kiln::ir {

namespace {

AttrSpec dim_list_attr() {
  return {"dim", AttrKind::Ints, AttrValue(std::vector<int64_t>{})};
}
AttrSpec keepdim_attr() {
  return {"keepdim", AttrKind::Bool, AttrValue(false)};
}
AttrSpec dtype_attr() {
  return {"dtype", AttrKind::DType, AttrValue(NoneAttr{}), true};
}

std::optional<DType> dtype_override(const Attrs& attrs) {
  if (attrs.is_none("dtype")) return std::nullopt;
  return attrs.get_dtype("dtype");
}

// Output dims of an op reducing over its `dim` list attribute.
Dims list_reduce_dims(const InferContext& ctx, bool nonempty) {
  const TensorType& x = ctx.tensor(0);
  std::vector<bool> mask = reduced_dims(ctx, ctx.attrs.get_ints("dim"), x.rank());
  if (nonempty) check_nonempty_reduced(ctx, x, mask);
  return reduce_dims(x.dims, mask, ctx.attrs.get_bool("keepdim"));
}

RowLayout list_layout(const RefContext& ctx, const Tensor& x) {
  return row_layout(x, reduced_dims_checked(ctx.attrs.get_ints("dim"), x.dim()));
}

// Wrapping int64 arithmetic (no signed-overflow UB), matching torch's integer
// overflow behavior.
int64_t wrap_add(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}
int64_t wrap_mul(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
}

// --- sum, prod, mean ----------------------------------------------------------------

enum class Accum { Sum, Prod, Mean };

std::vector<Type> infer_accumulate(const InferContext& ctx, Accum kind) {
  const TensorType& x = ctx.tensor(0);
  std::optional<DType> given = dtype_override(ctx.attrs);
  DType out = x.dtype;
  if (kind == Accum::Mean) {
    if (given) {
      if (!is_floating(*given)) {
        ctx.fail(std::string("dtype ") + dtype_name(*given) + " is not floating; mean needs a " +
                 "floating dtype");
      }
      out = *given;
    } else if (!is_floating(x.dtype)) {
      ctx.fail(std::string("input dtype ") + dtype_name(x.dtype) +
               " is not floating; pass dtype= (e.g. dtype=f32) to average integers");
    }
  } else if (given) {
    out = *given;
  } else if (!is_floating(x.dtype)) {
    out = DType::I64;  // torch sums and multiplies bool and integers in int64
  }
  return {Type::tensor(out, list_reduce_dims(ctx, false), x.device)};
}

std::vector<Tensor> ref_accumulate(const RefContext& ctx, Accum kind) {
  Tensor x = ctx.inputs[0];
  // torch converts the input to `dtype` before reducing.
  if (std::optional<DType> given = dtype_override(ctx.attrs)) x = x.to(*given);
  RowLayout l = list_layout(ctx, x);
  Tensor out = empty_like_type(ctx.output_types[0]);
  const DType out_t = out.dtype();
  if (is_floating(out_t)) {
    std::vector<double> v = load_rows_double(x, l);
    for (int64_t r = 0; r < l.rows; ++r) {
      double acc = kind == Accum::Prod ? 1.0 : 0.0;
      for (int64_t c = 0; c < l.cols; ++c) {
        double e = v[static_cast<size_t>(r * l.cols + c)];
        acc = kind == Accum::Prod ? acc * e : acc + e;
      }
      // 0 / 0 gives NaN for a mean over an empty dim, as in torch.
      if (kind == Accum::Mean) acc /= static_cast<double>(l.cols);
      store_double(out_t, element_ptr(out, r), acc);
    }
  } else {
    std::vector<int64_t> v = load_rows_int(x, l);
    for (int64_t r = 0; r < l.rows; ++r) {
      int64_t acc = kind == Accum::Prod ? 1 : 0;
      for (int64_t c = 0; c < l.cols; ++c) {
        int64_t e = v[static_cast<size_t>(r * l.cols + c)];
        acc = kind == Accum::Prod ? wrap_mul(acc, e) : wrap_add(acc, e);
      }
      store_int(out_t, element_ptr(out, r), acc);
    }
  }
  return {out};
}

OpDef accumulate_op(const char* name, const char* doc, Accum kind) {
  OpDef d;
  d.name = name;
  d.operands = {{"x"}};
  d.attrs = {dim_list_attr(), keepdim_attr(), dtype_attr()};
  d.category = OpCategory::Reduction;
  d.doc = doc;
  d.infer = [kind](const InferContext& ctx) { return infer_accumulate(ctx, kind); };
  d.reference = [kind](const RefContext& ctx) { return ref_accumulate(ctx, kind); };
  return d;
}

// --- amax, amin, max, min, argmax, argmin ----------------------------------------------

// Index of the extreme element of one row: first occurrence on ties, and the
// first NaN wins outright (NaN compares as the max and the min, like torch).
template <typename T>
int64_t extreme_index(const T* row, int64_t n, bool want_max) {
  int64_t best = 0;
  for (int64_t c = 0; c < n; ++c) {
    T v = row[c];
    if constexpr (std::is_floating_point_v<T>) {
      if (std::isnan(v)) return c;
    }
    if (want_max ? v > row[best] : v < row[best]) best = c;
  }
  return best;
}

// Runs extreme_index over every row; calls emit(row, column) for each.
template <typename Emit>
void for_each_extreme(const Tensor& x, const RowLayout& l, bool want_max, Emit&& emit) {
  if (is_floating(x.dtype())) {
    std::vector<double> v = load_rows_double(x, l);
    for (int64_t r = 0; r < l.rows; ++r) {
      emit(r, extreme_index(v.data() + r * l.cols, l.cols, want_max));
    }
  } else {
    std::vector<int64_t> v = load_rows_int(x, l);
    for (int64_t r = 0; r < l.rows; ++r) {
      emit(r, extreme_index(v.data() + r * l.cols, l.cols, want_max));
    }
  }
}

// Inference rejects empty reduced dims it can see; this catches the ones that
// were symbolic when the graph was typed.
void check_rows_nonempty(const RefContext& ctx, const RowLayout& l) {
  KILN_USER_CHECK(l.rows == 0 || l.cols > 0,
                  ctx.op.name << ": cannot reduce over a zero-size dim of operand 'x' "
                              << ctx.input_types[0].str() << " (the result has no identity)");
}

// Copies element `c` of row `r` of x into element `r` of out (same dtype, exact).
void copy_element(const Tensor& x, const RowLayout& l, int64_t r, int64_t c, const Tensor& out) {
  const int64_t off = l.offsets[static_cast<size_t>(r * l.cols + c)];
  const char* src = static_cast<const char*>(x.data_ptr()) + off * int64_t(x.element_size());
  std::memcpy(element_ptr(out, r), src, x.element_size());
}

OpDef amax_op(const char* name, const char* doc, bool want_max) {
  OpDef d;
  d.name = name;
  d.operands = {{"x"}};
  d.attrs = {dim_list_attr(), keepdim_attr()};
  d.category = OpCategory::Reduction;
  d.doc = doc;
  d.infer = [](const InferContext& ctx) {
    const TensorType& x = ctx.tensor(0);
    return std::vector<Type>{Type::tensor(x.dtype, list_reduce_dims(ctx, true), x.device)};
  };
  d.reference = [want_max](const RefContext& ctx) {
    const Tensor& x = ctx.inputs[0];
    RowLayout l = list_layout(ctx, x);
    Tensor out = empty_like_type(ctx.output_types[0]);
    check_rows_nonempty(ctx, l);
    for_each_extreme(x, l, want_max, [&](int64_t r, int64_t c) { copy_element(x, l, r, c, out); });
    return std::vector<Tensor>{out};
  };
  return d;
}

// max/min along one dim: (values, i64 indices).
OpDef max_with_index_op(const char* name, const char* doc, bool want_max) {
  OpDef d;
  d.name = name;
  d.operands = {{"x"}};
  d.attrs = {{"dim", AttrKind::Int, std::nullopt}, keepdim_attr()};
  d.category = OpCategory::Reduction;
  d.doc = doc;
  d.infer = [](const InferContext& ctx) {
    const TensorType& x = ctx.tensor(0);
    std::vector<bool> mask = reduced_dims(ctx, {ctx.attrs.get_int("dim")}, x.rank());
    check_nonempty_reduced(ctx, x, mask);
    Dims out = reduce_dims(x.dims, mask, ctx.attrs.get_bool("keepdim"));
    return std::vector<Type>{Type::tensor(x.dtype, out, x.device),
                             Type::tensor(DType::I64, out, x.device)};
  };
  d.reference = [want_max](const RefContext& ctx) {
    const Tensor& x = ctx.inputs[0];
    RowLayout l = row_layout(x, single_dim_mask(ctx.attrs.get_int("dim"), x.dim()));
    Tensor values = empty_like_type(ctx.output_types[0]);
    Tensor indices = empty_like_type(ctx.output_types[1]);
    check_rows_nonempty(ctx, l);
    for_each_extreme(x, l, want_max, [&](int64_t r, int64_t c) {
      copy_element(x, l, r, c, values);
      indices.data<int64_t>()[r] = c;
    });
    return std::vector<Tensor>{values, indices};
  };
  return d;
}

// argmax/argmin: dim none means over the flattened tensor (the column index of
// an all-dims row walk is the flat index).
OpDef arg_extreme_op(const char* name, const char* doc, bool want_max) {
  OpDef d;
  d.name = name;
  d.operands = {{"x"}};
  d.attrs = {{"dim", AttrKind::Int, AttrValue(NoneAttr{}), true}, keepdim_attr()};
  d.category = OpCategory::Reduction;
  d.doc = doc;
  d.infer = [](const InferContext& ctx) {
    const TensorType& x = ctx.tensor(0);
    std::vector<int64_t> dims;
    if (!ctx.attrs.is_none("dim")) dims.push_back(ctx.attrs.get_int("dim"));
    std::vector<bool> mask = reduced_dims(ctx, dims, x.rank());
    check_nonempty_reduced(ctx, x, mask);
    return std::vector<Type>{Type::tensor(
        DType::I64, reduce_dims(x.dims, mask, ctx.attrs.get_bool("keepdim")), x.device)};
  };
  d.reference = [want_max](const RefContext& ctx) {
    const Tensor& x = ctx.inputs[0];
    std::vector<int64_t> dims;
    if (!ctx.attrs.is_none("dim")) dims.push_back(ctx.attrs.get_int("dim"));
    RowLayout l = row_layout(x, reduced_dims_checked(dims, x.dim()));
    Tensor out = empty_like_type(ctx.output_types[0]);
    check_rows_nonempty(ctx, l);
    for_each_extreme(x, l, want_max, [&](int64_t r, int64_t c) { out.data<int64_t>()[r] = c; });
    return std::vector<Tensor>{out};
  };
  return d;
}

// --- var, std -------------------------------------------------------------------------

OpDef spread_op(const char* name, const char* doc, bool take_sqrt) {
  OpDef d;
  d.name = name;
  d.operands = {{"x"}};
  d.attrs = {dim_list_attr(), {"correction", AttrKind::Int, AttrValue(int64_t{1})}, keepdim_attr()};
  d.category = OpCategory::Reduction;
  d.doc = doc;
  d.infer = [](const InferContext& ctx) {
    const TensorType& x = ctx.tensor(0);
    require_floating(ctx, "x", x.dtype);
    return std::vector<Type>{Type::tensor(x.dtype, list_reduce_dims(ctx, false), x.device)};
  };
  d.reference = [take_sqrt](const RefContext& ctx) {
    const Tensor& x = ctx.inputs[0];
    RowLayout l = list_layout(ctx, x);
    Tensor out = empty_like_type(ctx.output_types[0]);
    std::vector<double> v = load_rows_double(x, l);
    // torch divides by max(N - correction, 0): N == correction gives 0/0 = NaN
    // (or inf when the squares are not all zero).
    const double divisor =
        static_cast<double>(std::max<int64_t>(l.cols - ctx.attrs.get_int("correction"), 0));
    for (int64_t r = 0; r < l.rows; ++r) {
      const double* row = v.data() + r * l.cols;
      double mean = 0;
      for (int64_t c = 0; c < l.cols; ++c) mean += row[c];
      mean /= static_cast<double>(l.cols);
      // Two passes keep the variance accurate for data with a large mean.
      double squares = 0;
      for (int64_t c = 0; c < l.cols; ++c) squares += (row[c] - mean) * (row[c] - mean);
      double var = squares / divisor;
      store_double(out.dtype(), element_ptr(out, r), take_sqrt ? std::sqrt(var) : var);
    }
    return std::vector<Tensor>{out};
  };
  return d;
}

// --- any, all ---------------------------------------------------------------------------

OpDef logical_op(const char* name, const char* doc, bool is_any) {
  OpDef d;
  d.name = name;
  d.operands = {{"x"}};
  d.attrs = {dim_list_attr(), keepdim_attr()};
  d.category = OpCategory::Reduction;
  d.doc = doc;
  d.infer = [](const InferContext& ctx) {
    const TensorType& x = ctx.tensor(0);
    // torch keeps uint8 for uint8 inputs (a legacy of byte masks); bool otherwise.
    DType out = x.dtype == DType::U8 ? DType::U8 : DType::Bool;
    return std::vector<Type>{Type::tensor(out, list_reduce_dims(ctx, false), x.device)};
  };
  d.reference = [is_any](const RefContext& ctx) {
    const Tensor& x = ctx.inputs[0];
    RowLayout l = list_layout(ctx, x);
    Tensor out = empty_like_type(ctx.output_types[0]);
    // Through double: NaN != 0 is true, and any nonzero int stays nonzero.
    std::vector<double> v = load_rows_double(x, l);
    for (int64_t r = 0; r < l.rows; ++r) {
      bool acc = !is_any;  // any of nothing is false, all of nothing is true
      for (int64_t c = 0; c < l.cols; ++c) {
        bool nonzero = v[static_cast<size_t>(r * l.cols + c)] != 0.0;
        acc = is_any ? (acc || nonzero) : (acc && nonzero);
      }
      store_int(out.dtype(), element_ptr(out, r), acc ? 1 : 0);
    }
    return std::vector<Tensor>{out};
  };
  return d;
}

}  // namespace

void register_reduction_ops(OpRegistry& r) {
  r.add(accumulate_op("sum", "sum over dims (all when empty); bool/int sum in i64", Accum::Sum));
  r.add(accumulate_op("prod", "product over dims (all when empty); bool/int in i64", Accum::Prod));
  r.add(accumulate_op("mean", "mean over dims (all when empty); floating only", Accum::Mean));
  r.add(amax_op("amax", "maximum over dims (all when empty); NaN propagates", true));
  r.add(amax_op("amin", "minimum over dims (all when empty); NaN propagates", false));
  r.add(max_with_index_op("max", "(values, i64 indices) of the maximum along dim", true));
  r.add(max_with_index_op("min", "(values, i64 indices) of the minimum along dim", false));
  r.add(arg_extreme_op("argmax", "i64 index of the maximum along dim (flat when none)", true));
  r.add(arg_extreme_op("argmin", "i64 index of the minimum along dim (flat when none)", false));
  r.add(spread_op("var", "variance over dims with divisor N - correction", false));
  r.add(spread_op("std", "standard deviation over dims with divisor N - correction", true));
  r.add(logical_op("any", "true where any element over dims is nonzero", true));
  r.add(logical_op("all", "true where every element over dims is nonzero", false));
}

}  // namespace kiln::ir
