// Accuracy of compiled float reductions (issue 15, item 9): blocked (cascade)
// sums keep long f32 sums near the f64 reference, the result does not depend
// on the thread count, var/std do not overflow on large finite values, and a
// layer_norm row whose sum of squares overflows is NaN, in compiled code and
// in the interpreter alike.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "kiln/compile.h"
#include "kiln/script.h"

namespace kiln {
namespace {

const char* kScript = R"(
def total(x: Tensor):
    return x.sum()

def row_mean(x: Tensor):
    return x.mean(1)

def col_mean(x: Tensor):
    return x.mean(0)

def all_mean(x: Tensor):
    return x.mean([0, 1])

def spread(x: Tensor):
    return x.std()

def variance(x: Tensor):
    return x.var(1)

def soft(x: Tensor):
    return torch.softmax(x, -1)

def lse(x: Tensor):
    return torch.logsumexp(x, -1)

def ln(x: Tensor, w: Tensor, b: Tensor):
    return F.layer_norm(x, [x.shape[1]], w, b, 1e-5)

def rms(x: Tensor, w: Tensor):
    return F.rms_norm(x, [x.shape[1]], w)
)";

// The CPU backends that run compiled loops.
std::vector<std::string> cpu_backends() {
  std::vector<std::string> out;
  for (const BackendInfo& b : available_backends()) {
    if ((b.name == "llvm" || b.name == "loop-eval") && b.available) out.push_back(b.name);
  }
  return out;
}

Function load(const std::string& fn, const std::vector<Tensor>& inputs) {
  static const std::vector<std::string> kNames = {"x", "w", "b"};
  std::vector<Binding> binds;
  for (size_t i = 0; i < inputs.size(); ++i) binds.push_back(bind_like(kNames[i], inputs[i]));
  return load_script(kScript, fn, binds);
}

Tensor run(const std::string& fn, const std::vector<Tensor>& inputs, const std::string& backend,
           int threads = 0) {
  CompileOptions o;
  o.backend = backend;
  o.num_threads = threads;
  o.disk_cache = false;
  return compile(load(fn, inputs), o)(inputs)[0];
}

Tensor reference(const std::string& fn, const std::vector<Tensor>& inputs) {
  return load(fn, inputs).run_interpreter(inputs)[0].to(DType::F64);
}

// Every element within `rel` of the reference (relative to max(|ref|, 1)),
// NaN where it is NaN.
void expect_close(const Tensor& got, const Tensor& want, double rel, const std::string& what) {
  Tensor g = got.to(DType::F64).contiguous(), w = want.to(DType::F64).contiguous();
  ASSERT_EQ(g.sizes(), w.sizes()) << what;
  const double* gp = g.data<double>();
  const double* wp = w.data<double>();
  for (int64_t i = 0; i < g.numel(); ++i) {
    if (std::isnan(wp[i])) {
      EXPECT_TRUE(std::isnan(gp[i])) << what << " at " << i << ": " << gp[i];
      continue;
    }
    EXPECT_NEAR(gp[i], wp[i], rel * std::max(std::fabs(wp[i]), 1.0)) << what << " at " << i;
  }
}

TEST(ReductionAccuracy, LongF32SumStaysNearTheExactSum) {
  Tensor x = Tensor::full({10000000}, 0.1, DType::F32);
  const double exact = 1e7 * double(0.1f);  // 1000000.0149
  for (const std::string& backend : cpu_backends()) {
    double got = run("total", {x}, backend).item();
    // One accumulator gives 998501.375 (1.5e-3 off); PyTorch is 6e-7 off.
    EXPECT_NEAR(got, exact, 2e-6 * exact) << backend;
    double mean = run("all_mean", {Tensor::full({1000, 10000}, 0.1, DType::F32)}, backend).item();
    EXPECT_NEAR(mean, double(0.1f), 2e-6 * 0.1) << backend;
  }
  EXPECT_NEAR(reference("total", {x}).item(), exact, 1e-7 * exact);
}

TEST(ReductionAccuracy, OddSizesMatchTheInterpreter) {
  for (const std::string& backend : cpu_backends()) {
    for (int64_t n : {0, 1, 7, 1023, 1025, 65537, 70001}) {
      const std::string at = backend + " n=" + std::to_string(n);
      Tensor v = Tensor::randn({n}, uint64_t(n) + 1);
      expect_close(run("total", {v}, backend), reference("total", {v}), 1e-5, "sum " + at);
      Tensor rows = Tensor::randn({3, n}, uint64_t(n) + 2);
      expect_close(run("row_mean", {rows}, backend), reference("row_mean", {rows}), 1e-5,
                   "row mean " + at);
      expect_close(run("variance", {rows}, backend), reference("variance", {rows}), 1e-5,
                   "var " + at);
      expect_close(run("soft", {rows}, backend), reference("soft", {rows}), 1e-5, "softmax " + at);
      Tensor cols = Tensor::randn({n, 5}, uint64_t(n) + 3);
      expect_close(run("col_mean", {cols}, backend), reference("col_mean", {cols}), 1e-5,
                   "column mean " + at);
    }
  }
}

TEST(ReductionAccuracy, ResultsDoNotDependOnTheThreadCount) {
  if (cpu_backends().empty() || cpu_backends()[0] != "llvm") GTEST_SKIP() << "no llvm backend";
  Tensor x = Tensor::randn({64, 70001}, 7);
  Tensor w = Tensor::randn({70001}, 8), b = Tensor::randn({70001}, 9);
  struct Case {
    std::string fn;
    std::vector<Tensor> in;
  };
  const std::vector<Case> cases = {{"row_mean", {x}}, {"col_mean", {x}}, {"all_mean", {x}},
                                   {"variance", {x}}, {"soft", {x}},     {"lse", {x}},
                                   {"ln", {x, w, b}}, {"rms", {x, w}}};
  for (const Case& c : cases) {
    Tensor one = run(c.fn, c.in, "llvm", 1), two = run(c.fn, c.in, "llvm", 2);
    EXPECT_TRUE(one.equal(two)) << c.fn;
    expect_close(one, reference(c.fn, c.in), 1e-4, c.fn);
  }
}

TEST(ReductionAccuracy, StdOfLargeFiniteValuesIsFinite) {
  Tensor x = Tensor::randn({1000}, 11);
  for (int64_t i = 0; i < 1000; ++i) {
    std::vector<int64_t> at{i};
    x.set(at, x.get(at) * 1e30);
  }
  Tensor want = reference("spread", {x});
  ASSERT_TRUE(std::isfinite(want.item()));
  for (const std::string& backend : cpu_backends()) {
    Tensor got = run("spread", {x}, backend);
    EXPECT_TRUE(std::isfinite(got.item())) << backend << ": " << got.item();
    expect_close(got, want, 1e-6, "std " + backend);
  }
}

TEST(ReductionAccuracy, NormOfARowWhoseSquaresOverflowIsNaN) {
  // Row 0's squares (1e40) overflow f32; row 1 is ordinary.
  Tensor x = Tensor::randn({2, 64}, 12);
  for (int64_t c = 0; c < 64; ++c)
    x.set(std::vector<int64_t>{0, c}, (c % 2 ? 1e20 : -1e20) + double(c) * 1e18);
  Tensor w = Tensor::ones({64}), b = Tensor::zeros({64});
  for (const std::string fn : {"ln", "rms"}) {
    std::vector<Tensor> in = fn == "ln" ? std::vector<Tensor>{x, w, b} : std::vector<Tensor>{x, w};
    Tensor want = reference(fn, in);
    for (int64_t c = 0; c < 64; ++c) {
      EXPECT_TRUE(std::isnan(want.get(std::vector<int64_t>{0, c}))) << fn << " interpreter";
      EXPECT_TRUE(std::isfinite(want.get(std::vector<int64_t>{1, c}))) << fn << " interpreter";
    }
    for (const std::string& backend : cpu_backends()) {
      expect_close(run(fn, in, backend), want, 1e-5, fn + " " + backend);
    }
  }
}

}  // namespace
}  // namespace kiln
