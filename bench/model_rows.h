// The model rows: the MLP of issue 6 (examples/mlp.kiln at 256x1024 ->
// 4096 -> 1024), the whole examples of issue 5 (mlp.kiln at its comment's
// sizes, transformer.kiln, conv_block.kiln) and issue 14's GPT-2 attention
// (tests/models/gpt2_block.py's causal_self_attention, the Python file as
// written, at 4x128x768 with 12 heads), each lowered from its script
// with kiln::Script and compiled twice: without fusion (kernel count only)
// and with it (checked and timed). PyTorch's side is bench/peers_models.py.
//
// Inputs come from bench_data.h's formula with per-tensor seeds and scales
// that peers_models.py repeats (ModelInput). The MLP row is checked against a
// double-precision C++ reference on sampled rows; the examples against Kiln's
// reference interpreter (f64 accumulation) run on the first and last batch
// slices of the same inputs, through the same script lowered for that slice.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "bench/kiln_rows.h"
#include "kiln/kiln.h"

namespace kiln::bench {

struct ModelResult {
  RowResult row;            // fused: checked and timed
  int kernels_unfused = 0;  // CompileOptions::fuse = false
  std::string shapes;       // "x 256x1024, w1 1024x4096, ..." for the table
};

// A model's lowered function, its inputs (host tensors, bench_data.h's
// formula) and the check of its first output (a host tensor; returns the
// worst error as a fraction of the tolerance, <= 1 passes). The GPU bench
// (bench/gpu/) runs the same cases on a device. Names: "mlp_issue6", "mlp",
// "transformer", "conv_block", "gpt2_attention".
struct ModelCase {
  kiln::Function fn;
  std::vector<kiln::Tensor> inputs;
  std::string shapes;  // "x 256x1024, w1 1024x4096, ..."
  double flops = 0;    // the MLP's two matmuls; 0 for the others
  std::function<double(const kiln::Tensor&)> check;
};
ModelCase model_case(const std::string& name, bool smoke);

// The MLP at issue 6's sizes (smoke: 16x64 -> 256 -> 64).
ModelResult run_mlp_row(bool smoke, const Budget& budget);

// Issue 5's examples ("mlp", "transformer", "conv_block") and issue 14's
// "gpt2_attention".
std::vector<std::string> example_names();
ModelResult run_example(const std::string& name, bool smoke, const Budget& budget);

}  // namespace kiln::bench
