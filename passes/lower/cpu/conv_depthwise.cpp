// "conv.depthwise": depthwise and narrow grouped conv2d (at most 4 input
// channels per group, e.g. MobileNet's 3x3 depthwise layers). There is no
// channel reduction to block over: each output channel is a 2-D filter of its
// group's few input rows, so the kernel is memory-bound and its job is to
// read each input row from memory once and load it from L1 as few times as
// it can. A task computes `row_block` output rows of one output channel; its
// RegisterTile holds those rows x `vectors` vectors of a column block, and
// each input row the task reads is loaded once per kernel column and used by
// every output row it contributes to (3 rows for a 3x3 kernel):
//
//   for (t, 0, N * Cout * row_blocks) parallel {             // n, oc, oy0
//     for each column block (left border, interior loop, right border) {
//       tile = 0                                             // row_block x vectors
//       for (ic, 0, Cin / groups) {                          // 1 for depthwise
//         for (j, 0, (row_block - 1) * sh + (KH - 1) * dh + 1) {   // input rows, unrolled
//           iy = oy0 * sh - pt + j                           // masked to the image only
//           for (kx) {                                       //   in border row blocks
//             b_v = x[n, g*cin_g + ic, iy, (col0 + v*L + l)*sw - pl + kx*dw]
//             for each output row r with j = r*sh + ky*dh, 0 <= ky < KH:
//               tile[r][v] = fma(b_v, x16(w[oc, ic, ky, kx]), tile[r][v])
//           }
//         }
//       }
//       out[n, oc, oy0 + r, col0 + v*L + l] = tile + bias    (epilogue; masked past OH, OW)
//     }
//   }
//
// A row takes as many vectors as it needs, up to 8 (112 columns: 7 vectors,
// no lane wasted), and as many output rows as the registers leave room for
// (3 at 7 vectors): 5 input rows then feed 3 output rows, 15 loads per vector
// column instead of 27. Consecutive tasks are consecutive row blocks of one
// channel, so their rows are still in L1 or L2: one pass over the input.
#include <algorithm>
#include <cmath>

#include "ir/loop/simplify.h"
#include "passes/lower/cpu/conv_cpu.h"

namespace kiln::passes::lower {

using namespace kiln::loop;  // NOLINT

namespace {

constexpr int64_t kMaxChannelsPerGroup = 4;

struct DepthwisePlan {
  int lanes = 16;
  int vectors = 1;    // per column block
  int row_block = 1;  // output rows per task
  double lane_use = 1;
};

DepthwisePlan plan_depthwise(const ConvGeometry& g, const CpuTarget& t) {
  DepthwisePlan p;
  p.lanes = conv_lanes(g.dtype, t);
  const int regs = std::max(8, t.vector_registers);
  const int max_vectors = regs >= 32 ? 8 : 4;
  const int64_t L = p.lanes;
  const int64_t per_row = g.ow > 0 ? (g.ow + L - 1) / L : max_vectors;
  auto use_of = [&](int64_t v) {
    const int64_t cols = v * L;
    return g.ow > 0 ? double(g.ow) / double(((g.ow + cols - 1) / cols) * cols) : 1.0;
  };
  if (per_row <= max_vectors) {
    p.vectors = int(per_row);
  } else {
    double best = -1;
    for (int v = max_vectors; v >= max_vectors / 2; --v) {
      if (use_of(v) > best + 1e-9) best = use_of(v), p.vectors = v;
    }
  }
  p.lane_use = use_of(p.vectors);
  // Accumulators for the rows, one register per vector for the loaded input
  // and one spare; up to 4 rows.
  p.row_block = std::clamp((regs - p.vectors - 1) / p.vectors, 1, 4);
  if (g.oh > 0) p.row_block = int(std::min<int64_t>(p.row_block, g.oh));
  return p;
}

class DepthwiseLowering {
 public:
  DepthwiseLowering(NodeLowering& n, const OutBuf& out)
      : c_(n, out), g_(c_.g), p_(plan_depthwise(g_, n.ctx.options().target.cpu)), ctx_(n.ctx) {}
  Stmt run();

 private:
  Stmt block(const RegisterTile& tile, const Expr& nn, const Expr& oc, const Expr& oy0,
             const Expr& col0, bool mask_cols, bool mask_rows) const;

