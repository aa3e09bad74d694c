// Kiln's rewrite pairs (see rewrite_rows.h).
#include "bench/rewrite_rows.h"

#include <algorithm>

#include "bench/bench_data.h"
#include "kiln/kiln.h"

namespace kiln::bench {

namespace {

struct PairSpec {
  std::string form_src, peer_src;  // the body of `def f(...) -> Tensor:`
  std::string params;              // "x: Tensor, w: Tensor"
  std::vector<kiln::Tensor> inputs;
  std::string shapes;
  int threads = 0;
  double flops = 0, bytes = 0;
  std::function<double(const kiln::Tensor&)> check;
};

kiln::Function lower(const std::string& params, const std::string& body,
                     const std::vector<kiln::Tensor>& inputs) {
  kiln::Script s =
      kiln::Script::from_source("def f(" + params + ") -> Tensor:\n    return " + body + "\n");
  std::vector<kiln::Binding> bind;
  const char* names[] = {"x", "w"};
  for (size_t i = 0; i < inputs.size(); ++i) bind.push_back(kiln::bind_like(names[i], inputs[i]));
  return s.lower("f", bind);
}

PairSpec spec(const std::string& key, bool smoke) {
  PairSpec p;
  if (key == "mm_t") {
    const int64_t m = smoke ? 4 : 8, k = smoke ? 64 : 1024, n = smoke ? 96 : 4096;
    kiln::Tensor x = hashed({m, k}, 101), w = hashed({n, k}, 102, 1.0 / 32);
    p.form_src = "torch.mm(x, w.t())";
    p.peer_src = "F.linear(x, w)";
    p.params = "x: Tensor, w: Tensor";
    p.inputs = {x, w};
    p.shapes = "x " + std::to_string(m) + "x" + std::to_string(k) + ", w " + std::to_string(n) +
               "x" + std::to_string(k);
    p.threads = 1;
    p.flops = 2.0 * double(m * n * k);
    p.check = [x, w, m, k, n](const kiln::Tensor& y) {
      const float *xp = x.data<float>(), *wp = w.data<float>(), *yp = y.data<float>();
      SampleCheck chk;
      for (int64_t r = 0; r < m; ++r) {
        for (int64_t c = 0; c < n; c += 37) {
          double want = 0;
          for (int64_t i = 0; i < k; ++i) want += double(xp[r * k + i]) * wp[c * k + i];
          chk.add(yp[r * n + c], want);
        }
      }
      return chk.max_err();
    };
  } else if (key == "pow2") {
    const int64_t n = smoke ? int64_t(1) << 16 : int64_t(1) << 24;
    kiln::Tensor x = hashed({n}, 103, 4.0);
    p.form_src = "x.pow(2)";
    p.peer_src = "x * x";
    p.params = "x: Tensor";
    p.inputs = {x};
    p.shapes = "x 2^" + std::to_string(smoke ? 16 : 24) + " f32";
    p.bytes = 8.0 * double(n);
    p.check = [x, n](const kiln::Tensor& y) {
      const float *xp = x.data<float>(), *yp = y.data<float>();
      SampleCheck chk;
      for (int64_t i = 0; i < n; i += 997) chk.add(yp[i], double(xp[i]) * xp[i]);
      return chk.max_err();
    };
  } else {
    throw kiln::Error("rewrite_rows: unknown pair '" + key + "'");
  }
  return p;
}

double since(int64_t t0) {
  return static_cast<double>(monotonic_ns() - t0) * 1e-9;
}

}  // namespace

std::vector<std::string> rewrite_pair_names() {
  return {"mm_t", "pow2"};
}

RewritePair run_rewrite_pair(const std::string& key, bool smoke, const Budget& budget) {
  const PairSpec p = spec(key, smoke);
  RewritePair out;
  out.key = key;
  out.form = p.form_src;
  out.peer = p.peer_src;
  out.shapes = p.shapes;
  out.threads = p.threads;
  kiln::CompileOptions opts;
  opts.num_threads = p.threads;
  kiln::CompiledFunction cf[2];
  RowResult* rows[2] = {&out.form_row, &out.peer_row};
  for (int i = 0; i < 2; ++i) {
    int64_t t0 = monotonic_ns();
    cf[i] = kiln::compile(lower(p.params, i == 0 ? p.form_src : p.peer_src, p.inputs), opts);
    rows[i]->compile_s = since(t0);
    rows[i]->kernels = cf[i].num_kernels();
    rows[i]->flops = p.flops;
    rows[i]->bytes = p.bytes;
    rows[i]->input_sum = input_sum(p.inputs);
    kiln::Tensor y = cf[i](p.inputs).at(0);
    rows[i]->max_err = p.check(y);
    rows[i]->ok = rows[i]->max_err <= 1.0;
  }
  // Alternating calls (peer, then form), as many as the budget's seconds
  // allow at the pace of one warm pair of calls, within its repetition
  // bounds (five times its cap: these calls are short).
  auto form = [&] { cf[0](p.inputs); };
  auto peer = [&] { cf[1](p.inputs); };
  form();
  peer();
  const int64_t t0 = monotonic_ns();
  form();
  peer();
  const double pace = std::max(since(t0), 1e-6);
  const int reps = std::clamp(int(budget.seconds / pace), budget.min_reps,
                              std::max(budget.min_reps, budget.max_reps * 5));
  out.form_row.samples = time_reps_alternating(3, reps, form, peer, &out.peer_row.samples);
  return out;
}

}  // namespace kiln::bench
