// How the conv2d candidates read their input's layout (conv.h): probes of
// the input's index function (is it a load whose offset is affine in the row
// and column, and how far apart are neighbours), the repacking copy into
// dense NCHW, and with_dense_input, which gives a candidate an input whose
// width is dense:
//
//   dense layout known at compile time (packed buffer):   S(x)
//   width strided by a layout (permute of NHWC data):     allocate xp; xp = pack(x); S(xp)
//   a graph input read through stride parameters:
//     if (x_s3 == 1 [&& x_s2 == W, flat tiles] [&& other inputs' last strides == 1]) {
//       S(x)[x_s3 := 1, x_s2 := W, ...]               // dense ramps
//     } else {
//       allocate xp; xp = pack(x); S(xp)              // any strides, one copy
//     }
#include "ir/loop/analysis.h"
#include "ir/loop/simplify.h"
#include "ir/loop/visitor.h"
#include "passes/lower/cpu/conv_cpu.h"
#include "passes/schedule/schedule.h"

namespace kiln::passes::lower {

using namespace kiln::loop;  // NOLINT

namespace {

// How far apart x's neighbours along the width (dx) and height (dy) are in
// its buffer, as constants or stride parameters; undefined when x is not a
// plain load at an offset affine in the row and column.
struct Layout {
  Expr dx, dy;
};

Layout layout_of(const Operand& xo, LowerContext& ctx) {
  Index at;
  for (size_t d = 0; d + 2 < xo.dims.size(); ++d) at.push_back(ctx.loop_var("pd"));
  Expr py = ctx.loop_var("py"), px = ctx.loop_var("px");
  at.push_back(py);
  at.push_back(px);
  Expr e = xo.at(at);
  const Load* ld = e.as<Load>();
  const std::string& y = py.as<Var>()->name;
  const std::string& x = px.as<Var>()->name;
  if (!ld || ld->predicate.defined() || !linear_coefficient(ld->index, y).defined() ||
      !linear_coefficient(ld->index, x).defined()) {
    return {};
  }
  // At index 0 in the other dims (an affine index moves the same way from
  // any of them), so the differences are constants or stride parameters.
  auto offset = [&](int64_t iy, int64_t ix) {
    Expr o = substitute(substitute(ld->index, y, make_int(iy)), x, make_int(ix));
    for (size_t d = 0; d + 2 < at.size(); ++d)
      o = substitute(o, at[d].as<Var>()->name, make_int(0));
    return simplify(o);
  };
  Expr o00 = offset(0, 0);
  return {simplify(offset(0, 1) - o00), simplify(offset(1, 0) - o00)};
}

// The last-dim stride parameter of a kernel buffer, when `e` is one.
bool is_last_dim_stride(const Expr& e, LowerContext& ctx) {
  const Var* v = e.as<Var>();
  if (!v) return false;
  for (const ScalarParam& s : ctx.scalars()) {
    if (s.role == ScalarRole::Stride && s.var.as<Var>()->name == v->name) {
      return s.dim + 1 == int(ctx.buffers()[size_t(s.buffer)].shape.size());
    }
  }
  return false;
}

// The copy of x into a packed NCHW buffer: one pass, vectorized along the
// width (loads strided by the input's layout, dense stores).
Stmt pack_input(const Operand& xo, LowerContext& ctx, const Buf& xp) {
  const int L = std::max(1, ctx.options().target.cpu.lanes(int(dtype_size(xo.dtype))));
  const Expr W = xo.dims.back();
  std::vector<Expr> lead(xo.dims.begin(), xo.dims.end() - 1);
  Expr row = ctx.loop_var("row"), wb = ctx.loop_var("wb"), l = ctx.loop_var("l");
  Index at = unflatten(row, lead);
  Expr w = simplify(wb * make_int(L) + l);
  at.push_back(w);
  Stmt store = IfThenElse::make(w < W, Store::make(xp, simplify(row * W + w), xo.at(at)));
  Stmt lanes = vectorize(For::make(l, make_int(0), make_int(L), ForKind::Vectorized, store),
                         l.as<Var>()->name);
  Stmt cols = For::make(wb, make_int(0), ceil_div(W, L), ForKind::Serial, lanes);
  ForKind kind = ctx.options().target.cpu.cores > 1 ? ForKind::Parallel : ForKind::Serial;
  return For::make(row, make_int(0), product(lead), kind, cols);
}

// `inner` on a packed NCHW copy of the input.
Stmt repacked(const RootFn& inner, NodeLowering& n, const std::vector<OutBuf>& outs) {
  const Operand& xo = n.in(0);
  Buf xp = n.ctx.scratch_buf("x_nchw", xo.dtype);
  const std::vector<Expr> dims = xo.dims;
  NodeLowering packed{n.node, n.inputs, n.ctx};
  packed.inputs[0] = tensor_operand(
      xo.dtype, dims, [xp, dims](const Index& i) { return Load::make(xp, flat_index(i, dims)); },
      xo.type);
  Stmt body = Block::make({pack_input(xo, n.ctx, xp), inner(packed, outs)});
  return Allocate::make(xp, product(dims), MemoryScope::Heap, body);
}

using Substitution = std::vector<std::pair<std::string, Expr>>;

Expr substituted(Expr e, const Substitution& s) {
  for (const auto& [name, value] : s) e = substitute(e, name, value);
  return e;
}

// The other inputs' last-dim stride parameters that `s` uses (an epilogue's
// operands, the weight), each assumed 1 in the fast version.
Substitution other_unit_strides(const Stmt& s, LowerContext& ctx, const Substitution& done) {
  Substitution out;
  for (const ScalarParam& p : ctx.scalars()) {
    if (p.role != ScalarRole::Stride) continue;
    const std::string& name = p.var.as<Var>()->name;
    bool seen = false;
    for (const auto& d : done) seen = seen || d.first == name;
    if (!seen && p.dim + 1 == int(ctx.buffers()[size_t(p.buffer)].shape.size()) &&
        uses_var(s, name)) {
      out.push_back({name, make_int(1)});
    }
  }
  return out;
}

Expr all_hold(const Substitution& s) {
  Expr c = make_const(bool_t(), 1);
  for (const auto& [name, value] : s) c = c && (Var::make(i64_t(), name) == value);
  return simplify(c);
}

Stmt substituted(Stmt st, const Substitution& s) {
  for (const auto& [name, value] : s) st = substitute(st, name, value);
  return simplify(st);
}

}  // namespace

Expr input_rows_contiguous(const ConvOperands& c, LowerContext& ctx) {
  Layout l = layout_of(c.node.in(0), ctx);
  if (!l.dx.defined()) return make_const(bool_t(), 0);
  return simplify(l.dx == make_int(1) && l.dy == c.W);
}

RootFn with_dense_input(RootFn inner, DenseInput how) {
  return [inner, how](NodeLowering& n, const std::vector<OutBuf>& outs) -> Stmt {
    const Operand& xo = n.in(0);
    Layout l = layout_of(xo, n.ctx);
    if (!l.dx.defined()) return inner(n, outs);  // an expression: read as it is
    int64_t k = 0;
    Substitution fast;  // what the fast version assumes of x
    if (is_const_int(l.dx, &k)) {
      if (k != 1) return repacked(inner, n, outs);
    } else if (!is_last_dim_stride(l.dx, n.ctx)) {
      return repacked(inner, n, outs);  // strided by a layout: channels-last
    } else if (how == DenseInput::Repack) {
      return inner(n, outs);
    } else {
      fast.push_back({l.dx.as<Var>()->name, make_int(1)});
      // Flat tiles read whole rows: the fast version also assumes rows of W.
      int64_t w = 0;
      if (how == DenseInput::VersionRows && l.dy.as<Var>() && is_const_int(xo.dims.back(), &w)) {
        fast.push_back({l.dy.as<Var>()->name, make_int(w)});
      }
    }
    if (how == DenseInput::Repack) return inner(n, outs);
    NodeLowering dense{n.node, n.inputs, n.ctx};
    const Operand x = xo;
    const Substitution assume = fast;
    dense.inputs[0] = tensor_operand(
        xo.dtype, xo.dims, [x, assume](const Index& i) { return substituted(x.at(i), assume); },
        xo.type);
    Stmt s = inner(dense, outs);
    Substitution others = other_unit_strides(s, n.ctx, fast);
    if (fast.empty() && others.empty()) return s;
    Substitution all = fast;
    all.insert(all.end(), others.begin(), others.end());
    // Without an assumption about x the general version is the same kernel;
    // with one, it is the repacked kernel (dense x, other strides general).
    Stmt general = fast.empty() ? s : repacked(inner, n, outs);
    return IfThenElse::make(all_hold(all), substituted(s, others), general);
  };
}

}  // namespace kiln::passes::lower
