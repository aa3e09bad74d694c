// cuBLASLt and cuDNN 9, loaded at run time (see vendor_libs.h). The types
// and values below are the published APIs' (cublasLt.h, cudnn_graph.h,
// cudnn_ops.h, cudnn_cnn.h), declared here so that neither header is needed
// to build Kiln.
#include "runtime/cuda/vendor_libs.h"

#include <dlfcn.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <functional>
#include <map>
#include <mutex>
#include <vector>

#include "kiln/error.h"
#include "kiln/tensor.h"
#include "runtime/cuda/cuda_runtime.h"

namespace kiln::runtime::cuda {
namespace {

// ---- the declarations the two libraries' headers would give

using LtStatus = int;  // cublasStatus_t; 0 is CUBLAS_STATUS_SUCCESS
using LtHandle = void*;
using LtDesc = void*;
using LtLayout = void*;
using LtPref = void*;
struct LtAlgo {
  uint64_t data[8];
};
struct LtHeuristic {
  LtAlgo algo;
  size_t workspace_size;
  LtStatus state;
  float waves;
  int reserved[4];
};
constexpr int kCudaR16F = 2, kCudaR32F = 0, kCudaR64F = 1, kCudaR16BF = 14;  // cudaDataType
constexpr int kComputeF32 = 68, kComputeF64 = 70;                          // cublasComputeType_t
constexpr int kOpN = 0, kOpT = 1;                                            // cublasOperation_t
constexpr int kDescTransA = 3, kDescTransB = 4, kDescEpilogue = 7, kDescBiasPointer = 8;
constexpr int kLayoutBatchCount = 5, kLayoutBatchOffset = 6;
constexpr int kPrefMaxWorkspace = 1;
constexpr uint32_t kEpiDefault = 1, kEpiRelu = 2, kEpiBias = 4, kEpiGelu = 32;

struct LtApi {
  size_t (*cublasLtGetVersion)();
  const char* (*cublasLtGetStatusName)(LtStatus);
  LtStatus (*cublasLtCreate)(LtHandle*);
  LtStatus (*cublasLtMatmulDescCreate)(LtDesc*, int compute, int scale);
  LtStatus (*cublasLtMatmulDescDestroy)(LtDesc);
  LtStatus (*cublasLtMatmulDescSetAttribute)(LtDesc, int attr, const void* buf, size_t n);
  LtStatus (*cublasLtMatrixLayoutCreate)(LtLayout*, int type, uint64_t rows, uint64_t cols,
                                         int64_t ld);
  LtStatus (*cublasLtMatrixLayoutDestroy)(LtLayout);
  LtStatus (*cublasLtMatrixLayoutSetAttribute)(LtLayout, int attr, const void* buf, size_t n);
  LtStatus (*cublasLtMatmulPreferenceCreate)(LtPref*);
  LtStatus (*cublasLtMatmulPreferenceDestroy)(LtPref);
  LtStatus (*cublasLtMatmulPreferenceSetAttribute)(LtPref, int attr, const void* buf, size_t n);
  LtStatus (*cublasLtMatmulAlgoGetHeuristic)(LtHandle, LtDesc, LtLayout, LtLayout, LtLayout,
                                             LtLayout, LtPref, int requested, LtHeuristic* results,
                                             int* returned);
  LtStatus (*cublasLtMatmul)(LtHandle, LtDesc, const void* alpha, const void* a, LtLayout,
                             const void* b, LtLayout, const void* beta, const void* c, LtLayout,
                             void* d, LtLayout, const LtAlgo* algo, void* workspace,
                             size_t workspace_bytes, void* stream);
};

using DnnStatus = int;  // cudnnStatus_t; 0 is CUDNN_STATUS_SUCCESS
using DnnHandle = void*;
using DnnTensor = void*;
using DnnFilter = void*;
using DnnConv = void*;
struct DnnAlgoPerf {
  int algo;
  DnnStatus status;
  float time;
  size_t memory;
  int determinism;
  int math_type;
  int reserved[3];
};
constexpr int kDnnFloat = 0, kDnnDouble = 1, kDnnHalf = 2, kDnnBf16 = 9;  // cudnnDataType_t
constexpr int kDnnNchw = 0, kDnnCrossCorrelation = 1;
constexpr int kDnnTensorOpMath = 1, kDnnFmaMath = 3;

struct DnnApi {
  size_t (*cudnnGetVersion)();
  const char* (*cudnnGetErrorString)(DnnStatus);
  DnnStatus (*cudnnCreate)(DnnHandle*);
  DnnStatus (*cudnnSetStream)(DnnHandle, void* stream);
  DnnStatus (*cudnnCreateTensorDescriptor)(DnnTensor*);
  DnnStatus (*cudnnSetTensor4dDescriptorEx)(DnnTensor, int type, int n, int c, int h, int w,
                                            int ns, int cs, int hs, int ws);
  DnnStatus (*cudnnDestroyTensorDescriptor)(DnnTensor);
  DnnStatus (*cudnnCreateFilterDescriptor)(DnnFilter*);
  DnnStatus (*cudnnSetFilter4dDescriptor)(DnnFilter, int type, int format, int k, int c, int h,
                                          int w);
  DnnStatus (*cudnnDestroyFilterDescriptor)(DnnFilter);
  DnnStatus (*cudnnCreateConvolutionDescriptor)(DnnConv*);
  DnnStatus (*cudnnSetConvolution2dDescriptor)(DnnConv, int pad_h, int pad_w, int u, int v,
                                               int dil_h, int dil_w, int mode, int compute);
  DnnStatus (*cudnnSetConvolutionGroupCount)(DnnConv, int groups);
  DnnStatus (*cudnnSetConvolutionMathType)(DnnConv, int math);
  DnnStatus (*cudnnDestroyConvolutionDescriptor)(DnnConv);
  DnnStatus (*cudnnGetConvolutionForwardAlgorithm_v7)(DnnHandle, DnnTensor, DnnFilter, DnnConv,
                                                      DnnTensor, int requested, int* returned,
                                                      DnnAlgoPerf* perf);
  DnnStatus (*cudnnConvolutionForward)(DnnHandle, const void* alpha, DnnTensor, const void* x,
                                       DnnFilter, const void* w, DnnConv, int algo,
                                       void* workspace, size_t workspace_bytes, const void* beta,
                                       DnnTensor, void* y);
  DnnStatus (*cudnnAddTensor)(DnnHandle, const void* alpha, DnnTensor, const void* a,
                              const void* beta, DnnTensor, void* c);
};

// ---- loading

struct Loaded {
  void* lib = nullptr;
  std::string reason;  // empty: loaded with every symbol
};

// Opens `env`'s path or `soname`, then resolves each (name, slot) pair.
template <class Api>
Loaded load(const char* label, const char* env, const char* soname, Api* api,
            const std::vector<std::pair<const char*, void**>>& symbols) {
  Loaded out;
  const char* path = std::getenv(env);
  const std::string name = path && *path ? path : soname;
  out.lib = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!out.lib) {
    const char* e = dlerror();
    std::string why = e ? e : "";
    // dlopen's own message for a missing file names it again; keep it short.
    bool missing = why.find("No such file") != std::string::npos ||
                   why.find("cannot open shared object") != std::string::npos;
    out.reason = std::string(label) + ": " + name + (missing ? " not found" : ": " + why);
    return out;
  }
  for (const auto& [sym, slot] : symbols) {
    *slot = dlsym(out.lib, sym);
    if (!*slot) {
      out.reason = std::string(label) + ": " + name + " has no symbol " + sym;
      return out;
    }
  }
  (void)api;
  return out;
}

#define KILN_SYM(api, name) {#name, reinterpret_cast<void**>(&(api).name)}

const Loaded& lt_loaded(LtApi** api_out = nullptr) {
  static LtApi api{};
  static const Loaded loaded = load("cublasLt", "KILN_CUBLASLT_LIBRARY", "libcublasLt.so.13", &api,
                                    {KILN_SYM(api, cublasLtGetVersion),
                                     KILN_SYM(api, cublasLtGetStatusName),
                                     KILN_SYM(api, cublasLtCreate),
                                     KILN_SYM(api, cublasLtMatmulDescCreate),
                                     KILN_SYM(api, cublasLtMatmulDescDestroy),
                                     KILN_SYM(api, cublasLtMatmulDescSetAttribute),
                                     KILN_SYM(api, cublasLtMatrixLayoutCreate),
                                     KILN_SYM(api, cublasLtMatrixLayoutDestroy),
                                     KILN_SYM(api, cublasLtMatrixLayoutSetAttribute),
                                     KILN_SYM(api, cublasLtMatmulPreferenceCreate),
                                     KILN_SYM(api, cublasLtMatmulPreferenceDestroy),
                                     KILN_SYM(api, cublasLtMatmulPreferenceSetAttribute),
                                     KILN_SYM(api, cublasLtMatmulAlgoGetHeuristic),
                                     KILN_SYM(api, cublasLtMatmul)});
  if (api_out) *api_out = &api;
  return loaded;
}

const Loaded& dnn_loaded(DnnApi** api_out = nullptr) {
  static DnnApi api{};
  static const Loaded loaded = load("cudnn", "KILN_CUDNN_LIBRARY", "libcudnn.so.9", &api,
                                    {KILN_SYM(api, cudnnGetVersion),
                                     KILN_SYM(api, cudnnGetErrorString),
                                     KILN_SYM(api, cudnnCreate),
                                     KILN_SYM(api, cudnnSetStream),
                                     KILN_SYM(api, cudnnCreateTensorDescriptor),
                                     KILN_SYM(api, cudnnSetTensor4dDescriptorEx),
                                     KILN_SYM(api, cudnnDestroyTensorDescriptor),
                                     KILN_SYM(api, cudnnCreateFilterDescriptor),
                                     KILN_SYM(api, cudnnSetFilter4dDescriptor),
                                     KILN_SYM(api, cudnnDestroyFilterDescriptor),
                                     KILN_SYM(api, cudnnCreateConvolutionDescriptor),
                                     KILN_SYM(api, cudnnSetConvolution2dDescriptor),
                                     KILN_SYM(api, cudnnSetConvolutionGroupCount),
                                     KILN_SYM(api, cudnnSetConvolutionMathType),
                                     KILN_SYM(api, cudnnDestroyConvolutionDescriptor),
                                     KILN_SYM(api, cudnnGetConvolutionForwardAlgorithm_v7),
                                     KILN_SYM(api, cudnnConvolutionForward),
                                     KILN_SYM(api, cudnnAddTensor)});
  if (api_out) *api_out = &api;
  return loaded;
}

#undef KILN_SYM

LtApi& lt() {
  LtApi* api = nullptr;
  const Loaded& l = lt_loaded(&api);
  KILN_USER_CHECK(l.reason.empty(), l.reason);
  return *api;
}

DnnApi& dnn() {
  DnnApi* api = nullptr;
  const Loaded& l = dnn_loaded(&api);
  KILN_USER_CHECK(l.reason.empty(), l.reason);
  return *api;
}

void lt_check(LtStatus s, const char* what) {
  if (s == 0) return;
  const char* name = lt().cublasLtGetStatusName ? lt().cublasLtGetStatusName(s) : nullptr;
  KILN_USER_ERROR("cublasLt: " << what << " failed: "
                               << (name ? name : ("status " + std::to_string(s))));
}

void dnn_check(DnnStatus s, const char* what) {
  if (s == 0) return;
  const char* name = dnn().cudnnGetErrorString ? dnn().cudnnGetErrorString(s) : nullptr;
  KILN_USER_ERROR("cudnn: " << what << " failed: "
                            << (name ? name : ("status " + std::to_string(s))));
}

// One handle per device and library, made with the device's context current.
// Calls on one device are serialized (cudnnSetStream is per handle).
struct PerDevice {
  std::mutex mu;
  void* handle = nullptr;
};

PerDevice& per_device(std::map<int, PerDevice>& m, std::mutex& mu, int device) {
  std::lock_guard<std::mutex> lock(mu);
  return m[device];
}

std::string version_text(size_t v, size_t major_div, size_t minor_div) {
  return std::to_string(v / major_div) + "." + std::to_string(v % major_div / minor_div) + "." +
         std::to_string(v % minor_div);
}

// ---- cuBLASLt layouts

// A matrix op(X) of rows x cols whose element (i, j) is at i*s_row + j*s_col,
// as a column-major layout and the op cuBLASLt applies to it.
struct LtMatrix {
  int op = kOpN;
  uint64_t rows = 0, cols = 0;
  int64_t ld = 0;
};

bool pick_layout(int64_t rows, int64_t cols, int64_t s_row, int64_t s_col, bool allow_t,
                 LtMatrix* out) {
  const int64_t r = std::max<int64_t>(rows, 1), c = std::max<int64_t>(cols, 1);
  if (s_row == 1 || rows <= 1) {
    const int64_t ld = cols <= 1 ? r : s_col;
    if (ld >= r) {
      *out = {kOpN, uint64_t(rows), uint64_t(cols), ld};
      return true;
    }
  }
  if (allow_t && (s_col == 1 || cols <= 1)) {
    const int64_t ld = rows <= 1 ? c : s_row;
    if (ld >= c) {
      *out = {kOpT, uint64_t(cols), uint64_t(rows), ld};
      return true;
    }
  }
  return false;
}

// C^T = B^T A^T in column-major terms: cuBLASLt's A is our B^T (N x K), its
// B our A^T (K x M), its D our C^T (N x M).
struct LtProblem {
  LtMatrix a, b, d;
};

std::string lt_problem(const MatmulArgs& x, LtProblem* p) {
  auto strides = [](int64_t s1, int64_t s2) {
    return " (" + std::to_string(s1) + ", " + std::to_string(s2) + ")";
  };
  if (!pick_layout(x.N, x.K, x.b_n, x.b_k, true, &p->a)) {
    return "B has no unit stride with a leading dimension cuBLASLt accepts (strides k, n" +
           strides(x.b_k, x.b_n) + ")";
  }
  if (!pick_layout(x.K, x.M, x.a_k, x.a_m, true, &p->b)) {
    return "A has no unit stride with a leading dimension cuBLASLt accepts (strides m, k" +
           strides(x.a_m, x.a_k) + ")";
  }
  if (!pick_layout(x.N, x.M, x.c_n, x.c_m, false, &p->d)) {
    return "C is not contiguous along n (strides m, n" + strides(x.c_m, x.c_n) + ")";
  }
  return "";
}

int lt_type(DType t) {
  switch (t) {
    case DType::F32: return kCudaR32F;
    case DType::F16: return kCudaR16F;
    case DType::BF16: return kCudaR16BF;
    case DType::F64: return kCudaR64F;
    default: break;
  }
  KILN_USER_ERROR("cublasLt: no " << dtype_name(t) << " matrix products");
  return 0;
}

uint32_t lt_epilogue(BlasEpilogue e) {
  switch (e) {
    case BlasEpilogue::None: return kEpiDefault;
    case BlasEpilogue::Bias: return kEpiBias;
    case BlasEpilogue::Relu: return kEpiRelu;
    case BlasEpilogue::BiasRelu: return kEpiRelu | kEpiBias;
    case BlasEpilogue::Gelu: return kEpiGelu;
    case BlasEpilogue::BiasGelu: return kEpiGelu | kEpiBias;
  }
  return kEpiDefault;
}

// Destroys what a call made, whatever happens to it.
struct Cleanup {
  std::vector<std::function<void()>> steps;
  ~Cleanup() {
    for (auto it = steps.rbegin(); it != steps.rend(); ++it) (*it)();
  }
};

void* workspace(CudaRuntime& rt, size_t bytes, std::shared_ptr<Storage>* keep) {
  if (bytes == 0) return nullptr;
  *keep = rt.allocate(bytes);
  return (*keep)->data();
}

int int_of(int64_t v, const char* what) {
  KILN_USER_CHECK(v >= 0 && v <= INT_MAX, "cudnn: " << what << " " << v << " is out of range");
  return int(v);
}

int dnn_type(DType t) {
  switch (t) {
    case DType::F32: return kDnnFloat;
    case DType::F16: return kDnnHalf;
    case DType::BF16: return kDnnBf16;
    case DType::F64: return kDnnDouble;
    default: break;
  }
  KILN_USER_ERROR("cudnn: no " << dtype_name(t) << " convolutions");
  return 0;
}

}  // namespace

