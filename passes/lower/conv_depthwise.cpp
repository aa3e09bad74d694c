// "conv.depthwise": depthwise and narrow grouped conv2d (at most 4 input
// channels per group, e.g. MobileNet's 3x3 depthwise layers). There is no
// channel reduction to block over: each output channel is a 2-D filter of its
// group's few input rows, so the kernel is memory-bound and its job is to
// read each input row from memory once and keep every lane busy. It is the
// direct convolution's rows mode (conv_direct.cpp) with a depthwise tile:
//
//   for (t, 0, N * groups * oc_blocks * OH) parallel {      // n, g, oy
//     ky_lo, ky_hi = the kernel rows inside the image
//     for each column block (left border, interior loop, right border) {
//       tile = 0                                            // cout/groups x up to 8 vectors
//       for (ky, ky_lo, ky_hi - ky_lo) {
//         for (ic, 0, Cin / groups) {                       // 1 for depthwise
//           // kx, r, v unrolled: one load per vector and tap, masked in border blocks
//           tile[r][v] = fma(x[n, g*cin_g + ic, oy - pt + ky*dh, col0 + v*L + l - pl + kx*dw],
//                            x16(w[g*cout_g + r, ic, ky, kx]), tile[r][v])
//         }
//       }
//       out[...] = tile + bias           (epilogue fused here; lanes past OW masked)
//     }
//   }
//
// Consecutive tasks are consecutive rows of one channel, so the rows a task
// reads are still in L1 from the task before: one pass over the input. A row
// takes as many vectors as it needs, up to 8 (the tile has one row, so the
// registers allow it): 112 columns are exactly 7 vectors, no lane wasted.
#include <algorithm>
#include <cmath>

#include "passes/lower/conv.h"

namespace kiln::passes::lower {

namespace {

constexpr int64_t kMaxChannelsPerGroup = 4;

DirectPlan plan_depthwise(const ConvGeometry& g, const CpuTarget& t) {
  DirectPlan p;
  p.lanes = conv_lanes(g.dtype, t);
  const int max_vectors = t.vector_registers >= 32 ? 8 : 4;
  p.rows = int(std::min<int64_t>(g.cout_g, t.vector_registers >= 32 ? 4 : 2));
  const int64_t L = p.lanes;
  const int64_t per_row = g.ow > 0 ? (g.ow + L - 1) / L : max_vectors;
  // Registers: rows x vectors accumulators and a vector per column.
  const int budget = std::max(2, t.vector_registers - 2);
  int limit = std::max(1, std::min(max_vectors, budget / (p.rows + 1)));
  if (per_row <= limit) {
    p.row_vectors = int(per_row);
  } else {
    double best = -1;
    for (int v = limit; v >= 1; --v) {
      int64_t cols = v * L;
      double use = double(g.ow) / double(((g.ow + cols - 1) / cols) * cols);
      if (use > best + 1e-9) best = use, p.row_vectors = v;
    }
  }
  const int64_t cols = int64_t(p.row_vectors) * L;
  p.lane_use = g.ow > 0 ? double(g.ow) / double(((g.ow + cols - 1) / cols) * cols) : 1;
  return p;
}

Stmt lower_depthwise(NodeLowering& n, const std::vector<OutBuf>& outs) {
  DirectPlan p = plan_depthwise(conv_geometry(n.node), n.ctx.options().target);
  return lower_direct_plan(n, outs[0], p, p);
}

}  // namespace

AlgorithmLowering conv_depthwise() {
  AlgorithmLowering a;
  a.name = "conv.depthwise";
  a.applies = [](const ir::Node& n, const CpuTarget&, std::string* why_not) {
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
  a.score = [](const ir::Node& n, const CpuTarget& t, std::string* why) {
    ConvGeometry g = conv_geometry(n);
    DirectPlan p = plan_depthwise(g, t);
    *why = std::string(g.depthwise() ? "depthwise" : "narrow groups") +
           ": memory-bound, one pass over the input rows with " + std::to_string(p.rows) + "x" +
           std::to_string(p.row_vectors) + " vectors, " +
           std::to_string(int(std::lround(100 * p.lane_use))) + "% of lanes used";
    // Above conv.direct, whose channel blocking has nothing to block here.
    return 12 * p.lane_use;
  };
  a.root = lower_depthwise;
  return a;
}

}  // namespace kiln::passes::lower
