// Indexing: `x[1:, ::2]`, `x[..., -1]`, `x[None]`, `x[2]` become slice /
// select / unsqueeze views; `xs[0]` on tuples and lists is compile-time.
// Integer index tensors (`x[idx]`, `x[:, i0, i1]`) are advanced indexing
// (frontend/index_ops.h): as in PyTorch, ints and slices apply first and the
// index tensors then pick along the dims they stand at.
//
// Slice assignment is functionalized into pure ops: the assigned value is
// broadcast to the indexed region, laid out at its place in a tensor of the
// base's shape ("spread" along each indexed dim with cat, interleaving zeros
// for steps > 1), and merged with the base through where() with a mask built
// the same way:
//   y[:, 1:3] = v   ==>   where(cat([F, T, T, F...]), cat([0, v, 0]), y)
#include <limits>

#include "frontend/index_ops.h"

namespace kiln::frontend {

namespace {

struct IndexItem {
  enum Kind { Int, Slice, NewAxis, Ellipsis, Tensor } kind = Int;
  int64_t i = 0;
  ir::Value* tensor = nullptr;
  std::optional<int64_t> start, stop, step;
  Span span;
};

std::optional<int64_t> opt_int(Lowerer& L, const ExprPtr& e) {
  if (!e) return std::nullopt;
  Val v = L.eval(*e);
  if (v.kind == Val::Kind::None) return std::nullopt;
  if (v.kind == Val::Kind::Int || v.kind == Val::Kind::Bool) return v.i;
  if (v.kind == Val::Kind::SymDim) {
    L.fail(e->span, "slicing with the symbolic size '" + v.s + "' is not supported yet");
  }
  L.fail(e->span, "slice bounds must be integers, got " + kind_name(v));
}

std::vector<IndexItem> parse_index(Lowerer& L, const Expr& index) {
  std::vector<const Expr*> parts;
  if (index.kind == ExprKind::Tuple) {
    for (const ExprPtr& p : index.items) parts.push_back(p.get());
  } else {
    parts.push_back(&index);
  }
  std::vector<IndexItem> items;
  for (const Expr* p : parts) {
    IndexItem it;
    it.span = p->span;
    if (p->kind == ExprKind::Slice) {
      it.kind = IndexItem::Slice;
      it.start = opt_int(L, p->items[0]);
      it.stop = opt_int(L, p->items[1]);
      it.step = opt_int(L, p->items[2]);
      if (it.step && *it.step <= 0) L.fail(p->span, "slice step must be positive");
    } else if (p->kind == ExprKind::Ellipsis) {
      it.kind = IndexItem::Ellipsis;
    } else {
      Val v = L.eval(*p);
      if (v.kind == Val::Kind::None) {
        it.kind = IndexItem::NewAxis;
      } else if (v.kind == Val::Kind::Int) {
        it.i = v.i;
      } else if (v.is_tensor()) {
        check_index_tensor(L, v.value, p->span);
        it.kind = IndexItem::Tensor;
        it.tensor = v.value;
      } else {
        L.fail(p->span,
               "a tensor index must be an integer, a slice, None or '...', got " + kind_name(v));
      }
    }
    items.push_back(it);
  }
  return items;
}

// Python's slice.indices for a positive step: clamped [start, stop).
void clamp_slice(const IndexItem& it, int64_t size, int64_t& start, int64_t& stop) {
  start = it.start.value_or(0);
  stop = it.stop.value_or(size);
  if (start < 0) start += size;
  if (stop < 0) stop += size;
  start = std::clamp<int64_t>(start, 0, size);
  stop = std::clamp<int64_t>(stop, start, size);
}

// Expands `...` and counts; fails on too many indices.
std::vector<IndexItem> expand_ellipsis(Lowerer& L, std::vector<IndexItem> items, int64_t rank,
                                       const Span& at) {
  int64_t consuming = 0, ellipses = 0;
  for (const IndexItem& it : items) {
    if (it.kind == IndexItem::Int || it.kind == IndexItem::Slice || it.kind == IndexItem::Tensor) {
      ++consuming;
    }
    if (it.kind == IndexItem::Ellipsis) ++ellipses;
  }
  if (ellipses > 1) L.fail(at, "an index can only have a single ellipsis ('...')");
  if (consuming > rank) {
    L.fail(at, "too many indices for a tensor of rank " + std::to_string(rank) + ": " +
                   std::to_string(consuming) + " were indexed");
  }
  std::vector<IndexItem> out;
  for (const IndexItem& it : items) {
    if (it.kind == IndexItem::Ellipsis) {
      for (int64_t k = 0; k < rank - consuming; ++k) {
        IndexItem full;
        full.kind = IndexItem::Slice;
        full.span = it.span;
        out.push_back(full);
      }
    } else {
      out.push_back(it);
    }
  }
  // Dims not mentioned are taken whole.
  int64_t used = 0;
  for (const IndexItem& it : out) {
    used +=
        it.kind == IndexItem::Int || it.kind == IndexItem::Slice || it.kind == IndexItem::Tensor;
  }
  for (; used < rank; ++used) {
    IndexItem full;
    full.kind = IndexItem::Slice;
    full.span = at;
    out.push_back(full);
  }
  return out;
}

}  // namespace

Val Lowerer::subscript(const Val& base, const Expr& index, const Span& at) {
  if (base.kind == Val::Kind::Poison) throw Abort{};
  if (base.is_seq()) {
    if (index.kind == ExprKind::Slice) {
      std::vector<IndexItem> its = parse_index(*this, index);
      int64_t n = int64_t(base.items.size()), start, stop;
      clamp_slice(its[0], n, start, stop);
      int64_t step = its[0].step.value_or(1);
      std::vector<Val> out;
      for (int64_t k = start; k<stop; k = step> stop - k ? stop : k + step) {  // no overflow
        out.push_back(base.items[size_t(k)]);
      }
      return Val::tuple(std::move(out), base.kind);
    }
    Val k = eval(index);
    if (k.is_runtime_number()) {
      runtime_value_needed(k, index.span, "a list or tuple index", "index with a constant or a size");
    }
    if (k.kind != Val::Kind::Int)
      fail(index.span, "tuple indices must be integers, got " + kind_name(k));
    int64_t n = int64_t(base.items.size());
    int64_t i = k.i < 0 ? k.i + n : k.i;
    if (i < 0 || i >= n) {
      fail(index.span, "index " + std::to_string(k.i) + " is out of range for a " +
                           kind_name(base) + " of length " + std::to_string(n));
    }
    return base.items[size_t(i)];
  }
  if (base.kind == Val::Kind::Type) return base;  // List[int], Optional[Tensor] in annotations
  if (!base.is_tensor()) fail(at, "a " + kind_name(base) + " cannot be indexed");

  ir::Value* cur = base.value;
  int64_t rank = cur->type().rank();
  std::vector<IndexItem> items = expand_ellipsis(*this, parse_index(*this, index), rank, at);
  int64_t d = 0;  // dim of `cur` the next item applies to
  std::vector<DimIndex> tensors;
  for (const IndexItem& it : items) {
    const ir::Dims& dims = cur->type().dims();
    switch (it.kind) {
      case IndexItem::Tensor:
        tensors.push_back({d, it.tensor, it.span});
        ++d;
        break;
      case IndexItem::NewAxis:
        cur = apply1("unsqueeze", {cur}, {{"dim", d}}, it.span);
        ++d;
        break;
      case IndexItem::Int: {
        int64_t idx = it.i;
        if (dims[size_t(d)].is_static()) {
          int64_t size = dims[size_t(d)].value;
          if (idx < -size || idx >= size) {
            fail(it.span, "index " + std::to_string(idx) + " is out of bounds for dimension " +
                              std::to_string(d) + " with size " + std::to_string(size));
          }
          if (idx < 0) idx += size;
        }
        cur = apply1("select", {cur}, {{"dim", d}, {"index", idx}}, it.span);
        break;
      }
      case IndexItem::Slice: {
        int64_t step = it.step.value_or(1);
        if (dims[size_t(d)].is_static()) {
          int64_t size = dims[size_t(d)].value, start, stop;
          clamp_slice(it, size, start, stop);
          if (start != 0 || stop != size || step != 1) {
            cur = apply1("slice", {cur},
                         {{"dim", d}, {"start", start}, {"end", stop}, {"step", step}}, it.span);
          }
        } else if (it.start || it.stop || step != 1) {
          int64_t stop = it.stop.value_or(std::numeric_limits<int64_t>::max());
          cur = apply1("slice", {cur},
                       {{"dim", d}, {"start", it.start.value_or(0)}, {"end", stop}, {"step", step}},
                       it.span);
        }
        ++d;
        break;
      }
      case IndexItem::Ellipsis:
        break;  // expanded above
    }
  }
  if (!tensors.empty()) return fresh(index_get(*this, cur, tensors, at));  // a copy, as in PyTorch
  return view_of(cur, base);
}

namespace {

// x[..., idx, ...] = v with every other item a whole dim (`:` or `...`).
ir::Value* scatter_tensors(Lowerer& L, ir::Value* x, const std::vector<IndexItem>& items,
                           const Val& value, const Span& at) {
  std::vector<DimIndex> tensors;
  int64_t d = 0;
  for (const IndexItem& it : items) {
    if (it.kind == IndexItem::Tensor) {
      tensors.push_back({d, it.tensor, it.span});
    } else if (it.kind != IndexItem::Slice || it.start || it.stop || it.step) {
      L.fail(it.span,
             "assignment through index tensors mixed with integers, partial slices or None is "
             "not supported yet",
             "index the whole dims (x[:, idx] = v) or assign to a slice first");
    }
    ++d;
  }
  ir::Value* v;
  if (value.is_tensor()) {
    v = value.value;
  } else if (value.is_number()) {
    v = L.apply1("full", {},
                 {{"size", Shape{}}, {"value", value.num()}, {"dtype", x->type().dtype()}}, at);
  } else {
    L.fail(at, "can only assign a tensor or a number into a tensor, got " + kind_name(value));
  }
  return index_put(L, x, tensors, v, false, at);
}

}  // namespace

ir::Value* Lowerer::scatter(const Val& base, const Expr& index, const Val& value, const Span& at) {
  ir::Value* x = base.value;
  const ir::Type& xt = x->type();
  if (!ir::dims_are_static(xt.dims())) {
    fail(at, "assignment into a slice of a tensor with symbolic sizes is not supported yet");
  }
  Shape full = ir::static_shape(xt.dims());
  int64_t rank = int64_t(full.size());
  DType dt = xt.dtype();
  std::vector<IndexItem> items = expand_ellipsis(*this, parse_index(*this, index), rank, at);
  for (const IndexItem& it : items) {
    if (it.kind == IndexItem::Tensor) return scatter_tensors(*this, x, items, value, at);
  }

  // Per base dim: the selected positions start, start+step, ... (n of them).
  struct Sel {
    int64_t start = 0, n = 0, step = 1;
  };
  std::vector<Sel> sel;
  Shape view_shape;  // what x[index] looks like (value broadcasts to it)
  for (const IndexItem& it : items) {
    int64_t d = int64_t(sel.size());
    if (it.kind == IndexItem::NewAxis) {
      view_shape.push_back(1);
    } else if (it.kind == IndexItem::Int) {
      int64_t size = full[size_t(d)], idx = it.i;
      if (idx < -size || idx >= size) {
        fail(it.span, "index " + std::to_string(idx) + " is out of bounds for dimension " +
                          std::to_string(d) + " with size " + std::to_string(size));
      }
      sel.push_back({idx < 0 ? idx + size : idx, 1, 1});
    } else if (it.kind == IndexItem::Slice) {
      int64_t start, stop, step = it.step.value_or(1);
      clamp_slice(it, full[size_t(d)], start, stop);
      int64_t n = stop == start ? 0 : (stop - start - 1) / step + 1;  // no overflow
      sel.push_back({start, n, step});
      view_shape.push_back(n);
    }
  }
  Shape region;  // the selected block, one entry per base dim
  for (const Sel& s : sel) {
    if (s.n == 0) return x;  // nothing is assigned
    region.push_back(s.n);
  }

  auto fill = [&](const Shape& shape, double v, DType t) {
    return apply1("full", {}, {{"size", shape}, {"value", v}, {"dtype", t}}, at);
  };
  // The value, converted like Tensor.copy_: cast to x's dtype, broadcast to the view.
  ir::Value* v;
  if (value.is_tensor()) {
    v = cast(value.value, dt, at);
    if (v->type().rank() > int64_t(view_shape.size())) {
      fail(at, "cannot assign a tensor of shape " + ir::dims_str(v->type().dims()) +
                   " to a slice of shape " + shape_str(view_shape));
    }
  } else if (value.is_number()) {
    v = fill({}, value.num(), dt);
  } else {
    fail(at, "can only assign a tensor or a number into a tensor, got " + kind_name(value));
  }
  if (v->type().dims() != ir::dims_from_shape(view_shape)) {
    v = apply1("expand", {v}, {{"size", view_shape}}, at);
  }
  if (region != view_shape) v = apply1("reshape", {v}, {{"shape", region}}, at);

  ir::Value* mask = fill(region, 1, DType::Bool);
  bool any_spread = false;
  for (int64_t d = 0; d < rank; ++d) {
    const Sel& s = sel[size_t(d)];
    int64_t size = full[size_t(d)];
    if (s.start == 0 && s.step == 1 && s.n == size) continue;
    any_spread = true;
    auto spread = [&](ir::Value* t, double pad, DType pdt) {
      Shape shape = ir::static_shape(t->type().dims());
      int64_t len = s.n;
      if (s.step > 1) {
        // [.., n, ..] -> [.., n, step, ..] (value first, then zeros) -> [.., n*step, ..],
        // cut to the last selected element.
        ir::Value* u = apply1("unsqueeze", {t}, {{"dim", d + 1}}, at);
        Shape zshape = shape;
        zshape.insert(zshape.begin() + d + 1, s.step - 1);
        u = apply1("cat", {u, fill(zshape, pad, pdt)}, {{"dim", d + 1}}, at);
        Shape merged = shape;
        merged[size_t(d)] = s.n * s.step;
        u = apply1("reshape", {u}, {{"shape", merged}}, at);
        len = (s.n - 1) * s.step + 1;
        t = apply1("slice", {u},
                   {{"dim", d}, {"start", int64_t(0)}, {"end", len}, {"step", int64_t(1)}}, at);
        shape[size_t(d)] = len;
      }
      std::vector<ir::Value*> pieces;
      int64_t after = size - s.start - len;
      if (s.start > 0) {
        Shape p = shape;
        p[size_t(d)] = s.start;
        pieces.push_back(fill(p, pad, pdt));
      }
      pieces.push_back(t);
      if (after > 0) {
        Shape p = shape;
        p[size_t(d)] = after;
        pieces.push_back(fill(p, pad, pdt));
      }
      return pieces.size() == 1 ? t : apply1("cat", pieces, {{"dim", d}}, at);
    };
    v = spread(v, 0, dt);
    mask = spread(mask, 0, DType::Bool);
  }
  if (!any_spread) return v;  // every element is assigned
  return apply1("where", {mask, v, x}, {}, at);
}

}  // namespace kiln::frontend