const std::string& cublaslt_unavailable_reason() {
  return lt_loaded().reason;
}

const std::string& cudnn_unavailable_reason() {
  return dnn_loaded().reason;
}

std::string cublaslt_version() {
  if (!cublaslt_unavailable_reason().empty()) return "";
  return version_text(lt().cublasLtGetVersion(), 10000, 100);
}

std::string cudnn_version() {
  if (!cudnn_unavailable_reason().empty()) return "";
  return version_text(dnn().cudnnGetVersion(), 10000, 100);
}

const char* blas_epilogue_name(BlasEpilogue e) {
  switch (e) {
    case BlasEpilogue::None: return "none";
    case BlasEpilogue::Bias: return "bias";
    case BlasEpilogue::Relu: return "relu";
    case BlasEpilogue::BiasRelu: return "bias+relu";
    case BlasEpilogue::Gelu: return "gelu";
    case BlasEpilogue::BiasGelu: return "bias+gelu";
  }
  return "?";
}

bool epilogue_has_bias(BlasEpilogue e) {
  return e == BlasEpilogue::Bias || e == BlasEpilogue::BiasRelu || e == BlasEpilogue::BiasGelu;
}

std::string matmul_layout_problem(const MatmulArgs& a) {
  LtProblem p;
  return lt_problem(a, &p);
}

