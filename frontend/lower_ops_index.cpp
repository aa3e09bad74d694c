// Op table, indexing with index tensors, composed from the registry's gather
// and scatter (ir/ops/indexing.cpp) and layout ops:
//   gather / take / take_along_dim / index_select / F.embedding / F.one_hot read
//   through gather (index_select expands its vector index along the other
//   dims); scatter / scatter_add / scatter_reduce / index_add / index_copy /
//   index_fill / index_reduce / index_put write through scatter; the mean of
//   scatter_reduce and index_reduce is a sum divided by a scattered count;
//   masked_scatter gathers source at the mask's running count. Advanced indexing (x[i0, i1])
//   flattens the indexed dims and gathers (or scatters) one linear index, which is poisoned to -1
//   when any component is out of range, so a bad component still raises even when the linear index
//   would land inside the tensor.
// Negative indices count from the end where PyTorch allows it (subscripts,
// index_put); gather, scatter, index_select and embedding reject them, as in
// PyTorch. An index outside its dim raises at run time (kernel status word).
#include <numeric>

#include "frontend/index_ops.h"
#include "ir/ops/ops.h"

namespace kiln::frontend {

namespace {

const unsigned TM = kTorch | kMethod;

Shape static_shape_of(Lowerer& L, ir::Value* v, const Span& at, const std::string& what) {
  if (!ir::dims_are_static(v->type().dims())) {
    L.fail(at, what + " of symbolic shape " + ir::dims_str(v->type().dims()) +
                   " is not supported yet in indexing with tensors");
  }
  return ir::static_shape(v->type().dims());
}

int64_t numel(const Shape& s) {
  return std::accumulate(s.begin(), s.end(), int64_t{1}, std::multiplies<>());
}

ir::Value* int_const(Lowerer& L, int64_t v, const Span& at) {
  return L.constant(Val::int_(v), at);
}

ir::Value* reshape(Lowerer& L, ir::Value* v, const Shape& s, const Span& at) {
  if (v->type().dims() == ir::dims_from_shape(s)) return v;
  return L.apply1("reshape", {v}, {{"shape", s}}, at);
}

ir::Value* expand(Lowerer& L, ir::Value* v, const Shape& s, const Span& at) {
  if (v->type().dims() == ir::dims_from_shape(s)) return v;
  return L.apply1("expand", {v}, {{"size", s}}, at);
}

ir::Value* permute(Lowerer& L, ir::Value* v, const std::vector<int64_t>& perm, const Span& at) {
  bool identity = true;
  for (size_t i = 0; i < perm.size(); ++i) identity = identity && perm[i] == int64_t(i);
  if (identity) return v;
  return L.apply1("permute", {v}, {{"dims", perm}}, at);
}

// A vector index [n] shaped to run along dim d of `shape` (other dims copied).
ir::Value* along(Lowerer& L, ir::Value* index, Shape shape, int64_t d, const Span& at) {
  const int64_t n = numel(static_shape_of(L, index, at, "an index"));
  Shape ones(shape.size(), 1);
  ones[size_t(d)] = n;
  shape[size_t(d)] = n;
  return expand(L, reshape(L, index, ones, at), shape, at);
}

int64_t norm_dim(Lowerer& L, int64_t dim, int64_t rank, const Span& at) {
  int64_t r = std::max<int64_t>(rank, 1);
  if (dim < -r || dim >= r) {
    L.fail(at, "dim " + std::to_string(dim) + " is out of range for a tensor of rank " +
                   std::to_string(rank));
  }
  return dim < 0 ? dim + r : dim;
}

// The components of an advanced index: wrapped, broadcast to one shape.
struct Prepared {
  Shape xs, bshape;
  std::vector<ir::Value*> wrapped;  // i64, broadcast to bshape
  bool adjacent = true;
  int64_t first = 0;
  Shape rest;                  // sizes of the dims not indexed, in order
  std::vector<int64_t> order;  // indexed dims, then the others
};

Prepared prepare(Lowerer& L, ir::Value* x, const std::vector<DimIndex>& indices, const Span& at) {
  Prepared p;
  p.xs = static_shape_of(L, x, at, "a tensor");
  std::optional<ir::Dims> b = ir::Dims{};
  for (const DimIndex& di : indices) {
    check_index_tensor(L, di.index, di.span);
    b = ir::broadcast_dims(*b, di.index->type().dims());
    if (!b) {
      std::string shapes;
      for (const DimIndex& e : indices) {
        shapes += (shapes.empty() ? "" : ", ") + ir::dims_str(e.index->type().dims());
      }
      L.fail(at,
             "shape mismatch: index tensors of shapes " + shapes + " cannot be broadcast together");
    }
  }
  p.bshape = ir::static_shape(*b);
  for (const DimIndex& di : indices) {
    ir::Value* i = L.cast(di.index, DType::I64, di.span);
    ir::Value* size = int_const(L, p.xs[size_t(di.dim)], at);
    ir::Value* neg = L.apply1("lt", {i, int_const(L, 0, at)}, {}, at);
    i = L.apply1("where", {neg, L.apply1("add", {i, size}, {}, at), i}, {}, at);
    p.wrapped.push_back(expand(L, i, p.bshape, at));
  }
  p.first = indices[0].dim;
  for (size_t k = 1; k < indices.size(); ++k) {
    p.adjacent = p.adjacent && indices[k].dim == indices[k - 1].dim + 1;
  }
  std::vector<bool> indexed(p.xs.size(), false);
  for (const DimIndex& di : indices) {
    indexed[size_t(di.dim)] = true;
    p.order.push_back(di.dim);
  }
  for (size_t d = 0; d < p.xs.size(); ++d) {
    if (indexed[d]) continue;
    p.order.push_back(int64_t(d));
    p.rest.push_back(p.xs[d]);
  }
  return p;
}

// The linear index into the indexed dims flattened (row-major), -1 when any
// component is outside its dim; [n].
ir::Value* linear_index(Lowerer& L, const Prepared& p, const std::vector<DimIndex>& indices,
                        const Span& at) {
  ir::Value* lin = nullptr;
  ir::Value* bad = nullptr;
  int64_t stride = 1;
  for (size_t k = indices.size(); k-- > 0;) {
    ir::Value* w = p.wrapped[k];
    int64_t size = p.xs[size_t(indices[k].dim)];
    ir::Value* term = stride == 1 ? w : L.apply1("mul", {w, int_const(L, stride, at)}, {}, at);
    lin = lin ? L.apply1("add", {lin, term}, {}, at) : term;
    ir::Value* out = L.apply1("logical_or",
                              {L.apply1("lt", {w, int_const(L, 0, at)}, {}, at),
                               L.apply1("ge", {w, int_const(L, size, at)}, {}, at)},
                              {}, at);
    bad = bad ? L.apply1("logical_or", {bad, out}, {}, at) : out;
    stride *= size;
  }
  lin = L.apply1("where", {bad, int_const(L, -1, at), lin}, {}, at);
  return reshape(L, lin, {numel(p.bshape)}, at);
}

// Where the broadcast index dims go in the result (PyTorch's rule).
Shape view_shape(const Prepared& p) {
  Shape v = p.rest;
  int64_t pos = p.adjacent ? p.first : 0;
  v.insert(v.begin() + pos, p.bshape.begin(), p.bshape.end());
  return v;
}

// Moves the index dims (b of them, at the front of a [B, rest] value) to `pos`.
std::vector<int64_t> index_dims_to(size_t b, size_t r, int64_t pos) {
  std::vector<int64_t> perm;
  for (int64_t j = 0; j < pos; ++j) perm.push_back(int64_t(b) + j);
  for (size_t j = 0; j < b; ++j) perm.push_back(int64_t(j));
  for (size_t j = size_t(pos); j < r; ++j) perm.push_back(int64_t(b + j));
  return perm;
}

std::vector<int64_t> inverse(const std::vector<int64_t>& perm) {
  std::vector<int64_t> inv(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) inv[size_t(perm[i])] = int64_t(i);
  return inv;
}

// x with its indexed dims first and flattened: [S, rest...].
ir::Value* flatten_indexed(Lowerer& L, ir::Value* x, const Prepared& p, const Span& at) {
  int64_t s = 1;
  for (size_t k = 0; k < p.xs.size() - p.rest.size(); ++k) s *= p.xs[size_t(p.order[k])];
  Shape flat = p.rest;
  flat.insert(flat.begin(), s);
  return reshape(L, permute(L, x, p.order, at), flat, at);
}

}  // namespace

void check_index_tensor(Lowerer& L, ir::Value* index, const Span& at) {
  DType t = index->type().dtype();
  if (t == DType::Bool || t == DType::U8) {
    L.fail(at,
           "indexing with a boolean mask gives a result whose shape depends on the data, "
           "which Kiln's static shapes cannot express",
           "keep the shape with torch.where(mask, x, other) or x.masked_fill(~mask, value)");
  }
  if (!is_integral(t)) {
    L.fail(at, "tensors used as indices must be integer tensors (int64 or int32), got " +
                   std::string(dtype_name(t)));
  }
}

ir::Value* index_get(Lowerer& L, ir::Value* x, const std::vector<DimIndex>& indices,
                     const Span& at) {
  Prepared p = prepare(L, x, indices, at);
  const int64_t n = numel(p.bshape);
  if (indices.size() == 1) {
    const int64_t d = indices[0].dim;
    ir::Value* flat = reshape(L, p.wrapped[0], {n}, at);
    ir::Value* g = L.apply1("gather", {x, along(L, flat, p.xs, d, at)}, {{"dim", d}}, at);
    return reshape(L, g, view_shape(p), at);
  }
  ir::Value* xf = flatten_indexed(L, x, p, at);
  Shape fs = ir::static_shape(xf->type().dims());
  ir::Value* g = L.apply1("gather", {xf, along(L, linear_index(L, p, indices, at), fs, 0, at)},
                          {{"dim", int64_t{0}}}, at);
  Shape front = p.bshape;
  front.insert(front.end(), p.rest.begin(), p.rest.end());
  g = reshape(L, g, front, at);
  if (p.adjacent) g = permute(L, g, index_dims_to(p.bshape.size(), p.rest.size(), p.first), at);
  return g;
}

ir::Value* index_put(Lowerer& L, ir::Value* x, const std::vector<DimIndex>& indices,
                     ir::Value* value, bool accumulate, const Span& at) {
  Prepared p = prepare(L, x, indices, at);
  const int64_t n = numel(p.bshape);
  Shape vs = view_shape(p);
  ir::Value* v = L.cast(value, x->type().dtype(), at);
  if (v->type().rank() > int64_t(vs.size()) ||
      !ir::broadcast_dims(v->type().dims(), ir::dims_from_shape(vs)) ||
      *ir::broadcast_dims(v->type().dims(), ir::dims_from_shape(vs)) != ir::dims_from_shape(vs)) {
    L.fail(at, "shape mismatch: a value of shape " + ir::dims_str(v->type().dims()) +
                   " cannot be broadcast to the indexed shape " +
                   ir::dims_str(ir::dims_from_shape(vs)));
  }
  v = expand(L, v, vs, at);
  ir::Attrs attrs{{"reduce", std::string(accumulate ? "sum" : "none")}};
  if (indices.size() == 1) {
    const int64_t d = indices[0].dim;
    Shape target = p.xs;
    target[size_t(d)] = n;
    v = reshape(L, v, target, at);
    attrs.set("dim", d);
    ir::Value* flat = reshape(L, p.wrapped[0], {n}, at);
    return L.apply1("scatter", {x, along(L, flat, target, d, at), v}, attrs, at);
  }
  ir::Value* xf = flatten_indexed(L, x, p, at);
  if (p.adjacent) {
    v = permute(L, v, inverse(index_dims_to(p.bshape.size(), p.rest.size(), p.first)), at);
  }
  Shape target = p.rest;
  target.insert(target.begin(), n);
  v = reshape(L, v, target, at);
  attrs.set("dim", int64_t{0});
  ir::Value* lin = along(L, linear_index(L, p, indices, at), target, 0, at);
  ir::Value* r = L.apply1("scatter", {xf, lin, v}, attrs, at);
  Shape permuted;
  for (int64_t d : p.order) permuted.push_back(p.xs[size_t(d)]);
  return permute(L, reshape(L, r, permuted, at), inverse(p.order), at);
}

namespace {

// scatter's index and src as PyTorch takes them: src a tensor or a number.
ir::Value* scatter_src(Bound& b, ir::Value* x, ir::Value* index, const Val& src,
                       const std::string& name) {
  if (src.is_tensor()) return src.value;
  if (!src.is_number()) b.fail(name, name + " must be a tensor or a number");
  Shape s = static_shape_of(b.L, index, b.span("index"), "an index");
  return b.L.apply1("full", {}, {{"size", s}, {"value", src.num()}, {"dtype", x->type().dtype()}},
                    b.call.callee);
}

Val scatter_op(Bound& b, ir::Value* src, const std::string& reduce, bool include_self = true) {
  return emit(b, "scatter", {b.tensor("input"), b.tensor("index"), src},
              {{"dim", b.int_("dim")}, {"reduce", reduce}, {"include_self", include_self}});
}

// scatter_reduce's mean: the sum over (count + include_self), untouched elements kept.
Val scatter_mean(Bound& b, ir::Value* x, int64_t dim, ir::Value* index, ir::Value* src,
                 bool include_self) {
  Lowerer& L = b.L;
  const Span& at = b.call.callee;
  ir::Attrs attrs{{"dim", dim}, {"reduce", std::string("sum")}};
  attrs.set("include_self", include_self);
  ir::Value* sum = L.apply1("scatter", {x, index, src}, attrs, at);
  Shape xs = static_shape_of(L, x, at, "a tensor");
  Shape is = static_shape_of(L, index, at, "an index");
  auto full = [&](const Shape& s, double v) {
    return L.apply1("full", {}, {{"size", s}, {"value", v}, {"dtype", DType::I64}}, at);
  };
  attrs.set("include_self", true);
  ir::Value* count =
      L.apply1("scatter", {full(xs, include_self ? 1 : 0), index, full(is, 1)}, attrs, at);
  ir::Value* zero = L.apply1("eq", {count, int_const(L, 0, at)}, {}, at);
  ir::Value* safe = L.apply1("masked_fill", {count, zero, int_const(L, 1, at)}, {}, at);
  DType t = x->type().dtype();
  ir::Value* q;
  if (is_floating(t)) {
    q = L.apply1("div", {sum, L.cast(safe, t, at)}, {}, at);
  } else {
    q = L.cast(L.apply1("div", {sum, safe}, {{"rounding_mode", std::string("floor")}}, at), t, at);
  }
  return L.fresh(L.apply1("where", {zero, x, q}, {}, at));
}

// index_add / index_copy / index_fill / index_reduce: a vector index along
// `dim` of x, applied to every position of the other dims; the scatter's
// (dim, index, src).
struct AlongIndex {
  int64_t dim = 0;
  ir::Value* index = nullptr;
  ir::Value* src = nullptr;
};

AlongIndex index_along_args(Bound& b, const std::string& source_arg, double alpha = 1) {
  Lowerer& L = b.L;
  const Span& at = b.call.callee;
  ir::Value* x = b.tensor("input");
  ir::Value* index = b.tensor("index");
  check_index_tensor(L, index, b.span("index"));
  if (index->type().rank() > 1) b.fail("index", "index must be a vector (rank 0 or 1)");
  const int64_t d = norm_dim(L, b.int_("dim"), x->type().rank(), b.span("dim"));
  Shape xs = static_shape_of(L, x, at, "a tensor");
  const int64_t n = numel(static_shape_of(L, index, at, "an index"));
  Shape target = xs;
  if (!target.empty()) target[size_t(d)] = n;
  ir::Value* src;
  const Val& sv = b.val(source_arg);
  if (sv.is_tensor()) {
    src = L.cast(sv.value, x->type().dtype(), at);
    if (src->type().rank() == 0 && !target.empty()) src = expand(L, src, target, at);
    if (src->type().dims() != ir::dims_from_shape(target)) {
      b.fail(source_arg, source_arg + " of shape " + ir::dims_str(src->type().dims()) +
                             " must have shape " + ir::dims_str(ir::dims_from_shape(target)));
    }
    if (alpha != 1) src = L.apply1("mul", {src, L.constant(Val::float_(alpha), at)}, {}, at);
    src = L.cast(src, x->type().dtype(), at);
  } else if (sv.is_number()) {
    src = L.apply1("full", {},
                   {{"size", target}, {"value", sv.num()}, {"dtype", x->type().dtype()}}, at);
  } else {
    b.fail(source_arg, source_arg + " must be a tensor or a number");
  }
  ir::Value* idx = xs.empty() ? reshape(L, index, {}, at) : along(L, index, target, d, at);
  return {d, idx, src};
}

Val index_along(Bound& b, const std::string& source_arg, const std::string& reduce,
                double alpha = 1) {
  AlongIndex a = index_along_args(b, source_arg, alpha);
  return emit(b, "scatter", {b.tensor("input"), a.index, a.src},
              {{"dim", a.dim}, {"reduce", reduce}});
}

// masked_scatter: the k-th True of the mask (broadcast to x, row-major) takes
// source's k-th element (source read flat). The mask's running count, 1-based,
// gathers from [pad, source...]: a False position reads the pad (unused), and
// a True one past source's end is gather's run-time error, as PyTorch raises
// "Number of elements of source < number of ones in mask".
Val masked_scatter(Bound& b) {
  Lowerer& L = b.L;
  const Span& at = b.call.callee;
  ir::Value* x = b.tensor("input");
  ir::Value* mask = b.tensor("mask");
  ir::Value* source = b.tensor("source");
  if (mask->type().dtype() != DType::Bool) {
    b.fail("mask", "masked_scatter expects a bool mask, got " + mask->type().str());
  }
  if (source->type().dtype() != x->type().dtype()) {
    b.fail("source", "masked_scatter expects source of the same dtype as input (" +
                         std::string(dtype_name(x->type().dtype())) + "), got " +
                         source->type().str());
  }
  Shape xs = static_shape_of(L, x, at, "a tensor");
  Shape ss = static_shape_of(L, source, at, "a source");
  const int64_t n = numel(xs);
  ir::Value* m = reshape(L, expand(L, mask, xs, at), {n}, at);
  ir::Value* count = L.apply1("cumsum", {m}, {{"dim", int64_t{0}}}, at);
  ir::Value* pos = L.apply1("where", {m, count, int_const(L, 0, at)}, {}, at);
  ir::Value* pad =
      L.apply1("full", {}, {{"size", Shape{1}}, {"value", 0.0}, {"dtype", x->type().dtype()}}, at);
  ir::Value* padded =
      L.apply1("cat", {pad, reshape(L, source, {numel(ss)}, at)}, {{"dim", int64_t{0}}}, at);
  ir::Value* picked = L.apply1("gather", {padded, pos}, {{"dim", int64_t{0}}}, at);
  ir::Value* out = L.apply1("where", {m, picked, reshape(L, x, {n}, at)}, {}, at);
  return L.fresh(reshape(L, out, xs, at));
}

}  // namespace

void add_index_ops(std::vector<OpEntry>& t) {
  t.push_back(
      {"gather", TM, "input, dim, index, *, sparse_grad=False", [](Bound& b) {
         check_index_tensor(b.L, b.tensor("index"), b.span("index"));
         return emit(b, "gather", {b.tensor("input"), b.tensor("index")}, {{"dim", b.int_("dim")}});
       }});
  t.push_back(
      {"take_along_dim", TM, "input, indices, dim=None", [](Bound& b) {
         Lowerer& L = b.L;
         const Span& at = b.call.callee;
         ir::Value* x = b.tensor("input");
         ir::Value* idx = b.tensor("indices");
         check_index_tensor(L, idx, b.span("indices"));
         if (b.is_none("dim")) {
           Shape xs = static_shape_of(L, x, at, "a tensor");
           Shape is = static_shape_of(L, idx, at, "an index");
           return emit(b, "gather",
                       {reshape(L, x, {numel(xs)}, at), reshape(L, idx, {numel(is)}, at)},
                       {{"dim", int64_t{0}}});
         }
         if (x->type().rank() != idx->type().rank()) {
           b.fail("indices", "input and indices must have the same number of dims");
         }
         const int64_t d = norm_dim(L, b.int_("dim"), x->type().rank(), b.span("dim"));
         Shape xs = static_shape_of(L, x, at, "a tensor");
         Shape is = static_shape_of(L, idx, at, "an index");
         Shape xb = xs, ib = is;
         for (size_t k = 0; k < xs.size(); ++k) {
           if (int64_t(k) == d) continue;
           if (xs[k] != is[k] && xs[k] != 1 && is[k] != 1) {
             b.fail("indices", "input " + ir::dims_str(x->type().dims()) + " and indices " +
                                   ir::dims_str(idx->type().dims()) +
                                   " do not broadcast outside dim " + std::to_string(d));
           }
           xb[k] = ib[k] = xs[k] == 1 ? is[k] : xs[k];
         }
         return emit(b, "gather", {expand(L, x, xb, at), expand(L, idx, ib, at)}, {{"dim", d}});
       }});
  t.push_back(
      {"take", TM, "input, index", [](Bound& b) {
         // x viewed as 1-D; negative indices count from the end, as in PyTorch.
         const Span& at = b.call.callee;
         ir::Value* x = b.tensor("input");
         ir::Value* flat = reshape(b.L, x, {numel(static_shape_of(b.L, x, at, "a tensor"))}, at);
         return b.L.fresh(index_get(b.L, flat, {{0, b.tensor("index"), b.span("index")}}, at));
       }});
  t.push_back({"index_select", TM, "input, dim, index", [](Bound& b) {
                 Lowerer& L = b.L;
                 const Span& at = b.call.callee;
                 ir::Value* x = b.tensor("input");
                 ir::Value* index = b.tensor("index");
                 check_index_tensor(L, index, b.span("index"));
                 if (index->type().rank() > 1) {
                   b.fail("index", "index_select's index must be a vector (rank 0 or 1)");
                 }
                 const int64_t d = norm_dim(L, b.int_("dim"), x->type().rank(), b.span("dim"));
                 Shape xs = static_shape_of(L, x, at, "a tensor");
                 if (xs.empty())
                   return emit(b, "gather", {x, reshape(L, index, {}, at)}, {{"dim", int64_t{0}}});
                 return emit(b, "gather", {x, along(L, index, xs, d, at)}, {{"dim", d}});
               }});
  t.push_back({"embedding", kF,
               "input, weight, padding_idx=None, max_norm=None, norm_type=2.0, "
               "scale_grad_by_freq=False, sparse=False",
               [](Bound& b) {
                 Lowerer& L = b.L;
                 const Span& at = b.call.callee;
                 if (!b.is_none("max_norm")) {
                   b.fail("max_norm",
                          "embedding with max_norm is not supported: it renormalizes the weight "
                          "rows in place; normalize the weight before the call instead");
                 }
                 ir::Value* input = b.tensor("input");
                 ir::Value* weight = b.tensor("weight");
                 check_index_tensor(L, input, b.span("input"));
                 if (weight->type().rank() != 2) b.fail("weight", "weight must be 2-D");
                 Shape ws = static_shape_of(L, weight, at, "a weight");
                 Shape is = static_shape_of(L, input, at, "an index");
                 ir::Value* flat = reshape(L, input, {numel(is)}, at);
                 ir::Value* rows = L.apply1("gather", {weight, along(L, flat, ws, 0, at)},
                                            {{"dim", int64_t{0}}}, at);
                 Shape out = is;
                 out.push_back(ws[1]);
                 return L.fresh(reshape(L, rows, out, at));
               }});
  t.push_back(
      {"one_hot", kF, "tensor, num_classes=-1", [](Bound& b) {
         Lowerer& L = b.L;
         const Span& at = b.call.callee;
         ir::Value* x = b.tensor("tensor");
         const int64_t c = b.int_("num_classes");
         if (c < 0) {
           L.fail(b.span("num_classes"),
                  "one_hot with num_classes=-1 takes the class count from the data "
                  "(max + 1), which Kiln's static shapes cannot express",
                  "pass the number of classes: F.one_hot(t, num_classes=C)");
         }
         check_index_tensor(L, x, b.span("tensor"));
         Shape xs = static_shape_of(L, x, at, "an index");
         ir::Value* classes = L.apply1(
             "arange", {},
             {{"start", 0.0}, {"end", double(c)}, {"step", 1.0}, {"dtype", DType::I64}}, at);
         // Gathering the class ids checks every value against [0, C).
         ir::Value* flat = reshape(L, x, {numel(xs)}, at);
         ir::Value* checked = L.apply1("gather", {classes, flat}, {{"dim", int64_t{0}}}, at);
         Shape col = xs;
         col.push_back(1);
         ir::Value* eq = L.apply1("eq", {reshape(L, checked, col, at), classes}, {}, at);
         return L.fresh(L.cast(eq, DType::I64, at));
       }});
  t.push_back(
      {"scatter", TM, "input, dim, index, src=None, value=None, *, reduce=None", [](Bound& b) {
         ir::Value* x = b.tensor("input");
         bool has_src = !b.is_none("src");
         if (has_src == !b.is_none("value")) {
           b.fail("scatter takes exactly one of src and value");
         }
         std::string name = has_src ? "src" : "value";
         ir::Value* src = scatter_src(b, x, b.tensor("index"), b.val(name), name);
         std::string reduce = "none";
         if (!b.is_none("reduce")) {
           std::string r = b.str("reduce");
           if (r != "add" && r != "multiply") {
             b.fail("reduce", "reduce must be 'add' or 'multiply', got '" + r + "'");
           }
           reduce = r == "add" ? "sum" : "prod";
         }
         return scatter_op(b, src, reduce);
       }});
  t.push_back({"scatter_add", TM, "input, dim, index, src",
               [](Bound& b) { return scatter_op(b, b.tensor("src"), "sum"); }});
  t.push_back(
      {"scatter_reduce", TM, "input, dim, index, src, reduce, *, include_self=True", [](Bound& b) {
         std::string r = b.str("reduce");
         bool self = b.bool_("include_self");
         if (r == "mean") {
           return scatter_mean(b, b.tensor("input"), b.int_("dim"), b.tensor("index"),
                               b.tensor("src"), self);
         }
         if (r != "sum" && r != "prod" && r != "amax" && r != "amin") {
           b.fail("reduce",
                  "reduce must be 'sum', 'prod', 'mean', 'amax' or 'amin', got '" + r + "'");
         }
         return scatter_op(b, b.tensor("src"), r, self);
       }});
  t.push_back({"index_add", TM, "input, dim, index, source, *, alpha=1", [](Bound& b) {
                 const Val& a = b.val("alpha");
                 if (!a.is_number()) b.fail("alpha", "alpha must be a number");
                 return index_along(b, "source", "sum", a.num());
               }});
  t.push_back(
      {"index_reduce", TM, "input, dim, index, source, reduce, *, include_self=True", [](Bound& b) {
         std::string r = b.str("reduce");
         if (r != "prod" && r != "mean" && r != "amax" && r != "amin") {
           b.fail("reduce", "reduce must be 'prod', 'mean', 'amax' or 'amin', got '" + r + "'");
         }
         if (!b.val("source").is_tensor()) b.fail("source", "source must be a tensor");
         bool self = b.bool_("include_self");
         AlongIndex a = index_along_args(b, "source");
         ir::Value* x = b.tensor("input");
         if (r == "mean") return scatter_mean(b, x, a.dim, a.index, a.src, self);
         ir::Attrs attrs{{"dim", a.dim}, {"reduce", r}};
         attrs.set("include_self", self);
         return emit(b, "scatter", {x, a.index, a.src}, attrs);
       }});
  t.push_back({"masked_scatter", TM, "input, mask, source", masked_scatter});
  t.push_back({"index_copy", TM, "input, dim, index, source",
               [](Bound& b) { return index_along(b, "source", "none"); }});
  t.push_back({"index_fill", TM, "input, dim, index, value",
               [](Bound& b) { return index_along(b, "value", "none"); }});
  t.push_back({"index_put", TM, "input, indices, values, accumulate=False", [](Bound& b) {
                 const Val& iv = b.val("indices");
                 if (!iv.is_seq()) b.fail("indices", "indices must be a tuple or list of tensors");
                 std::vector<DimIndex> dims;
                 for (size_t k = 0; k < iv.items.size(); ++k) {
                   const Val& item = iv.items[k];
                   if (item.kind == Val::Kind::None) continue;
                   if (!item.is_tensor()) b.fail("indices", "indices must be tensors or None");
                   dims.push_back({int64_t(k), item.value, b.span("indices")});
                 }
                 ir::Value* x = b.tensor("input");
                 if (int64_t(iv.items.size()) > x->type().rank()) {
                   b.fail("indices", "too many indices for a tensor of rank " +
                                         std::to_string(x->type().rank()));
                 }
                 if (dims.empty()) b.fail("indices", "index_put needs at least one index tensor");
                 return b.L.fresh(index_put(b.L, x, dims, b.tensor("values"), b.bool_("accumulate"),
                                            b.call.callee));
               }});
}

}  // namespace kiln::frontend
