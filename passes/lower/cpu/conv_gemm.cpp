// conv2d as a GEMM through the generated packed GEMM (gemm.h), per image and
// group: out[oc, p] = sum_k W[oc, k] * X[k, p] over output pixels p = oy * OW
// + ox, with k running over (ic, ky, kx). The GEMM's store is the conv's: the
// bias and any fused epilogue run on each micro-tile as it leaves registers.
//
// "conv.1x1" (1x1 kernel, stride 1, no padding): X is the input itself,
// X[ic, p] = x[n, ic, p / W, p % W] -- read as the flat x[n, ic, 0, p] when
// the input's rows are contiguous (checked on its strides at run time, the
// div/mod form otherwise), so the GEMM's B packing loads dense vectors:
//
//   for (n) for (g)                              // GEMM batch dims
//     out[n, g*Co + m, p] = sum_ic w[g*Co + m, ic, 0, 0] * x[n, g*Ci + ic, 0, p]
//
// "conv.im2col" (any conv2d): X is the im2col matrix, materialized per image
// by a row copy (the kernel taps of one output row are one masked vector copy
// each), then multiplied by the same GEMM:
//
//   for (n, 0, N) {
//     allocate col[f32 * groups * K * OH * OW] in heap
//     for (row, 0, groups * K * OH) parallel {   // (g, ic, ky, kx, oy)
//       col[row, ox] = x[n, g*Ci + ic, oy*sh - pt + ky*dh, ox*sw - pl + kx*dw]
//                      (0 outside the image; one vector per 16 columns)
//     }
//     for (g) out[n, g*Co + m, p] = sum_k w[g*Co + m, k] * col[g, k, p]
//   }
//
// The column matrix is why im2col is not implicit here: the GEMM packs B in
// panels of consecutive pixels, and a panel's im2col index math (a row and a
// column per pixel, a padding mask per tap) as per-element vector division
// costs more than the copy. The copy is one pass over K x OH x OW elements,
// which pays where the direct kernel cannot vectorize its loads (a width
// stride above 4) and costs too much where it can.
#include "ir/loop/simplify.h"
#include "ir/loop/visitor.h"
#include "passes/lower/cpu/conv_cpu.h"
#include "passes/lower/cpu/gemm.h"
#include "passes/schedule/schedule.h"

