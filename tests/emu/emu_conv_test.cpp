// Check 6b for conv2d's GPU candidates (passes/lower/gpu/gpu_conv.h):
// "conv.implicit_gemm", "conv.1x1" and "conv.depthwise", each forced, their
// emitted CUDA C run by the CUDA emulator (a fiber per thread, shared memory
// checked element by element for races and uninitialized reads, barriers
// for divergence) against the interpreter. Small shapes (the emulator runs
// every thread of every block): padding, strides, dilation, groups, channel
// multipliers, batches, symbolic sizes (ragged and empty), a fused
// per-channel scale and relu, channels-last input, f32, f16 and f64. All in one compiler run.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kiln/kiln.h"
#include "tests/emu/emu_check.h"
#include "tests/unit/conv_test_util.h"

namespace kiln::test {
namespace {

emutest::Tolerance tolerance() {
  return [](DType t) -> std::pair<double, double> {
    if (t == DType::F16) return {4e-3, 2e-2};
    if (t == DType::F64) return {1e-10, 1e-10};
    return {1e-5, 4e-3};
  };
}

ConvCase make(int64_t n, int64_t cin, int64_t cout, int64_t hw, int64_t k) {
  ConvCase c;
  c.n = n, c.cin = cin, c.cout = cout, c.h = c.w = hw, c.kh = c.kw = k;
  return c;
}

void add_case(emutest::EmuCheck& check, const std::string& algorithm, const ConvCase& c) {
  ConvGraph b = conv_graph(c, 5);
  check.add(algorithm, algorithm + " " + c.str(), *b.g, {{c.str(), b.feed}}, tolerance(),
            algorithm);
}

constexpr const char* kScript = R"(
def conv_res(x: Tensor, w: Tensor, b: Tensor, s: Tensor):
    return torch.relu(F.conv2d(x, w, b, padding=1) * s + 0.25)

def conv_nhwc(x: Tensor, w: Tensor):
    return F.conv2d(x.permute(0, 3, 1, 2), w, padding=1)
)";

TEST(EmuConv, GpuConvKernelsMatchTheInterpreter) {
  if (const std::string why = emutest::unavailable_reason(); !why.empty()) {
    GTEST_SKIP() << "CUDA emulation harness unavailable: " << why;
  }
  emutest::EmuCheck check;
  // The implicit GEMM.
  ConvCase c = make(3, 3, 17, 7, 3);
  c.stride = {2, 2}, c.padding = {1};
  add_case(check, "conv.implicit_gemm", c);
  c = make(1, 4, 34, 7, 3);  // groups 2, dilation 2, asymmetric padding
  c.groups = 2, c.dilation = {2, 2}, c.padding = {2, 1, 0, 2}, c.bias = false;
  add_case(check, "conv.implicit_gemm", c);
  for (DType dt : {DType::F16, DType::F64}) {
    c = make(1, 5, 17, 7, 5);
    c.padding = {2}, c.dtype = dt;
    add_case(check, "conv.implicit_gemm", c);
  }
  // 1x1.
  add_case(check, "conv.1x1", make(3, 17, 19, 7, 1));
  c = make(1, 6, 34, 5, 1);
  c.groups = 2;
  add_case(check, "conv.1x1", c);
  // Depthwise: multiplier 1 and 2, stride 2, many planes per block.
  c = make(1, 17, 34, 7, 3);
  c.groups = 17, c.padding = {1};
  add_case(check, "conv.depthwise", c);
  c = make(3, 3, 3, 13, 5);
  c.groups = 3, c.stride = {2, 2}, c.padding = {2}, c.dtype = DType::F64;
  add_case(check, "conv.depthwise", c);
  c = make(1, 2, 2, 40, 3);  // two tiles per row, ragged
  c.groups = 2, c.padding = {1, 0, 1, 0}, c.dilation = {2, 1};
  add_case(check, "conv.depthwise", c);
  // Symbolic sizes (ragged tiles, an empty batch) with a fused scale and relu.
  {
    Function f = load_script(kScript, "conv_res",
                             {bind_tensor("x", DType::F32, {sym("N"), 3, sym("H"), sym("W")}),
                              bind_tensor("w", DType::F32, {17, 3, 3, 3}),
                              bind_tensor("b", DType::F32, {17}),
                              bind_tensor("s", DType::F32, {17, 1, 1})});
    auto run = [](int64_t n, int64_t h, int64_t w) {
      return emutest::EmuRun{std::to_string(n) + "x3x" + std::to_string(h) + "x" +
                                 std::to_string(w),
                             {random_tensor({n, 3, h, w}, DType::F32, 1),
                              random_tensor({17, 3, 3, 3}, DType::F32, 2),
                              random_tensor({17}, DType::F32, 3),
                              random_tensor({17, 1, 1}, DType::F32, 4)}};
    };
    check.add("conv_res", "relu(conv + r), symbolic", f.graph(),
              {run(2, 13, 9), run(1, 1, 1), run(0, 5, 5)}, tolerance(), "conv.implicit_gemm");
  }
  {
    Function f = load_script(kScript, "conv_nhwc",
                             {bind_tensor("x", DType::F32, {2, 5, 7, 17}),
                              bind_tensor("w", DType::F32, {19, 17, 3, 3})});
    check.add("conv_nhwc", "channels-last input", f.graph(),
              {{"2x5x7x17", {random_tensor({2, 5, 7, 17}, DType::F32, 5),
                             random_tensor({19, 17, 3, 3}, DType::F32, 6)}}},
              tolerance(), "conv.implicit_gemm");
  }
  check.run_and_report("gpu conv");
}

}  // namespace
}  // namespace kiln::test
