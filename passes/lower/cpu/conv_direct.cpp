// "conv.direct": conv2d as a register-blocked direct convolution over NCHW.
// A task computes `rows` output channels of a few output pixels held in one
// RegisterTile (rows x vectors vectors of accumulators); the reduction over
// (input channel, kernel tap) updates it with one vector load of the input
// per vector and one broadcast weight per row, so each loaded input vector
// feeds `rows` FMAs and each weight `vectors` FMAs. The pixels of a tile are
// laid out one of two ways.
//
// Rows mode (any stride, padding, dilation, symbolic sizes): the tile holds
// `row_block` output rows x `row_vectors` vectors of consecutive columns:
//
//   for (t, 0, N * groups * oc_blocks * row_blocks) parallel {  // n, g, oc block, oy0
//     ky_lo, ky_hi = the kernel rows inside the image (row_block 1; else per-vector
//                    row predicates, only in row blocks that touch the border)
//     for each column block (col0: left border blocks, an interior loop, right border) {
//       tile = 0
//       for (icb, 0, chunks) for (ky, ky_lo, ky_hi - ky_lo) {   // chunks: inputs fit L1
//         for (ic in chunk icb) {
//           // kx, r < rows, v < vectors unrolled; l: the lanes
//           b_v = x[n, c0 + ic, oy_v*sh - pt + ky*dh, (col0 + col_v + l)*sw - pl + kx*dw]
//                 (masked to the image only in border blocks)
//           tile[r][v] = fma(b_v, x16(w[oc0 + r, ic, ky, kx]), tile[r][v])
//         }
//       }
//       out[n, oc0 + r, oy_v, col0 + col_v + l] = tile[r][v] + bias[oc0 + r]
//           (through the epilogue when one is fused; lanes past OW masked)
//     }
//   }
//
// With static sizes the column blocks are classified at compile time, so the
// interior loop has no mask and no branch, and border blocks have constant
// masks. Rows mode wastes the lanes past OW in the last vector of a row (56
// columns in 4 x 16 lanes: 88% used; 7 columns: 44%).
//
// Flat mode (stride 1, OW == W, static sizes, and an input whose rows are
// contiguous: with_dense_input versions a strided input on it): the
// tile's vectors cover consecutive output pixels p = oy * W + ox of the
// flattened image, which then read the input at p + (ky*dh - pt) * W +
// kx*dw - pl, one ramp per tap. Every lane is an output (but the last
// block's); pixels whose tap falls outside the image (row wrap, top, bottom)
// are masked per lane, with masks computed per tap outside the channel loop:
//
//   for (t, 0, N * groups * oc_blocks * pixel_blocks) parallel {
//     tile = 0
//     for (icb, 0, chunks) for each tap (ky, kx) {                    // taps unrolled
//       m_v = the lanes of vector v whose tap is inside the image (and p < OH*OW)
//       for (ic in chunk icb) {
//         tile[r][v] = fma(x[n, c0 + ic, flat p0 + v*L + l + shift] if m_v,
//                          x16(w[oc0 + r, ic, ky, kx]), tile[r][v])
//       }
//     }
//     out[n, oc0 + r, p / W, p % W] = tile[r][v] + bias    (p < OH*OW)
//   }
//
// The task order puts pixel blocks outermost when the group's weights are
// smaller than its input (consecutive tasks reuse the input block from L1/L2),
// else the output-channel blocks (they reuse the weights).
//
// A stride along the width of 2 to 4 makes each input load one wide masked
// load and a shuffle (the LLVM backend's strided access); larger strides make
// them gathers, and the heuristic prefers conv.im2col there. Channels-last
// input read through an inlined permute is repacked to NCHW first
// (with_dense_input, conv_input.cpp), so the loads stay dense.
#include <algorithm>
#include <cmath>

#include "ir/loop/simplify.h"
#include "ir/loop/visitor.h"
#include "passes/lower/cpu/conv_cpu.h"

