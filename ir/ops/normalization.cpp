// Op family: normalization — softmax, log_softmax, layer_norm, batch_norm
// (inference form), rms_norm, with PyTorch's semantics.
//
// All take floating inputs only. References compute every row in double and
// round once into the output dtype (so f16/bf16 lose nothing in between), and
// walk inputs through reduction_util.h's [rows, cols] layout, so strided views
// need no copy.
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <string>

#include "ir/ops/ops.h"
#include "ir/ops/reduction_util.h"
#include "kiln/error.h"

namespace kiln::ir {

namespace {

std::string ints_str(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

// Attribute specs are built field by field: GCC 12 reports a false
// maybe-uninitialized on AttrValue temporaries in braced AttrSpec lists under
// -O2 with sanitizers (KILN_SANITIZE).
AttrSpec required_attr(const char* name, AttrKind kind) {
  AttrSpec a;
  a.name = name;
  a.kind = kind;
  return a;
}
AttrSpec optional_attr(const char* name, AttrKind kind) {
  AttrSpec a = required_attr(name, kind);
  a.default_value.emplace(NoneAttr{});
  a.optional = true;
  return a;
}
AttrSpec eps_attr(double value) {
  AttrSpec a = required_attr("eps", AttrKind::Float);
  a.default_value.emplace(value);
  return a;
}

// A dim equal to `want`; a symbolic dim is accepted here and checked again
// when the interpreter re-infers with concrete shapes.
bool dim_matches(const Dim& d, int64_t want) {
  return !d.is_static() || d.value == want;
}
bool dims_match(const Dim& a, const Dim& b) {
  return !a.is_static() || !b.is_static() || a.value == b.value;
}

// Every element of `t` in row-major order, as doubles (empty for undefined t).
std::vector<double> load_all(const Tensor& t) {
  if (!t.defined()) return {};
  return load_rows_double(t, row_layout(t, std::vector<bool>(static_cast<size_t>(t.dim()), true)));
}

// --- softmax, log_softmax ---------------------------------------------------------------

OpDef softmax_op(const char* name, const char* doc, bool log) {
  OpDef d;
  d.name = name;
  d.operands = {{"x"}};
  d.attrs = {required_attr("dim", AttrKind::Int), optional_attr("dtype", AttrKind::DType)};
  d.category = OpCategory::Reduction;
  d.doc = doc;
  d.infer = [](const InferContext& ctx) {
    const TensorType& x = ctx.tensor(0);
    DType out = ctx.attrs.is_none("dtype") ? x.dtype : ctx.attrs.get_dtype("dtype");
    if (!is_floating(out)) {
      ctx.fail(std::string("operand 'x' has dtype ") + dtype_name(out) +
               "; expected a floating dtype (f16, bf16, f32, f64), or pass dtype=");
    }
    normalize_dim(ctx, ctx.attrs.get_int("dim"), x.rank());
    return std::vector<Type>{Type::tensor(out, x.dims, x.device)};
  };
  d.reference = [log](const RefContext& ctx) {
    // torch converts to `dtype` first, then normalizes in that dtype.
    Tensor x = ctx.inputs[0].to(ctx.output_types[0].dtype());
    Tensor out = empty_like_type(ctx.output_types[0]);
    std::vector<bool> mask = single_dim_mask(ctx.attrs.get_int("dim"), x.dim());
    RowLayout in_l = row_layout(x, mask);
    RowLayout out_l = row_layout(out, mask);
    std::vector<double> v = load_rows_double(x, in_l);
    for (int64_t r = 0; r < in_l.rows; ++r) {
      double* row = v.data() + r * in_l.cols;
      // Subtracting the row max keeps exp() finite for large logits. A row of
      // all -inf gives -inf - -inf = NaN everywhere, as in torch.
      double mx = -std::numeric_limits<double>::infinity();
      bool nan = false;
      for (int64_t c = 0; c < in_l.cols; ++c) {
        nan = nan || std::isnan(row[c]);
        mx = std::max(mx, row[c]);
      }
      if (nan) mx = std::numeric_limits<double>::quiet_NaN();
      double sum = 0;
      for (int64_t c = 0; c < in_l.cols; ++c) sum += std::exp(row[c] - mx);
      const double log_sum = std::log(sum);
      for (int64_t c = 0; c < in_l.cols; ++c) {
        row[c] = log ? row[c] - mx - log_sum : std::exp(row[c] - mx) / sum;
      }
    }
    store_rows_double(out, out_l, v);
    return std::vector<Tensor>{out};
  };
  return d;
}

// --- layer_norm, rms_norm ------------------------------------------------------------

// Checks x (floating, trailing dims == normalized_shape) and the optional affine
// operands (floating, shape == normalized_shape); returns x's type.
std::vector<Type> infer_trailing_norm(const InferContext& ctx) {
  const TensorType& x = ctx.tensor(0);
  require_floating(ctx, "x", x.dtype);
  const std::vector<int64_t> shape = ctx.attrs.get_ints("normalized_shape");
  if (shape.empty()) ctx.fail("normalized_shape must name at least one dim, got []");
  const int64_t k = static_cast<int64_t>(shape.size());
  bool ok = k <= x.rank();
  for (int64_t i = 0; ok && i < k; ++i) {
    ok = dim_matches(x.dims[static_cast<size_t>(x.rank() - k + i)], shape[static_cast<size_t>(i)]);
  }
  if (!ok) {
    ctx.fail("normalized_shape " + ints_str(shape) + " does not match the trailing dims of " +
             "operand 'x' " + x.str());
  }
  for (size_t i = 1; i < ctx.inputs.size(); ++i) {
    if (ctx.inputs[i].is_none()) continue;
    const TensorType& w = ctx.tensor(i);
    const char* what = ctx.op.operands[i].name.c_str();
    require_floating(ctx, what, w.dtype);
    bool same = w.rank() == k;
    for (int64_t j = 0; same && j < k; ++j) {
      same = dim_matches(w.dims[static_cast<size_t>(j)], shape[static_cast<size_t>(j)]);
    }
    if (!same) {
      ctx.fail(std::string("operand '") + what + "' " + w.str() + " must have shape " +
               "normalized_shape " + ints_str(shape));
    }
  }
  return {Type::tensor(x.dtype, x.dims, x.device)};
}

// Normalizes each row of x over its trailing `normalized_shape` dims:
// y = (x - center) / sqrt(spread + eps) * weight + bias, where layer_norm
// centers on the mean with the biased variance, and rms_norm does not center
// and uses the mean square.
std::vector<Tensor> ref_trailing_norm(const RefContext& ctx, bool center, double eps) {
  const Tensor& x = ctx.inputs[0];
  const int64_t k = static_cast<int64_t>(ctx.attrs.get_ints("normalized_shape").size());
  std::vector<bool> mask(static_cast<size_t>(x.dim()), false);
  for (int64_t i = x.dim() - k; i < x.dim(); ++i) mask[static_cast<size_t>(i)] = true;
  Tensor out = empty_like_type(ctx.output_types[0]);
  RowLayout in_l = row_layout(x, mask);
  RowLayout out_l = row_layout(out, mask);
  std::vector<double> v = load_rows_double(x, in_l);
  std::vector<double> weight = load_all(ctx.inputs[1]);
  std::vector<double> bias =
      ctx.inputs.size() > 2 ? load_all(ctx.inputs[2]) : std::vector<double>{};
  const double n = static_cast<double>(in_l.cols);
  // Compiled code sums the squares in f32 (f64 for f64): where that sum
  // overflows, PyTorch's row is NaN, and so is ours (1 / sqrt(inf) would
  // silently give 0s).
  const double squares_max = out.dtype() == DType::F64 ? std::numeric_limits<double>::max()
                                                       : std::numeric_limits<float>::max();
  for (int64_t r = 0; r < in_l.rows; ++r) {
    double* row = v.data() + r * in_l.cols;
    double mean = 0;
    if (center) {
      for (int64_t c = 0; c < in_l.cols; ++c) mean += row[c];
      mean /= n;
    }
    double spread = 0;
    for (int64_t c = 0; c < in_l.cols; ++c) spread += (row[c] - mean) * (row[c] - mean);
    const double inv = spread > squares_max ? std::numeric_limits<double>::quiet_NaN()
                                            : 1.0 / std::sqrt(spread / n + eps);
    for (int64_t c = 0; c < in_l.cols; ++c) {
      double y = (row[c] - mean) * inv;
      if (!weight.empty()) y *= weight[static_cast<size_t>(c)];
      if (!bias.empty()) y += bias[static_cast<size_t>(c)];
      row[c] = y;
    }
  }
  store_rows_double(out, out_l, v);
  return {out};
}

// torch.finfo(t).eps: rms_norm's eps when none is given.
double machine_epsilon(DType t) {
  switch (t) {
    case DType::F16:
      return std::ldexp(1.0, -10);
    case DType::BF16:
      return std::ldexp(1.0, -7);
    case DType::F32:
      return std::ldexp(1.0, -23);
    default:
      return std::ldexp(1.0, -52);
  }
}

OpDef layer_norm_op() {
  OpDef d;
  d.name = "layer_norm";
  d.operands = {
      {"x"}, {"weight", OperandKind::OptionalTensor}, {"bias", OperandKind::OptionalTensor}};
  d.attrs = {required_attr("normalized_shape", AttrKind::Ints), eps_attr(1e-5)};
  d.category = OpCategory::Reduction;
  d.doc = "normalizes the trailing normalized_shape dims to mean 0, variance 1, then affine";
  d.infer = infer_trailing_norm;
  d.reference = [](const RefContext& ctx) {
    return ref_trailing_norm(ctx, true, ctx.attrs.get_float("eps"));
  };
  return d;
}

OpDef rms_norm_op() {
  OpDef d;
  d.name = "rms_norm";
  d.operands = {{"x"}, {"weight", OperandKind::OptionalTensor}};
  d.attrs = {required_attr("normalized_shape", AttrKind::Ints),
             optional_attr("eps", AttrKind::Float)};
  d.category = OpCategory::Reduction;
  d.doc = "x / sqrt(mean(x^2) + eps) * weight over the trailing normalized_shape dims";
  d.infer = infer_trailing_norm;
  d.reference = [](const RefContext& ctx) {
    double eps = ctx.attrs.is_none("eps") ? machine_epsilon(ctx.inputs[0].dtype())
                                          : ctx.attrs.get_float("eps");
    return ref_trailing_norm(ctx, false, eps);
  };
  return d;
}

// --- batch_norm --------------------------------------------------------------------------

OpDef batch_norm_op() {
  OpDef d;
  d.name = "batch_norm";
  d.operands = {{"x"},
                {"running_mean"},
                {"running_var"},
                {"weight", OperandKind::OptionalTensor},
                {"bias", OperandKind::OptionalTensor}};
  d.attrs = {eps_attr(1e-5)};
  d.category = OpCategory::Reduction;
  d.doc = "inference batch norm over channel dim 1 with running statistics";
  d.infer = [](const InferContext& ctx) {
    const TensorType& x = ctx.tensor(0);
    require_floating(ctx, "x", x.dtype);
    if (x.rank() < 2) {
      ctx.fail("operand 'x' " + x.str() + " must have rank >= 2 (batch, channels, ...)");
    }
    const Dim& channels = x.dims[1];
    for (size_t i = 1; i < ctx.inputs.size(); ++i) {
      if (ctx.inputs[i].is_none()) continue;
      const TensorType& s = ctx.tensor(i);
      const std::string& what = ctx.op.operands[i].name;
      require_floating(ctx, what.c_str(), s.dtype);
      if (s.rank() != 1 || !dims_match(s.dims[0], channels)) {
        ctx.fail("operand '" + what + "' " + s.str() + " must have shape [" + channels.str() +
                 "], the channel count (dim 1) of operand 'x' " + x.str());
      }
    }
    return std::vector<Type>{Type::tensor(x.dtype, x.dims, x.device)};
  };
  d.reference = [](const RefContext& ctx) {
    const Tensor& x = ctx.inputs[0];
    const double eps = ctx.attrs.get_float("eps");
    // Rows are channels: dim 1 kept, every other dim reduced.
    std::vector<bool> mask(static_cast<size_t>(x.dim()), true);
    mask[1] = false;
    Tensor out = empty_like_type(ctx.output_types[0]);
    RowLayout in_l = row_layout(x, mask);
    RowLayout out_l = row_layout(out, mask);
    std::vector<double> v = load_rows_double(x, in_l);
    std::vector<double> mean = load_all(ctx.inputs[1]);
    std::vector<double> var = load_all(ctx.inputs[2]);
    std::vector<double> weight = load_all(ctx.inputs[3]);
    std::vector<double> bias = load_all(ctx.inputs[4]);
    for (int64_t c = 0; c < in_l.rows; ++c) {
      const size_t ci = static_cast<size_t>(c);
      double scale = 1.0 / std::sqrt(var[ci] + eps);
      if (!weight.empty()) scale *= weight[ci];
      const double shift = bias.empty() ? 0.0 : bias[ci];
      double* row = v.data() + c * in_l.cols;
      for (int64_t j = 0; j < in_l.cols; ++j) row[j] = (row[j] - mean[ci]) * scale + shift;
    }
    store_rows_double(out, out_l, v);
    return std::vector<Tensor>{out};
  };
  return d;
}

}  // namespace

void register_normalization_ops(OpRegistry& r) {
  r.add(softmax_op("softmax", "exp(x) / sum(exp(x)) along dim, computed with the row max removed",
                   false));
  r.add(
      softmax_op("log_softmax", "x - log(sum(exp(x))) along dim, with the row max removed", true));
  r.add(layer_norm_op());
  r.add(batch_norm_op());
  r.add(rms_norm_op());
}

}  // namespace kiln::ir
