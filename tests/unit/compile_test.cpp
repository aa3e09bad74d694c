// kiln::compile end to end on small graphs, for every compiled backend
// (loop-eval always, llvm when built with it, loop-eval on the sim device): values against
// ir::interpret, symbolic dims compiled once and run for several sizes, non-contiguous inputs,
// input errors, allocation reuse, compile_async, dumps and the kernel cache (calls and
// compiles from several threads: concurrency_test.cpp).
#include <gtest/gtest.h>

#include "ir/graph.h"
#include "kiln/compile.h"
#include "lower_test_util.h"
#include "op_test_util.h"
#include "runtime/allocator.h"
#include "runtime/kernel_cache.h"

namespace kiln::test {
namespace {

using ir::Dim;
using Ints = std::vector<int64_t>;

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "<no error>";
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

// y = relu(x * w + 1), s = sum(y, dim 1): x f32[N, 4], w f32[4].
std::unique_ptr<ir::Graph> mlp_like() {
  auto g = std::make_unique<ir::Graph>("f");
  ir::Value* x = g->add_input("x", ir::Type::tensor(DType::F32, {Dim::sym("N"), 4}));
  ir::Value* w = g->add_input("w", ir::Type::tensor(DType::F32, {4}));
  ir::Value* m = g->apply1("mul", {x, w});
  ir::Value* a = g->apply1("add", {m, g->constant(1.0)});
  ir::Value* y = g->apply1("relu", {a});
  ir::Value* s = g->apply1("sum", {y}, {{"dim", Ints{1}}});
  g->set_outputs({y, s});
  return g;
}

// A compiled configuration: "loop-eval" or "llvm" on the host, or "sim"
// (loop-eval on sim:0: the whole device path, inputs copied in, outputs back).
class Compile : public ::testing::TestWithParam<std::string> {
 protected:
  CompileOptions opts() const {
    CompileOptions o;
    o.backend = GetParam() == "sim" ? "loop-eval" : GetParam();
    if (GetParam() == "sim") o.device = Device::sim(0);
    return o;
  }
};

void expect_matches_interpreter(const ir::Graph& g, const CompiledFunction& f,
                                const std::vector<Tensor>& in, double rtol = 1e-5) {
  std::vector<Tensor> want = ir::interpret(g, in);
  std::vector<Tensor> got = f(in);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_TRUE(tensors_close(got[i], want[i], rtol, rtol)) << "output " << i;
  }
}

TEST_P(Compile, SymbolicDimCompiledOnceRunsForEverySize) {
  auto g = mlp_like();
  CompiledFunction f = compile(*g, opts());
  EXPECT_EQ(f.backend(), opts().backend);
  EXPECT_EQ(f.num_kernels(), 1);  // mul, add, relu and the sum over their rows fuse
  for (int64_t n : {1, 7, 1023}) {
    SCOPED_TRACE("N = " + std::to_string(n));
    expect_matches_interpreter(
        *g, f, {random_tensor({n, 4}, DType::F32, uint64_t(n)), random_tensor({4}, DType::F32, 3)});
  }
  // A hand-computed row: x = [1, -2, 3, 0], w = [2, 2, -1, 5] -> relu([3, -3, -2, 1]) = [3, 0, 0,
  // 1].
  Tensor x = make_tensor({1, 4}, {1, -2, 3, 0});
  Tensor w = make_tensor({4}, {2, 2, -1, 5});
  std::vector<Tensor> out = f({x, w});
  EXPECT_TRUE(out[0].equal(make_tensor({1, 4}, {3, 0, 0, 1})));
  EXPECT_TRUE(out[1].equal(make_tensor({1}, {4})));
}

TEST_P(Compile, ZeroRowsGiveEmptyOutputs) {
  auto g = mlp_like();
  CompiledFunction f = compile(*g, opts());
  CallStats st;
  std::vector<Tensor> out = f.run({Tensor::zeros({0, 4}), Tensor::ones({4})}, &st);
  EXPECT_EQ(out[0].sizes(), (Shape{0, 4}));
  EXPECT_EQ(out[1].sizes(), (Shape{0}));
  EXPECT_EQ(st.launches, 0);
  EXPECT_EQ(st.skipped, 1);  // the one fused kernel
}

TEST_P(Compile, NonContiguousInputsMatchTheInterpreter) {
  auto g = mlp_like();
  CompiledFunction f = compile(*g, opts());
  Tensor base = random_tensor({4, 9}, DType::F32, 5);
  Tensor xt = base.view_as_strided({9, 4}, {1, 9}, 0);  // transposed
  Tensor wb = random_tensor({8}, DType::F32, 6);
  Tensor ws = wb.view_as_strided({4}, {2}, 1);      // every other element
  Tensor wbcast = wb.view_as_strided({4}, {0}, 3);  // one element broadcast
  expect_matches_interpreter(*g, f, {xt, ws});
  expect_matches_interpreter(*g, f, {xt, wbcast});
}

// CPU kernels take an input's innermost stride to be 1: a view with outer
// strides only (a slice, a batch view) is read in place, one whose innermost
// stride is not 1 is packed once per call, however many kernels read it.
TEST_P(Compile, InputViewsArePackedOnlyWhenTheirInnermostStrideIsNot1) {
  auto g = std::make_unique<ir::Graph>("two_readers");
  ir::Value* x =
      g->add_input("x", ir::Type::tensor(DType::F32, {Dim::sym("N"), Dim::sym("M")}));
  g->set_outputs({g->apply1("exp", {x}), g->apply1("neg", {x})});
  CompileOptions o = opts();
  o.fuse = false;  // two kernels read x
  CompiledFunction f = compile(*g, o);
  Tensor base = random_tensor({9, 8}, DType::F32, 7);
  const bool host = o.device.is_cpu();
  struct Case {
    const char* what;
    Tensor view;
    int host_copies;
  };
  const Case cases[] = {
      {"packed", base, 0},
      {"a column slice", base.view_as_strided({9, 5}, {8, 1}, 2), 0},
      {"every other row", base.view_as_strided({4, 8}, {16, 1}, 8), 0},
      {"a transpose", base.view_as_strided({8, 9}, {1, 8}, 0), 1},
      {"every other column", base.view_as_strided({9, 4}, {8, 2}, 1), 1},
      {"a broadcast row", base.view_as_strided({3, 8}, {0, 1}, 16), 0},
      {"a broadcast column", base.view_as_strided({9, 6}, {8, 0}, 0), 1},
      {"a strided column of width 1", base.view_as_strided({9, 1}, {8, 3}, 0), 0},
      {"an empty transpose", base.view_as_strided({0, 9}, {1, 8}, 0), 0},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    CallStats st;
    std::vector<Tensor> out = f.run({c.view}, &st);
    std::vector<Tensor> want = ir::interpret(*g, {c.view});
    ASSERT_EQ(out.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) {
      EXPECT_TRUE(tensors_close(out[i], want[i], 1e-5, 1e-5)) << "output " << i;
    }
    if (host) {
      EXPECT_EQ(st.copies, c.host_copies);
      EXPECT_EQ(st.copied_bytes, c.host_copies * c.view.numel() * 4);
    }
  }
}

TEST_P(Compile, BadInputsGiveMessagesNamingThem) {
  auto g = mlp_like();
  CompiledFunction f = compile(*g, opts());
  EXPECT_EQ(error_of([&] {
              f({Tensor::zeros({2, 4})});
            }),
            "compiled @f: missing input 'w' (1 given, 2 expected)");
  EXPECT_EQ(error_of([&] {
              f({Tensor::zeros({2, 4}), Tensor::zeros({4}), Tensor::zeros({4})});
            }),
            "compiled @f: too many inputs (3 given, 2 expected)");
  EXPECT_EQ(error_of([&] {
              f({Tensor::zeros({2, 4}, DType::F64), Tensor::zeros({4})});
            }),
            "compiled @f: input 'x': expected dtype f32 (f32[N, 4]), got f64");
  EXPECT_EQ(error_of([&] {
              f({Tensor::zeros({8}), Tensor::zeros({4})});
            }),
            "compiled @f: input 'x': expected rank 2 (f32[N, 4]), got rank 1 (shape [8])");
  EXPECT_EQ(error_of([&] {
              f({Tensor::zeros({2, 5}), Tensor::zeros({4})});
            }),
            "compiled @f: input 'x': expected shape [N, 4], got [2, 5] (dim 1 differs)");
}

TEST_P(Compile, SymbolBoundTwiceMustAgree) {
  auto g = std::make_unique<ir::Graph>("two");
  ir::Value* a = g->add_input("a", ir::Type::tensor(DType::F32, {Dim::sym("N")}));
  ir::Value* b = g->add_input("b", ir::Type::tensor(DType::F32, {Dim::sym("N")}));
  g->set_outputs({g->apply1("sub", {a, b})});
  CompiledFunction f = compile(*g, opts());
  EXPECT_EQ(error_of([&] {
              f({Tensor::zeros({3}), Tensor::zeros({4})});
            }),
            "compiled @two: dim N bound to 3 by input 'a' but 4 by input 'b'");
  Tensor r = f({make_tensor({2}, {5, 1}), make_tensor({2}, {2, 4})})[0];
  EXPECT_TRUE(r.equal(make_tensor({2}, {3, -3})));
}

TEST_P(Compile, SecondCallAsksTheOsForNothing) {
  auto g = mlp_like();
  CompiledFunction f = compile(*g, opts());
  std::vector<Tensor> in{random_tensor({513, 4}, DType::F32, 1), random_tensor({4}, DType::F32, 2)};
  f(in);
  uint64_t before = CachingAllocator::global().stats().os_allocations;
  for (int i = 0; i < 3; ++i) f(in);
  EXPECT_EQ(CachingAllocator::global().stats().os_allocations, before);
}

TEST_P(Compile, IntermediatesShareMemoryByLiveness) {
  // exp -> neg -> abs -> tanh: each value dies one kernel later, so the third
  // buffer takes the first's memory.
  auto g = std::make_unique<ir::Graph>("chain");
  ir::Value* x = g->add_input("x", ir::Type::tensor(DType::F32, {Dim::sym("N")}));
  ir::Value* v = x;
  for (const char* op : {"exp", "neg", "abs", "tanh"}) v = g->apply1(op, {v});
  g->set_outputs({v});
  CompileOptions o = opts();
  o.fuse = false;  // fused, the chain would be one kernel with no intermediates
  CompiledFunction f = compile(*g, o);
  CallStats st;
  std::vector<Tensor> in{random_tensor({100}, DType::F32, 9)};
  f.run(in, &st);
  EXPECT_EQ(st.launches, 4);
  if (opts().device.is_cpu()) {
    EXPECT_EQ(st.allocated_buffers, 2);
    EXPECT_EQ(st.reused_buffers, 2);
    EXPECT_EQ(st.copies, 0);
  } else {
    // On a device the input's copy is a buffer too, dead after the first
    // kernel: the third intermediate takes its memory.
    EXPECT_EQ(st.allocated_buffers, 3);
    EXPECT_EQ(st.reused_buffers, 3);
    EXPECT_EQ(st.copies, 2);  // the input in, the output back
    EXPECT_EQ(st.copied_bytes, 2 * 100 * 4);
  }
  expect_matches_interpreter(*g, f, in, 5e-4);
  EXPECT_TRUE(contains(f.dump("plan"), "live 0..1")) << f.dump("plan");
}

TEST_P(Compile, OutputThatIsAnInputIsReturnedAsIs) {
  auto g = std::make_unique<ir::Graph>("id");
  ir::Value* x = g->add_input("x", ir::Type::tensor(DType::I32, {3}));
  g->set_outputs({x, g->apply1("neg", {x})});
  CompiledFunction f = compile(*g, opts());
  Tensor in = Tensor::arange(0, 3, 1, DType::I32);
  std::vector<Tensor> out = f({in});
  EXPECT_EQ(out[0].data_ptr(), in.data_ptr());
  EXPECT_TRUE(out[1].equal(Tensor::arange(0, -3, -1, DType::I32)));
}

TEST_P(Compile, ScalarInputsAndConstants) {
  auto g = std::make_unique<ir::Graph>("sc");
  ir::Value* x = g->add_input("x", ir::Type::tensor(DType::F32, {5}));
  ir::Value* a = g->add_input("a", ir::Type::float_());
  ir::Value* y = g->apply1("mul", {x, a});
  ir::Value* c = g->constant(make_tensor({5}, {1, 2, 3, 4, 5}));
  g->set_outputs({g->apply1("add", {y, c})});
  CompiledFunction f = compile(*g, opts());
  Tensor out = f({Tensor::ones({5}), Tensor::scalar(0.5, DType::F64)})[0];
  EXPECT_TRUE(out.equal(make_tensor({5}, {1.5, 2.5, 3.5, 4.5, 5.5})));
  EXPECT_EQ(error_of([&] {
              f({Tensor::ones({5}), Tensor::ones({1})});
            }),
            "compiled @sc: input 'a' is a scalar (float) and takes a 0-dim tensor, got shape [1]");
}

TEST_P(Compile, MixedDtypesLayoutAndReductions) {
  auto g = std::make_unique<ir::Graph>("mix");
  ir::Value* x = g->add_input("x", ir::Type::tensor(DType::I32, {Dim::sym("B"), 6}));
  ir::Value* y = g->add_input("y", ir::Type::tensor(DType::F16, {6}));
  ir::Value* s = g->apply1("add", {x, y});  // f16
  ir::Value* t = g->apply1("transpose", {s}, {{"dim0", int64_t{0}}, {"dim1", int64_t{1}}});
  ir::Value* m = g->apply1("amax", {t}, {{"dim", Ints{0}}});
  ir::Value* sm = g->apply1("softmax", {g->apply1("cast", {x}, {{"dtype", DType::F32}})},
                            {{"dim", int64_t{1}}});
  g->set_outputs({m, sm});
  CompiledFunction f = compile(*g, opts());
  for (int64_t b : {1, 7}) {
    expect_matches_interpreter(
        *g, f, {random_tensor({b, 6}, DType::I32, 4), random_tensor({6}, DType::F16, 5)}, 1e-3);
  }
}

TEST_P(Compile, CompileAsyncOutlivesTheGraph) {
  std::future<CompiledFunction> fut;
  {
    auto g = mlp_like();
    fut = compile_async(*g, opts());
  }  // the graph dies before the compile finishes
  CompiledFunction f = fut.get();
  Tensor x = make_tensor({1, 4}, {1, -2, 3, 0});
  Tensor w = make_tensor({4}, {2, 2, -1, 5});
  EXPECT_TRUE(f({x, w})[1].equal(make_tensor({1}, {4})));
  CompileOptions bad = opts();
  bad.opt_level = 7;
  auto g = mlp_like();
  std::future<CompiledFunction> err = compile_async(*g, bad);
  EXPECT_THROW(err.get(), Error);
}

TEST_P(Compile, DumpStages) {
  auto g = mlp_like();
  CompiledFunction f = compile(*g, opts());
  EXPECT_TRUE(contains(f.dump("loops"), "kernel f_0_mul_add_relu_sum(")) << f.dump("loops");
  EXPECT_TRUE(contains(f.dump("loops-scheduled"), "kernel f_0_mul_add_relu_sum("));
  EXPECT_TRUE(contains(f.dump("plan"), "launch 0 f_0_mul_add_relu_sum("));
  std::string e = error_of([&] { f.dump("bogus"); });
  EXPECT_EQ(e,
            "dump: unknown stage 'bogus' (stages: loops, loops-scheduled, plan, llvm, "
            "llvm-opt, asm, cuda, ptx, sass-resources, kernels)");
  if (!opts().device.is_cpu()) {  // GPU-mapped kernels print as CUDA C (no NVRTC needed)
    EXPECT_TRUE(contains(f.dump("cuda"), "extern \"C\" __global__ void __launch_bounds__(256, 1) "
                                         "f_0_mul_add_relu_sum("))
        << f.dump("cuda");
  }
#ifdef KILN_WITH_LLVM
  if (opts().device.is_cpu()) {
    EXPECT_TRUE(contains(f.dump("llvm"), "define"));
  } else {
    EXPECT_EQ(error_of([&] { f.dump("llvm"); }),
              "dump: stage 'llvm' shows llvm code, and this function's kernels are cuda code (it "
              "runs on sim:0)");
  }
#endif
}

std::vector<std::string> compiled_backends() {
#ifdef KILN_WITH_LLVM
  return {"loop-eval", "llvm", "sim"};
#else
  return {"loop-eval", "sim"};
#endif
}

INSTANTIATE_TEST_SUITE_P(Backends, Compile, ::testing::ValuesIn(compiled_backends()),
                         [](const auto& info) {
                           std::string s = info.param;
                           for (char& c : s)
                             c = std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
                           return s;
                         });

TEST(CompileOptions, UnknownBackendAndBadOptions) {
  auto g = mlp_like();
  CompileOptions o;
  o.backend = "tpu";
  std::string e = error_of([&] { compile(*g, o); });
  EXPECT_EQ(e, "compile: unknown backend 'tpu' (backends: llvm, loop-eval, interp, cuda)");
  o.backend = "";
  o.num_threads = -2;
  EXPECT_EQ(error_of([&] { compile(*g, o); }),
            "compile: num_threads must be >= 0 (0: pool default), got -2");
  EXPECT_EQ(error_of([] { CompiledFunction()({}); }),
            "CompiledFunction is empty (default-constructed); call kiln::compile() to make one");
}

TEST(CompileOptions, InterpBackendRunsTheReference) {
  auto g = mlp_like();
  CompileOptions o;
  o.backend = "interp";
  CompiledFunction f = compile(*g, o);
  EXPECT_EQ(f.num_kernels(), 0);
  std::vector<Tensor> in{random_tensor({3, 4}, DType::F32, 1), random_tensor({4}, DType::F32, 2)};
  std::vector<Tensor> want = ir::interpret(*g, in);
  std::vector<Tensor> got = f(in);
  EXPECT_TRUE(got[0].equal(want[0]));
  EXPECT_TRUE(contains(f.dump("loops"), "kernel f_0_mul_add_relu_sum("));
}

TEST(CompileOptions, UnscheduledAndSingleThreadedAgree) {
  auto g = mlp_like();
  std::vector<Tensor> in{random_tensor({77, 4}, DType::F32, 1), random_tensor({4}, DType::F32, 2)};
  CompileOptions o;
  o.schedule = false;
  CompiledFunction a = compile(*g, o);
  o.schedule = true;
  o.num_threads = 1;
  CompiledFunction b = compile(*g, o);
  EXPECT_FALSE(contains(b.dump("loops-scheduled"), "parallel"));
  std::vector<Tensor> ra = a(in), rb = b(in);
  EXPECT_TRUE(tensors_close(ra[0], rb[0], 1e-6, 1e-6));
  EXPECT_TRUE(tensors_close(ra[1], rb[1], 1e-5, 1e-5));
}

TEST(CompileFunction, FromTextIrAndAsync) {
  Function fn = parse_ir(
      "graph @g(%x: f32[N, 3]) {\n"
      "  %0: f32[N, 3] = relu(%x)\n"
      "  return %0\n"
      "}\n");
  CompiledFunction f = compile(fn);
  ASSERT_EQ(f.inputs().size(), 1u);
  EXPECT_EQ(f.inputs()[0].name, "x");
  EXPECT_EQ(f.outputs()[0].type, "f32[N, 3]");
  Tensor out = f({make_tensor({2, 3}, {-1, 2, -3, 4, 0, 5})})[0];
  EXPECT_TRUE(out.equal(make_tensor({2, 3}, {0, 2, 0, 4, 0, 5})));
  std::future<CompiledFunction> fut = compile_async(fn);
  EXPECT_EQ(fut.get().name(), "g");
}

#ifdef KILN_WITH_LLVM
TEST(CompileCache, IdenticalGraphsReuseCompiledCode) {
  auto g = mlp_like();
  CompileOptions o;
  o.backend = "llvm";
  o.opt_level = 1;  // a key no other test uses
  compile(*g, o);
  runtime::KernelCacheStats before = runtime::KernelCache::global().stats();
  CompiledFunction f = compile(*g, o);
  runtime::KernelCacheStats after = runtime::KernelCache::global().stats();
  EXPECT_EQ(after.hits, before.hits + 1);
  EXPECT_EQ(after.misses, before.misses);
  o.opt_level = 2;  // a different option is a different key: the function and its module
  compile(*g, o);
  EXPECT_EQ(runtime::KernelCache::global().stats().misses, after.misses + 2);
  Tensor x = make_tensor({1, 4}, {1, -2, 3, 0});
  Tensor w = make_tensor({4}, {2, 2, -1, 5});
  EXPECT_TRUE(f({x, w})[1].equal(make_tensor({1}, {4})));
}
#endif

}  // namespace
}  // namespace kiln::test
