// The vendor libraries as contraction candidates on a cuda target:
// "matmul.cublaslt" (matmul, bmm, linear) and "conv.cudnn" (conv2d). As ATen
// sends a product to a per-device library, Kiln offers the library next to
// its generated kernels and the heuristic chooses (docs/cuda.md, "Vendor
// libraries").
//
// A chosen library candidate lowers to a kernel whose body is one ExternCall
// (kCublasLtCall or kCudnnCall, inside a one-block GPU loop so the GPU
// schedules leave it alone): the operands' buffers and, as i64 arguments,
// the sizes and element strides read off the operands' index functions. The
// cuda backend (api/cuda_library.cpp) turns that kernel into a library call
// on the device's stream instead of emitting it. Epilogues the library
// cannot do (fused elementwise consumers) go to a kernel of their own:
// split_library_groups moves them out of the contraction's group. When the
// operands cannot be read as strided memory after all (a computed operand),
// the root lowers to the target's generated kernel instead, so the result is
// right in any case.
//
// Internal to passes (fuse.cpp, lower_matmul.cpp, lower_conv.cpp) and the
// cuda backend (the call's argument layout).
#pragma once

#include <string>
#include <vector>

#include "passes/fuse.h"
#include "passes/lower/lower_internal.h"

namespace kiln::passes {

inline constexpr const char* kCublasLtCall = "kiln.cublaslt.matmul";
inline constexpr const char* kCudnnCall = "kiln.cudnn.conv2d";

// kCublasLtCall's arguments; bufs are A, B, C and (with a bias epilogue) the
// bias. Then per batch dim, outermost first: size, A's, B's and C's strides.
enum CublasLtArg : int {
  kLtEpilogue,  // runtime::cuda::BlasEpilogue
  kLtM, kLtN, kLtK,
  kLtAOffset, kLtAm, kLtAk,
  kLtBOffset, kLtBk, kLtBn,
  kLtCOffset, kLtCm, kLtCn,
  kLtBiasOffset, kLtBiasStride,  // the stride must be 1 at run time
  kLtFixedArgs  // then 4 per batch dim
};

// kCudnnCall's arguments; bufs are x, w, y and (with a bias) the bias.
enum CudnnArg : int {
  kDnnN, kDnnC, kDnnH, kDnnW,
  kDnnXsN, kDnnXsC, kDnnXsH, kDnnXsW, kDnnXOffset,
  kDnnK, kDnnR, kDnnS,
  kDnnWsK, kDnnWsC, kDnnWsR, kDnnWsS, kDnnWOffset,
  kDnnGroups, kDnnPadH, kDnnPadW, kDnnStrideH, kDnnStrideW, kDnnDilH, kDnnDilW,
  kDnnP, kDnnQ, kDnnYOffset, kDnnBiasOffset, kDnnBiasStride,  // the stride must be 1
  kDnnArgs
};

// Whether `algorithm` names a library candidate.
bool is_library_algorithm(const std::string& algorithm);

// Each group whose contraction runs in a library keeps the contraction alone;
// the elementwise consumers fused after it move to a group of their own
// right after it (the library cannot run them as it stores).
void split_library_groups(std::vector<KernelGroup>& groups);

namespace lower {
std::vector<AlgorithmLowering> gpu_vendor_matmul_algorithms();  // "matmul.cublaslt"
std::vector<AlgorithmLowering> gpu_vendor_conv_algorithms();    // "conv.cudnn"
}  // namespace lower

}  // namespace kiln::passes
