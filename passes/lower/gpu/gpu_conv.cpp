// The GEMM forms of conv2d on GPU targets (gpu_conv.h): the operand index
// functions that make the tiled SIMT GEMM (gpu_gemm.h) an implicit-GEMM
// convolution or a 1x1 convolution. The GEMM itself is unchanged: it stages
// whatever its operands read, 0 past M, N and K; these operands read 0
// outside the image too.
#include "passes/lower/gpu/gpu_conv.h"

#include <array>

#include "ir/loop/analysis.h"
#include "ir/loop/simplify.h"

namespace kiln::passes::lower {

using namespace kiln::loop;  // NOLINT

bool gpu_conv_channels_contiguous(const ConvOperands& c) {
  // x at (0, ch, 0, 0) as a function of ch: a plain load whose offset moves
  // by exactly 1 per channel (a stride parameter is not known to).
  const Operand& xo = c.node.in(0);
  Expr ch = c.node.ctx.loop_var("pc");
  Index at(xo.dims.size(), make_int(0));
  at[at.size() - 3] = ch;
  Expr e = xo.at(at);
  const Load* ld = e.as<Load>();
  if (!ld || ld->predicate.defined()) return false;
  Expr coeff = linear_coefficient(ld->index, ch.as<Var>()->name);
  int64_t v = 0;
  return coeff.defined() && is_const_int(simplify(coeff), &v) && v == 1;
}

namespace {

// A pixel p of the GEMM's N as (image, oy, ox). Images are folded into N
// only when batched; a static batch of 1 needs no division by OH*OW.
struct PixelSplit {
  bool batched;
  Expr OH, OW;
  std::array<Expr, 3> operator()(const Expr& p) const {
    if (!batched) return {make_int(0), simplify(p / OW), simplify(p % OW)};
    Expr plane = simplify(OH * OW);
    Expr q = simplify(p % plane);
    return {simplify(p / plane), simplify(q / OW), simplify(q % OW)};
  }
};

PixelSplit pixel_split(const ConvOperands& c) {
  int64_t n = 0;
  const bool one = is_const_int(c.N, &n) && n == 1;
  return {c.g.batched && !one, c.OH, c.OW};
}

// The parts both GEMMs share: the groups as the batch, M = Cout/groups, the
// weight as A over k, the store (bias, then the output's epilogue).
GemmSpec conv_spec(const ConvOperands& c, bool channels_inner) {
  const ConvGeometry& g = c.g;
  GemmSpec s;
  const bool grouped = g.groups > 1;
  if (grouped) s.batch.push_back(make_int(g.groups));
  s.M = make_int(g.cout_g);
  s.K = make_int(g.cin_g * g.kh * g.kw);
  s.acc = c.acc;
  s.a_batch_invariant = !grouped;
  const ConvOperands* cp = &c;
  const int64_t cout_g = g.cout_g, cin_g = g.cin_g, kh = g.kh, kw = g.kw;
  // The weight [Cout, Cin/groups, KH, KW] is contiguous along k = (ic, ky, kx).
  s.a = [cp, grouped, cout_g, cin_g, kh, kw, channels_inner](const Index& bi, const Expr& m,
                                                              const Expr& k) {
    Expr oc = grouped ? simplify(bi[0] * make_int(cout_g) + m) : m;
    if (channels_inner) {  // k = (ky, kx, ic)
      Expr tap = simplify(k / make_int(cin_g));
      return cp->w(oc, simplify(k % make_int(cin_g)), simplify(tap / make_int(kw)),
                   simplify(tap % make_int(kw)));
    }
    return cp->w(oc, simplify(k / make_int(kh * kw)), simplify((k / make_int(kw)) % make_int(kh)),
                 simplify(k % make_int(kw)));
  };
  return s;
}

}  // namespace

GemmSpec gpu_conv_implicit_gemm_spec(const ConvOperands& c) {
  const ConvGeometry& g = c.g;
  const bool channels_inner = gpu_conv_channels_contiguous(c);
  GemmSpec s = conv_spec(c, channels_inner);
  const PixelSplit split = pixel_split(c);
  s.N = simplify((split.batched ? c.N : make_int(1)) * c.OH * c.OW);
  s.b_contiguous_k = channels_inner;
  const ConvOperands* cp = &c;
  const bool grouped = g.groups > 1;
  s.b = [cp, split, grouped, channels_inner](const Index& bi, const Expr& k, const Expr& p) {
    const ConvGeometry& g = cp->g;
    auto [img, oy, ox] = split(p);
    Expr ic, ky, kx;
    if (channels_inner) {
      Expr tap = simplify(k / make_int(g.cin_g));
      ic = simplify(k % make_int(g.cin_g));
      ky = simplify(tap / make_int(g.kw)), kx = simplify(tap % make_int(g.kw));
    } else {
      ic = simplify(k / make_int(g.kh * g.kw));
      ky = simplify((k / make_int(g.kw)) % make_int(g.kh)), kx = simplify(k % make_int(g.kw));
    }
    if (grouped) ic = simplify(bi[0] * make_int(g.cin_g) + ic);
    Expr iy = simplify(oy * make_int(g.sh) - make_int(g.pt) + ky * make_int(g.dh));
    Expr ix = simplify(ox * make_int(g.sw) - make_int(g.pl) + kx * make_int(g.dw));
    Expr inside = simplify(in_range(iy, cp->H) && in_range(ix, cp->W));
    int64_t always = 0;
    if (is_const_int(inside, &always) && always) return cp->x(img, ic, iy, ix);
    // The select, not only the masked load: an inlined producer of x (an
    // activation) must contribute 0 at a padded tap, not f(0).
    return Select::make(inside, predicated(cp->x(img, ic, iy, ix), inside), imm(cp->acc, 0));
  };
  s.store = [cp, split, grouped](const Index& bi, const Expr& m, const Expr& p, const Expr& v) {
    Expr oc = grouped ? simplify(bi[0] * make_int(cp->g.cout_g) + m) : m;
    auto [img, oy, ox] = split(p);
    return cp->store(img, oc, oy, ox, cp->with_bias(oc, v));
  };
  return s;
}

GemmSpec gpu_conv_1x1_spec(const ConvOperands& c) {
  const ConvGeometry& g = c.g;
  const bool channels_inner = gpu_conv_channels_contiguous(c);
  GemmSpec s = conv_spec(c, channels_inner);
  // Images are a batch dim (outermost), then the groups: no division of a
  // pixel index by the image size.
  s.batch.insert(s.batch.begin(), c.N);
  s.N = simplify(c.OH * c.OW);
  s.b_contiguous_k = channels_inner;
  s.a = [a = s.a](const Index& bi, const Expr& m, const Expr& k) {
    return a(Index(bi.begin() + 1, bi.end()), m, k);
  };
  const ConvOperands* cp = &c;
  const bool grouped = g.groups > 1;
  s.b = [cp, grouped](const Index& bi, const Expr& k, const Expr& p) {
    Expr ic = grouped ? simplify(bi[1] * make_int(cp->g.cin_g) + k) : k;
    return cp->x(bi[0], ic, simplify(p / cp->W), simplify(p % cp->W));
  };
  s.store = [cp, grouped](const Index& bi, const Expr& m, const Expr& p, const Expr& v) {
    Expr oc = grouped ? simplify(bi[1] * make_int(cp->g.cout_g) + m) : m;
    return cp->store(bi[0], oc, simplify(p / cp->OW), simplify(p % cp->OW), cp->with_bias(oc, v));
  };
  return s;
}

}  // namespace kiln::passes::lower
