// runtime::Executable and runtime::KernelCache with hand-written C++ kernels
// (no compiler involved): size expressions, input checks and their messages,
// scalar recipes (symbols, strides, scalar inputs), the liveness-based buffer
// plan, zero-size skipping, and the cache's hit/miss/concurrency behaviour.
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <thread>

#include "kiln/error.h"
#include "runtime/allocator.h"
#include "runtime/executable.h"
#include "runtime/kernel_cache.h"

namespace kiln::runtime {
namespace {

using Op = SizeExpr::Op;

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "<no error>";
}

// --- kernels (the calling convention of compiled code) ---------------------------------

// y[i] = x[i * s0] + 1 for i < n; scalars: n, s0.
void add_one_strided(void* const* b, const int64_t* s) {
  const float* x = static_cast<const float*>(b[0]);
  float* y = static_cast<float*>(b[1]);
  for (int64_t i = 0; i < s[0]; ++i) y[i] = x[i * s[1]] + 1.0f;
}
// y[i] = x[i] * 2; scalars: n.
void times_two(void* const* b, const int64_t* s) {
  const float* x = static_cast<const float*>(b[0]);
  float* y = static_cast<float*>(b[1]);
  for (int64_t i = 0; i < s[0]; ++i) y[i] = x[i] * 2.0f;
}
// y[i] = x[i] * a (a: f32 scalar in the low bits); scalars: n, a.
void scale(void* const* b, const int64_t* s) {
  float a;
  std::memcpy(&a, &s[1], sizeof a);
  const float* x = static_cast<const float*>(b[0]);
  float* y = static_cast<float*>(b[1]);
  for (int64_t i = 0; i < s[0]; ++i) y[i] = x[i] * a;
}
std::atomic<int> g_calls{0};
void count_calls(void* const*, const int64_t*) {
  ++g_calls;
}

InputSpec tensor_input(std::string name, std::vector<InputSpec::DimSpec> dims,
                       DType t = DType::F32) {
  InputSpec in;
  in.name = std::move(name);
  in.dtype = t;
  in.dims = std::move(dims);
  in.type_str = std::string(dtype_name(t)) + "[...]";
  return in;
}

Slot planned(std::string name, std::vector<SizeExpr> shape, DType t = DType::F32) {
  Slot s;
  s.name = std::move(name);
  s.dtype = t;
  s.shape = std::move(shape);
  return s;
}

Tensor iota(int64_t n) {
  return Tensor::arange(0, double(n), 1, DType::F32);
}

// --- SizeExpr --------------------------------------------------------------------------

TEST(SizeExpr, EvaluatesFloorDivModMinMaxAndSelect) {
  std::vector<int64_t> sym{-7, 2};
  std::vector<std::string> names{"N", "M"};
  SizeExpr div{{{Op::Symbol, 0}, {Op::Symbol, 1}, {Op::Div, 0}}};
  EXPECT_EQ(div.eval(sym), -4);  // floor, not truncation
  SizeExpr mod{{{Op::Symbol, 0}, {Op::Symbol, 1}, {Op::Mod, 0}}};
  EXPECT_EQ(mod.eval(sym), 1);
  SizeExpr by_zero{{{Op::Symbol, 0}, {Op::Const, 0}, {Op::Div, 0}}};
  EXPECT_EQ(by_zero.eval(sym), 0);
  SizeExpr mx{{{Op::Symbol, 0}, {Op::Const, 3}, {Op::Max, 0}}};
  EXPECT_EQ(mx.eval(sym), 3);
  EXPECT_EQ(mx.str(names), "max(N, 3)");
  // select(N < M, N * M, M - 1)
  SizeExpr sel{{{Op::Symbol, 0},
                {Op::Symbol, 1},
                {Op::LT, 0},
                {Op::Symbol, 0},
                {Op::Symbol, 1},
                {Op::Mul, 0},
                {Op::Symbol, 1},
                {Op::Const, 1},
                {Op::Sub, 0},
                {Op::Select, 0}}};
  EXPECT_EQ(sel.eval(sym), -14);
  EXPECT_EQ(sel.str(names), "select((N < M), (N * M), (M - 1))");
  EXPECT_NO_THROW(sel.validate(2));
  EXPECT_THROW(sel.validate(1), InternalError);
  SizeExpr bad{{{Op::Const, 1}, {Op::Add, 0}}};
  EXPECT_THROW(bad.validate(0), InternalError);
}

// --- inputs ----------------------------------------------------------------------------

// x: f32[N], y: f32[N, 3] -> out = x + 1 (through a stride recipe).
Executable two_input_exec() {
  Executable e("compiled @f");
  int n = e.add_symbol("N");
  e.add_input(tensor_input("x", {{0, n}}));
  e.add_input(tensor_input("y", {{0, n}, {3, -1}}));
  int out = e.add_slot(planned("out", {SizeExpr::symbol(n)}));
  Launch l;
  l.name = "k";
  l.kernel = host_kernel(add_one_strided);
  l.args = {{0, false, false}, {out, true, true}};
  l.scalars = {{ScalarRecipe::Kind::Symbol, n}, {ScalarRecipe::Kind::Stride, 0, 0}};
  e.add_launch(l);
  e.set_outputs({out});
  e.finalize();
  return e;
}

TEST(Executable, ChecksInputsWithMessagesNamingThem) {
  Executable e = two_input_exec();
  EXPECT_EQ(error_of([&] { e.run({iota(4)}); }),
            "compiled @f: missing input 'y' (1 given, 2 expected)");
  EXPECT_EQ(error_of([&] {
              e.run({iota(4), Tensor::zeros({4, 3}), iota(1)});
            }),
            "compiled @f: too many inputs (3 given, 2 expected)");
  EXPECT_EQ(error_of([&] {
              e.run({iota(4).to(DType::F64), Tensor::zeros({4, 3})});
            }),
            "compiled @f: input 'x': expected dtype f32 (f32[...]), got f64");
  EXPECT_EQ(error_of([&] {
              e.run({iota(4), Tensor::zeros({4})});
            }),
            "compiled @f: input 'y': expected rank 2 (f32[...]), got rank 1 (shape [4])");
  EXPECT_EQ(error_of([&] {
              e.run({iota(4), Tensor::zeros({4, 2})});
            }),
            "compiled @f: input 'y': expected shape [N, 3], got [4, 2] (dim 1 differs)");
  EXPECT_EQ(error_of([&] {
              e.run({iota(4), Tensor::zeros({5, 3})});
            }),
            "compiled @f: dim N bound to 4 by input 'x' but 5 by input 'y'");
  EXPECT_EQ(error_of([&] {
              e.run({Tensor(), Tensor::zeros({4, 3})});
            }),
            "compiled @f: input 'x' expects f32[...], got an undefined tensor");
}

TEST(Executable, StrideRecipeReadsNonContiguousInputInPlace) {
  Executable e = two_input_exec();
  // x = every other element of [0..13]: 0, 2, 4, ..., 12 (7 elements).
  Tensor base = iota(14);
  Tensor x = base.view_as_strided({7}, {2}, 0);
  std::vector<Tensor> out = e.run({x, Tensor::zeros({7, 3})});
  ASSERT_EQ(out.size(), 1u);
  ASSERT_EQ(out[0].sizes(), (Shape{7}));
  for (int64_t i = 0; i < 7; ++i) EXPECT_EQ(out[0].data<float>()[i], float(2 * i + 1));
}

TEST(Executable, PackedArgumentGetsAContiguousCopy) {
  Executable e("compiled @p");
  int n = e.add_symbol("N");
  e.add_input(tensor_input("x", {{0, n}}));
  int out = e.add_slot(planned("out", {SizeExpr::symbol(n)}));
  Launch l;
  l.name = "k";
  l.kernel = host_kernel(times_two);
  l.args = {{0, true, false}, {out, true, true}};
  l.scalars = {{ScalarRecipe::Kind::Symbol, n}};
  e.add_launch(l);
  e.set_outputs({out});
  e.finalize();
  Tensor x = iota(10).view_as_strided({5}, {2}, 1);  // 1, 3, 5, 7, 9
  Tensor y = e.run({x})[0];
  for (int64_t i = 0; i < 5; ++i) EXPECT_EQ(y.data<float>()[i], float(2 * (2 * i + 1)));
}

TEST(Executable, ScalarInputIsPackedAsTheKernelExpects) {
  Executable e("compiled @s");
  int n = e.add_symbol("N");
  e.add_input(tensor_input("x", {{0, n}}));
  InputSpec a;
  a.name = "a";
  a.kind = InputSpec::Kind::Float;
  a.dtype = DType::F64;
  a.type_str = "float";
  e.add_input(a);
  int out = e.add_slot(planned("out", {SizeExpr::symbol(n)}));
  Launch l;
  l.name = "scale";
  l.kernel = host_kernel(scale);
  l.args = {{0, true, false}, {out, true, true}};
  l.scalars = {{ScalarRecipe::Kind::Symbol, n}, {ScalarRecipe::Kind::InputValue, 1, 0, DType::F32}};
  e.add_launch(l);
  e.set_outputs({out, 1});
  e.finalize();
  std::vector<Tensor> r = e.run({iota(3), Tensor::scalar(2.5, DType::F64)});
  EXPECT_EQ(r[0].data<float>()[2], 5.0f);
  EXPECT_EQ(r[1].item(), 2.5);  // an input returned as an output is the input itself
  EXPECT_EQ(error_of([&] {
              e.run({iota(3), Tensor::scalar(1, DType::Bool)});
            }),
            "compiled @s: input 'a' is a scalar (float), got dtype bool");
  EXPECT_EQ(error_of([&] {
              e.run({iota(3), iota(2)});
            }),
            "compiled @s: input 'a' is a scalar (float) and takes a 0-dim tensor, got shape [2]");
}

// --- buffer plan -----------------------------------------------------------------------

// x -> a = x*2 -> b = a*2 -> c = b*2 -> d = c*2: a dies after launch 1, so c can take its memory.
Executable chain(int length) {
  Executable e("compiled @chain");
  int n = e.add_symbol("N");
  e.add_input(tensor_input("x", {{0, n}}));
  int prev = 0;
  for (int k = 0; k < length; ++k) {
    int s = e.add_slot(planned("t" + std::to_string(k), {SizeExpr::symbol(n)}));
    Launch l;
    l.name = "k" + std::to_string(k);
    l.kernel = host_kernel(times_two);
    l.args = {{prev, true, false}, {s, true, true}};
    l.scalars = {{ScalarRecipe::Kind::Symbol, n}};
    e.add_launch(l);
    prev = s;
  }
  e.set_outputs({prev});
  e.finalize();
  return e;
}

TEST(Executable, DeadIntermediatesAreReusedByLiveness) {
  Executable e = chain(4);
  ExecutableStats st;
  for (int64_t n : {1, 7, 1023}) {
    Tensor y = e.run({iota(n)}, &st)[0];
    ASSERT_EQ(y.sizes(), (Shape{n}));
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(y.data<float>()[i], float(16 * i));
    EXPECT_EQ(st.launches, 4);
    // t0, t1 fresh; t2 takes t0's memory (dead after launch 1); t3 is the output and
    // takes t1's (dead after launch 2): outputs may take dead memory, they are never freed.
    EXPECT_EQ(st.allocated_buffers, 2);
    EXPECT_EQ(st.reused_buffers, 2);
  }
  EXPECT_NE(e.describe().find("slot 1 t0: f32[N] live 0..1"), std::string::npos) << e.describe();
  EXPECT_NE(e.describe().find("slot 4 t3: f32[N] live 3..end"), std::string::npos);
}

TEST(Executable, SecondCallAsksTheOsForNothing) {
  Executable e = chain(3);
  e.run({iota(1000)});  // warms the caching allocator
  uint64_t before = CachingAllocator::global().stats().os_allocations;
  for (int i = 0; i < 3; ++i) e.run({iota(1000)});
  EXPECT_EQ(CachingAllocator::global().stats().os_allocations, before);
}

TEST(Executable, ZeroSizeOutputsSkipKernels) {
  g_calls = 0;
  Executable e("compiled @z");
  int n = e.add_symbol("N");
  e.add_input(tensor_input("x", {{0, n}}));
  int out = e.add_slot(planned("out", {SizeExpr::symbol(n), SizeExpr::constant(3)}));
  Launch l;
  l.name = "k";
  l.kernel = host_kernel(count_calls);
  l.args = {{0, true, false}, {out, true, true}};
  e.add_launch(l);
  e.set_outputs({out});
  e.finalize();
  ExecutableStats st;
  Tensor y = e.run({iota(0)}, &st)[0];
  EXPECT_EQ(y.sizes(), (Shape{0, 3}));
  EXPECT_EQ(g_calls.load(), 0);
  EXPECT_EQ(st.skipped, 1);
  e.run({iota(2)}, &st);
  EXPECT_EQ(g_calls.load(), 1);
}

TEST(Executable, GenericLauncherSeesTensors) {
  Executable e("compiled @g");
  e.add_input(tensor_input("x", {{4, -1}}, DType::I32));
  int out = e.add_slot(planned("out", {SizeExpr::constant(4)}, DType::I32));
  Launch l;
  l.name = "neg";
  l.kernel =
      generic_kernel([](std::span<const Tensor> b, std::span<const int64_t>, const LaunchConfig&) {
        for (int64_t i = 0; i < 4; ++i) b[1].data<int32_t>()[i] = -b[0].data<int32_t>()[i];
      });
  l.args = {{0, true, false}, {out, true, true}};
  e.add_launch(l);
  e.set_outputs({out});
  e.finalize();
  Tensor y = e.run({Tensor::arange(0, 4, 1, DType::I32)})[0];
  EXPECT_EQ(y.data<int32_t>()[3], -3);
}

TEST(Executable, ConcurrentRunsAreIndependent) {
  Executable e = chain(3);
  std::vector<std::thread> ts;
  std::atomic<int> bad{0};
  for (int t = 0; t < 4; ++t) {
    ts.emplace_back([&, t] {
      for (int r = 0; r < 50; ++r) {
        int64_t n = 100 + t * 37 + r;
        Tensor y = e.run({iota(n)})[0];
        for (int64_t i = 0; i < n; ++i) {
          if (y.data<float>()[i] != float(8 * i)) ++bad;
        }
      }
    });
  }
  for (auto& t : ts) t.join();
  EXPECT_EQ(bad.load(), 0);
}

TEST(Executable, FinalizeRejectsInconsistentPlans) {
  Executable e("compiled @bad");
  e.add_input(tensor_input("x", {{4, -1}}));
  int s = e.add_slot(planned("t", {SizeExpr::constant(4)}));
  Launch l;
  l.name = "reads_unwritten";
  l.kernel = host_kernel(times_two);
  l.args = {{s, true, false}, {0, true, true}};
  e.add_launch(l);
  EXPECT_THROW(e.finalize(), InternalError);
}

// --- KernelCache -----------------------------------------------------------------------

TEST(KeyHasher, DistinguishesContentAndBoundaries) {
  CacheKey a = KeyHasher().add("ab").add("c").key();
  CacheKey b = KeyHasher().add("a").add("bc").key();
  CacheKey c = KeyHasher().add("ab").add("c").key();
  EXPECT_NE(a, b);
  EXPECT_EQ(a, c);
  EXPECT_NE(KeyHasher().add(uint64_t(1)).key(), KeyHasher().add(uint64_t(2)).key());
  EXPECT_EQ(a.str().size(), 32u);
}

TEST(KernelCache, HitsMissesAndFailedBuilds) {
  KernelCache cache(8);
  int builds = 0;
  auto make = [&] {
    ++builds;
    return std::make_shared<int>(42);
  };
  CacheKey k = KeyHasher().add("k").key();
  EXPECT_EQ(*cache.get_or_build_as<int>(k, make), 42);
  EXPECT_EQ(*cache.get_or_build_as<int>(k, make), 42);
  EXPECT_EQ(builds, 1);
  KernelCacheStats s = cache.stats();
  EXPECT_EQ(s.hits, 1u);
  EXPECT_EQ(s.misses, 1u);
  EXPECT_EQ(s.entries, 1u);

  CacheKey f = KeyHasher().add("fails").key();
  auto fail = []() -> std::shared_ptr<int> { throw Error("boom"); };
  EXPECT_THROW(cache.get_or_build_as<int>(f, fail), Error);
  EXPECT_FALSE(cache.contains(f));  // not cached: the next request retries
  EXPECT_EQ(*cache.get_or_build_as<int>(f, make), 42);
}

TEST(KernelCache, EvictsLeastRecentlyUsed) {
  KernelCache cache(2);
  auto make = [] { return std::make_shared<int>(1); };
  CacheKey a = KeyHasher().add("a").key(), b = KeyHasher().add("b").key(),
           c = KeyHasher().add("c").key();
  cache.get_or_build_as<int>(a, make);
  cache.get_or_build_as<int>(b, make);
  cache.get_or_build_as<int>(a, make);  // a is now the most recent
  cache.get_or_build_as<int>(c, make);
  EXPECT_TRUE(cache.contains(a));
  EXPECT_FALSE(cache.contains(b));
  EXPECT_TRUE(cache.contains(c));
  EXPECT_EQ(cache.stats().evictions, 1u);
}

TEST(KernelCache, ConcurrentRequestsBuildOnce) {
  KernelCache cache;
  std::atomic<int> builds{0};
  CacheKey k = KeyHasher().add("shared").key();
  std::vector<std::thread> ts;
  std::vector<int*> seen(8);
  for (int t = 0; t < 8; ++t) {
    ts.emplace_back([&, t] {
      seen[size_t(t)] =
          cache
              .get_or_build_as<int>(k,
                                    [&] {
                                      ++builds;
                                      std::this_thread::sleep_for(std::chrono::milliseconds(50));
                                      return std::make_shared<int>(7);
                                    })
              .get();
    });
  }
  for (auto& t : ts) t.join();
  EXPECT_EQ(builds.load(), 1);
  for (int* p : seen) EXPECT_EQ(p, seen[0]);
}

}  // namespace
}  // namespace kiln::runtime
