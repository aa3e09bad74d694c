// The CPU's generated matrix multiplication: C[b, m, n] = sum_k A[b, m, k] *
// B[b, k, n] as loop IR, for the matmul/bmm/linear candidates
// (gemm_candidates.cpp) and for convolutions computed as GEMMs (im2col, 1x1). The operands are
// index functions, so transposed, strided, broadcast or layout-inlined operands (and an im2col
// view) cost nothing to express; every output element's final value goes through `store` exactly
// once, so fused epilogues run inside the kernel.
//
// Three algorithms (GemmAlgorithm), all register-blocked with an MR x NR
// micro-tile of vector accumulators (MR rows, NR = NV vectors of L lanes;
// 6 x 64 in f32 on AVX-512: 24 zmm accumulators). docs/gemm.md has the
// measurements behind the shapes and the heuristic that picks one.
//
// Before (what "naive" still lowers to):
//   for (b) for (m, 0, M) for (n, 0, N) { acc = 0; for (k, 0, K) acc += A*B; store(acc) }
//
// Packed (BLIS-style), per batch element (a batch over one shared B folds
// into M first; an A shared by the batch is packed once); KC, MC, NC from
// gemm_blocking. When A is read in place (below), each parallel task is one
// NC-wide column block of C (or every split-th row tile of one, when the
// blocks do not spread evenly over the cores): it packs that block of B into
// scratch of its own, then runs the row tiles below against it while it is
// still in cache; NC is then picked at run time when M or K is symbolic.
// Otherwise both operands are packed in a parallel phase first:
//   allocate Ap[f32 * ceil(M/MR)*MR*K], Bp[f32 * ceil(N/NR)*NR*K] in heap
//   for (panel, 0, ceil(M/MR) + ceil(N/NR)) parallel {  // pack: one panel per task
//     A panel p: Ap[(p*K + k)*MR + i] = A[p*MR + i, k]   (f32; 0 past M)
//     B panel q: Bp[(q*K + k)*NR + j] = B[k, q*NR + j]   (f32; 0 past N)
//   }
//   for (tile, 0, ceil(M/MC) * ceil(N/NC)) parallel {    // one MC x NC block of C
//     allocate Cs[f32 * MC*NC] in heap                   // only when K > KC
//     for (kb, 0, ceil(K/KC)) {                          // one block unless K > KC
//       for (jr, 0, ceil(nc/NR)) for (ir, 0, ceil(mc/MR)) {   // micro-tiles
//         allocate acc[f32 * MR*NR] in stack             // registers (sroa)
//         acc = kb == 0 ? 0 : Cs[tile]
//         for (k, 0, kc) {                               // the micro-kernel
//           for (i, 0, MR) unrolled for (v, 0, NV) unrolled
//             acc[ramp(i*NR + v*L, 1, L)] = fma(Ap[a0 + k*MR + i],      // broadcast
//                                               Bp[ramp(b0 + k*NR + v*L, 1, L)], acc[...])
//         }
//         if (kb is the last) {
//           for (i) unrolled if (m0 + i < M) for (v) unrolled
//             let c = acc[ramp(...)]; store(b, m0 + i, n0 + v*L + lanes, c) if n < N
//         } else { Cs[tile] = acc }
//       }
//     }
//   }
// The store is the caller's statement for one element, vectorized along the
// lanes (its loads and stores masked to n < N), so an epilogue runs on each
// micro-tile as it leaves the registers.
//
// Small (no packing): the same micro-tiles over the whole output, parallel
// over (batch, blocks of MR rows), the k loop reading A (broadcast) and B
// (vectors along n, masked past N) through the index functions; rows past M
// read row M-1 and are not stored.
//
// Gemv (M == 1 or N == 1): one output row or column, as dot products along K
// (4 outputs per task, vectorize_reduction) when the matrix is contiguous
// along K, else as a one-row micro-tile of 8 vectors along the output.
//
// A is packed only when it must be (a conversion, a computed element, not
// contiguous along k): otherwise the micro-kernel broadcasts it in place,
// a[min(m0 + i, M - 1), p0 + k]. Packing reads each operand once per panel,
// converts to the accumulation dtype (f32 for f32/f16/bf16, f64 for f64), and
// is versioned on unit strides
// (GemmSpec::specialize) where it loads vectors; small and gemv, which load
// vectors from the operands in their inner loops, fall back to a plain nest
// for strides other than those. Integer matmul stays on the naive nest.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "passes/lower/gemm_spec.h"
#include "passes/lower/lower_internal.h"
#include "passes/target.h"

namespace kiln::passes::lower {

// Register and cache blocking for one accumulation dtype on one target.
struct GemmBlocking {
  int lanes = 1;       // vector lanes of the accumulation dtype
  int mr = 1, nv = 1;  // micro-tile: mr rows x nv vectors (nr = nv * lanes columns)
  int64_t kc = 256, mc = 64, nc = 256;  // cache blocks: K, M (multiple of mr), N (multiple of nr)
  // The N block when A (M x K) turns out at run time to fit a quarter of L3;
  // equal to nc when the sizes are known (nc is then already the choice).
  int64_t nc_narrow = 256;
  int nr() const { return nv * lanes; }
  std::string str() const;  // "mr 8 nr 48 (3 x 16 lanes) kc 256 mc 128 nc 480"
};

// The blocking for `acc` (F32 or F64) on `t` for an M x N x K problem (a size
// < 0: known only at run time): the micro-tile uses most of the vector
// registers for accumulators, KC keeps a B micro-panel in half of L2 (K is
// not split below that), MC keeps the tile's A block in L2 next to it, and
// tiles are made small enough for every core to get several.
GemmBlocking gemm_blocking(const CpuTarget& t, DType acc, int64_t M = -1, int64_t N = -1,
                           int64_t K = -1);

enum class GemmAlgorithm : uint8_t { Packed, Small, Gemv };

// The loop nest computing `spec` with `algorithm` on `target` (see the top of
// this file). Uses ctx for fresh names only. Gemv needs M or N to be 1.
Stmt generate_gemm(LowerContext& ctx, const GemmSpec& spec, GemmAlgorithm algorithm,
                   const CpuTarget& target);

// The matmul/bmm/linear candidates this generator offers on CPU targets, in
// registration order: "gemm.packed", "gemm.small", "gemv" (gemm_candidates.cpp,
// with the heuristic that scores them).
std::vector<AlgorithmLowering> cpu_matmul_algorithms();

}  // namespace kiln::passes::lower
