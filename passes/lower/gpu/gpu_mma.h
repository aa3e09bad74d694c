// The GPU's tensor-core GEMM: C[b, m, n] = sum_k A[b, m, k] * B[b, k, n] for
// f16 or bf16 operands with f32 accumulation, as GPU-mapped loop IR whose
// inner product is the warp MMA (ir/loop/warp_mma.h: PTX's
// mma.sync.m16n8k16 on the device), the "gemm.mma" candidate of
// matmul/bmm/linear on GPU targets of compute capability 8.0 or more.
//
// Each block of W = 8 warps (256 threads) computes a BM x BN = 128 x 128 tile
// of C; the warps are laid out 2 x 4, each owning a 64 x 32 sub-tile as 4 x 4
// m16n8 tiles, i.e. 64 f32 accumulators per lane in gpu_local registers. K
// runs in slabs of BK = 32 staged in shared memory as f16/bf16, double
// buffered as in the SIMT GEMM (gpu_gemm.h): while the warps multiply slab s,
// each thread has already loaded its 16 + 16 elements of slab s + 1 into
// registers, and stores them into the other buffer afterwards; one barrier
// per slab.
//
//   for (blk, 0, batch * ceil(M/128) * ceil(N/128)) gpu_block {
//     allocate As[f16 * 2 * 128 * 40], Bs[f16 * 2 * 128 * 40] in gpu_shared
//     allocate acc[f32 * 64] in gpu_local
//     for (thr, 0, 256) gpu_thread { acc = 0; slab 0 -> buffer 0 }
//     barrier
//     for (s, 0, ceil(K/32)) {
//       for (thr, 0, 256) gpu_thread {
//         let warp = thr / 32, lane = thr % 32, wm = warp / 4 * 64, wn = warp % 4 * 32
//         ra[16], rb[16] = slab s + 1 of A, B (0 past M, N, K), if any
//         for kk in 0, 16; i in 0..3; j in 0..3 (written out):
//           kiln_mma_m16n8k16(acc, As, Bs; (i*4 + j)*4,
//                             cur + (wm + 16i)*40 + kk, 40, cur + (wn + 8j)*40 + kk, 40, lane)
//         As, Bs of the other buffer = ra, rb, if any
//       }
//       barrier
//     }
//     for (thr, 0, 256) gpu_thread {                    // epilogue
//       for i, j, r: m = m0 + wm + 16i + lane/4 + 8(r/2), n = n0 + wn + 8j + 2(lane%4) + r%2
//         if (m < M && n < N) store(b, m, n, acc[(i*4 + j)*4 + r])
//     }
//   }
//
// Shared tiles hold A as [m][k] and B as [n][k] (k contiguous: the layout the
// MMA's fragments read as 32-bit pairs), rows padded from 32 to 40 elements
// (80 bytes), so the 8 rows x 4 pairs a fragment load touches fall in 32
// distinct banks. The slab loads give consecutive threads consecutive
// elements along each operand's contiguous dim (k for A and a linear weight,
// m for a transposed A, n for B), converting nothing: operands are already
// f16/bf16 (exactly representable, products exact in f32).
//
// Sizes are symbolic; edge tiles read 0 past M, N and K and store under
// guards, so one compile serves every size. Every output element goes
// through GemmSpec::store once with its f32 sum (epilogues run in the
// kernel, one rounding to the output's dtype).
#pragma once

#include <string>

#include "passes/lower/gemm_spec.h"
#include "passes/lower/lower_internal.h"
#include "passes/target.h"

namespace kiln::passes::lower {

struct GpuMmaTiling {
  int64_t bm = 128, bn = 128, bk = 32;  // block tile and K slab
  int64_t warps_m = 2, warps_n = 4;     // the warps' layout over the tile
  int64_t pad = 8;                      // elements added to each shared row
  int64_t threads() const { return 32 * warps_m * warps_n; }
  int64_t warp_m() const { return bm / warps_m; }  // a warp's sub-tile
  int64_t warp_n() const { return bn / warps_n; }
  int64_t accumulators() const { return warp_m() * warp_n() / 32; }  // per lane
  int64_t shared_bytes() const { return 2 * (bm + bn) * (bk + pad) * 2; }
  std::string str() const;  // "128x128 tiles, K slabs of 32, 8 warps of 64x32, mma.m16n8k16"
};

// Whether `target` runs the default tiling: an m16n8k16 MMA (compute
// capability 8.0 or more), the shared memory and the threads; `why` says
// what is missing when not.
bool gpu_mma_supported(const GpuTarget& target, std::string* why);

// The GPU-mapped nest computing `spec` with f16 or bf16 operands of dtype
// `op` (see the top of this file).
Stmt generate_gpu_mma(LowerContext& ctx, const GemmSpec& spec, DType op,
                      const GpuMmaTiling& tiling = {});

// The "gemm.mma" candidate and its rule (gpu_mma.cpp): f16 or bf16 operands
// on a target that supports it; it outscores "gemm.simt" unless M or N is
// known to be under 16 (then the naive nest wins, as against gemm.simt).
AlgorithmLowering gpu_mma_candidate();

}  // namespace kiln::passes::lower
