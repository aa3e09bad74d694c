// Kiln from several threads and processes at once, checked for wrong values
// here and for data races by the ThreadSanitizer build (`scripts/test --tsan`
// builds and runs only this test; tests/tsan.supp lists what it ignores):
//   - one compiled function called from 8 threads, on every compiled backend
//     (llvm when built with it, loop-eval, loop-eval on sim:0);
//   - 8 threads compiling (compile and compile_async) graphs that partly share
//     keys, through the in-memory and the disk cache of one directory;
//   - two processes (this binary run again with --child-compile DIR) of 8
//     threads each compiling into one cache directory;
//   - 8 threads autotuning matmuls that share tuning-cache entries;
//   - the thread pool's parallel_for with concurrent callers.
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/wait.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "cache_test_util.h"
#include "kernel_cache_fixture.h"
#include "ir/graph.h"
#include "ir/interpreter.h"
#include "kiln/compile.h"
#include "lower_test_util.h"
#include "runtime/disk_cache.h"
#include "runtime/kernel_cache.h"
#include "runtime/thread_pool.h"
#include "runtime/tuning_cache.h"

extern char** environ;

namespace kiln::test {
namespace {

using ir::Dim;
using Ints = std::vector<int64_t>;
namespace fs = std::filesystem;

constexpr int kThreads = 8;

// y = relu(x * w + c), s = sum(y, dim 1): x f32[N, 4], w f32[4]. Graphs with
// different `c` compile to different kernels; equal `c`, to one cache key.
std::unique_ptr<ir::Graph> mlp_like(double c = 1.0) {
  auto g = std::make_unique<ir::Graph>("f");
  ir::Value* x = g->add_input("x", ir::Type::tensor(DType::F32, {Dim::sym("N"), 4}));
  ir::Value* w = g->add_input("w", ir::Type::tensor(DType::F32, {4}));
  ir::Value* m = g->apply1("mul", {x, w});
  ir::Value* a = g->apply1("add", {m, g->constant(c)});
  ir::Value* y = g->apply1("relu", {a});
  ir::Value* s = g->apply1("sum", {y}, {{"dim", Ints{1}}});
  g->set_outputs({y, s});
  return g;
}

// True when `f` gives the interpreter's values for inputs of `n` rows; prints why not.
bool matches_interpreter(const ir::Graph& g, const CompiledFunction& f, int64_t n, uint64_t seed) {
  std::vector<Tensor> in{random_tensor({n, 4}, DType::F32, seed),
                         random_tensor({4}, DType::F32, seed + 1)};
  std::vector<Tensor> want = ir::interpret(g, in);
  std::vector<Tensor> got = f(in);
  if (got.size() != want.size()) return false;
  for (size_t i = 0; i < got.size(); ++i) {
    auto r = tensors_close(got[i], want[i], 1e-5, 1e-5);
    if (!r) {
      std::fprintf(stderr, "output %zu (n = %lld): %s\n", i, static_cast<long long>(n),
                   r.message());
      return false;
    }
  }
  return true;
}

// Runs body(t) on kThreads threads at once (released together) and joins them.
void on_threads(const std::function<void(int)>& body) {
  std::atomic<bool> go{false};
  std::vector<std::thread> ts;
  for (int t = 0; t < kThreads; ++t) {
    ts.emplace_back([&, t] {
      while (!go.load()) std::this_thread::yield();
      body(t);
    });
  }
  go = true;
  for (auto& t : ts) t.join();
}

std::vector<std::string> compiled_configs() {
  std::vector<std::string> c;
#ifdef KILN_WITH_LLVM
  c.push_back("llvm");
#endif
  c.push_back("loop-eval");
  c.push_back("sim");
  return c;
}

CompileOptions options_for(const std::string& config) {
  CompileOptions o;
  o.backend = config == "sim" ? "loop-eval" : config;
  if (config == "sim") o.device = Device::sim(0);
  return o;
}

class ConcurrentCalls : public ::testing::TestWithParam<std::string> {};

TEST_P(ConcurrentCalls, OneFunctionFromEightThreads) {
  auto g = mlp_like();
  CompiledFunction f = compile(*g, options_for(GetParam()));
  std::atomic<int> bad{0};
  on_threads([&](int t) {
    for (int r = 0; r < 6; ++r) {
      // Sizes differ per call: symbolic dims are bound per call, not per
      // function. On the host the first call is big enough for parallel
      // loops (eight callers share the thread pool); the simulated GPU
      // evaluates each GPU thread's loops, too slowly for that under TSan.
      int64_t big = GetParam() == "sim" ? 64 : 20000;
      int64_t n = r == 0 ? big + t : 1 + 13 * t + r;
      if (!matches_interpreter(*g, f, n, uint64_t(100 * t + r))) ++bad;
    }
  });
  EXPECT_EQ(bad.load(), 0);
}

INSTANTIATE_TEST_SUITE_P(Backends, ConcurrentCalls, ::testing::ValuesIn(compiled_configs()),
                         [](const auto& info) {
                           std::string s = info.param;
                           for (char& ch : s) {
                             if (ch == '-') ch = '_';
                           }
                           return s;
                         });

// Compiles the four variants of mlp_like (c = 0..3) `rounds` times from
// kThreads threads, every other one through compile_async; each result is
// checked against the interpreter. Returns the number of wrong results.
int compile_from_threads(const CompileOptions& o, int rounds) {
  std::atomic<int> bad{0};
  on_threads([&](int t) {
    for (int r = 0; r < rounds; ++r) {
      double c = double((t + r) % 4);
      auto g = mlp_like(c);
      CompiledFunction f;
      if ((t + r) % 2 == 0) {
        f = compile(*g, o);
      } else {
        std::future<CompiledFunction> fut = compile_async(*g, o);
        f = fut.get();
      }
      if (!matches_interpreter(*g, f, 3 + t, uint64_t(t * 10 + r))) ++bad;
    }
  });
  return bad.load();
}

class ConcurrentCompile : public FreshCachesTest {};

TEST_F(ConcurrentCompile, EightThreadsShareTheMemoryAndDiskCaches) {
  for (const std::string& config : compiled_configs()) {
    SCOPED_TRACE(config);
    EXPECT_EQ(compile_from_threads(options_for(config), 4), 0);
  }
#ifdef KILN_WITH_LLVM
  // The four llvm modules were built once each (the memory cache makes the
  // others wait) and stored; a fresh memory cache reads them back from disk,
  // again from eight threads at once.
  runtime::DiskCache& disk = runtime::DiskCache::global();
  EXPECT_EQ(disk.stats().corrupt, 0u);
  EXPECT_EQ(disk.stats().write_failures, 0u);
  EXPECT_GE(disk.stats().writes, 4u);
  runtime::KernelCache::global().clear();
  disk.reset_stats();
  EXPECT_EQ(compile_from_threads(options_for("llvm"), 2), 0);
  EXPECT_GE(disk.stats().hits, 4u);
  EXPECT_EQ(disk.stats().corrupt, 0u);
  EXPECT_EQ(disk.stats().writes, 0u);
#endif
}

TEST_F(ConcurrentCompile, EightThreadsWithoutTheMemoryCacheRaceOnDisk) {
  // Every compile goes to the disk: concurrent loads and stores of one entry.
  CompileOptions o;
  o.use_cache = false;
  EXPECT_EQ(compile_from_threads(o, 3), 0);
  EXPECT_EQ(runtime::DiskCache::global().stats().corrupt, 0u);
  EXPECT_EQ(runtime::DiskCache::global().stats().write_failures, 0u);
}

// The child of TwoProcesses: kThreads threads compiling without the memory
// cache into the directory the parent gave (KILN_CACHE_DIR). Exit status 0
// when every result was right and no entry was corrupt.
int child_compile(const char* dir) {
  ::setenv("KILN_CACHE_DIR", dir, 1);
  ::unsetenv("KILN_CACHE");
  CompileOptions o;
  o.use_cache = false;
  int bad = compile_from_threads(o, 4);
  runtime::DiskCacheStats s = runtime::DiskCache::global().stats();
  std::fprintf(stderr, "child %d: %d wrong, %llu corrupt, %llu write failures\n", int(::getpid()),
               bad, static_cast<unsigned long long>(s.corrupt),
               static_cast<unsigned long long>(s.write_failures));
  return bad == 0 && s.corrupt == 0 && s.write_failures == 0 ? 0 : 1;
}

pid_t spawn_child(const std::string& dir) {
  std::string self = fs::read_symlink("/proc/self/exe").string();
  std::string flag = "--child-compile";
  std::vector<char*> argv{self.data(), flag.data(), const_cast<char*>(dir.c_str()), nullptr};
  pid_t pid = -1;
  int rc = ::posix_spawn(&pid, self.c_str(), nullptr, nullptr, argv.data(), environ);
  EXPECT_EQ(rc, 0) << std::strerror(rc);
  return rc == 0 ? pid : -1;
}

TEST_F(ConcurrentCompile, TwoProcessesOfEightThreadsShareOneCacheDirectory) {
  pid_t a = spawn_child(dir_.path());
  pid_t b = spawn_child(dir_.path());
  ASSERT_GT(a, 0);
  ASSERT_GT(b, 0);
  for (pid_t p : {a, b}) {
    int status = 0;
    ASSERT_EQ(::waitpid(p, &status, 0), p);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
  }
  // What they left is whole: this process reads every entry back.
  int entries = 0, others = 0;
  for (const auto& e : fs::directory_iterator(dir_.path())) {
    if (e.is_regular_file()) (e.path().extension() == ".kc" ? entries : others)++;
  }
  EXPECT_EQ(others, 0) << "temporary files left in " << dir_.path();
#ifdef KILN_WITH_LLVM
  EXPECT_GE(entries, 4);
  runtime::DiskCache::global().reset_stats();
  CompileOptions o;
  o.use_cache = false;
  EXPECT_EQ(compile_from_threads(o, 1), 0);
  EXPECT_EQ(runtime::DiskCache::global().stats().hits, uint64_t(kThreads));
  EXPECT_EQ(runtime::DiskCache::global().stats().corrupt, 0u);
#endif
}

std::unique_ptr<ir::Graph> matmul_graph(int64_t m, int64_t k, int64_t n) {
  auto g = std::make_unique<ir::Graph>("mm");
  ir::Value* x = g->add_input("x", ir::Type::tensor(DType::F32, {m, k}));
  ir::Value* w = g->add_input("w", ir::Type::tensor(DType::F32, {k, n}));
  g->set_outputs({g->apply1("matmul", {x, w})});
  return g;
}

TEST_F(ConcurrentCompile, EightThreadsAutotuneWithOneTuningCache) {
  runtime::TuningCache::global().clear_memory();
  runtime::TuningCache::global().reset_stats();
  std::atomic<int> bad{0};
  on_threads([&](int t) {
    // Two shapes: four threads tune each, into the same tuning entry.
    int64_t m = t % 2 == 0 ? 9 : 12;
    auto g = matmul_graph(m, 7, 5);
    CompileOptions o;
    o.autotune = true;
    o.autotune_budget_s = 60;  // more than any of these small nodes spends
    o.use_cache = false;
    CompiledFunction f = compile(*g, o);
    std::string why = f.explain();
    if (why.find("autotuned") == std::string::npos &&
        why.find("tuning cache: ") == std::string::npos) {
      std::fprintf(stderr, "thread %d: not tuned:\n%s\n", t, why.c_str());
      ++bad;
    }
    std::vector<Tensor> in{random_tensor({m, 7}, DType::F32, uint64_t(t)),
                           random_tensor({7, 5}, DType::F32, uint64_t(t + 50))};
    if (!tensors_close(f(in)[0], ir::interpret(*g, in)[0], 1e-4, 1e-4)) ++bad;
  });
  EXPECT_EQ(bad.load(), 0);
  runtime::TuningCacheStats s = runtime::TuningCache::global().stats();
  EXPECT_GE(s.stores, 2u);
  EXPECT_EQ(s.corrupt, 0u);
  // Both records are on disk and whole: a fresh memory layer reads them back.
  runtime::TuningCache::global().clear_memory();
  runtime::TuningCache::global().reset_stats();
  for (int64_t m : {9, 12}) {
    auto g = matmul_graph(m, 7, 5);
    CompileOptions o;
    o.autotune = true;
    o.use_cache = false;
    CompiledFunction f = compile(*g, o);
    EXPECT_NE(f.explain().find("tuning cache: "), std::string::npos) << f.explain();
  }
  EXPECT_EQ(runtime::TuningCache::global().stats().disk_hits, 2u);
  runtime::TuningCache::global().clear_memory();
}

TEST(ParallelFor, ConcurrentCallersTakeTurns) {
  // Callers of different sizes (so different chunk sizes) one after another
  // on the pool: each index of each call is run exactly once. The pool once
  // let a worker still leaving one job take a chunk of the next (run twice,
  // and the caller returning early); TSan reported its reads of the job.
  std::atomic<int64_t> total{0}, bad{0};
  on_threads([&](int t) {
    for (int r = 0; r < 50; ++r) {
      int64_t n = 1000 + 37 * t + r;
      std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
      parallel_for(0, n, 10, [&](int64_t b, int64_t e) {
        total += e - b;
        for (int64_t i = b; i < e; ++i) hits[size_t(i)]++;
      });
      for (const std::atomic<int>& h : hits) {
        if (h.load() != 1) ++bad;
      }
    }
  });
  int64_t want = 0;
  for (int t = 0; t < kThreads; ++t) {
    for (int r = 0; r < 50; ++r) want += 1000 + 37 * t + r;
  }
  EXPECT_EQ(total.load(), want);
  EXPECT_EQ(bad.load(), 0);
}

}  // namespace
}  // namespace kiln::test

// Not gtest_main: `--child-compile DIR` makes this binary the child process of
// TwoProcessesOfEightThreadsShareOneCacheDirectory.
int main(int argc, char** argv) {
  if (argc == 3 && std::strcmp(argv[1], "--child-compile") == 0) {
    return kiln::test::child_compile(argv[2]);
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
