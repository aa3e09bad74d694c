// Op family: indexing with index tensors, the two primitives the frontend's
// gather / take_along_dim / index_select / embedding / one_hot / x[idx] and
// scatter / scatter_add / scatter_reduce / index_put / index_add / x[idx] = v
// are composed from (frontend/lower_ops_index.cpp):
//   gather(x, index) {dim}: out[p] = x[p with p[dim] = index[p]]; out has
//     index's shape, index.size(d) <= x.size(d) for d != dim (PyTorch's gather);
//   scatter(x, index, src) {dim, reduce, include_self}: out = x, then for every
//     position p of index, out[p with p[dim] = index[p]] = src[p] (reduce
//     "none"), or combined with it (sum, prod, amax, amin); include_self=False
//     first resets each touched element to the reduction's identity. Positions
//     are visited in row-major order, so duplicates are deterministic (the last
//     one wins for "none"); index.size(d) <= src.size(d) for every d.
// Index values are not wrapped: a value outside [0, size) raises the message
// of runtime/kernel_status.h, which compiled code reports through the kernel
// status word (loop-IR checked_index). The frontend wraps negative indices
// where PyTorch allows them (advanced indexing, index_put).
#include <cmath>
#include <set>

#include "ir/ops/elementwise_util.h"
#include "runtime/kernel_status.h"

