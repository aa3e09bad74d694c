// Check 6b for the tiled SIMT GEMM ("gemm.simt", passes/lower/gpu/gpu_gemm.h):
// its emitted CUDA C, run by the CUDA emulator (a fiber per thread, shared
// memory checked element by element for races and uninitialized reads,
// barriers for divergence), computes the interpreter's values. The op tests'
// matmul cases have small static sides, where the heuristic picks the naive
// nest, so the GEMM's kernels get their own cases here: symbolic sizes around
// the 64x64 tiles and 16-wide K slabs (ragged edges, one and several slabs,
// empty outputs and K = 0), batches, transposed operands, linear with a
// fused epilogue, f16 and f64 operands. All in one compiler run.
#include <gtest/gtest.h>

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
    if (t == DType::F16) return {4e-3, 4e-3};
    if (t == DType::F64) return {1e-10, 1e-12};
    return {1e-4, 1e-4};
  };
}

TEST(EmuGemm, TiledGemmKernelsMatchTheInterpreter) {
  if (const std::string why = emutest::unavailable_reason(); !why.empty()) {
    GTEST_SKIP() << "CUDA emulation harness unavailable: " << why;
  }
  emutest::EmuCheck check;
  std::vector<Function> fns;  // the graphs outlive nothing but add()
  for (DType dt : {DType::F32, DType::F16, DType::F64}) {
    Function f = script_fn("mm", {bind_tensor("a", dt, {sym("M"), sym("K")}),
                                  bind_tensor("b", dt, {sym("K"), sym("N")})});
    std::vector<emutest::EmuRun> runs;
    for (auto [m, n, k] : std::vector<std::array<int64_t, 3>>{
             {1, 1, 1}, {7, 33, 17}, {65, 70, 40}, {0, 5, 3}, {5, 6, 0}}) {
      runs.push_back({std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k),
                      {rnd({m, k}, dt, uint64_t(m + k)), rnd({k, n}, dt, uint64_t(n + 3))}});
    }
    // f16 would run on tensor cores (emu_mma_test): the SIMT GEMM by name.
    check.add("mm", std::string("mm ") + dtype_name(dt), f.graph(), runs, tolerance(),
              "gemm.simt");
  }
  {
    Function f = script_fn("mm", {bind_tensor("a", DType::F32, {sym("B"), sym("M"), sym("K")}),
                                  bind_tensor("b", DType::F32, {sym("B"), sym("K"), sym("N")})});
    check.add("bmm", "batched mm", f.graph(),
              {{"2x20x9x33", {rnd({2, 20, 33}, DType::F32, 1), rnd({2, 33, 9}, DType::F32, 2)}}},
              tolerance());
  }
  {
    Function f = script_fn("mm_ta", {bind_tensor("a", DType::F32, {sym("K"), sym("M")}),
                                     bind_tensor("b", DType::F32, {sym("K"), sym("N")})});
    check.add("mm_ta", "a.t() @ b", f.graph(),
              {{"70x30x20", {rnd({20, 70}, DType::F32, 3), rnd({20, 30}, DType::F32, 4)}}},
              tolerance());
  }
  {
    Function f = script_fn("lin_gelu", {bind_tensor("x", DType::F32, {sym("T"), sym("C")}),
                                        bind_tensor("w", DType::F32, {sym("O"), sym("C")}),
                                        bind_tensor("b", DType::F32, {sym("O")})});
    check.add(
        "lin_gelu", "gelu(linear) * 2", f.graph(),
        {{"33x17 -> 65",
          {rnd({33, 17}, DType::F32, 5), rnd({65, 17}, DType::F32, 6), rnd({65}, DType::F32, 7)}}},
        tolerance());
  }
  check.run_and_report("gemm.simt");
}

}  // namespace
}  // namespace kiln::test
