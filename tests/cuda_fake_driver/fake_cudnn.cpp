// A fake cuDNN 9, in the fake driver's library (KILN_CUDNN_LIBRARY names it
// in the tests): the legacy convolution entry points Kiln's loader resolves
// (runtime/cuda/vendor_libs.cpp), computing on host memory. As the real
// library: a handle needs a current context; work is queued on the stream
// cudnnSetStream gave the handle (the fake driver's); tensors are 4-d with
// strides, filters packed NCHW; every tensor, filter and the workspace must
// lie in live allocations; alpha and beta are host scalars (double for f64
// data, else float). Convolutions are cross-correlations accumulated in
// double and rounded once; cudnnAddTensor broadcasts dims of size 1.
#include <cstring>

#include "tests/cuda_fake_driver/fake_state.h"

using namespace kiln_fake;

namespace {

using Status = int;
constexpr Status kDnnSuccess = 0, kDnnNotInitialized = 1, kDnnBadParam = 3,
                 kDnnNotSupported = 9, kDnnExecutionFailed = 8;

struct DnnHandle {
  Context* ctx = nullptr;
  void* stream = nullptr;
};
struct DnnTensor {
  int type = -1;
  int64_t dims[4] = {}, strides[4] = {};
};
struct DnnFilter {
  int type = -1;
  int64_t k = 0, c = 0, r = 0, s = 0;
};
struct DnnConv {
  int pad_h = 0, pad_w = 0, u = 1, v = 1, dil_h = 1, dil_w = 1, mode = 1, compute = 0;
  int groups = 1;
};
struct AlgoPerf {
  int algo;
  Status status;
  float time;
  size_t memory;
  int determinism;
  int math_type;
  int reserved[3];
};

constexpr size_t kWorkspace = 4096;

bool elem_of(int type, Elem* out) {
  switch (type) {
    case 0: *out = Elem::F32; return true;
    case 1: *out = Elem::F64; return true;
    case 2: *out = Elem::F16; return true;
    case 9: *out = Elem::BF16; return true;
    default: return false;
  }
}

int64_t span(const DnnTensor& t) {
  int64_t n = 1;
  for (int d = 0; d < 4; ++d) {
    if (t.dims[d] == 0) return 0;
    n += (t.dims[d] - 1) * t.strides[d];
  }
  return n;
}

bool in_memory(State& s, const void* p, int64_t elems, Elem e) {
  return elems == 0 || find_range(s, CUdeviceptr(uintptr_t(p)), size_t(elems) * elem_size(e));
}

double scalar(const void* p, bool f64) {
  if (f64) {
    double d;
    std::memcpy(&d, p, 8);
    return d;
  }
  float f;
  std::memcpy(&f, p, 4);
  return f;
}

#define DNN_ENTRY(name)                    \
  State& s = state();                      \
  std::lock_guard<std::mutex> lock(s.mu);  \
  if (enter(s, name) != kOk) return kDnnNotInitialized

}  // namespace

FAKE_API size_t cudnnGetVersion() {
  return 91300;
}

FAKE_API const char* cudnnGetErrorString(Status st) {
  switch (st) {
    case kDnnSuccess: return "CUDNN_STATUS_SUCCESS";
    case kDnnNotInitialized: return "CUDNN_STATUS_NOT_INITIALIZED";
    case kDnnBadParam: return "CUDNN_STATUS_BAD_PARAM";
    case kDnnExecutionFailed: return "CUDNN_STATUS_EXECUTION_FAILED";
    case kDnnNotSupported: return "CUDNN_STATUS_NOT_SUPPORTED";
    default: return "CUDNN_STATUS_UNKNOWN";
  }
}

FAKE_API Status cudnnCreate(DnnHandle** h) {
  DNN_ENTRY("cudnnCreate");
  if (!current) return kDnnNotInitialized;
  *h = new DnnHandle{current, nullptr};
  return kDnnSuccess;
}

FAKE_API Status cudnnSetStream(DnnHandle* h, void* stream) {
  DNN_ENTRY("cudnnSetStream");
  Stream* st = nullptr;
  if (!h || use_stream(s, stream, &st) != kOk) return kDnnBadParam;
  h->stream = stream;
  return kDnnSuccess;
}

FAKE_API Status cudnnCreateTensorDescriptor(DnnTensor** t) {
  *t = new DnnTensor;
  return kDnnSuccess;
}