namespace kiln::ir {
namespace {

using std::to_string;

int64_t checked(int64_t i, int64_t size) {
  if (i < 0 || i >= size) KILN_USER_ERROR(runtime::kIndexOutOfRangeMessage);
  return i;
}

// Checks index against x (and src): integral, same rank, sizes within bounds.
int64_t check_index(const InferContext& ctx, const TensorType& x, const TensorType& index,
                    const TensorType* src) {
  if (!is_integral(index.dtype) || index.dtype == DType::Bool) {
    ctx.fail(ew::describe(ctx, 1) + " must be an integer tensor (int64 or int32)");
  }
  if (index.rank() != x.rank()) {
    ctx.fail(ew::describe(ctx, 1) + " must have the rank of " + ew::describe(ctx, 0));
  }
  const int64_t dim = normalize_dim(ctx, ctx.attrs.get_int("dim"), std::max<int64_t>(x.rank(), 1));
  for (int64_t d = 0; d < index.rank(); ++d) {
    const Dim& i = index.dims[size_t(d)];
    // A symbolic size on either side must be the same symbol on both: the
    // lowering reads x and src at the index's positions without a bound check.
    auto exceeds = [&](const Dim& o) {
      if (!i.is_static() || !o.is_static()) return !(i == o);
      return i.value > o.value;
    };
    if (d != dim && exceeds(x.dims[size_t(d)])) {
      ctx.fail(ew::describe(ctx, 1) + " is larger than " + ew::describe(ctx, 0) + " in dim " +
               to_string(d) + " (outside dim " + to_string(dim) +
               " the index must fit in x; a symbolic size must be the same symbol in both)");
    }
    if (src && exceeds(src->dims[size_t(d)])) {
      ctx.fail(ew::describe(ctx, 1) + " is larger than " + ew::describe(ctx, 2) + " in dim " +
               to_string(d) + " (a symbolic size must be the same symbol in both)");
    }
  }
  return dim;
}

std::vector<Type> infer_gather(const InferContext& ctx) {
  const TensorType& x = ctx.tensor(0);
  const TensorType& index = ctx.tensor(1);
  check_index(ctx, x, index, nullptr);
  return {Type::tensor(x.dtype, index.dims, x.device)};
}

std::vector<Tensor> ref_gather(const RefContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  const Tensor& index = ctx.inputs[1];
  const auto d = size_t(x.dim() == 0 ? 0 : (ctx.attrs.get_int("dim") + x.dim()) % x.dim());
  Tensor out = Tensor::empty(index.sizes(), x.dtype());
  const bool fl = is_floating(x.dtype());
  for_each_index(index.sizes(), [&](std::span<const int64_t> p) {
    std::vector<int64_t> at(p.begin(), p.end());
    if (x.dim() == 0) {
      checked(index.get_int(p), 1);
    } else {
      at[d] = checked(index.get_int(p), x.sizes()[d]);
    }
    std::span<const int64_t> xat = x.dim() == 0 ? std::span<const int64_t>() : at;
    if (fl) {
      out.set(p, x.get(xat));
    } else {
      out.set_int(p, x.get_int(xat));
    }
  });
  return {out};
}

const char* const kReductions[] = {"none", "sum", "prod", "amax", "amin"};

std::vector<Type> infer_scatter(const InferContext& ctx) {
  const TensorType& x = ctx.tensor(0);
  const TensorType& index = ctx.tensor(1);
  const TensorType& src = ctx.tensor(2);
  if (src.dtype != x.dtype) {
    ctx.fail(ew::describe(ctx, 2) + " must have the dtype of " + ew::describe(ctx, 0) +
             " (as in PyTorch); convert it with .to(x.dtype)");
  }
  if (src.rank() != x.rank()) {
    ctx.fail(ew::describe(ctx, 2) + " must have the rank of " + ew::describe(ctx, 0));
  }
  check_index(ctx, x, index, &src);
  const std::string& reduce = ctx.attrs.get_string("reduce");
  bool known = false;
  for (const char* r : kReductions) known = known || reduce == r;
  if (!known) {
    ctx.fail("reduce must be 'none', 'sum', 'prod', 'amax' or 'amin', got '" + reduce + "'");
  }
  return {Type::tensor(x.dtype, x.dims, x.device)};
}

double combine(const std::string& reduce, double a, double b) {
  if (reduce == "sum") return a + b;
  if (reduce == "prod") return a * b;
  if (reduce == "amax") return (std::isnan(a) || a > b) ? a : b;
  if (reduce == "amin") return (std::isnan(a) || a < b) ? a : b;
  return b;
}

int64_t combine_int(const std::string& reduce, int64_t a, int64_t b) {
  // Wrapping like the compiled code's integer arithmetic.
  auto u = [](int64_t v) { return static_cast<uint64_t>(v); };
  if (reduce == "sum") return static_cast<int64_t>(u(a) + u(b));
  if (reduce == "prod") return static_cast<int64_t>(u(a) * u(b));
  if (reduce == "amax") return std::max(a, b);
  if (reduce == "amin") return std::min(a, b);
  return b;
}

std::vector<Tensor> ref_scatter(const RefContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  const Tensor& index = ctx.inputs[1];
  const Tensor& src = ctx.inputs[2];
  const std::string& reduce = ctx.attrs.get_string("reduce");
  const bool include_self = ctx.attrs.get_bool("include_self");
  Tensor out = x.clone();
  const auto d = size_t(x.dim() == 0 ? 0 : (ctx.attrs.get_int("dim") + x.dim()) % x.dim());
  const bool fl = is_floating(x.dtype());
  auto target = [&](std::span<const int64_t> p) {
    std::vector<int64_t> at(p.begin(), p.end());
    if (x.dim() == 0) {
      checked(index.get_int(p), 1);
    } else {
      at[d] = checked(index.get_int(p), x.sizes()[d]);
    }
    return at;
  };
  // include_self=False: an element's first scattered value replaces it (the
  // identity combined with that value, as the lowering computes it).
  std::set<std::vector<int64_t>> touched;
  const bool fresh = reduce != "none" && !include_self;
  for_each_index(index.sizes(), [&](std::span<const int64_t> p) {
    std::vector<int64_t> at = target(p);
    bool first = fresh && touched.insert(at).second;
    if (first && (reduce == "sum" || reduce == "prod")) out.set(at, reduce == "sum" ? 0 : 1);
    std::span<const int64_t> xat = x.dim() == 0 ? std::span<const int64_t>() : at;
    if (first && (reduce == "amax" || reduce == "amin")) {
      if (fl) {
        out.set(xat, src.get(p));
      } else {
        out.set_int(xat, src.get_int(p));
      }
    } else if (fl) {
      out.set(xat, combine(reduce, out.get(xat), src.get(p)));
    } else {
      out.set_int(xat, combine_int(reduce, out.get_int(xat), src.get_int(p)));
    }
  });
  return {out};
}

}  // namespace

void register_indexing_ops(OpRegistry& r) {
  r.add(OpDef{"gather",
              {{"x", OperandKind::Tensor, false}, {"index", OperandKind::Tensor, false}},
              {{"dim", AttrKind::Int, std::nullopt, false}},
              OpCategory::Layout,
              "x[p with p[dim] = index[p]] for every position p of index (PyTorch's gather); an "
              "index outside [0, size) raises",
              infer_gather,
              ref_gather});
  r.add(OpDef{"scatter",
              {{"x", OperandKind::Tensor, false},
               {"index", OperandKind::Tensor, false},
               {"src", OperandKind::Tensor, false}},
              {{"dim", AttrKind::Int, std::nullopt, false},
               {"reduce", AttrKind::String, AttrValue(std::string("none")), false},
               {"include_self", AttrKind::Bool, AttrValue(true), false}},
              OpCategory::Other,
              "x with src[p] written (reduce none) or combined (sum, prod, amax, amin) at p with "
              "p[dim] = index[p], in row-major order of p",
              infer_scatter,
              ref_scatter});
}

}  // namespace kiln::ir
