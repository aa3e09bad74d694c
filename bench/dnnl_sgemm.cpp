// oneDNN's dnnl_sgemm as the SGEMM row's second library (see
// contraction_rows.h). Compiled with KILN_BENCH_DNNL=1 and the library's path
// when CMake found libdnnl and dnnl.h; otherwise every entry point reports
// "libdnnl not found". The library is dlopened on first use, not linked (see
// bench/CMakeLists.txt): dnnl.h gives the types, dlsym the functions.
//
// dnnl_sgemm is row-major (unlike BLAS): C[M x N] = A[M x K] @ B[K x N] with
// 'N', 'N' and leading dimensions lda = K, ldb = N, ldc = N. C is allocated
// and touched once, so timed calls write into warm pages as Kiln's do.
//
// Debian's oneDNN runs on OpenMP (libgomp), which reads OMP_NUM_THREADS when
// it loads; scripts/bench sets it. dnnl_threads() asks the OpenMP runtime
// oneDNN loaded (omp_get_max_threads), and run_dnnl_sgemm sets the bench's
// count there (omp_set_num_threads) when it differs.
#include <dlfcn.h>

#include <vector>

#include "bench/bench_data.h"
#include "bench/contraction_rows.h"

#if KILN_BENCH_DNNL
#include <dnnl.h>
#endif

namespace kiln::bench {

#if KILN_BENCH_DNNL

namespace {

using SgemmFn = dnnl_status_t (*)(char, char, dnnl_dim_t, dnnl_dim_t, dnnl_dim_t, float,
                                  const float*, dnnl_dim_t, const float*, dnnl_dim_t, float, float*,
                                  dnnl_dim_t);
using VersionFn = const dnnl_version_t* (*)();

struct Dnnl {
  void* handle = nullptr;
  SgemmFn sgemm = nullptr;
  VersionFn version = nullptr;
  int (*get_threads)() = nullptr;
  void (*set_threads)(int) = nullptr;
  std::string error;  // why it could not be loaded
};

template <typename F>
F sym(void* handle, const char* name) {
  return reinterpret_cast<F>(dlsym(handle, name));
}

const Dnnl& dnnl() {
  static const Dnnl d = [] {
    Dnnl d;
    d.handle = dlopen(KILN_BENCH_DNNL_LIBRARY, RTLD_NOW | RTLD_LOCAL);
    if (!d.handle) {
      const char* e = dlerror();
      d.error = std::string("cannot load ") + KILN_BENCH_DNNL_LIBRARY + ": " + (e ? e : "?");
      return d;
    }
    d.sgemm = sym<SgemmFn>(d.handle, "dnnl_sgemm");
    d.version = sym<VersionFn>(d.handle, "dnnl_version");
    // libgomp came in with oneDNN; its symbols resolve through the handle.
    d.get_threads = sym<int (*)()>(d.handle, "omp_get_max_threads");
    d.set_threads = sym<void (*)(int)>(d.handle, "omp_set_num_threads");
    if (!d.sgemm || !d.version) d.error = "dnnl_sgemm or dnnl_version missing in the library";
    return d;
  }();
  return d;
}

void sgemm(int64_t n, const float* a, const float* b, float* c) {
  dnnl_status_t st = dnnl().sgemm('N', 'N', n, n, n, 1.0f, a, n, b, n, 0.0f, c, n);
  if (st != dnnl_success) throw kiln::Error("dnnl_sgemm failed with status " + std::to_string(st));
}

}  // namespace

bool have_dnnl() {
  return dnnl().error.empty();
}

std::string dnnl_version() {
  if (!have_dnnl()) return "";
  const dnnl_version_t* v = dnnl().version();
  return std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->patch);
}

int dnnl_threads() {
  return have_dnnl() && dnnl().get_threads ? dnnl().get_threads() : 0;
}

RowResult run_dnnl_sgemm(int64_t n, int threads, const Budget& budget, std::string* note) {
  if (!have_dnnl()) {
    *note = dnnl().error;
    return {};
  }
  if (dnnl().set_threads && dnnl_threads() != threads) dnnl().set_threads(threads);
  kiln::Tensor ta = hashed({n, n}, kSgemmSeedA), tb = hashed({n, n}, kSgemmSeedB);
  std::vector<float> c(size_t(n * n), 0.0f);
  const float* a = ta.data<float>();
  const float* b = tb.data<float>();
  RowResult r;
  int64_t t0 = monotonic_ns();
  sgemm(n, a, b, c.data());
  const double first_s = static_cast<double>(monotonic_ns() - t0) * 1e-9;
  r.max_err = check_sgemm(n, a, b, c.data());
  r.ok = r.max_err <= 1.0;
  r.samples = time_budget(budget, first_s, [&] { sgemm(n, a, b, c.data()); });
  r.flops = 2.0 * double(n) * double(n) * double(n);
  r.input_sum = input_sum({ta, tb});
  note->clear();
  return r;
}

#else

bool have_dnnl() {
  return false;
}
std::string dnnl_version() {
  return "";
}
int dnnl_threads() {
  return 0;
}
RowResult run_dnnl_sgemm(int64_t, int, const Budget&, std::string* note) {
  *note = "libdnnl not found";
  return {};
}

#endif

}  // namespace kiln::bench