FAKE_API Status cudnnSetTensor4dDescriptorEx(DnnTensor* t, int type, int n, int c, int h, int w,
                                             int ns, int cs, int hs, int ws) {
  Elem e = Elem::F32;
  if (!elem_of(type, &e) || n <= 0 || c <= 0 || h <= 0 || w <= 0 || ns <= 0 || cs <= 0 ||
      hs <= 0 || ws <= 0) {
    return kDnnBadParam;
  }
  *t = DnnTensor{type, {n, c, h, w}, {ns, cs, hs, ws}};
  return kDnnSuccess;
}

FAKE_API Status cudnnDestroyTensorDescriptor(DnnTensor* t) {
  delete t;
  return kDnnSuccess;
}

FAKE_API Status cudnnCreateFilterDescriptor(DnnFilter** f) {
  *f = new DnnFilter;
  return kDnnSuccess;
}

FAKE_API Status cudnnSetFilter4dDescriptor(DnnFilter* f, int type, int format, int k, int c,
                                           int h, int w) {
  Elem e = Elem::F32;
  if (!elem_of(type, &e) || format != 0 || k <= 0 || c <= 0 || h <= 0 || w <= 0) {
    return kDnnBadParam;
  }
  *f = DnnFilter{type, k, c, h, w};
  return kDnnSuccess;
}

FAKE_API Status cudnnDestroyFilterDescriptor(DnnFilter* f) {
  delete f;
  return kDnnSuccess;
}

FAKE_API Status cudnnCreateConvolutionDescriptor(DnnConv** c) {
  *c = new DnnConv;
  return kDnnSuccess;
}

FAKE_API Status cudnnSetConvolution2dDescriptor(DnnConv* c, int pad_h, int pad_w, int u, int v,
                                                int dil_h, int dil_w, int mode, int compute) {
  if (pad_h < 0 || pad_w < 0 || u <= 0 || v <= 0 || dil_h <= 0 || dil_w <= 0) return kDnnBadParam;
  const int groups = c->groups;
  *c = DnnConv{pad_h, pad_w, u, v, dil_h, dil_w, mode, compute, groups};
  return kDnnSuccess;
}

FAKE_API Status cudnnSetConvolutionGroupCount(DnnConv* c, int groups) {
  if (groups <= 0) return kDnnBadParam;
  c->groups = groups;
  return kDnnSuccess;
}

FAKE_API Status cudnnSetConvolutionMathType(DnnConv*, int math) {
  return math >= 0 && math <= 3 ? kDnnSuccess : kDnnBadParam;
}

FAKE_API Status cudnnDestroyConvolutionDescriptor(DnnConv* c) {
  delete c;
  return kDnnSuccess;
}

namespace {

// Whether y's dims are the convolution's output dims.
bool shapes_agree(const DnnTensor& x, const DnnFilter& w, const DnnConv& c, const DnnTensor& y) {
  if (x.dims[1] != w.c * c.groups || w.k % c.groups != 0) return false;
  const int64_t p = (x.dims[2] + 2 * c.pad_h - c.dil_h * (w.r - 1) - 1) / c.u + 1;
  const int64_t q = (x.dims[3] + 2 * c.pad_w - c.dil_w * (w.s - 1) - 1) / c.v + 1;
  return y.dims[0] == x.dims[0] && y.dims[1] == w.k && y.dims[2] == p && y.dims[3] == q &&
         x.type == w.type && y.type == x.type && c.mode == 1;
}

}  // namespace

FAKE_API Status cudnnGetConvolutionForwardAlgorithm_v7(DnnHandle* h, DnnTensor* x, DnnFilter* w,
                                                       DnnConv* c, DnnTensor* y, int requested,
                                                       int* returned, AlgoPerf* perf) {
  DNN_ENTRY("cudnnGetConvolutionForwardAlgorithm_v7");
  if (!h || !x || !w || !c || !y || requested < 1) return kDnnBadParam;
  if (!shapes_agree(*x, *w, *c, *y)) return kDnnBadParam;
  std::memset(perf, 0, sizeof *perf);
  perf->algo = 1;  // IMPLICIT_PRECOMP_GEMM
  perf->memory = kWorkspace;
  *returned = 1;
  return kDnnSuccess;
}

