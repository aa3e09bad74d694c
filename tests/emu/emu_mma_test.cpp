// Check 6b for the tensor-core GEMM ("gemm.mma", passes/lower/gpu/gpu_mma.h):
// its emitted CUDA C, run by the CUDA emulator, computes the interpreter's
// values. The prelude's kiln_mma_m16n8k16_{f16,bf16} gathers each lane's
// fragments from shared memory in PTX's layout and the emulator's
// mma.sync collective rebuilds the 16x16 and 16x8 tiles from the 32 lanes'
// registers, so a fragment layout the two disagree on, a lane missing from
// the collective, or a race on the double-buffered slabs shows up here.
// Symbolic sizes around the 128x128 tiles and 32-wide K slabs (ragged edges,
// one and several slabs, empty outputs and K = 0), a batch, transposed
// operands, linear with a fused epilogue; f16 and bf16. All in one compiler
// run.
#include <gtest/gtest.h>

#include <array>
#include <string>
#include <vector>

#include "kiln/kiln.h"
#include "tests/emu/emu_check.h"

namespace kiln::test {
namespace {

constexpr const char* kScript = R"(
def mm(a: Tensor, b: Tensor):
    return a @ b

def mm_ta(a: Tensor, b: Tensor):
    return a.t() @ b

def lin_gelu(x: Tensor, w: Tensor, b: Tensor):
    return F.gelu(F.linear(x, w, b)) * 2.0
)";

Function script_fn(const std::string& fn, const std::vector<Binding>& binds) {
  return load_script(kScript, fn, binds);
}

Tensor rnd(const Shape& s, DType t, uint64_t seed) {
  return random_tensor(s, t, seed);
}

emutest::Tolerance tolerance() {
  return [](DType t) -> std::pair<double, double> {
    if (t == DType::BF16) return {3.2e-2, 3.2e-2};
    return {4e-3, 4e-3};
  };
}

TEST(EmuMma, TensorCoreGemmKernelsMatchTheInterpreter) {
  if (const std::string why = emutest::unavailable_reason(); !why.empty()) {
    GTEST_SKIP() << "CUDA emulation harness unavailable: " << why;
  }
  emutest::EmuCheck check;
  for (DType dt : {DType::F16, DType::BF16}) {
    const std::string name = dtype_name(dt);
    Function f = script_fn("mm", {bind_tensor("a", dt, {sym("M"), sym("K")}),
                                  bind_tensor("b", dt, {sym("K"), sym("N")})});
    std::vector<emutest::EmuRun> runs;
    for (auto [m, n, k] : std::vector<std::array<int64_t, 3>>{
             {1, 1, 1}, {7, 33, 17}, {130, 70, 40}, {0, 5, 3}, {5, 6, 0}, {33, 140, 65}}) {
      runs.push_back({std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k),
                      {rnd({m, k}, dt, uint64_t(m + k)), rnd({k, n}, dt, uint64_t(n + 3))}});
    }
    check.add("mm", "mm " + name, f.graph(), runs, tolerance());
    Function b = script_fn("mm", {bind_tensor("a", dt, {sym("B"), sym("M"), sym("K")}),
                                  bind_tensor("b", dt, {sym("B"), sym("K"), sym("N")})});
    check.add("bmm", "batched mm " + name, b.graph(),
              {{"2x20x9x33", {rnd({2, 20, 33}, dt, 1), rnd({2, 33, 9}, dt, 2)}}}, tolerance());
    Function ta = script_fn("mm_ta", {bind_tensor("a", dt, {sym("K"), sym("M")}),
                                      bind_tensor("b", dt, {sym("K"), sym("N")})});
    check.add("mm_ta", "a.t() @ b " + name, ta.graph(),
              {{"70x30x20", {rnd({20, 70}, dt, 3), rnd({20, 30}, dt, 4)}}}, tolerance());
    Function lin = script_fn("lin_gelu", {bind_tensor("x", dt, {sym("T"), sym("C")}),
                                          bind_tensor("w", dt, {sym("O"), sym("C")}),
                                          bind_tensor("b", dt, {sym("O")})});
    check.add("lin_gelu", "gelu(linear) * 2 " + name, lin.graph(),
              {{"33x17 -> 65", {rnd({33, 17}, dt, 5), rnd({65, 17}, dt, 6), rnd({65}, dt, 7)}}},
              tolerance());
  }
  check.run_and_report("gemm.mma");
}

}  // namespace
}  // namespace kiln::test
