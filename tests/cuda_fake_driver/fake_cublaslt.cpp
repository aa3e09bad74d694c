// A fake cuBLASLt, in the fake driver's library (KILN_CUBLASLT_LIBRARY names
// it in the tests): the entry points Kiln's loader resolves
// (runtime/cuda/vendor_libs.cpp), computing the product on host memory. As
// the real library: a handle needs a current context; cublasLtMatmul is
// queued on the given stream of the fake driver (so it runs in order with
// the copies, and only when something waits); every matrix, the bias and
// the workspace must lie in live allocations; layouts are column-major with
// a leading dimension >= rows; alpha and beta are host scalars of the scale
// type. D = epilogue(alpha * op(A) op(B) + beta * C), accumulated in double
// and rounded once. Each entry point counts its calls
// (kiln_fake_cuda_calls("cublasLtMatmul")).
#include <cmath>
#include <cstring>

#include "tests/cuda_fake_driver/fake_state.h"

using namespace kiln_fake;

namespace {

using Status = int;
constexpr Status kLtSuccess = 0, kLtNotInitialized = 1, kLtInvalidValue = 7, kLtExecutionFailed = 13,
                 kLtNotSupported = 15;

struct LtHandle {
  Context* ctx = nullptr;
};
struct LtDesc {
  int compute = 0, scale = 0;
  int32_t trans_a = 0, trans_b = 0;
  uint32_t epilogue = 1;
  const void* bias = nullptr;
};
struct LtLayout {
  int type = 0;
  uint64_t rows = 0, cols = 0;
  int64_t ld = 0;
  int32_t batch = 1;
  int64_t stride = 0;
};
struct LtPref {
  uint64_t max_workspace = 0;
};
struct LtAlgo {
  uint64_t data[8];
};
struct LtHeuristic {
  LtAlgo algo;
  size_t workspace_size;
  Status state;
  float waves;
  int reserved[4];
};

constexpr size_t kWorkspace = 1 << 20;  // what the fake's one algorithm asks for

bool elem_of(int cuda_type, Elem* out) {
  switch (cuda_type) {
    case 0: *out = Elem::F32; return true;
    case 1: *out = Elem::F64; return true;
    case 2: *out = Elem::F16; return true;
    case 14: *out = Elem::BF16; return true;
    default: return false;
  }
}

// Elements a layout spans (0 for an empty one).
int64_t span(const LtLayout& l) {
  if (l.rows == 0 || l.cols == 0 || l.batch == 0) return 0;
  return int64_t(l.batch - 1) * l.stride + int64_t(l.cols - 1) * l.ld + int64_t(l.rows);
}

bool in_memory(State& s, const void* p, const LtLayout& l, Elem e) {
  const int64_t n = span(l);
  return n == 0 || find_range(s, CUdeviceptr(uintptr_t(p)), size_t(n) * elem_size(e));
}

// FAKE_ENTRY answers CUresults; the library's statuses differ.
#define LT_ENTRY(name)                                  \
  State& s = state();                                   \
  std::lock_guard<std::mutex> lock(s.mu);               \
  if (enter(s, name) != kOk) return kLtNotInitialized

}  // namespace

FAKE_API size_t cublasLtGetVersion() {
  return 130000;
}

FAKE_API const char* cublasLtGetStatusName(Status st) {
  switch (st) {
    case kLtSuccess: return "CUBLAS_STATUS_SUCCESS";
    case kLtNotInitialized: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case kLtInvalidValue: return "CUBLAS_STATUS_INVALID_VALUE";
    case kLtExecutionFailed: return "CUBLAS_STATUS_EXECUTION_FAILED";
    case kLtNotSupported: return "CUBLAS_STATUS_NOT_SUPPORTED";
    default: return "CUBLAS_STATUS_UNKNOWN";
  }
}

FAKE_API Status cublasLtCreate(LtHandle** h) {
  LT_ENTRY("cublasLtCreate");
  if (!current) return kLtNotInitialized;
  *h = new LtHandle{current};
  return kLtSuccess;
}

