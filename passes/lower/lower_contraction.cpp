// Lowerings of the pooling ops as plain loop nests: max_pool2d and avg_pool2d
// (torch's divisor rules). conv2d's candidates live in lower_conv.cpp, matmul,
// bmm and linear in lower_matmul.cpp. Each output element accumulates in f32
// (f16/bf16/f32), f64 or i64 (integers wrap like the reference) and is rounded
// once into the output.
#include <algorithm>
#include <cstdint>

#include "ir/loop/simplify.h"
#include "passes/lower/lower_internal.h"
#include "passes/schedule/schedule.h"

namespace kiln::passes::lower {
namespace {

using namespace kiln::loop;  // NOLINT

// An int-list attribute with 1 or 2 entries, as two values.
std::pair<int64_t, int64_t> pair_attr(const ir::Attrs& a, const std::string& name) {
  std::vector<int64_t> v = a.get_ints(name);
  KILN_INTERNAL_CHECK(!v.empty(), name << " is empty");
  return {v[0], v.size() > 1 ? v[1] : v[0]};
}

Expr in_range(const Expr& i, const Expr& size) {
  return i >= make_int(0) && i < size;
}

struct PoolAttrs {
  int64_t kh, kw, sh, sw, ph, pw, dh = 1, dw = 1;
};

PoolAttrs pool_attrs(const ir::Attrs& a, bool has_dilation) {
  PoolAttrs p{};
  std::tie(p.kh, p.kw) = pair_attr(a, "kernel_size");
  if (a.get_ints("stride").empty()) {
    p.sh = p.kh, p.sw = p.kw;
  } else {
    std::tie(p.sh, p.sw) = pair_attr(a, "stride");
  }
  std::tie(p.ph, p.pw) = pair_attr(a, "padding");
  if (has_dilation) std::tie(p.dh, p.dw) = pair_attr(a, "dilation");
  return p;
}

// The kernel taps [first, first + count) along one axis that read the input
// for some output index: tap k of output o reads o * stride - pad + k * d, so
// taps before the first that output OUT - 1 reaches, or past the last that
// output 0 reaches, only ever read padding. A huge ceil-mode kernel
// (kernel_size=2**62 on a 4-pixel input) so loops over the few taps that
// matter, not 2**62 of them. The whole kernel when a size is symbolic.
struct Taps {
  int64_t first, count;
};
Taps reachable_taps(int64_t k, int64_t stride, int64_t d, int64_t pad, const Expr& size,
                    const Expr& out) {
  int64_t n = 0, o = 0;
  if (!is_const_int(size, &n) || !is_const_int(out, &o) || n <= 0 || o <= 0 || d <= 0) {
    return {0, k};
  }
  using Wide = __int128;
  const Wide last = std::min<Wide>(k, (Wide(n) - 1 + pad) / d + 1);
  const Wide reach = Wide(pad) - Wide(o - 1) * stride;  // from the last output's start
  const Wide first = reach <= 0 ? 0 : (reach + d - 1) / d;
  if (first >= last) return {0, 0};
  return {int64_t(first), int64_t(last - first)};
}

// Whether every reachable tap of every output reads inside the input (static
// sizes), with at most 4 taps (each tap's select reads the running max
// twice, so the expression doubles per tap): then no tap needs a bounds test.
bool taps_inside(const PoolAttrs& p, const Taps& th, const Taps& tw, const Expr& H, const Expr& W,
                 const Expr& OH, const Expr& OW) {
  int64_t h = 0, w = 0, oh = 0, ow = 0;
  if (!is_const_int(H, &h) || !is_const_int(W, &w) || !is_const_int(OH, &oh) ||
      !is_const_int(OW, &ow) || oh <= 0 || ow <= 0 || th.count * tw.count > 4 ||
      th.count <= 0 || tw.count <= 0) {
    return false;
  }
  auto inside = [](int64_t o, int64_t s, int64_t pad, int64_t d, const Taps& t, int64_t n) {
    const int64_t lo = -pad + t.first * d;
    const int64_t hi = (o - 1) * s - pad + (t.first + t.count - 1) * d;
    return lo >= 0 && hi < n;
  };
  return inside(oh, p.sh, p.ph, p.dh, th, h) && inside(ow, p.sw, p.pw, p.dw, tw, w);
}

Stmt lower_max_pool(NodeLowering& n, const std::vector<OutBuf>& outs) {
  const Operand& x = n.in(0);
  PoolAttrs p = pool_attrs(n.attrs(), true);
  DType acc_t = accum_dtype(x.dtype);
  const size_t r = x.dims.size();
  Expr H = x.dims[r - 2], W = x.dims[r - 1];
  const Taps th = reachable_taps(p.kh, p.sh, p.dh, p.ph, H, outs[0].dims[r - 2]);
  const Taps tw = reachable_taps(p.kw, p.sw, p.dw, p.pw, W, outs[0].dims[r - 1]);
  if (taps_inside(p, th, tw, H, W, outs[0].dims[r - 2], outs[0].dims[r - 1])) {
    // Every tap of every window inside the input (no padding reached): the
    // window as one expression, no branches, so the nest vectorizes along
    // the output's columns (a 2x2 pool: stride-2 vector loads).
    Stmt nest = loop_nest(n.ctx, outs[0].dims, [&](const Index& o) {
      Expr best = lowest(acc_t);
      for (int64_t ky = th.first; ky < th.first + th.count; ++ky) {
        for (int64_t kx = tw.first; kx < tw.first + tw.count; ++kx) {
          Index xi(o.begin(), o.end() - 2);
          xi.push_back(simplify(o[r - 2] * make_int(p.sh) + make_int(ky * p.dh - p.ph)));
          xi.push_back(simplify(o[r - 1] * make_int(p.sw) + make_int(kx * p.dw - p.pw)));
          Expr v = cast_to(x.at(xi), acc_t);
          // NaN propagates, as in the loop below.
          best = Select::make(v > best || is_nan(v), v, best);
        }
      }
      return store_at(outs[0], o, best);
    });
    // The innermost loop (the output's columns) as vectors when its extent
    // is a constant of at most 32 (two AVX-512 vectors of f32: wider ones,
    // 63 lanes x 9 taps, took LLVM a minute to compile).
    const For* inner = nullptr;
    for (const Stmt* st = &nest; const auto* f = st->as<For>(); st = &f->body) inner = f;
    int64_t extent = 0;
    if (!inner || !is_const_int(inner->extent, &extent) || extent > 32) return nest;
    const std::string& var = inner->var.as<Var>()->name;
    return why_not_vectorize(nest, var) ? nest : vectorize(nest, var);
  }
  return loop_nest(n.ctx, outs[0].dims, [&](const Index& o) {
    Expr oh = o[r - 2], ow = o[r - 1];
    Scratch best = make_scratch(n.ctx, "best", acc_t);
    Stmt loop = loop_nest(
        n.ctx, {make_int(th.count), make_int(tw.count)},
        [&](const Index& k) {
          Expr ky = k[0] + make_int(th.first), kx = k[1] + make_int(tw.first);
          Expr iy = simplify(oh * make_int(p.sh) - make_int(p.ph) + ky * make_int(p.dh));
          Expr ix = simplify(ow * make_int(p.sw) - make_int(p.pw) + kx * make_int(p.dw));
          Index xi(o.begin(), o.end() - 2);
          xi.push_back(iy), xi.push_back(ix);
          Expr v = cast_to(x.at(xi), acc_t);
          // NaN propagates (padding is -inf and never wins).
          Stmt update = IfThenElse::make(v > best.load() || is_nan(v), best.store(v));
          return IfThenElse::make(in_range(iy, H) && in_range(ix, W), update);
        },
        "k");
    return allocate(
        {best}, Block::make({best.store(lowest(acc_t)), loop, store_at(outs[0], o, best.load())}));
  });
}

Stmt lower_avg_pool(NodeLowering& n, const std::vector<OutBuf>& outs) {
  const Operand& x = n.in(0);
  PoolAttrs p = pool_attrs(n.attrs(), false);
  const bool include_pad = n.attrs().get_bool("count_include_pad");
  const bool has_divisor = !n.attrs().is_none("divisor_override");
  DType acc_t = accum_dtype(x.dtype);
  const size_t r = x.dims.size();
  Expr H = x.dims[r - 2], W = x.dims[r - 1];
  const Taps th = reachable_taps(p.kh, p.sh, 1, p.ph, H, outs[0].dims[r - 2]);
  const Taps tw = reachable_taps(p.kw, p.sw, 1, p.pw, W, outs[0].dims[r - 1]);
  return loop_nest(n.ctx, outs[0].dims, [&](const Index& o) {
    Expr y0 = simplify(o[r - 2] * make_int(p.sh) - make_int(p.ph));
    Expr x0 = simplify(o[r - 1] * make_int(p.sw) - make_int(p.pw));
    // The window clipped to the padded input counts for count_include_pad;
    // clipped to the input, it is what gets summed.
    Expr y1 = min(y0 + make_int(p.kh), H + make_int(p.ph));
    Expr x1 = min(x0 + make_int(p.kw), W + make_int(p.pw));
    Expr padded_count = (y1 - y0) * (x1 - x0);
    Expr cy0 = max(y0, make_int(0)), cx0 = max(x0, make_int(0));
    Expr cy1 = min(y1, H), cx1 = min(x1, W);
    Expr count = has_divisor   ? make_int(n.attrs().get_int("divisor_override"))
                 : include_pad ? padded_count
                               : (cy1 - cy0) * (cx1 - cx0);
    Scratch acc = make_scratch(n.ctx, "acc", acc_t);
    Stmt loop = loop_nest(
        n.ctx, {make_int(th.count), make_int(tw.count)},
        [&](const Index& k) {
          Expr iy = simplify(y0 + (k[0] + make_int(th.first)));
          Expr ix = simplify(x0 + (k[1] + make_int(tw.first)));
          Index xi(o.begin(), o.end() - 2);
          xi.push_back(iy), xi.push_back(ix);
          Expr inside = iy >= cy0 && iy < cy1 && ix >= cx0 && ix < cx1;
          return IfThenElse::make(inside, acc.store(acc.load() + cast_to(x.at(xi), acc_t)));
        },
        "k");
    Expr empty = cy0 >= cy1 || cx0 >= cx1;
    Expr result = Select::make(empty, imm(acc_t, 0), acc.load() / cast_to(count, acc_t));
    return allocate({acc}, Block::make({acc.store(imm(acc_t, 0)), loop,
                                        store_at(outs[0], o, simplify(result))}));
  });
}

}  // namespace

void register_contraction_lowerings(LoweringTable& t) {
  t["max_pool2d"].root = lower_max_pool;
  t["avg_pool2d"].root = lower_avg_pool;
  for (const char* op : {"max_pool2d", "avg_pool2d"}) {
    t[op].stores_once = true;
  }
}

}  // namespace kiln::passes::lower
