// The contraction rows: square SGEMM (Kiln, and oneDNN's dnnl_sgemm when the
// build found libdnnl) and single conv2d layers (Kiln; PyTorch in peers.py).
// Inputs come from bench_data.h's formula, so peers.py computes on the same
// numbers; every output is checked on a sample against a double-precision
// reference (SampleCheck).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "bench/kiln_rows.h"

namespace kiln::bench {

// Seeds of the SGEMM operands (peers.py uses the same).
constexpr uint64_t kSgemmSeedA = 11, kSgemmSeedB = 12;

// Worst error (SampleCheck) of row-major c = a @ b on 16 x 16 spread elements.
double check_sgemm(int64_t n, const float* a, const float* b, const float* c);

// C = A @ B, row-major f32 n x n; 2 n^3 flops.
RowResult run_kiln_sgemm(int64_t n, const Budget& budget);

// oneDNN's dnnl_sgemm on the same problem, on `threads` OpenMP threads.
// Without libdnnl in the build it returns ok = false and sets *note to why
// ("libdnnl not found").
RowResult run_dnnl_sgemm(int64_t n, int threads, const Budget& budget, std::string* note);
bool have_dnnl();
// oneDNN's version and the OpenMP thread count it runs with ("" without it).
std::string dnnl_version();
int dnnl_threads();

// One batch-1 f32 conv2d layer, stride 1, no bias, weight [cout, cin/groups, k, k].
struct ConvShape {
  std::string key;  // JSON key, shared with peers.py
  std::string label;
  int64_t cin = 0, cout = 0, hw = 0, k = 0, pad = 0, groups = 1;
  uint64_t seed_x = 0, seed_w = 0;
  int64_t out_hw() const { return hw + 2 * pad - k + 1; }
  double flops() const {
    return 2.0 * double(cout) * double(cin / groups) * double(k * k) * double(out_hw() * out_hw());
  }
};

// ResNet-18's 3x3 layers, a 1x1 layer and a MobileNet depthwise 3x3; --smoke
// shrinks channels and spatial size, keeping each layer's kind.
std::vector<ConvShape> conv_shapes(bool smoke);

RowResult run_kiln_conv(const ConvShape& s, const Budget& budget);

}  // namespace kiln::bench
