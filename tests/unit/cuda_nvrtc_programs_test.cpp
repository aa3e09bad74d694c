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

// The GEMM kernels of `fns` (each compiled with contraction algorithm
// `algorithm`, "" for the heuristic's) in one program through NVRTC: their
// kernels are contractions, which the check above lets use local memory, but
// accumulators, operands and slab registers must all stay in registers (the
// inner products are unrolled in the IR with constant indices), so here no
// local memory at all, no spills, and the shared slabs within 48 KiB.
void expect_gemms_in_registers(const std::vector<std::pair<std::string, Function>>& fns,
                               const std::string& algorithm, const std::string& must_call) {
  std::vector<loop::Kernel> kernels;
  std::vector<std::string> whats;
  for (const auto& [what, fn] : fns) {
    CompileOptions o;
    o.device = Device::cuda(0);
    o.load = false;
    o.use_cache = false;
    o.disk_cache = false;
    std::shared_ptr<CompiledFunction::Impl> impl =
        compile_detail::build_with_algorithm(fn.graph(), o, "cuda", algorithm);
    ASSERT_EQ(impl->scheduled.size(), 1u) << what;
    kernels.push_back(impl->scheduled[0]);
    whats.push_back(what);
  }
  codegen::cuda::CudaProgram p = codegen::cuda::emit_cuda(kernels);
  if (!must_call.empty()) {
    EXPECT_NE(p.source().find(must_call), std::string::npos) << p.source();
  }
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

constexpr const char* kGemmScript = R"(
def mm(a: Tensor, b: Tensor):
    return a @ b

def mm_bias_relu(a: Tensor, b: Tensor, c: Tensor):
    return torch.relu(a @ b + c)

def mm_ta(a: Tensor, b: Tensor):
    return a.t() @ b

def lin_gelu(x: Tensor, w: Tensor, b: Tensor):
    return F.gelu(F.linear(x, w, b))
)";

// mm, mm + bias + relu, a.t() @ b, a batched mm and linear + gelu in dtype t.
std::vector<std::pair<std::string, Function>> gemm_forms(DType t) {
  auto two = [](DType d) {
    return std::vector<Binding>{bind_tensor("a", d, {sym("M"), sym("K")}),
                                bind_tensor("b", d, {sym("K"), sym("N")})};
  };
  const std::string name = dtype_name(t);
  std::vector<std::pair<std::string, Function>> fns;
  std::vector<Binding> three = two(t);
  three.push_back(bind_tensor("c", t, {sym("N")}));
  fns.push_back({"mm_bias_relu " + name, load_script(kGemmScript, "mm_bias_relu", three)});
  fns.push_back({"mm_ta " + name, load_script(kGemmScript, "mm_ta",
                                              {bind_tensor("a", t, {sym("K"), sym("M")}),
                                               bind_tensor("b", t, {sym("K"), sym("N")})})});
  fns.push_back({"bmm " + name, load_script(kGemmScript, "mm",
                                            {bind_tensor("a", t, {sym("B"), sym("M"), sym("K")}),
                                             bind_tensor("b", t, {sym("B"), sym("K"), sym("N")})})});
  fns.push_back({"lin_gelu " + name, load_script(kGemmScript, "lin_gelu",
                                                 {bind_tensor("x", t, {sym("T"), sym("C")}),
                                                  bind_tensor("w", t, {sym("O"), sym("C")}),
                                                  bind_tensor("b", t, {sym("O")})})});
  return fns;
}

// The tiled SIMT GEMM ("gemm.simt") in every form it takes.
TEST(CudaNvrtcPrograms, TiledGemmKernelsKeepEverythingInRegisters) {
  if (std::string why = CudaCompileCheck::skip_reason(); !why.empty()) GTEST_SKIP() << why;
  std::vector<std::pair<std::string, Function>> fns;
  for (DType t : {DType::F32, DType::F16, DType::BF16, DType::F64}) {
    fns.push_back({std::string("mm ") + dtype_name(t),
                   load_script(kGemmScript, "mm",
                               {bind_tensor("a", t, {sym("M"), sym("K")}),
                                bind_tensor("b", t, {sym("K"), sym("N")})})});
  }
  for (auto& f : gemm_forms(DType::F32)) fns.push_back(std::move(f));
  expect_gemms_in_registers(fns, "gemm.simt", "kiln_fma(");
}

// The tensor-core GEMM ("gemm.mma", the heuristic's choice for f16/bf16) in
// every form, its products the prelude's mma.sync: the 64 accumulators of a
// lane, its fragments and slab registers all in registers too.
TEST(CudaNvrtcPrograms, TensorCoreGemmKernelsKeepEverythingInRegisters) {
  if (std::string why = CudaCompileCheck::skip_reason(); !why.empty()) GTEST_SKIP() << why;
  std::vector<std::pair<std::string, Function>> fns;
  for (DType t : {DType::F16, DType::BF16}) {
    fns.push_back({std::string("mm ") + dtype_name(t),
                   load_script(kGemmScript, "mm",
                               {bind_tensor("a", t, {sym("M"), sym("K")}),
                                bind_tensor("b", t, {sym("K"), sym("N")})})});
    for (auto& f : gemm_forms(t)) fns.push_back(std::move(f));
  }
  expect_gemms_in_registers(fns, "", "kiln_mma_m16n8k16_bf16(");
}