void cublaslt_matmul(int device, const MatmulArgs& x, Stream stream) {
  LtApi& api = lt();
  if (x.M == 0 || x.N == 0 || x.batch == 0) return;
  KILN_USER_CHECK(x.K > 0, "cublasLt: a product over K = 0 (run it on a generated kernel)");
  LtProblem p;
  const std::string problem = lt_problem(x, &p);
  KILN_USER_CHECK(problem.empty(), "cublasLt: " << problem);
  KILN_USER_CHECK(!epilogue_has_bias(x.epilogue) || x.bias, "cublasLt: bias epilogue without bias");
  CudaRuntime& rt = cuda_runtime(device);
  rt.make_current();
  static std::mutex mu;
  static std::map<int, PerDevice> handles;
  PerDevice& h = per_device(handles, mu, device);
  std::lock_guard<std::mutex> lock(h.mu);
  if (!h.handle) lt_check(api.cublasLtCreate(&h.handle), "cublasLtCreate");

  const bool f64 = x.dtype == DType::F64;
  const int type = lt_type(x.dtype);
  Cleanup done;
  LtDesc desc = nullptr;
  lt_check(api.cublasLtMatmulDescCreate(&desc, f64 ? kComputeF64 : kComputeF32,
                                        f64 ? kCudaR64F : kCudaR32F),
           "cublasLtMatmulDescCreate");
  done.steps.push_back([&api, desc] { api.cublasLtMatmulDescDestroy(desc); });
  const int32_t ta = p.a.op, tb = p.b.op;
  const uint32_t epi = lt_epilogue(x.epilogue);
  lt_check(api.cublasLtMatmulDescSetAttribute(desc, kDescTransA, &ta, sizeof ta), "TRANSA");
  lt_check(api.cublasLtMatmulDescSetAttribute(desc, kDescTransB, &tb, sizeof tb), "TRANSB");
  lt_check(api.cublasLtMatmulDescSetAttribute(desc, kDescEpilogue, &epi, sizeof epi), "EPILOGUE");
  if (epilogue_has_bias(x.epilogue)) {
    const void* bias = x.bias;
    lt_check(api.cublasLtMatmulDescSetAttribute(desc, kDescBiasPointer, &bias, sizeof bias),
             "BIAS_POINTER");
  }
  auto layout = [&](const LtMatrix& m, int64_t batch_stride) {
    LtLayout l = nullptr;
    lt_check(api.cublasLtMatrixLayoutCreate(&l, type, m.rows, m.cols, m.ld),
             "cublasLtMatrixLayoutCreate");
    done.steps.push_back([&api, l] { api.cublasLtMatrixLayoutDestroy(l); });
    if (x.batch > 1) {
      const int32_t count = int32_t(x.batch);
      lt_check(api.cublasLtMatrixLayoutSetAttribute(l, kLayoutBatchCount, &count, sizeof count),
               "BATCH_COUNT");
      lt_check(api.cublasLtMatrixLayoutSetAttribute(l, kLayoutBatchOffset, &batch_stride,
                                                    sizeof batch_stride),
               "STRIDED_BATCH_OFFSET");
    }
    return l;
  };
  KILN_USER_CHECK(x.batch <= INT32_MAX, "cublasLt: batch " << x.batch << " is too large");
  LtLayout la = layout(p.a, x.b_b), lb = layout(p.b, x.a_b), ld = layout(p.d, x.c_b);
  LtPref pref = nullptr;
  lt_check(api.cublasLtMatmulPreferenceCreate(&pref), "cublasLtMatmulPreferenceCreate");
  done.steps.push_back([&api, pref] { api.cublasLtMatmulPreferenceDestroy(pref); });
  const uint64_t max_ws = uint64_t(32) << 20;
  lt_check(api.cublasLtMatmulPreferenceSetAttribute(pref, kPrefMaxWorkspace, &max_ws,
                                                    sizeof max_ws),
           "MAX_WORKSPACE_BYTES");
  LtHeuristic result{};
  int returned = 0;
  lt_check(api.cublasLtMatmulAlgoGetHeuristic(h.handle, desc, la, lb, ld, ld, pref, 1, &result,
                                              &returned),
           "cublasLtMatmulAlgoGetHeuristic");
  KILN_USER_CHECK(returned > 0, "cublasLt: no algorithm for a " << dtype_name(x.dtype) << " "
                                                                << x.M << "x" << x.N << "x"
                                                                << x.K << " product");
  std::shared_ptr<Storage> ws_keep;
  void* ws = workspace(rt, result.workspace_size, &ws_keep);
  const float one_f = 1, zero_f = 0;
  const double one_d = 1, zero_d = 0;
  const void* alpha = f64 ? static_cast<const void*>(&one_d) : &one_f;
  const void* beta = f64 ? static_cast<const void*>(&zero_d) : &zero_f;
  lt_check(api.cublasLtMatmul(h.handle, desc, alpha, x.b, la, x.a, lb, beta, x.c, ld, x.c, ld,
                              &result.algo, ws, result.workspace_size,
                              reinterpret_cast<void*>(rt.stream_for(stream))),
           "cublasLtMatmul");
  // ws_keep goes back to the cache now: its next user queues behind this call.
}

