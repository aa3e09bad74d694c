// The warp-level tensor-core product of GPU-mapped loop IR: an ExternCall
// named kWarpMmaCall, which the tensor-core GEMM (passes/lower/gpu/gpu_mma.h)
// emits, the CUDA emitter prints as the prelude's kiln_mma_m16n8k16 (PTX
// mma.sync.aligned.m16n8k16.row.col.f32.{f16,bf16}.{f16,bf16}.f32 on the
// device, a warp collective in the emulator) and the loop evaluator runs
// serially:
//
//   kiln_mma_m16n8k16(C, A, B; c, a, lda, b, ldb, lane)
//     bufs: C (f32, the lane's accumulators), A and B (both f16 or both bf16,
//           usually gpu_shared)
//     args: c, a, lda, b, ldb, lane (i64 scalars)
//   with g = lane / 4, q = lane % 4, for r in 0..3:
//     row = g + 8 * (r / 2), col = 2 * q + r % 2
//     C[c + r] += sum over k in 0..15 of A[a + row * lda + k] * B[b + col * ldb + k]
//
// A is a 16x16 tile stored row-major (k contiguous), B a 16x8 tile stored
// column-major (B(k, n) at b + n * ldb + k, k contiguous); C holds the four
// elements of the 16x8 product PTX's accumulator fragment gives this lane.
// Products of f16/bf16 values are exact in f32; the evaluator adds them in k
// order in f32 (a tensor core's order and rounding of the sum differ, so
// results are compared with the f16/bf16 tolerance of a reordered sum).
//
// The serial meaning is per lane: lane `lane` computes only its own four
// elements, from memory every lane reads alike. That is what keeps the
// GPU-mapped nest a valid serial program: the collective exchanges operand
// fragments between the lanes, but none depends on another's registers. On
// the device (and in the emulator) all 32 lanes of a warp must reach the call
// together with the same A, B, lda and ldb (uniform offsets), `lane` must be
// the lane's index in its warp, lda and ldb even and a, b even (the prelude
// loads pairs of k as 32-bit words).
#pragma once

namespace kiln::loop {

inline constexpr const char* kWarpMmaCall = "kiln_mma_m16n8k16";
// The tile of one call: M x N x K.
inline constexpr int kWarpMmaM = 16, kWarpMmaN = 8, kWarpMmaK = 16;

}  // namespace kiln::loop