// conv2d's GPU candidates (passes/lower/gpu/gpu_conv.h), each forced, in
// f32, f16, bf16 and f64 and with a fused epilogue: the implicit GEMM and
// the 1x1 GEMM are the tiled GEMM with other operands (everything in
// registers, 256 threads), the depthwise kernel keeps its accumulators in
// registers too; no spills, no local memory, shared memory within 48 KiB.
TEST(CudaNvrtcPrograms, GpuConvKernelsKeepEverythingInRegisters) {
  if (std::string why = CudaCompileCheck::skip_reason(); !why.empty()) GTEST_SKIP() << why;
  const char* script = R"(
def conv(x: Tensor, w: Tensor, b: Tensor):
    return F.conv2d(x, w, b, padding=1)

def conv_relu(x: Tensor, w: Tensor, b: Tensor, r: Tensor):
    return torch.relu(F.conv2d(x, w, b, padding=1) + r)

def conv1(x: Tensor, w: Tensor):
    return F.conv2d(x, w)

def dw(x: Tensor, w: Tensor, b: Tensor):
    return F.conv2d(x, w, b, padding=6, dilation=2, groups=32)

def dw_relu(x: Tensor, w: Tensor, b: Tensor):
    return torch.relu(F.conv2d(x, w, b, padding=1, groups=32))
)";
  struct Case {
    std::string what, fn, algorithm;
    std::vector<Binding> binds;
  };
  std::vector<Case> cases;
  auto x = [](DType t, int64_t c) {
    return bind_tensor("x", t, {sym("N"), c, sym("H"), sym("W")});
  };
  for (DType t : {DType::F32, DType::F16, DType::BF16, DType::F64}) {
    const std::string d = dtype_name(t);
    cases.push_back({"implicit gemm " + d, "conv", "conv.implicit_gemm",
                     {x(t, 17), bind_tensor("w", t, {64, 17, 3, 3}), bind_tensor("b", t, {64})}});
    cases.push_back({"1x1 " + d, "conv1", "conv.1x1", {x(t, 64), bind_tensor("w", t, {64, 64, 1, 1})}});
    cases.push_back({"depthwise 7x7 " + d, "dw", "conv.depthwise",
                     {x(t, 32), bind_tensor("w", t, {64, 1, 7, 7}), bind_tensor("b", t, {64})}});
  }
  cases.push_back({"implicit gemm + relu(+ r)", "conv_relu", "conv.implicit_gemm",
                   {bind_tensor("x", DType::F32, {2, 17, 13, 13}),
                    bind_tensor("w", DType::F32, {64, 17, 3, 3}), bind_tensor("b", DType::F32, {64}),
                    bind_tensor("r", DType::F32, {2, 64, 13, 13})}});
  cases.push_back({"depthwise 3x3 + relu, 7x7 images", "dw_relu", "conv.depthwise",
                   {bind_tensor("x", DType::F32, {3, 32, 7, 7}),
                    bind_tensor("w", DType::F32, {32, 1, 3, 3}), bind_tensor("b", DType::F32, {32})}});
  std::vector<loop::Kernel> kernels;
  for (const Case& c : cases) {
    Function fn = load_script(script, c.fn, c.binds);
    CompileOptions o;
    o.device = Device::cuda(0);
    o.load = false;
    o.use_cache = false;
    o.disk_cache = false;
    std::shared_ptr<CompiledFunction::Impl> impl =
        compile_detail::build_with_algorithm(fn.graph(), o, "cuda", c.algorithm);
    ASSERT_EQ(impl->scheduled.size(), 1u) << c.what;
    kernels.push_back(impl->scheduled[0]);
  }
  codegen::cuda::CudaProgram p = codegen::cuda::emit_cuda(kernels);
  codegen::cuda::CudaImage image = codegen::cuda::nvrtc_compile(p.source(), "conv.cu", {});
  ASSERT_TRUE(image.cubin) << image.arch;
  for (size_t i = 0; i < kernels.size(); ++i) {
    const codegen::cuda::KernelResources* r = nullptr;
    for (const codegen::cuda::KernelResources& k : image.resources) {
      if (k.symbol == p.entries[i].symbol) r = &k;
    }
    ASSERT_NE(r, nullptr) << cases[i].what;
    std::cout << "  " << cases[i].what << ": registers " << r->registers << ", shared "
              << r->shared << " B, local " << r->stack_frame << " B, block " << p.entries[i].block
              << "\n";
    EXPECT_EQ(r->spill_stores + r->spill_loads, 0) << cases[i].what;
    EXPECT_EQ(r->stack_frame, 0) << cases[i].what << ": local memory";
    EXPECT_GT(r->shared, 0) << cases[i].what << ": no shared tiles";
    EXPECT_LE(r->shared, 48 * 1024) << cases[i].what;
  }
}

}  // namespace
}  // namespace kiln::test
