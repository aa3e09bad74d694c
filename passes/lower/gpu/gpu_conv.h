// conv2d on GPU targets (cuda, and the sim device that runs the same loops
// through the evaluator): three candidates next to the target-neutral
// "naive" nest (docs/cuda.md, "Convolution"), each writing its nest in
// GPU-mapped form (gpu_map leaves it alone):
//
// "conv.implicit_gemm" (gpu_conv.cpp): conv2d as a GEMM run by the tiled SIMT
// GEMM (gpu_gemm.h) with no column buffer. The GEMM's operands are index
// functions, so the input patch is one: per group,
//
//   out[oc, p] = sum_k W[oc, k] * X[k, p]      M = Cout/groups, K = Cin/groups*KH*KW,
//                                              N = batch*OH*OW (images folded in)
//   W[oc, k] = w[g*Co + oc, ic, ky, kx]        k = (ic, ky, kx), or (ky, kx, ic)
//                                              for channels-last data
//   X[k, p]  = x[img, g*Ci + ic, oy*sh - pt + ky*dh, ox*sw - pl + kx*dw]
//              (0 outside the image)           p = (img, oy, ox)
//
// gathered while the GEMM stages its B slabs into shared memory. Pixels are
// the GEMM's N (its coalesced dim: consecutive threads load consecutive
// pixels of a row and store consecutive pixels of an NCHW output), output
// channels its M; the conv's store (bias, fused epilogue) is the GEMM's.
//
// "conv.1x1" (gpu_conv.cpp): a 1x1, stride-1, unpadded conv is a plain
// batched GEMM over (image, group): X[ic, p] = x[img, g*Ci + ic, p / W, p % W]
// (read along the channels when the data is channels-last), no tap
// decomposition and no padding masks.
//
// "conv.depthwise" (gpu_conv_depthwise.cpp): groups == Cin (one input
// channel per group, any channel multiplier): no channel reduction for a GEMM
// to block, so a direct kernel. A block computes `channels` output planes x
// `rows` x `cols` outputs; its threads first copy each plane's input patch
// (0 outside the image) into shared memory, then each computes rows_per_thread
// outputs of one column from it:
//
//   for (blk, 0, N * ceil(Cout/CT) * ceil(OH/TH) * ceil(OW/TW)) gpu_block {
//     allocate P[CT * PH * PW] in gpu_shared   // PH = (TH-1)*sh + (KH-1)*dh + 1
//     for (thr) gpu_thread { for (e) P[e] = x[img, oc(e) / mult, iy(e), ix(e)] or 0 }
//     barrier
//     for (thr) gpu_thread {                    // (c, ty, tx) = thr
//       for (ky) for (kx) unrolled { wv = w[oc0 + c, 0, ky, kx];
//         acc[i] = fma(P[c][(ty + i*TY)*sh + ky*dh][tx*sw + kx*dw], wv, acc[i]) }
//       out[img, oc0 + c, oy0 + ty + i*TY, ox0 + tx] = acc[i] + bias   (guarded)
//     }
//   }
//
// Internal to passes/lower.
#pragma once

#include <string>
#include <vector>

#include "passes/lower/conv.h"
#include "passes/lower/gemm_spec.h"
#include "passes/target.h"

namespace kiln::passes::lower {

// The implicit GEMM of a conv2d node (any float conv2d), and the batched GEMM
// of a 1x1 stride-1 unpadded one. The specs' lambdas point into `c`, which
// must outlive the generated code's construction.
GemmSpec gpu_conv_implicit_gemm_spec(const ConvOperands& c);
GemmSpec gpu_conv_1x1_spec(const ConvOperands& c);

// Whether x[n, c, iy, ix] is read from memory with unit stride along c (a
// channels-last tensor seen through its NCHW permute): the GEMMs then run K
// along the channels.
bool gpu_conv_channels_contiguous(const ConvOperands& c);

// The output tile of conv.depthwise (see the top of this file).
struct GpuDepthwiseTiling {
  int64_t cols = 32, rows = 32, rows_per_thread = 4, channels = 1;
  int64_t patch_rows = 0, patch_cols = 0;  // the input patch of one plane
  bool fits = true;                        // the patch of one 1x1 tile fits shared memory
  int64_t threads() const { return channels * (rows / rows_per_thread) * cols; }
  int64_t shared_elements() const { return channels * patch_rows * patch_cols; }
  std::string str() const;  // "4 channels x 8x8 outputs, 4 rows per thread, 64 threads"
};
// The tile for `g` on `target`: fitted to static image sizes (32 x 32 when
// symbolic), more planes per block for small images, shrunk until the input
// patches fit the target's shared memory.
GpuDepthwiseTiling gpu_depthwise_tiling(const ConvGeometry& g, const GpuTarget& target);

// The depthwise nest (see the top of this file).
Stmt generate_gpu_depthwise(const ConvOperands& c, LowerContext& ctx,
                            const GpuDepthwiseTiling& tiling);

// The candidates above (gpu_conv_candidates.cpp, with the heuristic's rules).
std::vector<AlgorithmLowering> gpu_conv_algorithms();
// Adds them to conv2d's candidate list (lower_conv.cpp): one named like a
// CPU candidate already there ("conv.depthwise", "conv.1x1") joins it as one
// entry serving both kinds of target, each with its own rules and lowering.
void add_gpu_conv_algorithms(std::vector<AlgorithmLowering>& list);

}  // namespace kiln::passes::lower
