// The GPU's generated matrix multiplication: C[b, m, n] = sum_k A[b, m, k] *
// B[b, k, n] as GPU-mapped loop IR (one gpu_block loop over gpu_thread
// phases, gpu_map's form), for the "gemm.simt" candidate of matmul/bmm/linear
// on GPU targets (cuda, and the sim device that runs the same loops through
// the evaluator). Expects a GemmSpec (gemm_spec.h) with floating operands;
// the result needs no further GPU schedule (gpu_map leaves it alone).
//
// A SIMT tiling: each block computes a BM x BN tile of C, its T threads a
// TM x TN micro-tile each, held in GpuLocal accumulators (registers). K runs
// in BK-wide slabs staged through shared memory, double-buffered: while the
// threads multiply slab s out of one pair of shared tiles, they have already
// loaded slab s + 1 from global memory into registers, and store it into the
// other pair after the multiply, so one barrier per slab suffices and the
// loads' latency hides behind the arithmetic. With BM = BN = 64, BK = 16,
// TM = TN = 4 (256 threads):
//
//   for (blk, 0, batch * ceil(M/64) * ceil(N/64)) gpu_block {
//     let m0 = tile row * 64, n0 = tile column * 64, batch index from blk
//     allocate As[f32 * 2 * 16 * 65], Bs[f32 * 2 * 16 * 64] in gpu_shared
//     allocate acc[f32 * 16] in gpu_local
//     for (t, 0, 256) gpu_thread {                    // slab 0 -> buffer 0
//       acc[*] = 0;  As[0][k][m] = A[m0 + m, k] (0 past M, K), Bs likewise
//     }
//     barrier
//     for (s, 0, ceil(K/16)) {
//       for (t, 0, 256) gpu_thread {
//         ra[4], rb[4] = slab s + 1 of A, B (global -> registers), if any
//         for (k, 0, 16) unrolled {                     // the micro-kernel
//           a[i] = As[s%2][k][ty + 16i], b[j] = Bs[s%2][k][tx + 16j]
//           acc[i*4 + j] = fma(a[i], b[j], acc[i*4 + j])   (16, written out)
//         }
//         As[(s+1)%2], Bs[(s+1)%2] = ra, rb               (if any)
//       }
//       barrier
//     }
//     for (t, 0, 256) gpu_thread {                      // epilogue
//       for i, j (written out): m = m0 + ty + 16i, n = n0 + tx + 16j
//         if (m < M && n < N) store(b, m, n, acc[i*4 + j])
//     }
//   }
//
// Thread t covers rows ty + 16i and columns tx + 16j (tx = t % 16, ty = t /
// 16): a warp's reads of a B row in shared memory are 16 consecutive
// elements (no bank conflicts) and of A two broadcast values; its stores to
// C are 16 consecutive columns. The slab loads give consecutive threads
// consecutive elements along the operand's contiguous dim (k for A and for a
// linear weight, n for B, m for an A the spec marks contiguous along m); the
// shared rows written k-consecutively (A's, a linear weight's) are padded by
// one element so those stores hit distinct banks. The micro-tile, the slab
// registers and the epilogue are written out with constant indices, so ptxas
// keeps all of them in registers (no local memory).
//
// Sizes are symbolic: the grid comes from the dims at launch, edge tiles
// read 0 past M, N and K and store under guards, so one compile serves every
// size. f16/bf16 operands are converted to f32 as they are staged
// (accumulation in f32, one rounding at the store); f64 accumulates in f64.
// Every output element goes through GemmSpec::store once with its final
// value, so epilogues (linear's bias, fused activations, casts) run in the
// kernel.
#pragma once

#include <string>
#include <vector>

#include "passes/lower/gemm_spec.h"
#include "passes/lower/lower_internal.h"
#include "passes/target.h"

namespace kiln::passes::lower {

// The tile shape (see the top of this file). threads() = (bm / tm) * (bn / tn).
struct GpuGemmTiling {
  int64_t bm = 64, bn = 64, bk = 16;  // block tile and K slab
  int64_t tm = 4, tn = 4;             // per-thread micro-tile
  int64_t threads() const { return (bm / tm) * (bn / tn); }
  // Shared memory of the two double-buffered slabs of A and B, in bytes.
  int64_t shared_bytes(DType acc) const;
  std::string str() const;  // "64x64 tiles, K slabs of 16, 4x4 per thread, 256 threads"
};

// The tiling for accumulation dtype `acc` on `target`: the default above
// where its shared memory and thread count fit the target (every GPU Kiln
// targets), else smaller tiles.
GpuGemmTiling gpu_gemm_tiling(const GpuTarget& target, DType acc);

// The GPU-mapped nest computing `spec` (see the top of this file). Uses ctx
// for fresh names only.
Stmt generate_gpu_gemm(LowerContext& ctx, const GemmSpec& spec, const GpuGemmTiling& tiling);

// Shared by the SIMT and tensor-core GEMMs (gpu_gemm.cpp, gpu_mma.cpp) and
// the GPU contraction candidates (defined in gpu_gemm_candidates.cpp):
// below this many rows or columns of C a GEMM tile mostly idles;
constexpr int64_t kGpuTileSmallSide = 16;
// M and N of a matmul/bmm/linear node as far as known (-1: symbolic);
std::pair<int64_t, int64_t> gemm_rows_and_columns(const ir::Node& n);
// a size for explain text: the number, or "?" when known only at run time;
std::string gpu_size_text(int64_t v);
// staging a K slab from global memory: element e = thr + r * threads of a
// slab w wide as (e / w, e % w) (with threads a multiple of w, every tiling
// here, that is (thr / w + r * threads / w, thr % w): no division per
// element, which the simplifier cannot derive since it cannot know thr >= 0);
std::pair<Expr, Expr> slab_split(const Expr& thr, int64_t r, int64_t w, int64_t threads);
// and element r of thread thr's share of a BM x BK slab of A as (m, k), of a
// BK x BN slab of B as (k, n): consecutive threads take consecutive elements
// along the operand's contiguous dim.
std::pair<Expr, Expr> slab_a_element(const GemmSpec& s, int64_t bm, int64_t bk, int64_t threads,
                                     const Expr& thr, int64_t r);
std::pair<Expr, Expr> slab_b_element(const GemmSpec& s, int64_t bk, int64_t bn, int64_t threads,
                                     const Expr& thr, int64_t r);

// The matmul/bmm/linear candidates this generator offers on GPU targets:
// "gemm.simt" (gpu_gemm_candidates.cpp, with the heuristic's rule).
std::vector<AlgorithmLowering> gpu_matmul_algorithms();

}  // namespace kiln::passes::lower
