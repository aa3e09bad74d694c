// Kiln's throughput rows: the streaming y = x*a + b, the elementwise chain,
// row softmax and layer norm. See kiln_rows.h.
//
// Outputs come from Kiln's caching allocator, so after the warm-up calls no
// call pays for fresh pages; the timed region is one CompiledFunction call
// (argument checks, launches on Kiln's pool, the output tensor), which is
// what a user pays.
#include "bench/kiln_rows.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <vector>

namespace kiln::bench {

namespace {

// One element's error as a fraction of the tolerance 1e-5 + 1e-4 |want|: f32
// results that end in a cancellation (layer norm's "* w + b") are off by a few
// f32 ulps of the cancelled terms, so a purely relative bound would be wrong.
double err(double got, double want) {
  return std::abs(got - want) / (1e-5 + 1e-4 * std::abs(want));
}

// Compiles `f`, checks it with `check` (returns the worst error), then times it.
RowResult run_row(const kiln::Function& f, const std::vector<kiln::Tensor>& inputs, double bytes,
                  int reps, const std::function<double(const kiln::Tensor&)>& check,
                  const Companion& companion = {}) {
  RowResult r;
  int64_t t0 = monotonic_ns();
  kiln::CompiledFunction cf = kiln::compile(f);
  r.compile_s = static_cast<double>(monotonic_ns() - t0) * 1e-9;
  r.kernels = cf.num_kernels();
  r.max_err = check(cf(inputs).at(0));
  r.ok = r.max_err <= 1.0;
  r.bytes = bytes;
  auto call = [&] { cf(inputs); };
  r.samples = companion.fn ? time_reps_alternating(3, reps, call, companion.fn, companion.out)
                           : time_reps(/*warmup=*/3, reps, call);
  return r;
}

double sigmoid(double z) {
  return 1.0 / (1.0 + std::exp(-z));
}

}  // namespace

std::string explained_algorithms(const kiln::CompiledFunction& cf) {
  std::istringstream text(cf.explain());
  std::string line, out;
  const std::string key = "  algorithm: ";
  while (std::getline(text, line)) {
    if (line.rfind(key, 0) != 0) continue;
    std::string name = line.substr(key.size());
    name = name.substr(0, name.find(' '));
    out += (out.empty() ? "" : ", ") + name;
  }
  return out;
}

RowResult run_budgeted(const kiln::CompiledFunction& cf, const std::vector<kiln::Tensor>& inputs,
                       const Budget& budget,
                       const std::function<double(const kiln::Tensor&)>& check) {
  RowResult r;
  int64_t t0 = monotonic_ns();
  kiln::Tensor first = cf(inputs).at(0);
  const double first_s = static_cast<double>(monotonic_ns() - t0) * 1e-9;
  r.max_err = check(first);
  r.ok = r.max_err <= 1.0;
  first = kiln::Tensor();  // back to the allocator before the timed calls
  r.samples = time_budget(budget, first_s, [&] { cf(inputs); });
  return r;
}

kiln::Function stream_function(int64_t n) {
  kiln::Builder b("stream");
  kiln::Var x = b.input("x", kiln::DType::F32, {n});
  return b.build({x * 1.5 + 0.25});
}

kiln::Function chain_function(int64_t n) {
  kiln::Builder b("chain");
  kiln::Var x = b.input("x", kiln::DType::F32, {n});
  return b.build({kiln::sigmoid(x * 0.75 - 0.5) * kiln::tanh(x) + 0.5 * x});
}

kiln::Function softmax_function(int64_t rows, int64_t cols) {
  kiln::Builder b("softmax");
  kiln::Var x = b.input("x", kiln::DType::F32, {rows, cols});
  return b.build({kiln::softmax(x, 1)});
}

kiln::Function layer_norm_function(int64_t rows, int64_t cols) {
  kiln::Builder b("layer_norm");
  kiln::Var x = b.input("x", kiln::DType::F32, {rows, cols});
  kiln::Var w = b.input("w", kiln::DType::F32, {cols});
  kiln::Var bias = b.input("b", kiln::DType::F32, {cols});
  return b.build({kiln::layer_norm(x, {cols}, w, bias, 1e-5)});
}

RowResult run_stream(int64_t n, int reps, const Companion& triad) {
  kiln::Tensor x = kiln::Tensor::randn({n}, /*seed=*/1);
  const float* xp = x.data<float>();
  return run_row(
      stream_function(n), {x}, 8.0 * static_cast<double>(n), reps,
      [&](const kiln::Tensor& y) {
        const float* yp = y.data<float>();
        double worst = 0;
        for (int64_t i = 0; i < n; i += 997) {
          worst = std::max(worst, err(yp[i], double(xp[i]) * 1.5 + 0.25));
        }
        return worst;
      },
      triad);
}

RowResult run_chain(int64_t n, int reps) {
  kiln::Tensor x = kiln::Tensor::randn({n}, /*seed=*/2);
  const float* xp = x.data<float>();
  return run_row(
      chain_function(n), {x}, 8.0 * static_cast<double>(n), reps, [&](const kiln::Tensor& y) {
        const float* yp = y.data<float>();
        double worst = 0;
        for (int64_t i = 0; i < n; i += 997) {
          double v = xp[i];
          worst = std::max(worst, err(yp[i], sigmoid(v * 0.75 - 0.5) * std::tanh(v) + 0.5 * v));
        }
        return worst;
      });
}

RowResult run_softmax(int64_t rows, int64_t cols, int reps, const Companion& triad) {
  kiln::Tensor x = kiln::Tensor::randn({rows, cols}, /*seed=*/3);
  const float* xp = x.data<float>();
  return run_row(
      softmax_function(rows, cols), {x}, 8.0 * double(rows * cols), reps,
      [&](const kiln::Tensor& y) {
        const float* yp = y.data<float>();
        double worst = 0;
        for (int64_t r = 0; r < rows; r += 257) {
          const float* xr = xp + r * cols;
          double mx = *std::max_element(xr, xr + cols), sum = 0;
          for (int64_t c = 0; c < cols; ++c) sum += std::exp(xr[c] - mx);
          for (int64_t c = 0; c < cols; c += 7) {
            // Scaled by cols: each probability is ~1/cols, and the
            // check is on the row's distribution, not on tiny values.
            double want = std::exp(xr[c] - mx) / sum * double(cols);
            worst = std::max(worst, err(yp[r * cols + c] * double(cols), want));
          }
        }
        return worst;
      },
      triad);
}

RowResult run_layer_norm(int64_t rows, int64_t cols, int reps, const Companion& triad) {
  kiln::Tensor x = kiln::Tensor::randn({rows, cols}, /*seed=*/4);
  kiln::Tensor w = kiln::Tensor::randn({cols}, /*seed=*/5);
  kiln::Tensor bias = kiln::Tensor::randn({cols}, /*seed=*/6);
  const float* xp = x.data<float>();
  const float* wp = w.data<float>();
  const float* bp = bias.data<float>();
  return run_row(
      layer_norm_function(rows, cols), {x, w, bias}, 8.0 * double(rows * cols), reps,
      [&](const kiln::Tensor& y) {
        const float* yp = y.data<float>();
        double worst = 0;
        for (int64_t r = 0; r < rows; r += 257) {
          const float* xr = xp + r * cols;
          double mean = 0, var = 0;
          for (int64_t c = 0; c < cols; ++c) mean += xr[c];
          mean /= double(cols);
          for (int64_t c = 0; c < cols; ++c) var += (xr[c] - mean) * (xr[c] - mean);
          var /= double(cols);
          for (int64_t c = 0; c < cols; c += 7) {
            double want = (xr[c] - mean) / std::sqrt(var + 1e-5) * wp[c] + bp[c];
            worst = std::max(worst, err(yp[r * cols + c], want));
          }
        }
        return worst;
      },
      triad);
}

}  // namespace kiln::bench
