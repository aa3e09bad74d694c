// Identical kernels are generated once (issue 14, item 5): a function of N
// identical layers holds the code of one layer's kernels, every copy launches
// it, and explain says so; each distinct kernel is one disk cache entry, so a
// deeper stack of the same layers reads them all back; code generated on
// several threads (KILN_COMPILE_THREADS) is byte for byte what one thread
// makes. Values are checked against the reference interpreter.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <string>

#include "api/compile_internal.h"
#include "ir/loop/canonical.h"
#include "kiln/kiln.h"
#include "runtime/disk_cache.h"
#include "runtime/kernel_cache.h"
#include "cache_test_util.h"
#include "kernel_cache_fixture.h"

namespace kiln::test {
namespace {

namespace fs = std::filesystem;

// `layers` layers of y = tanh(y @ w + b) * s + y, sharing their weights, with
// a row sum between layers (a reduction, so each layer is its own kernels).
Function stack(int layers, int64_t rows, int64_t width) {
  Builder b("stack" + std::to_string(layers));
  Var x = b.input("x", DType::F32, {rows, width});
  Var w = b.input("w", DType::F32, {width, width});
  Var bias = b.input("b", DType::F32, {width});
  Var y = x;
  for (int i = 0; i < layers; ++i) {
    Var h = tanh(matmul(y, w) * (1.0 / std::sqrt(double(width))) + bias);
    y = h * 0.5 + y - sum(h, {1}, /*keepdim=*/true) * (1.0 / double(width));
  }
  return b.build({y});
}

std::vector<Tensor> stack_inputs(int64_t rows, int64_t width) {
  return {Tensor::randn({rows, width}, /*seed=*/1),
          Tensor::randn({width, width}, /*seed=*/2),
          Tensor::randn({width}, /*seed=*/3)};
}

// How many kernels explain() says run another kernel's code.
int shared_kernels(const CompiledFunction& f) {
  std::string text = f.explain();
  int n = 0;
  for (size_t at = text.find("code: same as kernel"); at != std::string::npos;
       at = text.find("code: same as kernel", at + 1)) {
    ++n;
  }
  return n;
}

void expect_close(const Tensor& got, const Tensor& want) {
  ASSERT_EQ(got.sizes(), want.sizes());
  Tensor g = got.to(DType::F64).contiguous(), w = want.to(DType::F64).contiguous();
  for (int64_t i = 0; i < g.numel(); ++i) {
    double a = g.data<double>()[i], e = w.data<double>()[i];
    ASSERT_NEAR(a, e, 1e-4 + 1e-4 * std::fabs(e)) << "element " << i;
  }
}

std::map<std::string, std::string> entries_of(const std::string& dir) {
  std::map<std::string, std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().extension() == ".kc") out[e.path().filename().string()] = read_all(e.path());
  }
  return out;
}

// The code bytes leave out the names of the kernel and its buffers and
// number Vars consistently; anything the code does still shows.
TEST(CanonicalCode, NamesDoNotCountWhatTheCodeDoes) {
  using namespace loop;
  auto kernel = [](const char* name, const char* a, const char* b, const char* var,
                   double scale, bool swap) {
    Buf p = make_buf(a, DType::F32), q = make_buf(b, DType::F32);
    Expr i = loop::Var::make(i64_t(), var);
    Buf from = swap ? q : p, to = swap ? p : q;
    return Kernel{name,
                  {p, q},
                  {},
                  For::make(i, make_int(0), make_int(7), ForKind::Serial,
                            Store::make(to, i,
                                        Load::make(from, i) *
                                            FloatImm::make({DType::F32, 1}, scale)))};
  };
  const std::string base = canonical_code_bytes(kernel("k1", "x", "y", "i", 0.5, false));
  EXPECT_EQ(base, canonical_code_bytes(kernel("k7_other", "t3", "t4", "j", 0.5, false)));
  EXPECT_NE(base, canonical_code_bytes(kernel("k1", "x", "y", "i", 0.25, false)));
  EXPECT_NE(base, canonical_code_bytes(kernel("k1", "x", "y", "i", 0.5, true)));
  // canonical_bytes (the names too) still tells them apart.
  EXPECT_NE(canonical_bytes(kernel("k1", "x", "y", "i", 0.5, false)),
            canonical_bytes(kernel("k2", "x", "y", "i", 0.5, false)));
  // Two Vars are two numbers: i + j is not i + i.
  Buf p = make_buf("p", DType::I64);
  Expr i = loop::Var::make(i64_t(), "i"), j = loop::Var::make(i64_t(), "j");
  auto sum_of = [&](Expr a, Expr b) {
    return Kernel{"s",
                  {p},
                  {i, j},
                  Store::make(p, make_int(0), a + b)};
  };
  EXPECT_NE(canonical_code_bytes(sum_of(i, j)), canonical_code_bytes(sum_of(i, i)));
  EXPECT_EQ(canonical_code_bytes(sum_of(i, j)), canonical_code_bytes(sum_of(i, j)));
}