namespace kiln::passes::lower {

using namespace kiln::loop;  // NOLINT

namespace {

// Output channels per tile for `vectors` vectors: 16 accumulators (4 x 4 or
// 8 x 2) keep both FMA pipes busy while leaving registers for the loaded
// inputs; more rows are more weight streams than the prefetchers follow, and
// each row's weight pointer is a register. A divisor of the channel count a
// step or two below is preferred to a tail tile. A 1x1 kernel's reduction is
// short (Cin FMAs per accumulator, 64 in ResNet's 1x1 layers), so there the
// tile takes as many rows as the registers hold (7 x 4 = 28 accumulators on
// AVX-512, the FMAs' broadcast weights read from memory): each input vector
// then feeds 7 FMAs instead of 4. Measured on 64 -> 256 ch @ 56x56, one
// thread: 566 us against 600 us at 4 rows, 577-580 at 6; 8 rows spill
// (796 us). On a 3x3 layer (256 ch @ 14x14, 2 rows x 1 vector) more rows did
// not pay: 4 channels x 7 image rows, 1632 us against 1398 at 8 x 2 (docs/conv.md).
int tile_rows(int64_t cout_g, int vectors, const CpuTarget& t, bool one_tap) {
  const int regs = std::max(8, t.vector_registers);
  int target = vectors >= 3 ? 4 : 8;
  int cap = (regs - vectors - 1) / vectors;  // a register for the broadcast weight
  if (one_tap && vectors >= 3 && regs >= 32) cap = target = std::min(7, (regs - vectors) / vectors);
  int rows = int(std::min<int64_t>({cout_g, cap, target}));
  rows = std::max(rows, 1);
  for (int r = rows; r >= std::max(1, rows - 2); --r) {
    if (cout_g % r == 0) return r;
  }
  return rows;
}

double use_of(int64_t n, int64_t per_block) {
  if (n <= 0) return 1;
  return double(n) / double(((n + per_block - 1) / per_block) * per_block);
}

bool flat_possible(const ConvGeometry& g) {
  return g.sh == 1 && g.sw == 1 && g.h > 0 && g.w > 0 && g.ow == g.w && g.oh > 0;
}

}  // namespace

DirectPlan plan_direct(const ConvGeometry& g, const CpuTarget& t, bool allow_flat) {
  DirectPlan p;
  p.lanes = conv_lanes(g.dtype, t);
  const int max_vectors = t.vector_registers >= 32 ? 4 : 2;
  const int64_t L = p.lanes;
  // Rows mode: one column block per row when a row fits in two vectors (and
  // then two rows per tile), else the block width that wastes fewest lanes.
  const int64_t per_row = g.ow > 0 ? (g.ow + L - 1) / L : max_vectors;
  if (per_row <= 2) {
    p.row_vectors = int(per_row);
    p.row_block = 2 / p.row_vectors;
  } else {
    double best = -1;
    for (int v = max_vectors; v >= 2; --v) {
      double use = use_of(g.ow, v * L);
      if (use > best + 1e-9) best = use, p.row_vectors = v;
    }
  }
  if (g.oh > 0) p.row_block = int(std::min<int64_t>(p.row_block, g.oh));
  p.lane_use = use_of(g.ow, p.row_vectors * L);
  if (allow_flat && flat_possible(g)) {
    double flat_use = use_of(g.oh * g.ow, max_vectors * L);
    if (flat_use > p.lane_use + 0.02) {
      p.flat = true, p.row_block = 1, p.row_vectors = max_vectors, p.lane_use = flat_use;
    }
  }
  p.rows = tile_rows(g.cout_g, p.vectors(), t, g.kh * g.kw == 1);
  // Which of a group's weights and its input is reused by consecutive tasks.
  if (g.h > 0 && g.w > 0) {
    const double weights = double(g.cout_g) * double(g.cin_g) * double(g.kh * g.kw);
    const double input = double(g.cin_g) * double(g.h) * double(g.w);
    p.pixels_outer = weights < input;
  }
  return p;
}

namespace {

class DirectLowering {
 public:
  DirectLowering(NodeLowering& n, const OutBuf& out, const DirectPlan& plan,
                 const DirectPlan& rows_plan)
      : c_(n, out), g_(c_.g), plan_(plan), rows_plan_(rows_plan), ctx_(n.ctx) {}

  Stmt run();

 private:
  // The nest over tasks; body(nn, gi, oc block, pixel block) for each.
  Stmt tasks(const Expr& pixel_blocks,
             const std::function<Stmt(const RegisterTile&, const Expr& nn, const Expr& cin0,
                                      const Expr& oc0, const Expr& pb)>& body);
  Stmt rows_mode();
  Stmt rows_task(const RegisterTile& tile, const Expr& nn, const Expr& cin0, const Expr& oc0,
                 const Expr& oy0);
  Stmt rows_block(const RegisterTile& tile, const Expr& nn, const Expr& cin0, const Expr& oc0,
                  const Expr& oy0, const Expr& col0, bool mask_cols, bool mask_rows);
  Stmt flat_mode();
  Stmt flat_block(const RegisterTile& tile, const Expr& nn, const Expr& cin0, const Expr& oc0,
                  const Expr& p0);