FAKE_API Status cublasLtMatmulDescCreate(LtDesc** d, int compute, int scale) {
  *d = new LtDesc;
  (*d)->compute = compute, (*d)->scale = scale;
  return (compute == 68 && scale == 0) || (compute == 70 && scale == 1) ? kLtSuccess
                                                                         : kLtNotSupported;
}

FAKE_API Status cublasLtMatmulDescDestroy(LtDesc* d) {
  delete d;
  return kLtSuccess;
}

FAKE_API Status cublasLtMatmulDescSetAttribute(LtDesc* d, int attr, const void* buf, size_t n) {
  switch (attr) {
    case 3:
      if (n != 4) return kLtInvalidValue;
      std::memcpy(&d->trans_a, buf, 4);
      return kLtSuccess;
    case 4:
      if (n != 4) return kLtInvalidValue;
      std::memcpy(&d->trans_b, buf, 4);
      return kLtSuccess;
    case 7:
      if (n != 4) return kLtInvalidValue;
      std::memcpy(&d->epilogue, buf, 4);
      return kLtSuccess;
    case 8:
      if (n != sizeof(void*)) return kLtInvalidValue;
      std::memcpy(&d->bias, buf, sizeof(void*));
      return kLtSuccess;
    default: return kLtInvalidValue;
  }
}

FAKE_API Status cublasLtMatrixLayoutCreate(LtLayout** l, int type, uint64_t rows, uint64_t cols,
                                           int64_t ld) {
  Elem e = Elem::F32;
  if (!elem_of(type, &e)) return kLtNotSupported;
  if (ld < std::max<int64_t>(int64_t(rows), 1)) return kLtInvalidValue;
  *l = new LtLayout{type, rows, cols, ld, 1, 0};
  return kLtSuccess;
}

FAKE_API Status cublasLtMatrixLayoutDestroy(LtLayout* l) {
  delete l;
  return kLtSuccess;
}

FAKE_API Status cublasLtMatrixLayoutSetAttribute(LtLayout* l, int attr, const void* buf,
                                                 size_t n) {
  if (attr == 5 && n == 4) {
    std::memcpy(&l->batch, buf, 4);
    return l->batch >= 1 ? kLtSuccess : kLtInvalidValue;
  }
  if (attr == 6 && n == 8) {
    std::memcpy(&l->stride, buf, 8);
    return kLtSuccess;
  }
  return kLtInvalidValue;
}

FAKE_API Status cublasLtMatmulPreferenceCreate(LtPref** p) {
  *p = new LtPref;
  return kLtSuccess;
}

FAKE_API Status cublasLtMatmulPreferenceDestroy(LtPref* p) {
  delete p;
  return kLtSuccess;
}

FAKE_API Status cublasLtMatmulPreferenceSetAttribute(LtPref* p, int attr, const void* buf,
                                                     size_t n) {
  if (attr != 1 || n != 8) return kLtInvalidValue;
  std::memcpy(&p->max_workspace, buf, 8);
  return kLtSuccess;
}

FAKE_API Status cublasLtMatmulAlgoGetHeuristic(LtHandle* h, LtDesc* d, LtLayout* a, LtLayout* b,
                                               LtLayout* c, LtLayout* dl, LtPref* p,
                                               int requested, LtHeuristic* results,
                                               int* returned) {
  LT_ENTRY("cublasLtMatmulAlgoGetHeuristic");
  *returned = 0;
  if (!h || !d || !a || !b || !c || !dl || !p || requested < 1) return kLtInvalidValue;
  if (p->max_workspace < kWorkspace) return kLtNotSupported;
  std::memset(results, 0, sizeof *results);
  results->workspace_size = kWorkspace;
  results->waves = 1;
  *returned = 1;
  return kLtSuccess;
}

