// The vendor libraries as contraction candidates, end to end on the fake
// driver: KILN_CUBLASLT_LIBRARY and KILN_CUDNN_LIBRARY name the fake
// driver's library (set below unless set), whose cuBLASLt and cuDNN compute on host memory, so
// a matmul, bmm, linear or conv2d compiled for cuda:0 runs as a library call
// on the device's stream (no generated kernel, no NVRTC image) and must match
// the interpreter on values, across dtypes, odd and empty sizes, broadcast
// batches, transposed views and groups. Consumers the library cannot apply
// run in a generated kernel after it (checked by its structure: the fake
// does not execute generated code).
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "kiln/compile.h"
#include "kiln/script.h"
#include "runtime/cuda/vendor_libs.h"
#include "tests/cuda_fake_driver/fake_driver_control.h"

namespace kiln {
namespace {

using kiln::testing::fake_cuda_driver;
using kiln::testing::FakeCudaDriver;

class CudaVendorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fake_ = fake_cuda_driver();
    if (!fake_) GTEST_SKIP() << "KILN_CUDA_DRIVER does not name the fake driver (run via ctest)";
    // The fake driver's library is the fake cuBLASLt and cuDNN too (unless
    // the environment names others), named before the first probe.
    setenv("KILN_CUBLASLT_LIBRARY", std::getenv("KILN_CUDA_DRIVER"), 0);
    setenv("KILN_CUDNN_LIBRARY", std::getenv("KILN_CUDA_DRIVER"), 0);
    if (std::string why = runtime::cuda::cublaslt_unavailable_reason(); !why.empty())
      GTEST_SKIP() << "no cuBLASLt: " << why;
    if (std::string why = runtime::cuda::cudnn_unavailable_reason(); !why.empty())
      GTEST_SKIP() << "no cuDNN: " << why;
  }

  CompiledFunction compile_cuda(const std::string& src) {
    CompileOptions o;
    o.device = Device::cuda(0);
    o.disk_cache = false;
    return compile(load_script(src, "f"), o);
  }

  // Runs `src` on cuda:0 and through the interpreter; compares within `tol`
  // (relative to the magnitude of the reference) and returns the explanation.
  std::string check(const std::string& src, const std::vector<Tensor>& inputs, double tol) {
    CompiledFunction f = compile_cuda(src);
    std::vector<Tensor> want = load_script(src, "f").run_interpreter(inputs);
    fake_->clear_launches();
    std::vector<Tensor> got = f(inputs);
    EXPECT_EQ(fake_->launch_count(), 0) << "a generated kernel ran:\n" << f.explain();
    EXPECT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size() && i < want.size(); ++i) {
      EXPECT_EQ(got[i].sizes(), want[i].sizes());
      EXPECT_EQ(got[i].dtype(), want[i].dtype());
      Tensor g = got[i].to(DType::F64), w = want[i].to(DType::F64);
      const double* gp = g.data<double>();
      const double* wp = w.data<double>();
      int bad = 0;
      for (int64_t j = 0; j < w.numel() && bad < 5; ++j) {
        if (!(std::fabs(gp[j] - wp[j]) <= tol * (1 + std::fabs(wp[j])))) {
          ADD_FAILURE() << "element " << j << ": got " << gp[j] << ", want " << wp[j];
          ++bad;
        }
      }
    }
    return f.explain();
  }

  const FakeCudaDriver* fake_ = nullptr;
};

double tolerance(DType t) {
  switch (t) {
    case DType::F64: return 1e-12;
    case DType::F32: return 1e-5;
    case DType::F16: return 4e-3;
    default: return 2e-2;  // bf16
  }
}

std::string matmul_src(DType t, const std::string& a, const std::string& b,
                       const std::string& body = "a @ b") {
  const std::string d = dtype_name(t);
  return "def f(a: Tensor[" + d + ", " + a + "], b: Tensor[" + d + ", " + b +
         "]) -> Tensor:\n    return " + body + "\n";
}

