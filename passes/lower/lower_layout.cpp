// Lowerings of the layout ops as index remappings: an output element is the
// input element at a remapped index, so inside a fused group a layout op is
// pure indexing and alone it is one copy loop. reshape and friends map through
// the row-major flat index (skipped when only size-1 dims differ); cat and
// stack pick a piece with Select over clamped (always in-bounds) indices when
// inlined, and as kernels of their own copy each piece with offset indexing.
#include <algorithm>
#include <optional>
#include <utility>
#include <vector>

#include "ir/loop/simplify.h"
#include "ir/loop/visitor.h"
#include "passes/lower/lower_internal.h"

namespace kiln::passes::lower {
namespace {

using namespace kiln::loop;  // NOLINT

bool is_one(const Expr& e) {
  int64_t v = 0;
  return is_const_int(e, &v) && v == 1;
}

// The input index of output element `idx` of a row-major reshape, one group
// of dims at a time: the shortest runs of input and output dims with equal
// static products (224 -> 14 x 16, or 14 x 14 -> 196) map through their own
// flat index, so a split dim is i * 16 + j rather than a chain of divisions
// of the whole tensor's flat index (a 6-D patchify ran ~60x a plain copy).
// Empty when a symbolic or zero dim leaves the groups unknown.
std::optional<std::vector<std::pair<std::vector<size_t>, std::vector<size_t>>>> reshape_groups(
    const std::vector<Expr>& in, const std::vector<Expr>& out) {
  std::vector<std::pair<std::vector<size_t>, std::vector<size_t>>> groups;
  size_t i = 0, j = 0;
  auto value = [](const Expr& e, int64_t* v) { return is_const_int(e, v) && *v > 0; };
  while (i < in.size() && j < out.size()) {
    std::vector<size_t> gi, go;
    int64_t pi = 1, po = 1, v = 0;
    if (!value(in[i], &v)) {
      if (!equal(in[i], out[j])) return std::nullopt;
      groups.push_back({{i++}, {j++}});  // the same symbolic dim on both sides
      continue;
    }
    do {
      if (pi <= po && i < in.size()) {
        if (!value(in[i], &v)) return std::nullopt;
        pi *= v;
        gi.push_back(i++);
      } else if (j < out.size()) {
        if (!value(out[j], &v)) return std::nullopt;
        po *= v;
        go.push_back(j++);
      } else {
        return std::nullopt;
      }
    } while (pi != po || gi.empty() || go.empty());
    groups.push_back({gi, go});
  }
  // What is left on either side is size-1 dims (the products matched).
  for (; i < in.size(); ++i) {
    int64_t v = 0;
    if (!is_const_int(in[i], &v) || v != 1) return std::nullopt;
    groups.push_back({{i}, {}});
  }
  for (; j < out.size(); ++j) {
    int64_t v = 0;
    if (!is_const_int(out[j], &v) || v != 1) return std::nullopt;
  }
  return groups;
}

// Same row-major elements, new dims.
std::vector<Operand> lower_packed(NodeLowering& n) {
  Operand x = n.in(0);
  std::vector<Expr> out_dims = n.out_dims();
  std::vector<size_t> in_pos, out_pos;
  for (size_t d = 0; d < x.dims.size(); ++d) {
    if (!is_one(x.dims[d])) in_pos.push_back(d);
  }
  for (size_t d = 0; d < out_dims.size(); ++d) {
    if (!is_one(out_dims[d])) out_pos.push_back(d);
  }
  bool direct = in_pos.size() == out_pos.size();
  for (size_t k = 0; direct && k < in_pos.size(); ++k) {
    direct = equal(x.dims[in_pos[k]], out_dims[out_pos[k]]);
  }
  const auto groups = direct ? std::nullopt : reshape_groups(x.dims, out_dims);
  return {tensor_operand(
      x.dtype, out_dims,
      [=](const Index& idx) {
        if (direct) {
          Index in(x.dims.size(), make_int(0));
          for (size_t k = 0; k < in_pos.size(); ++k) in[in_pos[k]] = idx[out_pos[k]];
          return x.at(in);
        }
        if (!groups) return x.at(unflatten(flat_index(idx, out_dims), x.dims));
        Index in(x.dims.size(), make_int(0));
        for (const auto& [gi, go] : *groups) {
          Index part;
          std::vector<Expr> part_dims, in_dims;
          for (size_t d : go) part.push_back(idx[d]), part_dims.push_back(out_dims[d]);
          for (size_t d : gi) in_dims.push_back(x.dims[d]);
          Index sub = unflatten(go.empty() ? make_int(0) : flat_index(part, part_dims), in_dims);
          for (size_t k = 0; k < gi.size(); ++k) in[gi[k]] = sub[k];
        }
        return x.at(in);
      },
      n.out_type())};
}

std::vector<Operand> remap(NodeLowering& n, std::function<Index(const Index&)> f) {
  Operand x = n.in(0);
  return {tensor_operand(
      x.dtype, n.out_dims(), [x, f](const Index& idx) { return x.at(f(idx)); }, n.out_type())};
}

std::vector<Operand> lower_permute(NodeLowering& n) {
  std::vector<int64_t> dims = n.attrs().get_ints("dims");
  const int64_t r = n.in(0).rank();
  for (int64_t& d : dims) d = wrap_dim(d, r);
  return remap(n, [dims](const Index& idx) {
    Index in(idx.size());
    for (size_t i = 0; i < dims.size(); ++i) in[size_t(dims[i])] = idx[i];
    return in;
  });
}

std::vector<Operand> lower_transpose(NodeLowering& n) {
  const int64_t r = n.in(0).rank();
  int64_t a = wrap_dim(n.attrs().get_int("dim0"), r), b = wrap_dim(n.attrs().get_int("dim1"), r);
  return remap(n, [a, b](const Index& idx) {
    Index in = idx;
    if (!in.empty()) std::swap(in[size_t(a)], in[size_t(b)]);
    return in;
  });
}

std::vector<Operand> lower_expand(NodeLowering& n) {
  Operand x = n.in(0);
  return {tensor_operand(
      x.dtype, n.out_dims(), [x](const Index& idx) { return x.broadcast_at(idx); }, n.out_type())};
}

std::vector<Operand> lower_slice(NodeLowering& n) {
  const Operand& x = n.in(0);
  const size_t d = size_t(wrap_dim(n.attrs().get_int("dim"), x.rank()));
  int64_t size = 0;
  int64_t start = 0, step = n.attrs().get_int("step");
  if (is_const_int(x.dims[d], &size)) {
    // Python's clamping, as the reference (a symbolic dim only allows the full slice).
    start = n.attrs().get_int("start");
    if (start < 0) start += size;
    start = std::clamp<int64_t>(start, 0, size);
  }
  // An argument when sibling slices differ only in it (GraphLowerInfo).
  Expr first = n.ctx.start_index(n.node, "start", start);
  return remap(n, [d, first, step](const Index& idx) {
    Index in = idx;
    in[d] = simplify(first + idx[d] * make_int(step));
    return in;
  });
}

std::vector<Operand> lower_select(NodeLowering& n) {
  const Operand& x = n.in(0);
  const size_t d = size_t(wrap_dim(n.attrs().get_int("dim"), x.rank()));
  int64_t index = n.attrs().get_int("index"), size = 0;
  Expr at = index < 0 ? simplify(x.dims[d] + make_int(index)) : make_int(index);
  // An argument when sibling selects differ only in it (input.unbind(0) read
  // by each step of an unrolled loop): the steps' kernels then share code.
  if (is_const_int(x.dims[d], &size) && index < size && index >= -size) {
    at = n.ctx.start_index(n.node, "index", index < 0 ? index + size : index);
  }
  return remap(n, [d, at](const Index& idx) {
    Index in = idx;
    in.insert(in.begin() + ptrdiff_t(d), at);
    return in;
  });
}

// --- cat / stack ---------------------------------------------------------------------------

struct Piece {
  Operand value;
  Expr offset;  // along the join dim (cat) or the piece number (stack)
  Expr size;
};

bool legacy_empty(const Operand& o) {
  int64_t s = -1;
  return o.rank() == 1 && is_const_int(o.dims[0], &s) && s == 0;
}

std::vector<Piece> cat_pieces(const NodeLowering& n, size_t* dim) {
  std::vector<Piece> pieces;
  const int64_t out_rank = n.out_type().rank();
  *dim = size_t(wrap_dim(n.attrs().get_int("dim"), out_rank));
  Expr offset = make_int(0);
  for (const Operand& o : n.inputs) {
    if (legacy_empty(o) && out_rank != 1) continue;
    int64_t s = -1;
    if (is_const_int(o.dims[*dim], &s) && s == 0) continue;
    pieces.push_back({o, offset, o.dims[*dim]});
    offset = simplify(offset + o.dims[*dim]);
  }
  return pieces;
}

std::vector<Operand> lower_cat_inline(NodeLowering& n) {
  size_t d = 0;
  std::vector<Piece> pieces = cat_pieces(n, &d);
  DType out = n.out_dtype();
  return {tensor_operand(
      out, n.out_dims(),
      [pieces, d, out](const Index& idx) -> Expr {
        KILN_INTERNAL_CHECK(!pieces.empty(), "cat: element read of an empty result");
        Expr value;
        for (size_t k = pieces.size(); k-- > 0;) {
          const Piece& p = pieces[k];
          Index in = idx;
          Expr local = idx[d] - p.offset;
          in[d] = simplify(max(min(local, p.size - make_int(1)), make_int(0)));
          Expr v = cast_to(p.value.at(in), out);
          value =
              value.defined() ? Select::make(idx[d] < simplify(p.offset + p.size), v, value) : v;
        }
        return value;
      },
      n.out_type())};
}

Stmt lower_cat_root(NodeLowering& n, const std::vector<OutBuf>& outs) {
  size_t d = 0;
  std::vector<Piece> pieces = cat_pieces(n, &d);
  std::vector<Stmt> copies;
  for (const Piece& p : pieces) {
    copies.push_back(loop_nest(n.ctx, p.value.dims, [&](const Index& idx) {
      Index at = idx;
      at[d] = idx[d] + p.offset;
      return store_at(outs[0], at, p.value.at(idx));
    }));
  }
  return Block::make(copies);
}

std::vector<Operand> lower_stack_inline(NodeLowering& n) {
  const size_t d = size_t(wrap_dim(n.attrs().get_int("dim"), n.out_type().rank()));
  std::vector<Operand> ins = n.inputs;
  DType out = n.out_dtype();
  return {tensor_operand(
      out, n.out_dims(),
      [ins, d, out](const Index& idx) -> Expr {
        Index in = idx;
        in.erase(in.begin() + ptrdiff_t(d));
        Expr value;
        for (size_t k = ins.size(); k-- > 0;) {
          Expr v = cast_to(ins[k].at(in), out);
          value = value.defined() ? Select::make(idx[d] == make_int(int64_t(k)), v, value) : v;
        }
        return value;
      },
      n.out_type())};
}

Stmt lower_stack_root(NodeLowering& n, const std::vector<OutBuf>& outs) {
  const size_t d = size_t(wrap_dim(n.attrs().get_int("dim"), n.out_type().rank()));
  std::vector<Stmt> copies;
  for (size_t k = 0; k < n.inputs.size(); ++k) {
    const Operand& p = n.inputs[k];
    copies.push_back(loop_nest(n.ctx, p.dims, [&](const Index& idx) {
      Index at = idx;
      at.insert(at.begin() + ptrdiff_t(d), make_int(int64_t(k)));
      return store_at(outs[0], at, p.at(idx));
    }));
  }
  return Block::make(copies);
}

// split / chunk: output i is the input shifted by the sizes of the pieces before it.
std::vector<Operand> lower_pieces(NodeLowering& n) {
  Operand x = n.in(0);
  const size_t d = size_t(wrap_dim(n.attrs().get_int("dim"), x.rank()));
  std::vector<Operand> outs;
  Expr offset = make_int(0);
  for (size_t i = 0; i < n.node.num_outputs(); ++i) {
    std::vector<Expr> dims = n.out_dims(i);
    Expr off = offset;
    outs.push_back(tensor_operand(
        x.dtype, dims,
        [x, d, off](const Index& idx) {
          Index in = idx;
          in[d] = simplify(idx[d] + off);
          return x.at(in);
        },
        n.out_type(i)));
    offset = simplify(offset + dims[d]);
  }
  return outs;
}

}  // namespace

void register_layout_lowerings(LoweringTable& t) {
  for (const char* name : {"reshape", "squeeze", "unsqueeze", "flatten", "contiguous", "copy"}) {
    t[name].pointwise = lower_packed;
  }
  t["permute"].pointwise = lower_permute;
  t["transpose"].pointwise = lower_transpose;
  t["expand"].pointwise = lower_expand;
  t["slice"].pointwise = lower_slice;
  t["select"].pointwise = lower_select;
  t["cat"].pointwise = lower_cat_inline;
  t["cat"].root = lower_cat_root;
  t["stack"].pointwise = lower_stack_inline;
  t["stack"].root = lower_stack_root;
  t["split"].pointwise = lower_pieces;
  t["chunk"].pointwise = lower_pieces;
}

}  // namespace kiln::passes::lower