  Expr oc(const Expr& oc0, int r) const { return simplify(oc0 + make_int(r)); }
  // The loop over the input channels of chunk `icb`: chunks of channels whose
  // input footprint (bytes per channel) fits in L1, so the taps
  // of one chunk find their inputs in L1.
  int64_t chunk_size(int64_t bytes_per_channel) const;
  Stmt channel_loop(const Expr& ic, const Expr& icb, int64_t chunk, Stmt body) const;

  ConvOperands c_;
  const ConvGeometry& g_;
  DirectPlan plan_;
  DirectPlan rows_plan_;  // when a flat plan's layout check fails at run time
  LowerContext& ctx_;
};

Stmt DirectLowering::tasks(const Expr& pixel_blocks,
                           const std::function<Stmt(const RegisterTile&, const Expr&, const Expr&,
                                                    const Expr&, const Expr&)>& body) {
  const int rows = plan_.rows;
  const int64_t blocks = (g_.cout_g + rows - 1) / rows;
  Expr t = ctx_.loop_var("t");
  Expr pb = ctx_.loop_var("pb"), ob = ctx_.loop_var("ob");
  Expr gi = ctx_.loop_var("g"), nn = ctx_.loop_var("n");
  // Consecutive tasks share what is larger: the input block of one pixel
  // block (channel blocks innermost) when the group's weights are smaller
  // than its input, else the weights of one channel block.
  const bool pixels_outer = plan_.pixels_outer;
  Expr inner_count = pixels_outer ? make_int(blocks) : pixel_blocks;
  Expr outer_count = pixels_outer ? pixel_blocks : make_int(blocks);
  Expr q = simplify(t / inner_count);
  Expr q2 = simplify(q / outer_count);
  Expr inner_var = pixels_outer ? ob : pb, outer_var = pixels_outer ? pb : ob;
  Expr oc0 = simplify(gi * make_int(g_.cout_g) + ob * make_int(rows));
  Expr cin0 = simplify(gi * make_int(g_.cin_g));
  RegisterTile full(ctx_, rows, plan_.vectors(), plan_.lanes, c_.acc);
  Stmt s = body(full, nn, cin0, oc0, pb);
  if (const int64_t tail = g_.cout_g % rows) {
    RegisterTile last(ctx_, int(tail), plan_.vectors(), plan_.lanes, c_.acc);
    s = IfThenElse::make(ob < make_int(blocks - 1), s, body(last, nn, cin0, oc0, pb));
  }
  s = LetStmt::make(
      nn, simplify(q2 / make_int(g_.groups)),
      LetStmt::make(gi, simplify(q2 % make_int(g_.groups)),
                    LetStmt::make(outer_var, simplify(q % outer_count),
                                  LetStmt::make(inner_var, simplify(t % inner_count), s))));
  Expr count = simplify(c_.N * make_int(g_.groups * blocks) * pixel_blocks);
  ForKind kind = ctx_.options().target.cpu.cores > 1 ? ForKind::Parallel : ForKind::Serial;
  return For::make(t, make_int(0), count, kind, s);
}

int64_t DirectLowering::chunk_size(int64_t bytes_per_channel) const {
  const int64_t l1 = ctx_.options().target.cpu.l1d_bytes;
  int64_t chunk = std::max<int64_t>(8, l1 / std::max<int64_t>(bytes_per_channel, 1));
  if (chunk >= g_.cin_g) return g_.cin_g;
  // Equal chunks: ceil(cin / chunks) channels each.
  const int64_t chunks = (g_.cin_g + chunk - 1) / chunk;
  return (g_.cin_g + chunks - 1) / chunks;
}

Stmt DirectLowering::channel_loop(const Expr& ic, const Expr& icb, int64_t chunk, Stmt body) const {
  Expr lo = simplify(icb * make_int(chunk));
  Expr n = g_.cin_g % chunk == 0 ? make_int(chunk)
                                 : simplify(min(make_int(chunk), make_int(g_.cin_g) - lo));
  return For::make(ic, lo, n, ForKind::Serial, std::move(body));
}

// --- rows mode ---------------------------------------------------------------------------

Stmt DirectLowering::rows_block(const RegisterTile& tile, const Expr& nn, const Expr& cin0,
                                const Expr& oc0, const Expr& oy0, const Expr& col0, bool mask_cols,
                                bool mask_rows) {
  const int vb = plan_.row_vectors, L = plan_.lanes;
  auto oy_of = [&](int v) { return simplify(oy0 + make_int(v / vb)); };
  auto ox_of = [&](int v, const Expr& l) {
    return simplify(col0 + make_int(int64_t(v % vb) * L) + l);
  };
  Expr ky = ctx_.loop_var("ky");
  Expr ic = ctx_.loop_var("ic");
  auto iy_of = [&](int v) {
    return simplify(oy_of(v) * make_int(g_.sh) - make_int(g_.pt) + ky * make_int(g_.dh));
  };
  auto ix_of = [&](int v, const Expr& l, const Expr& kx) {
    return simplify(ox_of(v, l) * make_int(g_.sw) - make_int(g_.pl) + kx * make_int(g_.dw));
  };
  auto tap = [&](const Expr& kx) {
    RegisterTile::LaneFn guard;
    if (mask_cols || mask_rows) {
      guard = [&, kx](int v, const Expr& l) {
        Expr m;
        if (mask_cols) m = in_range(ix_of(v, l, kx), c_.W);
        if (mask_rows) {
          Expr r = in_range(iy_of(v), c_.H);
          m = m.defined() ? (m && r) : r;
        }
        return m;
      };
    }
    return tile.update([&](int r) { return c_.w(oc(oc0, r), ic, ky, kx); },
                       [&](int v, const Expr& l) {
                         return c_.x(nn, simplify(cin0 + ic), iy_of(v), ix_of(v, l, kx));
                       },
                       guard);
  };
  Stmt taps;
  if (g_.kw <= 8) {
    std::vector<Stmt> s;
    for (int64_t kx = 0; kx < g_.kw; ++kx) s.push_back(tap(make_int(kx)));
    taps = Block::make(s);
  } else {
    Expr kx = ctx_.loop_var("kx");
    taps = For::make(kx, make_int(0), make_int(g_.kw), ForKind::Serial, tap(kx));
  }
  // Kernel rows inside the image: exact for one output row per tile; a tile
  // of several rows runs them all and masks the rows outside.
  Expr ky_lo = make_int(0), ky_n = make_int(g_.kh);
  if (plan_.row_block == 1) {
    Expr top = simplify(make_int(g_.pt) - oy0 * make_int(g_.sh));
    ky_lo = simplify(max(make_int(0), ceil_div(top, g_.dh)));
    Expr ky_hi = simplify(min(make_int(g_.kh), ceil_div(c_.H + top, g_.dh)));
    ky_n = simplify(max(ky_hi - ky_lo, make_int(0)));
  }
  const int64_t in_rows = (plan_.row_block - 1) * g_.sh + (g_.kh - 1) * g_.dh + 1;
  const int64_t in_cols =
      (int64_t(plan_.row_vectors) * plan_.lanes - 1) * g_.sw + (g_.kw - 1) * g_.dw + 1;
  const int64_t chunk = chunk_size(in_rows * in_cols * int64_t(dtype_size(g_.dtype)));
  Expr icb = ctx_.loop_var("icb");
  Stmt reduce =
      For::make(icb, make_int(0), make_int((g_.cin_g + chunk - 1) / chunk), ForKind::Serial,
                For::make(ky, ky_lo, ky_n, ForKind::Serial, channel_loop(ic, icb, chunk, taps)));
  Stmt init = tile.init([&](int, int, const Expr&) { return imm(c_.acc, 0); });
  RegisterTile::LaneFn keep;
  if (mask_cols || mask_rows) {
    keep = [&](int v, const Expr& l) {
      Expr m;
      if (mask_cols) m = ox_of(v, l) < c_.OW;
      if (mask_rows) m = m.defined() ? (m && oy_of(v) < c_.OH) : oy_of(v) < c_.OH;
      return m;
    };
  }
  Stmt store = tile.store([&](int r, const Expr& acc) { return c_.with_bias(oc(oc0, r), acc); },
                          [&](int r, int v, const Expr& l, const Expr& value) {
                            return c_.store(nn, oc(oc0, r), oy_of(v), ox_of(v, l), value);
                          },
                          keep);
  return tile.allocate(Block::make({init, reduce, store}));
}

Stmt DirectLowering::rows_task(const RegisterTile& tile, const Expr& nn, const Expr& cin0,
                               const Expr& oc0, const Expr& oy0) {
  const int64_t cols = int64_t(plan_.row_vectors) * plan_.lanes;
  const bool several_rows = plan_.row_block > 1;
  auto columns = [&](bool mask_rows) {
    return over_column_blocks(c_, ctx_, cols, [&](const Expr& col0, bool mask_cols) {
      return rows_block(tile, nn, cin0, oc0, oy0, col0, mask_cols, mask_rows);
    });
  };
  if (!several_rows) return columns(false);
  // Several rows: only a tile whose rows all see the whole kernel runs
  // without row masks.
  const int64_t rb = plan_.row_block;
  Expr inside =
      oy0 * make_int(g_.sh) - make_int(g_.pt) >= make_int(0) &&
      (oy0 + make_int(rb - 1)) * make_int(g_.sh) - make_int(g_.pt) + make_int((g_.kh - 1) * g_.dh) <
          c_.H &&
      oy0 + make_int(rb) <= c_.OH;
  return IfThenElse::make(simplify(inside), columns(false), columns(true));
}

Stmt DirectLowering::rows_mode() {
  Expr row_blocks = ceil_div(c_.OH, plan_.row_block);
  return tasks(row_blocks, [&](const RegisterTile& tile, const Expr& nn, const Expr& cin0,
                               const Expr& oc0, const Expr& rb) {
    return rows_task(tile, nn, cin0, oc0, simplify(rb * make_int(plan_.row_block)));
  });
}

// --- flat mode ---------------------------------------------------------------------------

Stmt DirectLowering::flat_block(const RegisterTile& tile, const Expr& nn, const Expr& cin0,
                                const Expr& oc0, const Expr& p0) {
  const int L = plan_.lanes;
  const int64_t P = g_.oh * g_.ow;
  auto p_of = [&](int v, const Expr& l) { return simplify(p0 + make_int(int64_t(v) * L) + l); };
  Expr ic = ctx_.loop_var("ic"), icb = ctx_.loop_var("icb");
  const int64_t footprint =
      int64_t(plan_.vectors()) * L + (g_.kh - 1) * g_.dh * g_.w + (g_.kw - 1) * g_.dw;
  const int64_t chunk = chunk_size(footprint * int64_t(dtype_size(g_.dtype)));
  auto tap = [&](const Expr& ky, const Expr& kx, bool row_mask, bool col_mask) {
    Expr dy = simplify(ky * make_int(g_.dh) - make_int(g_.pt));
    Expr dx = simplify(kx * make_int(g_.dw) - make_int(g_.pl));
    Expr shift = simplify(dy * make_int(g_.w) + dx);
    auto guard = [&](int v, const Expr& l) {
      Expr p = p_of(v, l);
      Expr m = p < make_int(P);
      if (row_mask) m = m && in_range(simplify(p / make_int(g_.w) + dy), make_int(g_.h));
      if (col_mask) m = m && in_range(simplify(p % make_int(g_.w) + dx), make_int(g_.w));
      return m;
    };
    Stmt update = tile.update([&](int r) { return c_.w(oc(oc0, r), ic, ky, kx); },
                              [&](int v, const Expr& l) {
                                return c_.x(nn, simplify(cin0 + ic), make_int(0),
                                            simplify(p_of(v, l) + shift));
                              },
                              guard);
    return channel_loop(ic, icb, chunk, update);
  };
  std::vector<Stmt> taps;
  if (g_.kh * g_.kw <= 49) {
    for (int64_t ky = 0; ky < g_.kh; ++ky) {
      for (int64_t kx = 0; kx < g_.kw; ++kx) {
        taps.push_back(tap(make_int(ky), make_int(kx), ky * g_.dh != g_.pt, kx * g_.dw != g_.pl));
      }
    }
  } else {
    Expr ky = ctx_.loop_var("ky"), kx = ctx_.loop_var("kx");
    taps.push_back(For::make(
        ky, make_int(0), make_int(g_.kh), ForKind::Serial,
        For::make(kx, make_int(0), make_int(g_.kw), ForKind::Serial, tap(ky, kx, true, true))));
  }
  Stmt init = tile.init([&](int, int, const Expr&) { return imm(c_.acc, 0); });
  Stmt store = tile.store([&](int r, const Expr& acc) { return c_.with_bias(oc(oc0, r), acc); },
                          [&](int r, int v, const Expr& l, const Expr& value) {
                            Expr p = p_of(v, l);
                            return c_.store(nn, oc(oc0, r), simplify(p / make_int(g_.w)),
                                            simplify(p % make_int(g_.w)), value);
                          },
                          [&](int v, const Expr& l) { return p_of(v, l) < make_int(P); });
  Stmt reduce = For::make(icb, make_int(0), make_int((g_.cin_g + chunk - 1) / chunk),
                          ForKind::Serial, Block::make(taps));
  return tile.allocate(Block::make({init, reduce, store}));
}

Stmt DirectLowering::flat_mode() {
  const int64_t per_block = int64_t(plan_.vectors()) * plan_.lanes;
  const int64_t blocks = (g_.oh * g_.ow + per_block - 1) / per_block;
  return tasks(make_int(blocks), [&](const RegisterTile& tile, const Expr& nn, const Expr& cin0,
                                     const Expr& oc0, const Expr& pb) {
    return flat_block(tile, nn, cin0, oc0, simplify(pb * make_int(per_block)));
  });
}

Stmt DirectLowering::run() {
  if (!plan_.flat) return rows_mode();
  // Flat mode needs contiguous input rows: known here for packed buffers and
  // inputs with_dense_input versioned; else (symbolic W, or a fused
  // expression) checked at run time, with rows mode as the fallback.
  Expr ok = input_rows_contiguous(c_, ctx_);
  int64_t known = 0;
  if (is_const_int(ok, &known) && known) return flat_mode();
  Stmt flat = is_const_int(ok) ? Stmt() : flat_mode();
  plan_ = rows_plan_;
  Stmt rows = rows_mode();
  return flat.defined() ? IfThenElse::make(ok, flat, rows) : rows;
}

Stmt lower_direct(NodeLowering& n, const std::vector<OutBuf>& outs) {
  ConvGeometry g = conv_geometry(n.node);
  const CpuTarget& t = n.ctx.options().target.cpu;
  return lower_direct_plan(n, outs[0], plan_direct(g, t), plan_direct(g, t, false));
}

}  // namespace

Stmt lower_direct_plan(NodeLowering& n, const OutBuf& out, const DirectPlan& plan,
                       const DirectPlan& rows_plan) {
  KILN_INTERNAL_CHECK(!rows_plan.flat, "the fallback of a flat plan must be rows mode");
  DirectLowering d(n, out, plan, rows_plan);
  return d.run();
}

AlgorithmLowering conv_direct() {
  AlgorithmLowering a;
  a.name = "conv.direct";
  a.applies = [](const ir::Node& n, const Target&, std::string* why_not) {
    ConvGeometry g = conv_geometry(n);
    if (!conv_supported_dtype(g.dtype)) {
      *why_not = "dtype " + std::string(dtype_name(g.dtype)) + " is not a float type";
      return false;
    }
    return true;
  };
  a.score = [](const ir::Node& n, const Target& target, std::string* why) {
    const CpuTarget& t = target.cpu;
    ConvGeometry g = conv_geometry(n);
    DirectPlan p = plan_direct(g, t);
    std::string tile = std::to_string(p.rows) + " channels x " + std::to_string(p.vectors()) +
                       " vectors of " + std::to_string(p.lanes) + " lanes";
    tile += p.flat ? " over flattened pixels"
                   : " over " + std::to_string(p.row_block) + " row" +
                         (p.row_block > 1 ? "s" : "") + " of width";
    double score = 10 * p.lane_use;
    // Width strides up to 4 load one wide vector and shuffle; beyond that
    // the input loads are gathers.
    if (g.sw > 4) {
      *why = tile + "; width stride " + std::to_string(g.sw) + " makes the input loads gathers";
      return score / 4;
    }
    *why = tile + ", " + std::to_string(int(std::lround(100 * p.lane_use))) + "% of lanes used";
    if (g.channels_last) *why += "; channels-last input, read packed (NCHW) by the kernel";
    return score;
  };
  a.root = lower_direct;
  return a;
}

}  // namespace kiln::passes::lower