void cudnn_conv(int device, const ConvArgs& x, Stream stream) {
  DnnApi& api = dnn();
  if (x.n == 0 || x.k == 0 || x.p == 0 || x.q == 0) return;
  CudaRuntime& rt = cuda_runtime(device);
  rt.make_current();
  static std::mutex mu;
  static std::map<int, PerDevice> handles;
  PerDevice& h = per_device(handles, mu, device);
  std::lock_guard<std::mutex> lock(h.mu);
  if (!h.handle) dnn_check(api.cudnnCreate(&h.handle), "cudnnCreate");
  dnn_check(api.cudnnSetStream(h.handle, reinterpret_cast<void*>(rt.stream_for(stream))),
            "cudnnSetStream");
  const int type = dnn_type(x.dtype);
  const bool f64 = x.dtype == DType::F64;
  Cleanup done;
  auto tensor = [&](int64_t n, int64_t c, int64_t hh, int64_t ww, const int64_t* s) {
    DnnTensor t = nullptr;
    dnn_check(api.cudnnCreateTensorDescriptor(&t), "cudnnCreateTensorDescriptor");
    done.steps.push_back([&api, t] { api.cudnnDestroyTensorDescriptor(t); });
    dnn_check(api.cudnnSetTensor4dDescriptorEx(
                  t, type, int_of(n, "batch"), int_of(c, "channels"), int_of(hh, "height"),
                  int_of(ww, "width"), int_of(s[0], "stride"), int_of(s[1], "stride"),
                  int_of(s[2], "stride"), int_of(s[3], "stride")),
              "cudnnSetTensor4dDescriptorEx");
    return t;
  };
  DnnTensor xd = tensor(x.n, x.c, x.h, x.w, x.x_strides);
  const int64_t ys[4] = {x.k * x.p * x.q, x.p * x.q, x.q, 1};
  DnnTensor yd = tensor(x.n, x.k, x.p, x.q, ys);
  DnnFilter wd = nullptr;
  dnn_check(api.cudnnCreateFilterDescriptor(&wd), "cudnnCreateFilterDescriptor");
  done.steps.push_back([&api, wd] { api.cudnnDestroyFilterDescriptor(wd); });
  dnn_check(api.cudnnSetFilter4dDescriptor(wd, type, kDnnNchw, int_of(x.k, "out channels"),
                                           int_of(x.c / x.groups, "channels"),
                                           int_of(x.r, "kernel"), int_of(x.s, "kernel")),
            "cudnnSetFilter4dDescriptor");
  DnnConv cd = nullptr;
  dnn_check(api.cudnnCreateConvolutionDescriptor(&cd), "cudnnCreateConvolutionDescriptor");
  done.steps.push_back([&api, cd] { api.cudnnDestroyConvolutionDescriptor(cd); });
  dnn_check(api.cudnnSetConvolution2dDescriptor(
                cd, int_of(x.pad_h, "padding"), int_of(x.pad_w, "padding"),
                int_of(x.stride_h, "stride"), int_of(x.stride_w, "stride"),
                int_of(x.dil_h, "dilation"), int_of(x.dil_w, "dilation"), kDnnCrossCorrelation,
                f64 ? kDnnDouble : kDnnFloat),
            "cudnnSetConvolution2dDescriptor");
  dnn_check(api.cudnnSetConvolutionGroupCount(cd, int_of(x.groups, "groups")),
            "cudnnSetConvolutionGroupCount");
  // f32 in f32 FMAs (no TF32, as the interpreter computes); f16/bf16 on tensor cores.
  const bool half = x.dtype == DType::F16 || x.dtype == DType::BF16;
  dnn_check(api.cudnnSetConvolutionMathType(cd, half ? kDnnTensorOpMath : kDnnFmaMath),
            "cudnnSetConvolutionMathType");
  DnnAlgoPerf perf[8] = {};
  int returned = 0;
  dnn_check(api.cudnnGetConvolutionForwardAlgorithm_v7(h.handle, xd, wd, cd, yd, 8, &returned,
                                                       perf),
            "cudnnGetConvolutionForwardAlgorithm_v7");
  const DnnAlgoPerf* best = nullptr;
  for (int i = 0; i < returned && !best; ++i) {
    if (perf[i].status == 0) best = &perf[i];
  }
  KILN_USER_CHECK(best, "cudnn: no forward algorithm for this convolution");
  std::shared_ptr<Storage> ws_keep;
  void* ws = workspace(rt, best->memory, &ws_keep);
  const float one_f = 1, zero_f = 0;
  const double one_d = 1, zero_d = 0;
  const void* one = f64 ? static_cast<const void*>(&one_d) : &one_f;
  const void* zero = f64 ? static_cast<const void*>(&zero_d) : &zero_f;
  dnn_check(api.cudnnConvolutionForward(h.handle, one, xd, x.x, wd, x.filter, cd, best->algo, ws,
                                        best->memory, zero, yd, x.y),
            "cudnnConvolutionForward");
  if (x.bias) {
    const int64_t bs[4] = {x.k, 1, 1, 1};
    DnnTensor bd = tensor(1, x.k, 1, 1, bs);
    dnn_check(api.cudnnAddTensor(h.handle, one, bd, x.bias, one, yd, x.y), "cudnnAddTensor");
  }
}

}  // namespace kiln::runtime::cuda