// The distinct kernels of a list, and their key: the algorithm and the
// codegen options count, the names do not.
TEST(CanonicalCode, DistinctKernelsGroupCopies) {
  using namespace loop;
  auto copy = [](const char* name) {
    Buf p = make_buf("a", DType::F32), q = make_buf("b", DType::F32);
    Expr i = loop::Var::make(i64_t(), "i");
    return Kernel{name, {p, q}, {},
                  For::make(i, make_int(0), make_int(3), ForKind::Serial,
                            Store::make(q, i, Load::make(p, i)))};
  };
  codegen::CodegenOptions o;
  compile_detail::DistinctKernels d =
      compile_detail::distinct_kernels({copy("k0"), copy("k1"), copy("k2")}, {}, o);
  EXPECT_EQ(d.kernels, std::vector<int>{0});
  EXPECT_EQ(d.code_of, (std::vector<int>{0, 0, 0}));
  codegen::CodegenOptions fast = o;
  fast.fast_math = true;
  EXPECT_NE(compile_detail::module_key({copy("k0")}, o), compile_detail::module_key({copy("k0")}, fast));
  EXPECT_EQ(compile_detail::module_key({copy("k0")}, o), compile_detail::module_key({copy("k9")}, o));
  const std::string code = canonical_code_bytes(copy("k0"));
  EXPECT_NE(compile_detail::kernel_key(code, o, ""), compile_detail::kernel_key(code, o, "gemm"));
}

class CompileDedup : public FreshCachesTest {};

TEST_F(CompileDedup, IdenticalLayersShareOneCompiledKernel) {
  for (int64_t rows : {1, 7, 33}) {
    SCOPED_TRACE("rows " + std::to_string(rows));
    const int64_t width = 19;
    std::vector<Tensor> in = stack_inputs(rows, width);
    CompileOptions o;
    o.disk_cache = false;
    Function one = stack(1, rows, width), deep = stack(6, rows, width);
    CompiledFunction c1 = compile(one, o), c6 = compile(deep, o);
    const int distinct1 = c1.num_kernels() - shared_kernels(c1);
    const int distinct6 = c6.num_kernels() - shared_kernels(c6);
    EXPECT_GT(c6.num_kernels(), 5 * c1.num_kernels() - 1);
    // The first layer reads the graph input; the others are one code.
    EXPECT_LE(distinct6, 2 * distinct1) << c6.explain();
    EXPECT_GT(shared_kernels(c6), 0) << c6.explain();
    expect_close(c6(in)[0], deep.run_interpreter(in)[0]);
    expect_close(c1(in)[0], one.run_interpreter(in)[0]);
  }
}

TEST_F(CompileDedup, EachDistinctKernelIsOneDiskEntry) {
  const int64_t rows = 5, width = 23;
  std::vector<Tensor> in = stack_inputs(rows, width);
  Function three = stack(3, rows, width), eight = stack(8, rows, width);
  CompiledFunction c3 = compile(three);
  const int distinct3 = c3.num_kernels() - shared_kernels(c3);
  runtime::DiskCacheStats s = runtime::DiskCache::global().stats();
  EXPECT_EQ(s.writes, uint64_t(distinct3));
  EXPECT_EQ(int(entries_of(dir_.path()).size()), distinct3);
  // The deeper stack has the same distinct kernels: all read from the disk.
  runtime::KernelCache::global().clear();
  runtime::DiskCache::global().reset_stats();
  CompiledFunction c8 = compile(eight);
  s = runtime::DiskCache::global().stats();
  EXPECT_EQ(s.writes, 0u);
  EXPECT_EQ(s.hits, uint64_t(distinct3));
  EXPECT_EQ(c8.num_kernels() - shared_kernels(c8), distinct3);
  expect_close(c8(in)[0], eight.run_interpreter(in)[0]);
  expect_close(c3(in)[0], three.run_interpreter(in)[0]);
}

TEST_F(CompileDedup, ParallelCodegenMakesTheSameBytesAsSerial) {
  const int64_t rows = 7, width = 31;
  std::vector<Tensor> in = stack_inputs(rows, width);
  Function f = stack(4, rows, width);
  CompileOptions o;
  o.use_cache = false;
  std::map<std::string, std::string> serial, parallel;
  Tensor serial_out, parallel_out;
  {
    TempDir d;
    ScopedEnv dir("KILN_CACHE_DIR", d.path().c_str());
    ScopedEnv threads("KILN_COMPILE_THREADS", "1");
    serial_out = compile(f, o)(in)[0];
    serial = entries_of(d.path());
  }
  {
    TempDir d;
    ScopedEnv dir("KILN_CACHE_DIR", d.path().c_str());
    ScopedEnv threads("KILN_COMPILE_THREADS", "4");
    parallel_out = compile(f, o)(in)[0];
    parallel = entries_of(d.path());
  }
  EXPECT_GT(serial.size(), 1u);
  EXPECT_EQ(serial, parallel);  // same names (keys) and bytes
  EXPECT_TRUE(serial_out.equal(parallel_out));
  expect_close(parallel_out, f.run_interpreter(in)[0]);
}

TEST_F(CompileDedup, EmptyAndZeroSizedStacksStillRun) {
  const int64_t width = 3;
  std::vector<Tensor> in = stack_inputs(0, width);
  Function f = stack(3, 0, width);
  CompiledFunction c = compile(f);
  EXPECT_EQ(c(in)[0].numel(), 0);
}

}  // namespace
}  // namespace kiln::test