FAKE_API Status cublasLtMatmul(LtHandle* h, LtDesc* d, const void* alpha, const void* A,
                               LtLayout* la, const void* B, LtLayout* lb, const void* beta,
                               const void* C, LtLayout* lc, void* D, LtLayout* ld,
                               const LtAlgo* algo, void* workspace, size_t workspace_bytes,
                               void* stream) {
  LT_ENTRY("cublasLtMatmul");
  if (!h || !d || !la || !lb || !lc || !ld || !algo || !alpha || !beta) return kLtInvalidValue;
  if (current != h->ctx) return kLtExecutionFailed;
  Stream* st = nullptr;
  if (use_stream(s, stream, &st) != kOk) return kLtInvalidValue;
  Elem e = Elem::F32;
  if (!elem_of(la->type, &e) || lb->type != la->type || lc->type != la->type ||
      ld->type != la->type) {
    return kLtNotSupported;
  }
  // op(A) is m x k, op(B) k x n, D m x n.
  const uint64_t m = d->trans_a ? la->cols : la->rows, k = d->trans_a ? la->rows : la->cols;
  const uint64_t kb = d->trans_b ? lb->cols : lb->rows, n = d->trans_b ? lb->rows : lb->cols;
  if (k != kb || ld->rows != m || ld->cols != n || lc->rows != m || lc->cols != n) {
    return kLtInvalidValue;
  }
  const int32_t batch = ld->batch;
  if (la->batch != batch || lb->batch != batch || lc->batch != batch) return kLtInvalidValue;
  const bool bias = (d->epilogue & 4) != 0;
  const bool relu = (d->epilogue & 2) != 0, gelu = (d->epilogue & 32) != 0;
  if ((d->epilogue & ~uint32_t(4 | 2 | 32 | 1)) != 0 || (relu && gelu)) return kLtNotSupported;
  if (bias && !d->bias) return kLtInvalidValue;
  if (!in_memory(s, A, *la, e) || !in_memory(s, B, *lb, e) || !in_memory(s, D, *ld, e) ||
      (C && !in_memory(s, C, *lc, e)) ||
      (bias && !find_range(s, CUdeviceptr(uintptr_t(d->bias)), m * elem_size(e))) ||
      (workspace_bytes && !find_range(s, CUdeviceptr(uintptr_t(workspace)), workspace_bytes))) {
    return kLtInvalidValue;
  }
  double al, be;
  if (d->scale == 1) {
    std::memcpy(&al, alpha, 8), std::memcpy(&be, beta, 8);
  } else {
    float a32, b32;
    std::memcpy(&a32, alpha, 4), std::memcpy(&b32, beta, 4);
    al = a32, be = b32;
  }
  const LtDesc desc = *d;
  const LtLayout a = *la, b = *lb, c = *lc, dd = *ld;
  enqueue(st, [=]() -> CUresult {
    for (int32_t p = 0; p < batch; ++p) {
      for (uint64_t j = 0; j < n; ++j) {
        for (uint64_t i = 0; i < m; ++i) {
          double acc = 0;
          for (uint64_t q = 0; q < k; ++q) {
            const int64_t ai = p * a.stride + (desc.trans_a ? int64_t(i) * a.ld + int64_t(q)
                                                            : int64_t(q) * a.ld + int64_t(i));
            const int64_t bi = p * b.stride + (desc.trans_b ? int64_t(q) * b.ld + int64_t(j)
                                                            : int64_t(j) * b.ld + int64_t(q));
            acc += load_elem(e, A, ai) * load_elem(e, B, bi);
          }
          double v = al * acc;
          if (be != 0) v += be * load_elem(e, C, p * c.stride + int64_t(j) * c.ld + int64_t(i));
          if (bias) v += load_elem(e, desc.bias, int64_t(i));
          if (relu) v = v > 0 ? v : 0;
          if (gelu) v = 0.5 * v * (1 + std::tanh(0.7978845608028654 * (v + 0.044715 * v * v * v)));
          store_elem(e, D, p * dd.stride + int64_t(j) * dd.ld + int64_t(i), v);
        }
      }
    }
    return kOk;
  });
  return kLtSuccess;
}
