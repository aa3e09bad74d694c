// The cuda backend end to end on the fake driver: a script compiled for
// cuda:0 (CUDA C -> NVRTC CUBIN -> cuModuleLoadData) runs through the
// executable plan, which copies the host inputs in, launches each kernel
// with the grid and block its schedule states, and copies the outputs back.
// The fake cannot execute SASS (its CUBIN functions only log their
// launches), so values are checked on sim and by the emulator; this checks
// the wiring: loading once, the launch shapes from symbolic sizes, and the
// copies.
#include <gtest/gtest.h>

#include <string>

#include "kiln/compile.h"
#include "kiln/script.h"
#include "tests/cuda_fake_driver/fake_driver_control.h"

namespace kiln {
namespace {

using kiln::testing::fake_cuda_driver;
using kiln::testing::FakeCudaDriver;

std::string cuda_backend_problem() {
  for (const BackendInfo& b : available_backends()) {
    if (b.name == "cuda") return b.why_unavailable;
  }
  return "no cuda backend registered";
}

class CudaBackendTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fake_ = fake_cuda_driver();
    if (!fake_)
      GTEST_SKIP() << "KILN_CUDA_DRIVER does not name the fake driver (run through ctest)";
    if (std::string why = cuda_backend_problem(); !why.empty())
      GTEST_SKIP() << "the cuda backend is unavailable: " << why;
  }
  const FakeCudaDriver* fake_ = nullptr;
};

constexpr const char* kAxpy =
    "def f(x: Tensor[f32, N], y: Tensor[f32, N]) -> Tensor:\n"
    "    return x * 2.0 + y\n";

TEST_F(CudaBackendTest, ACompiledFunctionLoadsOnceAndLaunchesWithItsSchedulesShape) {
  CompileOptions o;
  o.device = Device::cuda(0);
  o.disk_cache = false;
  CompiledFunction f = compile(load_script(kAxpy, "f"), o);
  EXPECT_EQ(f.backend(), "cuda");
  ASSERT_EQ(f.num_kernels(), 1);
  const int loads = fake_->calls("cuModuleLoadData");
  const int to_device = fake_->calls("cuMemcpyHtoDAsync_v2");
  const int to_host = fake_->calls("cuMemcpyDtoHAsync_v2") + fake_->calls("cuMemcpyDtoH_v2");
  for (int64_t n : {5000, 1, 1024}) {
    fake_->clear_launches();
    std::vector<Tensor> out = f({Tensor::randn({n}, 1), Tensor::randn({n}, 2)});
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].device(), Device::cpu());  // copied back where the caller is
    EXPECT_EQ(out[0].sizes(), Shape({n}));
    ASSERT_EQ(fake_->launch_count(), 1) << "n=" << n;
    const auto l = fake_->last_launch();
    EXPECT_STREQ(l.builtin, "record");  // a function of the CUBIN NVRTC made
    EXPECT_EQ(l.device, 0);
    EXPECT_EQ(l.block[0], 256u);  // four elements per thread, 256 threads
    EXPECT_EQ(l.grid[0], unsigned((n + 1023) / 1024)) << "n=" << n;
  }
  // Compiled and loaded once for every size; inputs in and output back per call.
  EXPECT_EQ(fake_->calls("cuModuleLoadData"), loads);
  EXPECT_EQ(fake_->calls("cuMemcpyHtoDAsync_v2") - to_device, 6);
  EXPECT_EQ(fake_->calls("cuMemcpyDtoHAsync_v2") + fake_->calls("cuMemcpyDtoH_v2") - to_host, 3);
}

TEST_F(CudaBackendTest, ARowReductionLaunchesOneBlockPerRow) {
  CompileOptions o;
  o.device = Device::cuda(0);
  o.disk_cache = false;
  CompiledFunction f = compile(load_script("def f(x: Tensor[f32, N, D]) -> Tensor:\n"
                                           "    return torch.softmax(x, -1)\n",
                                           "f"),
                               o);
  fake_->clear_launches();
  f({Tensor::randn({37, 300}, 3)});
  ASSERT_GE(fake_->launch_count(), 1);
  const auto l = fake_->last_launch();
  EXPECT_EQ(l.grid[0], 37u);
  EXPECT_EQ(l.block[0] % 32, 0u);
}

}  // namespace
}  // namespace kiln
