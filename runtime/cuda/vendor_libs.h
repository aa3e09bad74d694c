// The vendor libraries a cuda device may use instead of a generated kernel:
// cuBLASLt for matrix products and cuDNN 9 for convolutions. Both are opened
// with dlopen at first use and never linked, as the driver is
// (runtime/cuda_driver.h): "libcublasLt.so.13" and "libcudnn.so.9", or the
// paths KILN_CUBLASLT_LIBRARY and KILN_CUDNN_LIBRARY name (the tests point
// them at the fake driver, which implements the few entry points used here on
// host memory). No header of either library is included: the handful of
// types and enum values are declared in vendor_libs.cpp from the published
// API.
//
// A missing library or symbol is a reason, not a crash:
// cublaslt_unavailable_reason() is "cublasLt: libcublasLt.so.13 not found"
// (or the missing symbol), which the algorithm registry shows as the
// candidate's reason for not applying. Probing opens the library only; no
// handle is made until the first call on a device.
//
// The calls queue their work on the device's stream (a null Stream: the
// device's own), after the work the plan queued before, with their
// workspace from the device's caching allocator. One library handle per
// device, made at first use and kept for the process.
#pragma once

#include <cstdint>
#include <string>

#include "kiln/dtype.h"
#include "runtime/device.h"

namespace kiln::runtime::cuda {

// Empty when the library and every entry point used are there; else why not.
const std::string& cublaslt_unavailable_reason();
const std::string& cudnn_unavailable_reason();
// "13.0.2" / "9.13.0" (empty when unavailable): what the library reports.
std::string cublaslt_version();
std::string cudnn_version();

// What cuBLASLt applies to the product before storing it (its epilogues).
enum class BlasEpilogue : uint8_t { None, Bias, Relu, BiasRelu, Gelu, BiasGelu };
const char* blas_epilogue_name(BlasEpilogue e);  // "none", "bias", "relu", "bias+relu", ...
bool epilogue_has_bias(BlasEpilogue e);

// C[b, m, n] = epilogue(sum_k A[b, m, k] * B[b, k, n] (+ bias[n])), every
// operand of `dtype` (f32, f16, bf16 or f64), accumulated in f32 (f64 for
// f64). Strides are in elements; batch strides may be 0 (a broadcast
// operand). A and B need a unit stride along one of their two dims; C a unit
// stride along n; bias is contiguous.
struct MatmulArgs {
  DType dtype = DType::F32;
  int64_t M = 0, N = 0, K = 0, batch = 1;
  const void* a = nullptr;
  int64_t a_b = 0, a_m = 0, a_k = 0;
  const void* b = nullptr;
  int64_t b_b = 0, b_k = 0, b_n = 0;
  void* c = nullptr;
  int64_t c_b = 0, c_m = 0, c_n = 0;
  const void* bias = nullptr;
  BlasEpilogue epilogue = BlasEpilogue::None;
};

// Why cuBLASLt cannot take these operands as they are laid out (empty when
// it can): "A has no unit stride (m 5, k 3)".
std::string matmul_layout_problem(const MatmulArgs& a);

// Queues the product on `stream` of cuda:device. kiln::Error when the
// library is unavailable, the layout is not expressible, or the library
// refuses the problem (its status name).
void cublaslt_matmul(int device, const MatmulArgs& args, Stream stream = nullptr);

// y[n, k, p, q] = conv2d(x, w) (+ bias[k]), cross-correlation, NCHW, of
// `dtype` (f32, f16, bf16 or f64). x may be strided; w and y are packed;
// padding is symmetric (pad_h on top and bottom).
struct ConvArgs {
  DType dtype = DType::F32;
  int64_t n = 1, c = 0, h = 0, w = 0;
  int64_t x_strides[4] = {0, 0, 0, 0};
  const void* x = nullptr;
  int64_t k = 0, r = 0, s = 0;  // filter [k, c / groups, r, s], packed
  const void* filter = nullptr;
  int64_t groups = 1;
  int64_t pad_h = 0, pad_w = 0, stride_h = 1, stride_w = 1, dil_h = 1, dil_w = 1;
  int64_t p = 0, q = 0;  // output height and width
  void* y = nullptr;
  const void* bias = nullptr;  // [k] or null
};

// Queues the convolution on `stream` of cuda:device (cudnnConvolutionForward
// with the algorithm cuDNN's heuristic ranks first, then cudnnAddTensor for
// the bias). kiln::Error as for cublaslt_matmul.
void cudnn_conv(int device, const ConvArgs& args, Stream stream = nullptr);

}  // namespace kiln::runtime::cuda