TEST_F(CudaVendorTest, MatmulRunsOnCublasLtAndMatchesTheInterpreter) {
  for (DType t : {DType::F32, DType::F64, DType::F16, DType::BF16}) {
    const std::string src = matmul_src(t, "M, K", "K, N");
    const int before = fake_->calls("cublasLtMatmul");
    int calls = 0;
    for (auto [m, k, n] : std::vector<std::array<int64_t, 3>>{
             {33, 17, 65}, {1, 7, 1}, {7, 1, 9}, {64, 64, 64}, {100, 3, 1}, {0, 5, 3}}) {
      SCOPED_TRACE(std::string(dtype_name(t)) + " " + std::to_string(m) + "x" +
                   std::to_string(k) + "x" + std::to_string(n));
      std::string explain = check(src, {Tensor::randn({m, k}, 1, t), Tensor::randn({k, n}, 2, t)},
                                  tolerance(t) * std::sqrt(double(k)));
      EXPECT_NE(explain.find("algorithm: matmul.cublaslt (heuristic"), std::string::npos)
          << explain;
      calls += m > 0 ? 1 : 0;
    }
    EXPECT_EQ(fake_->calls("cublasLtMatmul") - before, calls);  // an empty product calls nothing
  }
}

TEST_F(CudaVendorTest, BatchesBroadcastsAndTransposedViewsAreStridedOperands) {
  const DType t = DType::F32;
  // A batched product, a batch shared by one matrix (folded), a broadcast
  // batch (stride 0), batch dims that cannot merge (looped), transposes.
  check(matmul_src(t, "B, M, K", "B, K, N"),
        {Tensor::randn({3, 9, 5}, 1), Tensor::randn({3, 5, 11}, 2)}, 1e-5);
  check(matmul_src(t, "B, M, K", "K, N"), {Tensor::randn({4, 9, 5}, 1), Tensor::randn({5, 7}, 2)},
        1e-5);
  check(matmul_src(t, "B, 1, M, K", "C, K, N"),
        {Tensor::randn({2, 1, 6, 5}, 1), Tensor::randn({3, 5, 7}, 2)}, 1e-5);
  check(matmul_src(t, "M, K", "N, K", "a @ b.T"),
        {Tensor::randn({70, 8}, 1), Tensor::randn({80, 8}, 2)}, 1e-5);
  check(matmul_src(t, "K, M", "K, N", "a.T @ b"),
        {Tensor::randn({8, 70}, 1), Tensor::randn({8, 80}, 2)}, 1e-5);
  check(matmul_src(t, "B, M, K", "B, N, K", "torch.bmm(a, b.transpose(1, 2))"),
        {Tensor::randn({2, 6, 4}, 1), Tensor::randn({2, 5, 4}, 2)}, 1e-5);
  // Vector operands.
  check(matmul_src(t, "K", "K, N"), {Tensor::randn({13}, 1), Tensor::randn({13, 6}, 2)}, 1e-5);
  check(matmul_src(t, "M, K", "K"), {Tensor::randn({6, 13}, 1), Tensor::randn({13}, 2)}, 1e-5);
}

TEST_F(CudaVendorTest, LinearAddsItsBiasInCublasLtsEpilogue) {
  for (DType t : {DType::F32, DType::F16}) {
    const std::string d = dtype_name(t);
    const std::string src = "def f(x: Tensor[" + d + ", B, K], w: Tensor[" + d +
                            ", N, K], b: Tensor[" + d +
                            ", N]) -> Tensor:\n    return F.linear(x, w, b)\n";
    std::string explain =
        check(src, {Tensor::randn({7, 33}, 1, t), Tensor::randn({21, 33}, 2, t),
                    Tensor::randn({21}, 3, t)},
              tolerance(t) * 6);
    EXPECT_NE(explain.find("bias in its epilogue"), std::string::npos) << explain;
  }
}

