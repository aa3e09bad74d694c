// The GPU bench's rows (issue 12, item 8): Kiln on a CUDA device, timed by
// device events, next to what bounds it.
//
// Device rows (need cuda:N; otherwise each says why it was not measured):
//   copy        a device-to-device copy of 2^26 f32: the bandwidth the
//               elementwise and row rows are measured against
//   chain       bench/kiln_rows.h's elementwise chain over 2^26 f32
//   softmax     row softmax, 8192 x 8192 f32
//   layer_norm  layer norm over the last dim, 8192 x 8192 f32
//   sgemm       4096^3 f32 matmul; bf16_gemm: the same in bf16 (f32 accumulation)
//   mlp, transformer
//               bench/model_rows.h's cases (the CPU bench's shapes)
//   launch      a one-element kernel called back to back: host overhead per call
// Compile rows (need only NVRTC; run without a GPU too):
//   nvrtc_*     one function's program: NVRTC cold (in-memory and disk caches
//               off) and the image from the disk cache, per example
//
// Each device row's output is checked on the host (sampled elements against
// a double-precision reference, or the interpreter for the models) before it
// is timed; the peers (cuBLAS, cuBLASLt, PyTorch eager and torch.compile)
// are timed by bench/gpu/peers_gpu.py on the same device.
#pragma once

#include <string>
#include <vector>

#include "bench/bench_util.h"

namespace kiln::bench::gpu {

struct GpuRow {
  std::string name;
  std::string what;          // one line: shapes and dtype
  std::string not_measured;  // why the row has no figures; empty when it has
  std::string algorithm;     // the contraction algorithms explain names
  std::string error;         // Kiln failed (compile, run or check): a failure
  Samples time;              // seconds per call, device time (events)
  double bytes = 0;          // counted bytes moved per call (0: not a bandwidth row)
  double flops = 0;          // counted flops per call (0: not a compute row)
  double max_err = -1;       // worst error / tolerance on the checked sample (<= 1 passes)
  int kernels = 0;
  double compile_s = 0;
  // Compile rows: NVRTC's time for the program, and the disk cache's load.
  double nvrtc_cold_s = 0, disk_load_s = 0;
};

struct Options {
  bool smoke = false;  // small sizes, a few repetitions: a check that it runs
  int device = 0;
  Budget budget;
};

// Rows that run on cuda:options.device; each reports `not_measured` when the
// device cannot be used (the reason from kiln::devices()).
std::vector<GpuRow> device_rows(const Options& options);
// NVRTC rows: need only NVRTC (not_measured when it cannot be loaded).
std::vector<GpuRow> compile_rows(const Options& options);

Json row_json(const GpuRow& r);

}  // namespace kiln::bench::gpu
