// Layout ops that are strided windows PyTorch exposes as views but no
// composition of reshape/permute/slice/select reaches: flip (a negative
// stride), diagonal (one stride spanning two dims) and unfold (sliding windows
// along a dim, overlapping when step < size). Semantics as PyTorch's
// torch.flip, torch.diagonal and Tensor.unfold; any dtype.
//
// flip keeps symbolic dims (the index becomes size-1-i); diagonal needs static
// sizes in its two dims and unfold in the unfolded dim, as the output length
// is arithmetic on them.
#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "ir/ops/layout_internal.h"

namespace kiln::ir {
namespace layout {
namespace {

using std::to_string;

std::vector<Type> infer_flip(const InferContext& ctx) {
  const TensorType& x = ctx.tensor(0);
  std::set<int64_t> seen;
  for (int64_t d : ctx.attrs.get_ints("dims")) {
    int64_t n = check_dim(ctx, d, x.dims, "x", true);
    if (!seen.insert(n).second) {
      ctx.fail("dim " + to_string(n) + " appears multiple times in dims " +
               ints_str(ctx.attrs.get_ints("dims")));
    }
  }
  return {like(x, x.dims)};
}

std::vector<Tensor> ref_flip(const RefContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  View v = whole(x);
  if (x.dim() > 0) {
    for (int64_t d : ctx.attrs.get_ints("dims")) {
      auto k = static_cast<size_t>(wrap(d, x.dim()));
      if (v.sizes[k] > 0) v.offset += (v.sizes[k] - 1) * v.strides[k];
      v.strides[k] = -v.strides[k];
    }
  }
  return {materialize(ctx, 0, x, v)};
}

int64_t static_size(const InferContext& ctx, const TensorType& x, int64_t d, const char* why) {
  const Dim& s = x.dims[static_cast<size_t>(d)];
  if (!s.is_static()) {
    ctx.fail("dim " + to_string(d) + " of " + operand_str("x", x.dims) + " is symbolic (" +
             s.symbol + "); " + why + " needs its size at compile time");
  }
  return s.value;
}

struct DiagDims {
  int64_t d1 = 0, d2 = 0, offset = 0, length = 0;
};

DiagDims diag_dims(const InferContext& ctx, const TensorType& x) {
  if (x.rank() < 2) ctx.fail("expects a tensor with at least 2 dims, got " + dims_str(x.dims));
  DiagDims g;
  g.d1 = check_dim(ctx, ctx.attrs.get_int("dim1"), x.dims, "x");
  g.d2 = check_dim(ctx, ctx.attrs.get_int("dim2"), x.dims, "x");
  if (g.d1 == g.d2) {
    ctx.fail("diagonal dimensions cannot be identical " + to_string(ctx.attrs.get_int("dim1")) +
             ", " + to_string(ctx.attrs.get_int("dim2")));
  }
  g.offset = ctx.attrs.get_int("offset");
  int64_t s1 = static_size(ctx, x, g.d1, "diagonal"), s2 = static_size(ctx, x, g.d2, "diagonal");
  // Lengths beyond the sizes give an empty diagonal, as in PyTorch.
  if (g.offset >= 0) {
    g.length = g.offset >= s2 ? 0 : std::min(s1, s2 - g.offset);
  } else {
    g.length = -g.offset >= s1 ? 0 : std::min(s1 + g.offset, s2);
  }
  return g;
}

std::vector<Type> infer_diagonal(const InferContext& ctx) {
  const TensorType& x = ctx.tensor(0);
  DiagDims g = diag_dims(ctx, x);
  Dims out;
  for (int64_t d = 0; d < x.rank(); ++d) {
    if (d != g.d1 && d != g.d2) out.push_back(x.dims[static_cast<size_t>(d)]);
  }
  out.push_back(Dim(g.length));
  return {like(x, std::move(out))};
}

std::vector<Tensor> ref_diagonal(const RefContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  const int64_t r = x.dim();
  const int64_t d1 = wrap(ctx.attrs.get_int("dim1"), r), d2 = wrap(ctx.attrs.get_int("dim2"), r);
  const int64_t offset = ctx.attrs.get_int("offset");
  const Shape& st = x.strides();
  View v;
  v.offset = offset >= 0 ? offset * st[size_t(d2)] : -offset * st[size_t(d1)];
  for (int64_t d = 0; d < r; ++d) {
    if (d == d1 || d == d2) continue;
    v.sizes.push_back(x.sizes()[size_t(d)]);
    v.strides.push_back(st[size_t(d)]);
  }
  v.sizes.push_back(static_shape(ctx.output_types[0].dims()).back());
  v.strides.push_back(st[size_t(d1)] + st[size_t(d2)]);
  return {materialize(ctx, 0, x, v)};
}

std::vector<Type> infer_unfold(const InferContext& ctx) {
  const TensorType& x = ctx.tensor(0);
  if (x.rank() == 0) ctx.fail("cannot unfold 0-dim " + operand_str("x", x.dims));
  const int64_t d = check_dim(ctx, ctx.attrs.get_int("dimension"), x.dims, "x");
  const int64_t size = ctx.attrs.get_int("size"), step = ctx.attrs.get_int("step");
  const int64_t n = static_size(ctx, x, d, "unfold");
  if (size < 0 || size > n) {
    ctx.fail("maximum size for tensor at dimension " + to_string(d) + " is " + to_string(n) +
             " but size is " + to_string(size));
  }
  if (step <= 0) ctx.fail("step is " + to_string(step) + " but must be > 0");
  Dims out = x.dims;
  out[size_t(d)] = Dim((n - size) / step + 1);
  out.push_back(Dim(size));
  return {like(x, std::move(out))};
}

std::vector<Tensor> ref_unfold(const RefContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  const auto d = static_cast<size_t>(wrap(ctx.attrs.get_int("dimension"), x.dim()));
  const int64_t size = ctx.attrs.get_int("size"), step = ctx.attrs.get_int("step");
  View v = whole(x);
  const int64_t st = v.strides[d];
  v.sizes[d] = (v.sizes[d] - size) / step + 1;
  v.strides[d] = st * step;
  v.sizes.push_back(size);
  v.strides.push_back(st);
  return {materialize(ctx, 0, x, v)};
}

void add(OpRegistry& r, const char* name, std::vector<AttrSpec> attrs, const char* doc,
         InferFn infer, ReferenceFn ref) {
  r.add(OpDef{name,
              {{"x", OperandKind::Tensor, false}},
              std::move(attrs),
              OpCategory::Layout,
              doc,
              std::move(infer),
              std::move(ref)});
}

}  // namespace
}  // namespace layout

void register_layout_stride_ops(OpRegistry& r) {
  using namespace layout;  // NOLINT
  add(r, "flip", {{"dims", AttrKind::Ints, std::nullopt, false}},
      "x with the order of elements reversed along each of dims", infer_flip, ref_flip);
  add(r, "diagonal",
      {{"offset", AttrKind::Int, AttrValue(int64_t{0}), false},
       {"dim1", AttrKind::Int, AttrValue(int64_t{0}), false},
       {"dim2", AttrKind::Int, AttrValue(int64_t{1}), false}},
      "the diagonal of dims dim1 and dim2 (above it for offset > 0) as a new last dim",
      infer_diagonal, ref_diagonal);
  add(r, "unfold",
      {{"dimension", AttrKind::Int, std::nullopt, false},
       {"size", AttrKind::Int, std::nullopt, false},
       {"step", AttrKind::Int, std::nullopt, false}},
      "windows of `size` elements every `step` along dimension, as a new last dim", infer_unfold,
      ref_unfold);
}

}  // namespace kiln::ir