TEST_F(CudaVendorTest, ConvRunsOnCudnnAndMatchesTheInterpreter) {
  struct Case {
    std::string args;
    Shape x, w;
    bool bias;
    DType t;
  };
  const std::vector<Case> cases = {
      {"stride=1, padding=1", {2, 3, 9, 7}, {4, 3, 3, 3}, true, DType::F32},
      {"stride=2, padding=0", {1, 4, 8, 8}, {6, 4, 3, 3}, false, DType::F32},
      {"stride=1, padding=2, dilation=2", {1, 2, 7, 9}, {3, 2, 3, 3}, true, DType::F64},
      {"stride=1, padding=1, groups=2", {2, 4, 6, 6}, {6, 2, 3, 3}, true, DType::F32},
      {"stride=1, padding=1, groups=4", {1, 4, 5, 5}, {4, 1, 3, 3}, false, DType::F16},
      {"stride=1, padding=0", {3, 8, 1, 1}, {5, 8, 1, 1}, true, DType::F32},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.args);
    const std::string d = dtype_name(c.t);
    const std::string k = std::to_string(c.w[0]);
    const std::string src = "def f(x: Tensor[" + d + ", " + std::to_string(c.x[0]) + ", " +
                            std::to_string(c.x[1]) + ", " + std::to_string(c.x[2]) + ", " +
                            std::to_string(c.x[3]) + "], w: Tensor[" + d + ", " + k + ", " + std::to_string(c.w[1]) +
                            ", " + std::to_string(c.w[2]) + ", " + std::to_string(c.w[3]) + "]" +
                            (c.bias ? ", b: Tensor[" + d + ", " + k + "]" : "") +
                            ") -> Tensor:\n    return F.conv2d(x, w, " +
                            (c.bias ? "b" : "None") + ", " + c.args + ")\n";
    std::vector<Tensor> in = {Tensor::randn(c.x, 1, c.t), Tensor::randn(c.w, 2, c.t)};
    if (c.bias) in.push_back(Tensor::randn({c.w[0]}, 3, c.t));
    const int before = fake_->calls("cudnnConvolutionForward");
    std::string explain = check(src, in, tolerance(c.t) * 8);
    EXPECT_NE(explain.find("algorithm: conv.cudnn (heuristic"), std::string::npos) << explain;
    EXPECT_EQ(fake_->calls("cudnnConvolutionForward") - before, 1);
  }
}

TEST_F(CudaVendorTest, ConsumersTheLibraryCannotApplyRunInAKernelAfterIt) {
  CompiledFunction f = compile_cuda(
      "def f(a: Tensor[f32, M, K], b: Tensor[f32, K, N]) -> Tensor:\n"
      "    return torch.tanh(a @ b) * 2.0\n");
  ASSERT_EQ(f.num_kernels(), 2) << f.explain();
  const std::string explain = f.explain();
  EXPECT_NE(explain.find("algorithm: matmul.cublaslt"), std::string::npos) << explain;
  EXPECT_NE(explain.find("run after matmul.cublaslt in a generated kernel"), std::string::npos)
      << explain;
  const int before = fake_->calls("cublasLtMatmul");
  fake_->clear_launches();
  f({Tensor::randn({40, 30}, 1), Tensor::randn({30, 50}, 2)});
  EXPECT_EQ(fake_->calls("cublasLtMatmul") - before, 1);
  EXPECT_EQ(fake_->launch_count(), 1);  // the generated tanh * 2
}

TEST_F(CudaVendorTest, AnIntegerProductStaysOnAGeneratedKernel) {
  CompiledFunction f = compile_cuda(matmul_src(DType::I32, "M, K", "K, N"));
  const std::string explain = f.explain();
  EXPECT_NE(explain.find("candidate matmul.cublaslt: does not apply - cuBLASLt has no exact i32 "
                         "product"),
            std::string::npos)
      << explain;
}

}  // namespace
}  // namespace kiln
