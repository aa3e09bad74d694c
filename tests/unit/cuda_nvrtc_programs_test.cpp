// Check 6c of issue 12 on the examples (with the demo's inputs, and with
// their declared types) and the visible conformance corpus: every kernel Kiln
// generates for a cuda device compiles with NVRTC to an sm_90 CUBIN without
// spills, without local memory outside contraction kernels, and within 48 KiB
// of shared memory (tests/unit/cuda_check_util.h). The op tests' graphs get
// the same check in llvm_ops_test (its "cuda" shards). Skipped, with the
// reason, when NVRTC is absent.
#include <gtest/gtest.h>

#include <iostream>

#include "tests/unit/compiled_programs_util.h"
#include "tests/unit/cuda_check_util.h"
// The conformance runner's JSON reader, compiled into this test (see
// compiled_programs_util.h).
#include "tests/conformance/json.cpp"

namespace kiln::test {
namespace {

void check_programs(const std::vector<Program>& programs, size_t min_kernels) {
  CudaCompileCheck check;
  for (const Program& p : programs) check.add(p.name, p.fn.graph());
  std::vector<std::string> failures = check.run();
  std::cout << "cuda (check 6c): " << check.summary() << "\n";
  std::string all;
  for (const std::string& f : failures) all += f + "\n";
  EXPECT_TRUE(failures.empty()) << failures.size() << " failures:\n" << all;
  EXPECT_GE(check.kernels(), min_kernels);
}

TEST(CudaNvrtcPrograms, ExampleKernelsCompileWithoutSpills) {
  if (std::string why = CudaCompileCheck::skip_reason(); !why.empty()) GTEST_SKIP() << why;
  Programs all;
  programs_detail::add_examples(all);
  ASSERT_GE(all.programs.size(), 7u);
  check_programs(all.programs, 15);
}

TEST(CudaNvrtcPrograms, ConformanceKernelsCompileWithoutSpills) {
  if (std::string why = CudaCompileCheck::skip_reason(); !why.empty()) GTEST_SKIP() << why;
  Programs all;
  programs_detail::add_corpus(all);
  if (!all.corpus_found) {
    GTEST_SKIP() << "no conformance corpus at " << shared_dir()
                 << "/conformance (set KILN_SHARED_DIR)";
  }
  for (const std::string& s : all.skipped) std::cout << "  not lowered: " << s << "\n";
  check_programs(all.programs, 50);
}

// The tiled GPU GEMM ("gemm.simt") in every form it takes: its kernels are
// contractions, which the check above lets use local memory, but its
// accumulators, operands and slab registers must all stay in registers (the
// micro-tile is unrolled in the IR with constant indices), so here no local
// memory at all, no spills, and the shared slabs within 48 KiB.
TEST(CudaNvrtcPrograms, TiledGemmKernelsKeepEverythingInRegisters) {
  if (std::string why = CudaCompileCheck::skip_reason(); !why.empty()) GTEST_SKIP() << why;
  const char* script = R"(
def mm(a: Tensor, b: Tensor):
    return a @ b

def mm_bias_relu(a: Tensor, b: Tensor, c: Tensor):
    return torch.relu(a @ b + c)

def mm_ta(a: Tensor, b: Tensor):
    return a.t() @ b

def lin_gelu(x: Tensor, w: Tensor, b: Tensor):
    return F.gelu(F.linear(x, w, b))
)";
  auto two = [](DType t) {
    return std::vector<Binding>{bind_tensor("a", t, {sym("M"), sym("K")}),
                                bind_tensor("b", t, {sym("K"), sym("N")})};
  };
  std::vector<std::pair<std::string, Function>> fns;
  for (DType t : {DType::F32, DType::F16, DType::BF16, DType::F64}) {
    fns.push_back({std::string("mm ") + dtype_name(t), load_script(script, "mm", two(t))});
  }
  std::vector<Binding> three = two(DType::F32);
  three.push_back(bind_tensor("c", DType::F32, {sym("N")}));
  fns.push_back({"mm_bias_relu", load_script(script, "mm_bias_relu", three)});
  fns.push_back({"mm_ta", load_script(script, "mm_ta",
                                      {bind_tensor("a", DType::F32, {sym("K"), sym("M")}),
                                       bind_tensor("b", DType::F32, {sym("K"), sym("N")})})});
  fns.push_back(
      {"bmm", load_script(script, "mm",
                          {bind_tensor("a", DType::F32, {sym("B"), sym("M"), sym("K")}),
                           bind_tensor("b", DType::F32, {sym("B"), sym("K"), sym("N")})})});
  fns.push_back({"lin_gelu", load_script(script, "lin_gelu",
                                         {bind_tensor("x", DType::F32, {sym("T"), sym("C")}),
                                          bind_tensor("w", DType::F32, {sym("O"), sym("C")}),
                                          bind_tensor("b", DType::F32, {sym("O")})})});
  std::vector<loop::Kernel> kernels;
  std::vector<std::string> whats;
  for (const auto& [what, fn] : fns) {
    CompileOptions o;
    o.device = Device::cuda(0);
    o.load = false;
    o.use_cache = false;
    o.disk_cache = false;
    std::shared_ptr<CompiledFunction::Impl> impl =
        compile_detail::build_with_algorithm(fn.graph(), o, "cuda", "");
    ASSERT_EQ(impl->scheduled.size(), 1u) << what;
    kernels.push_back(impl->scheduled[0]);
    whats.push_back(what);
  }
  codegen::cuda::CudaProgram p = codegen::cuda::emit_cuda(kernels);
  codegen::cuda::CudaImage image = codegen::cuda::nvrtc_compile(p.source(), "gemm.cu", {});
  ASSERT_TRUE(image.cubin) << image.arch;
  for (size_t i = 0; i < kernels.size(); ++i) {
    const codegen::cuda::KernelResources* r = nullptr;
    for (const codegen::cuda::KernelResources& k : image.resources) {
      if (k.symbol == p.entries[i].symbol) r = &k;
    }
    ASSERT_NE(r, nullptr) << whats[i];
    std::cout << "  " << whats[i] << ": registers " << r->registers << ", shared " << r->shared
              << " B, local " << r->stack_frame << " B, block " << p.entries[i].block << "\n";
    EXPECT_EQ(r->spill_stores + r->spill_loads, 0) << whats[i];
    EXPECT_EQ(r->stack_frame, 0) << whats[i] << ": local memory";
    EXPECT_GT(r->shared, 0) << whats[i] << ": no shared slabs (not the tiled GEMM?)";
    EXPECT_LE(r->shared, 48 * 1024) << whats[i];
    EXPECT_EQ(p.entries[i].block, 256) << whats[i];
  }
}

}  // namespace
}  // namespace kiln::test
