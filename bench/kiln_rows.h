// The Kiln side of each throughput row, and the functions the compile-latency
// rows compile. Each row builds its graph with the C++ builder, compiles it
// once, checks a sample of the output against a double-precision reference,
// then times calls.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "kiln/kiln.h"

namespace kiln::bench {

struct RowResult {
  Samples samples;
  double bytes = 0;      // counted bytes per call
  double max_err = 0;    // worst |got - want| / (1e-5 + 1e-4 |want|) on the checked sample
  bool ok = false;       // max_err <= 1
  int kernels = 0;       // kernels in the compiled function
  double compile_s = 0;  // the one compile this row did
  double flops = 0;      // counted flops per call (contraction and model rows)
  double input_sum = 0;  // sum |x| over the inputs (bench_data.h; new rows only)
  std::string algorithm;  // contraction rows: the algorithm explain names, if one
};

// The algorithms `kiln explain` names for the contractions of `cf` ("a, b"),
// empty when there are none.
std::string explained_algorithms(const kiln::CompiledFunction& cf);

// The Kiln side of a contraction or model row: one timed first call whose
// output `check` judges (worst error, <= 1 passes), then calls timed under
// `budget` (see time_budget). compile_s and kernels are left to the caller.
RowResult run_budgeted(const kiln::CompiledFunction& cf, const std::vector<kiln::Tensor>& inputs,
                       const Budget& budget,
                       const std::function<double(const kiln::Tensor&)>& check);

// y = x * 1.5 + 0.25 over n f32: 8 bytes per element.
kiln::Function stream_function(int64_t n);
// y = sigmoid(x * 0.75 - 0.5) * tanh(x) + 0.5 * x over n f32.
kiln::Function chain_function(int64_t n);
kiln::Function softmax_function(int64_t rows, int64_t cols);
kiln::Function layer_norm_function(int64_t rows, int64_t cols);

// The bandwidth rows alternate each timed call with `companion` (a triad pass,
// timed into *companion_out; see time_reps_alternating).
struct Companion {
  std::function<void()> fn;
  Samples* out = nullptr;
};

RowResult run_stream(int64_t n, int reps, const Companion& triad);
RowResult run_chain(int64_t n, int reps);
RowResult run_softmax(int64_t rows, int64_t cols, int reps, const Companion& triad);
RowResult run_layer_norm(int64_t rows, int64_t cols, int reps, const Companion& triad);

}  // namespace kiln::bench
