// Emulated kernels inside a compiled function's plan (emulated_function.h):
// a function compiled for sim:0, its GPU-mapped kernel's CUDA C compiled by
// the harness, the plan launching the emulated kernel (inputs copied to the
// device, grid and block from the symbols, outputs copied back), the result
// compared with the interpreter; a planted bug is reported through the plan.
//
// The CUDA C here stands in for the emitter's output, written by hand for the
// one kernel gpu_map makes of `x * 2 + y`; with the emitter on main, check
// 6b gives every kernel its emitted text instead.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "kiln/kiln.h"
#include "tests/emu/emulated_function.h"

namespace {

using kiln::emutest::Library;
using ::testing::HasSubstr;

constexpr const char* kMulAdd = R"(
extern "C" __global__ void __launch_bounds__(256) f_0_mul_add(const float* __restrict__ x, const float* __restrict__ y, float* __restrict__ v2, long long N, long long x_s0, long long x_s1, long long y_s0, long long y_s1) {
  const long long i0 = (long long)blockIdx.x * 256 + threadIdx.x;
  if (i0 < N) {  // PLANT
    for (long long i1 = 0; i1 < 8; ++i1) {
      v2[i0 * 8 + i1] = x[i0 * x_s0 + i1 * x_s1] * 2.0f + y[i0 * y_s0 + i1 * y_s1];
    }
  }
}
)";

kiln::Function mul_add() {
  kiln::Builder b("f");
  kiln::Var x = b.input("x", kiln::DType::F32, {kiln::sym("N"), 8});
  kiln::Var y = b.input("y", kiln::DType::F32, {kiln::sym("N"), 8});
  return b.build({x * 2.0 + y});
}

// The function for sim:0 with its kernel emulated from program `p` of `lib`.
kiln::CompiledFunction emulated(const kiln::Function& fn, std::shared_ptr<const Library> lib,
                                size_t p) {
  kiln::CompileOptions o;
  o.device = kiln::Device::sim(0);
  auto impl = kiln::compile_detail::build_with_algorithm(fn.graph(), o, "loop-eval", "");
  std::vector<std::shared_ptr<const kiln::runtime::KernelFunction>> kernels;
  for (const kiln::loop::Kernel& k : impl->scheduled) {
    kernels.push_back(kiln::emutest::emulated_kernel(lib, lib->kernel(p, k.name), k));
  }
  kiln::emutest::use_kernels(*impl, kernels);
  return kiln::CompiledFunction::from_impl(impl);
}

class EmuPlan : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string why = kiln::emutest::unavailable_reason();
    if (!why.empty()) GTEST_SKIP() << "CUDA emulation harness unavailable: " << why;
    if (lib_ == nullptr) {
      std::string oob = kMulAdd;
      oob.replace(oob.find("i0 < N"), 6, "i0 <= N");  // one row too many
      // A barrier inside the bounds guard: the threads past N skip it.
      std::string divergent = kMulAdd;
      divergent.replace(divergent.find("    for (long long i1"), 0, "    __syncthreads();\n");
      lib_ = Library::build(
          {{"mul_add.cu", kMulAdd}, {"mul_add_oob.cu", oob}, {"mul_add_divergent.cu", divergent}});
    }
  }
  static inline std::shared_ptr<const Library> lib_;
};

TEST_F(EmuPlan, EmulatedKernelMatchesTheInterpreter) {
  const kiln::Function fn = mul_add();
  const kiln::CompiledFunction f = emulated(fn, lib_, 0);
  for (int64_t n : {1, 300, 513}) {
    const kiln::Tensor x = kiln::Tensor::randn({n, 8}, 1);
    const kiln::Tensor y = kiln::Tensor::randn({8, n}, 2).view_as_strided({n, 8}, {1, n}, 0);
    const kiln::Tensor got = f.run({x, y})[0];
    const kiln::Tensor want = fn.run_interpreter({x, y})[0];
    EXPECT_TRUE(got.equal(want)) << "n " << n << "\n"
                                 << got.to_string() << "\n"
                                 << want.to_string();
  }
}

TEST_F(EmuPlan, EmulatorReportsComeThroughThePlan) {
  const kiln::Function fn = mul_add();
  const kiln::CompiledFunction f = emulated(fn, lib_, 2);
  EXPECT_NO_THROW(f.run({kiln::Tensor::randn({256, 8}, 1), kiln::Tensor::randn({256, 8}, 2)}));
  try {
    f.run({kiln::Tensor::randn({300, 8}, 1), kiln::Tensor::randn({300, 8}, 2)});
    ADD_FAILURE() << "no report";
  } catch (const kiln::emu::Error& e) {
    EXPECT_EQ(e.kind(), kiln::emu::ErrorKind::Divergence) << e.what();
    EXPECT_THAT(e.what(),
                HasSubstr("kernel 'f_0_mul_add' block (1, 0, 0): divergent __syncthreads(): "
                          "threads 0-43 wait at the barrier at mul_add_divergent.cu:5; "
                          "threads 44-255 exited without reaching it"));
  }
}

TEST_F(EmuPlan, OutOfBoundsRowIsCaught) {
  const kiln::Function fn = mul_add();
  const kiln::CompiledFunction f = emulated(fn, lib_, 1);
  const kiln::Tensor x = kiln::Tensor::randn({300, 8}, 1);
  const kiln::Tensor y = kiln::Tensor::randn({300, 8}, 2);
#ifdef KILN_SANITIZE
  EXPECT_DEATH(f.run({x, y}), "heap-buffer-overflow");
#else
  GTEST_SKIP() << "a global buffer overrun is ASan's to catch: the sanitizer build runs this";
#endif
}

}  // namespace