namespace kiln::passes::lower {

using namespace kiln::loop;  // NOLINT

namespace {

// Each input buffer's last-dim stride parameter, worth versioning the GEMM's
// operand reads on (1 at run time for dense data).
std::vector<std::pair<std::string, int64_t>> unit_strides(LowerContext& ctx) {
  std::vector<std::pair<std::string, int64_t>> out;
  for (const ScalarParam& s : ctx.scalars()) {
    if (s.role != ScalarRole::Stride) continue;
    const BufferParam& b = ctx.buffers()[size_t(s.buffer)];
    if (s.dim + 1 == int(b.shape.size())) out.push_back({s.var.as<Var>()->name, 1});
  }
  return out;
}

// The parts of the GemmSpec both candidates share: batch (image, group),
// M = Cout/groups, N = OH*OW, the weight as A over k = (ic, ky, kx), the
// store with the bias.
GemmSpec conv_gemm_spec(const ConvOperands& c) {
  const ConvGeometry& g = c.g;
  GemmSpec s;
  const bool grouped = g.groups > 1;
  s.batch = {c.N};
  if (grouped) s.batch.push_back(make_int(g.groups));
  s.M = make_int(g.cout_g);
  s.N = simplify(c.OH * c.OW);
  s.K = make_int(g.cin_g * g.kh * g.kw);
  s.acc = c.acc;
  s.a_batch_invariant = !grouped;
  const int64_t taps = g.kh * g.kw, kw = g.kw, cout_g = g.cout_g;
  const ConvOperands* cp = &c;
  s.a = [cp, grouped, taps, kw, cout_g](const Index& bi, const Expr& m, const Expr& k) {
    Expr oc = grouped ? simplify(bi[1] * make_int(cout_g) + m) : m;
    Expr ic = simplify(k / make_int(taps));
    Expr ky = simplify((k / make_int(kw)) % make_int(taps / kw));
    Expr kx = simplify(k % make_int(kw));
    return cp->w(oc, ic, ky, kx);
  };
  Expr OW = c.OW;
  s.store = [cp, grouped, cout_g, OW](const Index& bi, const Expr& m, const Expr& p,
                                      const Expr& v) {
    Expr oc = grouped ? simplify(bi[1] * make_int(cout_g) + m) : m;
    return cp->store(bi[0], oc, simplify(p / OW), simplify(p % OW), cp->with_bias(oc, v));
  };
  return s;
}

Stmt lower_1x1(NodeLowering& n, const std::vector<OutBuf>& outs) {
  ConvOperands c(n, outs[0]);
  const ConvGeometry& g = c.g;
  const CpuTarget& target = n.ctx.options().target.cpu;
  GemmSpec s = conv_gemm_spec(c);
  s.specialize = unit_strides(n.ctx);
  const bool grouped = g.groups > 1;
  const int64_t cin_g = g.cin_g;
  const ConvOperands* cp = &c;
  auto with_b = [&](bool flat) {
    GemmSpec f = s;
    Expr W = c.W;
    f.b = [cp, grouped, cin_g, flat, W](const Index& bi, const Expr& k, const Expr& p) {
      Expr ic = grouped ? simplify(bi[1] * make_int(cin_g) + k) : k;
      if (flat) return cp->x(bi[0], ic, make_int(0), p);
      return cp->x(bi[0], ic, simplify(p / W), simplify(p % W));
    };
    return generate_gemm(n.ctx, f, GemmAlgorithm::Packed, target);
  };
  Expr ok = input_rows_contiguous(c, n.ctx);
  int64_t known = 0;
  if (is_const_int(ok, &known)) return with_b(known != 0);
  return IfThenElse::make(ok, with_b(true), with_b(false));
}

// The im2col copy of image `nn`: col[((g*K + k) * OH + oy) * OW + ox].
Stmt im2col_copy(const ConvOperands& c, LowerContext& ctx, const Buf& col, const Expr& nn) {
  const ConvGeometry& g = c.g;
  const int L = conv_lanes(g.dtype, ctx.options().target.cpu);
  const int64_t K = g.cin_g * g.kh * g.kw;
  Expr row = ctx.loop_var("row"), ob = ctx.loop_var("ob"), l = ctx.loop_var("l");
  // row = ((g * K + k) * OH + oy), k = (ic * KH + ky) * KW + kx
  Expr oy = simplify(row % c.OH);
  Expr gk = simplify(row / c.OH);
  Expr k = simplify(gk % make_int(K));
  Expr gi = simplify(gk / make_int(K));
  Expr ic = simplify(k / make_int(g.kh * g.kw));
  Expr ky = simplify((k / make_int(g.kw)) % make_int(g.kh));
  Expr kx = simplify(k % make_int(g.kw));
  Expr ox = simplify(ob * make_int(L) + l);
  Expr iy = simplify(oy * make_int(g.sh) - make_int(g.pt) + ky * make_int(g.dh));
  Expr ix = simplify(ox * make_int(g.sw) - make_int(g.pl) + kx * make_int(g.dw));
  Expr value = predicated(c.x(nn, simplify(gi * make_int(g.cin_g) + ic), iy, ix),
                          in_range(iy, c.H) && in_range(ix, c.W));
  Stmt store = IfThenElse::make(ox < c.OW,
                                Store::make(col, simplify(row * c.OW + ox), cast_to(value, c.acc)));
  Stmt lanes = vectorize(For::make(l, make_int(0), make_int(L), ForKind::Vectorized, store),
                         l.as<Var>()->name);
  Stmt cols = For::make(ob, make_int(0), ceil_div(c.OW, L), ForKind::Serial, lanes);
  Expr rows = simplify(make_int(g.groups * K) * c.OH);
  ForKind kind = ctx.options().target.cpu.cores > 1 ? ForKind::Parallel : ForKind::Serial;
  return For::make(row, make_int(0), rows, kind, cols);
}

Stmt lower_im2col(NodeLowering& n, const std::vector<OutBuf>& outs) {
  ConvOperands c(n, outs[0]);
  const ConvGeometry& g = c.g;
  const CpuTarget& target = n.ctx.options().target.cpu;
  const int64_t K = g.cin_g * g.kh * g.kw;
  Buf col = n.ctx.scratch_buf("col", c.acc);
  Expr P = simplify(c.OH * c.OW);
  Expr nn = n.ctx.loop_var("n");
  GemmSpec s = conv_gemm_spec(c);
  // One image at a time: its column matrix, then its GEMM over the groups.
  s.batch.erase(s.batch.begin());
  if (s.batch.empty()) s.a_batch_invariant = true;
  const bool grouped = g.groups > 1;
  GemmSpec::Operand a = s.a;
  s.a = [a, nn, grouped](const Index& bi, const Expr& m, const Expr& k) {
    Index full{nn};
    if (grouped) full.push_back(bi[0]);
    return a(full, m, k);
  };
  s.b = [col, grouped, K, P](const Index& bi, const Expr& k, const Expr& p) {
    Expr gk = grouped ? simplify(bi[0] * make_int(K) + k) : k;
    return Load::make(col, simplify(gk * P + p));
  };
  GemmSpec::Store store = s.store;
  s.store = [store, nn, grouped](const Index& bi, const Expr& m, const Expr& p, const Expr& v) {
    Index full{nn};
    if (grouped) full.push_back(bi[0]);
    return store(full, m, p, v);
  };
  s.specialize = unit_strides(n.ctx);
  Stmt gemm = generate_gemm(n.ctx, s, GemmAlgorithm::Packed, target);
  Stmt body = Block::make({im2col_copy(c, n.ctx, col, nn), gemm});
  body = Allocate::make(col, simplify(make_int(g.groups * K) * P), MemoryScope::Heap, body);
  return For::make(nn, make_int(0), c.N, ForKind::Serial, body);
}

bool float_applies(const ConvGeometry& g, std::string* why_not) {
  if (conv_supported_dtype(g.dtype)) return true;
  *why_not = "dtype " + std::string(dtype_name(g.dtype)) + " is not a float type";
  return false;
}

}  // namespace

AlgorithmLowering conv_1x1() {
  AlgorithmLowering a;
  a.name = "conv.1x1";
  a.applies = [](const ir::Node& n, const Target&, std::string* why_not) {
    ConvGeometry g = conv_geometry(n);
    if (!float_applies(g, why_not)) return false;
    if (g.kh != 1 || g.kw != 1 || g.sh != 1 || g.sw != 1 || g.pt || g.pb || g.pl || g.pr) {
      *why_not = "needs a 1x1 kernel, stride 1 and no padding";
      return false;
    }
    return true;
  };
  a.score = [](const ir::Node&, const Target&, std::string* why) {
    // Every lane is used, but both operands are packed first; conv.direct's
    // flat tiles are as fast per FMA without packing, so it wins wherever
    // they use over 90% of their lanes (docs/conv.md).
    *why =
        "1x1 as a packed GEMM (W[Cout, Cin] @ X[Cin, H*W] per image): every lane used, "
        "after packing both operands";
    return 9.0;
  };
  a.root = lower_1x1;
  return a;
}

AlgorithmLowering conv_im2col() {
  AlgorithmLowering a;
  a.name = "conv.im2col";
  a.applies = [](const ir::Node& n, const Target&, std::string* why_not) {
    return float_applies(conv_geometry(n), why_not);
  };
  a.score = [](const ir::Node& n, const Target&, std::string* why) {
    ConvGeometry g = conv_geometry(n);
    if (g.sw > 4) {
      *why = "width stride " + std::to_string(g.sw) +
             ": one strided copy into a column matrix, then a dense packed GEMM";
      return 7.0;
    }
    *why = "column matrix (K " + std::to_string(g.cin_g * g.kh * g.kw) +
           " rows) then a packed GEMM; the copy costs a pass over K x pixels";
    return 5.0;
  };
  a.root = lower_im2col;
  return a;
}

}  // namespace kiln::passes::lower
