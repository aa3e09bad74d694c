// The real vendor libraries, where this machine has them: libcublasLt.so.13
// and libcudnn.so.9 open with dlopen and export every entry point Kiln's
// loader resolves (runtime/cuda/vendor_libs.cpp), and report versions of the
// major Kiln declares its types for. No GPU is needed (nothing is called
// that needs a device); without a library the test skips, saying why.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "runtime/cuda/vendor_libs.h"

namespace kiln {
namespace {

// The tests on the fake driver name the fake instead; this one is for the real ones.
bool overridden(const char* env) {
  const char* v = std::getenv(env);
  return v && *v;
}

TEST(CudaVendorLibs, CublasLtOpensAndResolvesEverySymbol) {
  if (overridden("KILN_CUBLASLT_LIBRARY")) GTEST_SKIP() << "KILN_CUBLASLT_LIBRARY names another";
  const std::string why = runtime::cuda::cublaslt_unavailable_reason();
  if (why.find("not found") != std::string::npos) GTEST_SKIP() << why;
  ASSERT_EQ(why, "") << "the library is there but unusable";
  const std::string v = runtime::cuda::cublaslt_version();
  EXPECT_EQ(v.rfind("13.", 0), 0u) << "cuBLASLt " << v;
}

TEST(CudaVendorLibs, CudnnOpensAndResolvesEverySymbol) {
  if (overridden("KILN_CUDNN_LIBRARY")) GTEST_SKIP() << "KILN_CUDNN_LIBRARY names another";
  const std::string why = runtime::cuda::cudnn_unavailable_reason();
  if (why.find("not found") != std::string::npos) GTEST_SKIP() << why;
  ASSERT_EQ(why, "") << "the library is there but unusable";
  const std::string v = runtime::cuda::cudnn_version();
  EXPECT_EQ(v.rfind("9.", 0), 0u) << "cuDNN " << v;
}

TEST(CudaVendorLibs, ALayoutWithoutAUnitStrideIsRefusedWithAReason) {
  runtime::cuda::MatmulArgs a;
  a.M = 4, a.N = 5, a.K = 3;
  a.a_m = 3, a.a_k = 1;  // A row-major
  a.b_k = 5, a.b_n = 1;  // B row-major
  a.c_m = 5, a.c_n = 1;
  EXPECT_EQ(runtime::cuda::matmul_layout_problem(a), "");
  a.b_k = 1, a.b_n = 3;  // B transposed: fine too
  EXPECT_EQ(runtime::cuda::matmul_layout_problem(a), "");
  a.a_m = 6, a.a_k = 2;  // no unit stride
  EXPECT_NE(runtime::cuda::matmul_layout_problem(a).find("A has no unit stride"),
            std::string::npos);
  a.a_m = 3, a.a_k = 1, a.c_m = 1, a.c_n = 4;  // C transposed
  EXPECT_NE(runtime::cuda::matmul_layout_problem(a).find("C is not contiguous along n"),
            std::string::npos);
}

}  // namespace
}  // namespace kiln
