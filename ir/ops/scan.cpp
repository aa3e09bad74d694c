// Op family: scans along one dim — cumsum, cumprod, logcumsumexp, cummax,
// cummin — with PyTorch's semantics:
//   - cumsum/cumprod give the input dtype for floating inputs and i64 for bool
//     and integers (wrapping like torch); `dtype` converts the input first;
//   - logcumsumexp takes floating inputs only (torch has no integer kernel)
//     and handles -inf/+inf runs the way torch's log_add_exp does;
//   - cummax/cummin give (values, i64 indices); ties take the later index and
//     a NaN wins (every later NaN moves the index), as in torch's CPU kernel.
// A 0-dim input accepts dim 0 and -1 and is its own scan. References read the
// input as [rows, cols] rows of the scanned dim (reduction_util.h) and
// accumulate in double (floating) or wrapping int64 (integers).
#include <cmath>

#include "ir/ops/ops.h"
#include "ir/ops/reduction_util.h"

namespace kiln::ir {

namespace {

enum class Scan { Sum, Prod, LogSumExp, Max, Min };

std::vector<bool> scan_mask(const InferContext& ctx) {
  return reduced_dims(ctx, {ctx.attrs.get_int("dim")}, ctx.tensor(0).rank());
}

std::vector<Type> infer_scan(const InferContext& ctx, Scan kind) {
  const TensorType& x = ctx.tensor(0);
  scan_mask(ctx);  // checks the dim
  if (kind == Scan::Max || kind == Scan::Min) {
    return {Type::tensor(x.dtype, x.dims, x.device), Type::tensor(DType::I64, x.dims, x.device)};
  }
  if (kind == Scan::LogSumExp) {
    require_floating(ctx, "x", x.dtype);
    return {Type::tensor(x.dtype, x.dims, x.device)};
  }
  DType out = is_floating(x.dtype) ? x.dtype : DType::I64;
  if (!ctx.attrs.is_none("dtype")) out = ctx.attrs.get_dtype("dtype");
  return {Type::tensor(out, x.dims, x.device)};
}

// torch's log_add_exp: equal infinities stay as they are (no inf - inf).
double log_add_exp(double acc, double v) {
  if (std::isnan(acc) || std::isnan(v)) return acc + v;
  double lo = std::min(acc, v), hi = std::max(acc, v);
  if (lo == hi && !std::isfinite(lo)) return acc;
  return std::log1p(std::exp(lo - hi)) + hi;
}

std::vector<Tensor> ref_scan(const RefContext& ctx, Scan kind) {
  Tensor x = ctx.inputs[0];
  if (!ctx.attrs.is_none("dtype")) x = x.to(ctx.attrs.get_dtype("dtype"));
  std::vector<bool> mask = single_dim_mask(ctx.attrs.get_int("dim"), x.dim());
  RowLayout l = row_layout(x, mask);
  std::vector<Tensor> outs;
  for (const Type& t : ctx.output_types) outs.push_back(empty_like_type(t));
  RowLayout lo = row_layout(outs[0], mask);  // output offsets, same walk
  const DType out_t = outs[0].dtype();
  auto at = [&](int64_t r, int64_t c) {
    return element_ptr(outs[0], lo.offsets[static_cast<size_t>(r * l.cols + c)]);
  };
  if (kind == Scan::Max || kind == Scan::Min) {
    const bool fl = is_floating(x.dtype());
    std::vector<double> v = load_rows_double(x, l);
    std::vector<int64_t> vi = fl ? std::vector<int64_t>{} : load_rows_int(x, l);
    for (int64_t r = 0; r < l.rows; ++r) {
      int64_t best = 0;
      for (int64_t c = 0; c < l.cols; ++c) {
        const size_t i = static_cast<size_t>(r * l.cols + c), b = size_t(r * l.cols + best);
        bool take;
        if (fl) {
          take = std::isnan(v[i]) ||
                 (!std::isnan(v[b]) && (kind == Scan::Max ? v[i] >= v[b] : v[i] <= v[b]));
        } else {
          take = kind == Scan::Max ? vi[i] >= vi[b] : vi[i] <= vi[b];
        }
        if (take) best = c;
        const size_t bi = static_cast<size_t>(r * l.cols + best);
        if (fl) {
          store_double(out_t, at(r, c), v[bi]);
        } else {
          store_int(out_t, at(r, c), vi[bi]);
        }
        static_cast<int64_t*>(outs[1].data_ptr())[lo.offsets[i]] = best;
      }
    }
    return outs;
  }
  if (is_floating(out_t)) {
    std::vector<double> v = load_rows_double(x, l);
    for (int64_t r = 0; r < l.rows; ++r) {
      double acc = kind == Scan::Prod ? 1.0 : kind == Scan::LogSumExp ? -INFINITY : 0.0;
      for (int64_t c = 0; c < l.cols; ++c) {
        double e = v[static_cast<size_t>(r * l.cols + c)];
        acc = kind == Scan::Prod ? acc * e : kind == Scan::Sum ? acc + e : log_add_exp(acc, e);
        store_double(out_t, at(r, c), acc);
      }
    }
  } else {
    std::vector<int64_t> v = load_rows_int(x, l);
    for (int64_t r = 0; r < l.rows; ++r) {
      uint64_t acc = kind == Scan::Prod ? 1 : 0;  // wraps like torch's int64
      for (int64_t c = 0; c < l.cols; ++c) {
        uint64_t e = static_cast<uint64_t>(v[static_cast<size_t>(r * l.cols + c)]);
        acc = kind == Scan::Prod ? acc * e : acc + e;
        store_int(out_t, at(r, c), static_cast<int64_t>(acc));
      }
    }
  }
  return outs;
}

OpDef scan_op(const char* name, const char* doc, Scan kind) {
  OpDef d;
  d.name = name;
  d.operands = {{"x"}};
  d.attrs = {{"dim", AttrKind::Int, std::nullopt}};
  if (kind == Scan::Sum || kind == Scan::Prod) {
    d.attrs.push_back({"dtype", AttrKind::DType, AttrValue(NoneAttr{}), true});
  }
  d.category = OpCategory::Reduction;
  d.doc = doc;
  d.infer = [kind](const InferContext& ctx) { return infer_scan(ctx, kind); };
  d.reference = [kind](const RefContext& ctx) { return ref_scan(ctx, kind); };
  return d;
}

}  // namespace

void register_scan_ops(OpRegistry& r) {
  r.add(scan_op("cumsum", "running sum along dim; bool/int in i64", Scan::Sum));
  r.add(scan_op("cumprod", "running product along dim; bool/int in i64", Scan::Prod));
  r.add(scan_op("logcumsumexp", "running log(sum(exp)) along dim; floating only", Scan::LogSumExp));
  r.add(scan_op("cummax", "(running maximum, i64 index of it) along dim", Scan::Max));
  r.add(scan_op("cummin", "(running minimum, i64 index of it) along dim", Scan::Min));
}

}  // namespace kiln::ir