FAKE_API Status cudnnConvolutionForward(DnnHandle* h, const void* alpha, DnnTensor* xd,
                                        const void* x, DnnFilter* wd, const void* w, DnnConv* cd,
                                        int algo, void* workspace, size_t workspace_bytes,
                                        const void* beta, DnnTensor* yd, void* y) {
  DNN_ENTRY("cudnnConvolutionForward");
  if (!h || !xd || !wd || !cd || !yd || !alpha || !beta) return kDnnBadParam;
  if (current != h->ctx) return kDnnExecutionFailed;
  if (!shapes_agree(*xd, *wd, *cd, *yd) || algo != 1) return kDnnBadParam;
  Stream* st = nullptr;
  if (use_stream(s, h->stream, &st) != kOk) return kDnnBadParam;
  Elem e = Elem::F32;
  elem_of(xd->type, &e);
  if (!in_memory(s, x, span(*xd), e) || !in_memory(s, y, span(*yd), e) ||
      !in_memory(s, w, wd->k * wd->c * wd->r * wd->s, e) ||
      (workspace_bytes < kWorkspace) ||
      !find_range(s, CUdeviceptr(uintptr_t(workspace)), workspace_bytes)) {
    return kDnnBadParam;
  }
  const bool f64 = e == Elem::F64;
  const double al = scalar(alpha, f64), be = scalar(beta, f64);
  const DnnTensor X = *xd, Y = *yd;
  const DnnFilter W = *wd;
  const DnnConv C = *cd;
  enqueue(st, [=]() -> CUresult {
    const int64_t kg = W.k / C.groups;
    for (int64_t n = 0; n < Y.dims[0]; ++n) {
      for (int64_t k = 0; k < Y.dims[1]; ++k) {
        const int64_t g = k / kg;
        for (int64_t p = 0; p < Y.dims[2]; ++p) {
          for (int64_t q = 0; q < Y.dims[3]; ++q) {
            double acc = 0;
            for (int64_t c = 0; c < W.c; ++c) {
              for (int64_t r = 0; r < W.r; ++r) {
                const int64_t iy = p * C.u - C.pad_h + r * C.dil_h;
                if (iy < 0 || iy >= X.dims[2]) continue;
                for (int64_t t = 0; t < W.s; ++t) {
                  const int64_t ix = q * C.v - C.pad_w + t * C.dil_w;
                  if (ix < 0 || ix >= X.dims[3]) continue;
                  const int64_t xi = n * X.strides[0] + (g * W.c + c) * X.strides[1] +
                                     iy * X.strides[2] + ix * X.strides[3];
                  const int64_t wi = ((k * W.c + c) * W.r + r) * W.s + t;
                  acc += load_elem(e, x, xi) * load_elem(e, w, wi);
                }
              }
            }
            const int64_t yi =
                n * Y.strides[0] + k * Y.strides[1] + p * Y.strides[2] + q * Y.strides[3];
            double v = al * acc;
            if (be != 0) v += be * load_elem(e, y, yi);
            store_elem(e, y, yi, v);
          }
        }
      }
    }
    return kOk;
  });
  return kDnnSuccess;
}

FAKE_API Status cudnnAddTensor(DnnHandle* h, const void* alpha, DnnTensor* ad, const void* a,
                               const void* beta, DnnTensor* cd, void* c) {
  DNN_ENTRY("cudnnAddTensor");
  if (!h || !ad || !cd || !alpha || !beta || ad->type != cd->type) return kDnnBadParam;
  if (current != h->ctx) return kDnnExecutionFailed;
  for (int d = 0; d < 4; ++d) {
    if (ad->dims[d] != 1 && ad->dims[d] != cd->dims[d]) return kDnnBadParam;
  }
  Stream* st = nullptr;
  if (use_stream(s, h->stream, &st) != kOk) return kDnnBadParam;
  Elem e = Elem::F32;
  elem_of(ad->type, &e);
  if (!in_memory(s, a, span(*ad), e) || !in_memory(s, c, span(*cd), e)) return kDnnBadParam;
  const bool f64 = e == Elem::F64;
  const double al = scalar(alpha, f64), be = scalar(beta, f64);
  const DnnTensor A = *ad, Cc = *cd;
  enqueue(st, [=]() -> CUresult {
    int64_t i[4];
    for (i[0] = 0; i[0] < Cc.dims[0]; ++i[0]) {
      for (i[1] = 0; i[1] < Cc.dims[1]; ++i[1]) {
        for (i[2] = 0; i[2] < Cc.dims[2]; ++i[2]) {
          for (i[3] = 0; i[3] < Cc.dims[3]; ++i[3]) {
            int64_t ai = 0, ci = 0;
            for (int d = 0; d < 4; ++d) {
              ai += (A.dims[d] == 1 ? 0 : i[d]) * A.strides[d];
              ci += i[d] * Cc.strides[d];
            }
            store_elem(e, c, ci, al * load_elem(e, a, ai) + be * load_elem(e, c, ci));
          }
        }
      }
    }
    return kOk;
  });
  return kDnnSuccess;
}