  ConvOperands c_;
  const ConvGeometry& g_;
  DepthwisePlan p_;
  LowerContext& ctx_;
};

Stmt DepthwiseLowering::block(const RegisterTile& tile, const Expr& nn, const Expr& oc,
                              const Expr& oy0, const Expr& col0, bool mask_cols,
                              bool mask_rows) const {
  const int L = p_.lanes;
  const int rb = p_.row_block;
  const int64_t rows_in = int64_t(rb - 1) * g_.sh + (g_.kh - 1) * g_.dh + 1;
  Expr ic = ctx_.loop_var("ic");
  Expr cin = simplify((oc / make_int(g_.cout_g)) * make_int(g_.cin_g) + ic);
  Expr iy0 = simplify(oy0 * make_int(g_.sh) - make_int(g_.pt));
  auto ox_of = [&](int v, const Expr& l) { return simplify(col0 + make_int(int64_t(v) * L) + l); };
  std::vector<Stmt> updates;
  for (int64_t j = 0; j < rows_in; ++j) {
    Expr iy = simplify(iy0 + make_int(j));
    for (int64_t kx = 0; kx < g_.kw; ++kx) {
      auto ix_of = [&](int v, const Expr& l) {
        return simplify(ox_of(v, l) * make_int(g_.sw) + make_int(kx * g_.dw - g_.pl));
      };
      RegisterTile::LaneFn guard;
      if (mask_cols || mask_rows) {
        guard = [&](int v, const Expr& l) {
          Expr m;
          if (mask_cols) m = in_range(ix_of(v, l), c_.W);
          if (mask_rows) m = m.defined() ? (m && in_range(iy, c_.H)) : in_range(iy, c_.H);
          return m;
        };
      }
      updates.push_back(tile.update(
          [&](int r) -> Expr {
            // Output row r reads input row j through kernel row ky.
            const int64_t d = j - int64_t(r) * g_.sh;
            if (d < 0 || d % g_.dh != 0 || d / g_.dh >= g_.kh) return Expr();
            return c_.w(oc, ic, make_int(d / g_.dh), make_int(kx));
          },
          [&](int v, const Expr& l) { return c_.x(nn, cin, iy, ix_of(v, l)); }, guard));
    }
  }
  Stmt reduce =
      For::make(ic, make_int(0), make_int(g_.cin_g), ForKind::Serial, Block::make(updates));
  Stmt init = tile.init([&](int, int, const Expr&) { return imm(c_.acc, 0); });
  RegisterTile::LaneFn keep;
  if (mask_cols || mask_rows) {
    keep = [&](int v, const Expr& l) {
      Expr m;
      if (mask_cols) m = ox_of(v, l) < c_.OW;
      return m;
    };
  }
  // Rows past OH (the last row block) are left out per row, outside the lanes.
  Stmt store = tile.store([&](int, const Expr& acc) { return c_.with_bias(oc, acc); },
                          [&](int r, int v, const Expr& l, const Expr& value) {
                            Expr oy = simplify(oy0 + make_int(r));
                            Stmt st = c_.store(nn, oc, oy, ox_of(v, l), value);
                            return mask_rows ? IfThenElse::make(oy < c_.OH, st) : st;
                          },
                          keep);
  return tile.allocate(Block::make({init, reduce, store}));
}

Stmt DepthwiseLowering::run() {
  const int rb = p_.row_block;
  const int64_t cols = int64_t(p_.vectors) * p_.lanes;
  const int64_t rows_in = int64_t(rb - 1) * g_.sh + (g_.kh - 1) * g_.dh + 1;
  Expr row_blocks = ceil_div(c_.OH, rb);
  Expr t = ctx_.loop_var("t"), nn = ctx_.loop_var("n"), oc = ctx_.loop_var("oc");
  Expr rbv = ctx_.loop_var("rb");
  Expr oy0 = simplify(rbv * make_int(rb));
  RegisterTile tile(ctx_, rb, p_.vectors, p_.lanes, c_.acc);
  auto columns = [&](bool mask_rows) {
    return over_column_blocks(c_, ctx_, cols, [&](const Expr& col0, bool mask_cols) {
      return block(tile, nn, oc, oy0, col0, mask_cols, mask_rows);
    });
  };
  // Only a row block whose input rows are all inside the image (and whose
  // output rows all exist) runs without row masks.
  Expr iy0 = simplify(oy0 * make_int(g_.sh) - make_int(g_.pt));
  Expr inside = simplify(iy0 >= make_int(0) && iy0 + make_int(rows_in - 1) < c_.H &&
                         oy0 + make_int(rb) <= c_.OH);
  Stmt body = IfThenElse::make(inside, columns(false), columns(true));
  body = LetStmt::make(nn, simplify(t / (row_blocks * make_int(g_.cout))),
                       LetStmt::make(oc, simplify((t / row_blocks) % make_int(g_.cout)),
                                     LetStmt::make(rbv, simplify(t % row_blocks), body)));
  Expr tasks = simplify(c_.N * make_int(g_.cout) * row_blocks);
  ForKind kind = ctx_.options().target.cpu.cores > 1 ? ForKind::Parallel : ForKind::Serial;
  return For::make(t, make_int(0), tasks, kind, body);
}

Stmt lower_depthwise(NodeLowering& n, const std::vector<OutBuf>& outs) {
  DepthwiseLowering d(n, outs[0]);
  return d.run();
}

}  // namespace

AlgorithmLowering conv_depthwise() {
  AlgorithmLowering a;
  a.name = "conv.depthwise";
  a.applies = [](const ir::Node& n, const Target&, std::string* why_not) {
    ConvGeometry g = conv_geometry(n);
    if (!conv_supported_dtype(g.dtype)) {
      *why_not = "dtype " + std::string(dtype_name(g.dtype)) + " is not a float type";
      return false;
    }
    if (g.groups == 1 || g.cin_g > kMaxChannelsPerGroup) {
      *why_not = g.groups == 1 ? "not a grouped convolution"
                               : std::to_string(g.cin_g) + " input channels per group (more than " +
                                     std::to_string(kMaxChannelsPerGroup) + ")";
      return false;
    }
    return true;
  };
  a.score = [](const ir::Node& n, const Target& target, std::string* why) {
    const CpuTarget& t = target.cpu;
    ConvGeometry g = conv_geometry(n);
    DepthwisePlan p = plan_depthwise(g, t);
    *why = std::string(g.depthwise() ? "depthwise" : "narrow groups") +
           ": memory-bound; each input row loaded once per kernel column for " +
           std::to_string(p.row_block) + " output rows of " + std::to_string(p.vectors) +
           " vectors, " + std::to_string(int(std::lround(100 * p.lane_use))) + "% of lanes used";
    // Above conv.direct, whose channel blocking has nothing to block here.
    return 12 * p.lane_use;
  };
  a.root = lower_depthwise;
  return a;
}

}  // namespace kiln::passes::lower
