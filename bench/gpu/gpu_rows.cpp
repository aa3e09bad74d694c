// Kiln's device rows of the GPU bench (see gpu_rows.h).
//
// Inputs are made on the host (bench_data.h's formula), checked there, and
// copied to the device once; each timed call is one CompiledFunction call on
// device tensors (outputs from the device's caching allocator), bracketed by
// two events on the device's stream, so a sample is the device's time for
// the call's kernels plus whatever gaps the host's launches leave.
#include <cmath>
#include <cstdio>
#include <functional>

#include "bench/bench_data.h"
#include "bench/gpu/gpu_rows.h"
#include "bench/kiln_rows.h"
#include "bench/model_rows.h"
#include "kiln/kiln.h"
#include "runtime/cuda/cuda_runtime.h"

namespace kiln::bench::gpu {

namespace {

using runtime::cuda::Event;

// Why cuda:index cannot be used, or empty when it can.
std::string device_unavailable(int index) {
  for (const kiln::DeviceInfo& d : kiln::devices()) {
    if (d.device == kiln::Device::cuda(index)) return d.available ? "" : d.why_unavailable;
  }
  return "no device cuda:" + std::to_string(index);
}

// Times `call` by device events: two untimed calls, then samples until the
// budget is spent (at least min_reps, at most max_reps).
Samples time_device(kiln::Device device, const Budget& budget, const std::function<void()>& call) {
  for (int i = 0; i < 2; ++i) call();
  Event start(device), end(device);
  Samples s;
  double total = 0;
  while (int(s.seconds.size()) < budget.max_reps &&
         (int(s.seconds.size()) < budget.min_reps || total < budget.seconds)) {
    start.record();
    call();
    end.record();
    const double dt = runtime::cuda::elapsed_ms(start, end) * 1e-3;
    s.seconds.push_back(dt);
    total += dt;
  }
  return s;
}

std::vector<kiln::Tensor> on_device(const std::vector<kiln::Tensor>& host, kiln::Device device) {
  std::vector<kiln::Tensor> out;
  for (const kiln::Tensor& t : host) out.push_back(t.to(device));
  return out;
}

// Compiles `f` for `device`, checks output 0 of one call with `check` (on a
// host copy), then times calls on the device inputs.
void run_function(GpuRow& r, const kiln::Function& f, const std::vector<kiln::Tensor>& host_inputs,
                  const Options& o, const std::function<double(const kiln::Tensor&)>& check) {
  const kiln::Device device = kiln::Device::cuda(o.device);
  kiln::CompileOptions co;
  co.device = device;
  const int64_t t0 = monotonic_ns();
  kiln::CompiledFunction cf = kiln::compile(f, co);
  r.compile_s = static_cast<double>(monotonic_ns() - t0) * 1e-9;
  r.kernels = cf.num_kernels();
  r.algorithm = explained_algorithms(cf);
  const std::vector<kiln::Tensor> inputs = on_device(host_inputs, device);
  r.max_err = check(cf(inputs).at(0).to(kiln::Device::cpu()));
  if (!(r.max_err <= 1.0)) {
    r.error = "output check failed: max_err " + std::to_string(r.max_err) + " of the tolerance";
    return;
  }
  r.time = time_device(device, o.budget, [&] { cf(inputs); });
}

double sigmoid(double z) {
  return 1.0 / (1.0 + std::exp(-z));
}

// ---- the rows

GpuRow copy_row(const Options& o) {
  GpuRow r;
  r.name = "copy";
  const int64_t n = o.smoke ? (int64_t(1) << 16) : (int64_t(1) << 26);
  r.what = "device-to-device copy, " + std::to_string(n) + " f32";
  const kiln::Device device = kiln::Device::cuda(o.device);
  const size_t nbytes = size_t(n) * sizeof(float);
  auto src = kiln::Storage::allocate(nbytes, device);
  auto dst = kiln::Storage::allocate(nbytes, device);
  runtime::cuda::CudaRuntime& rt = runtime::cuda::cuda_runtime(o.device);
  rt.fill(*src, 0, 0x3f, nbytes);
  r.bytes = 2.0 * double(nbytes);  // read + write
  r.time = time_device(device, o.budget, [&] { rt.copy(*dst, 0, *src, 0, nbytes); });
  r.max_err = 0;
  return r;
}

GpuRow chain_row(const Options& o) {
  GpuRow r;
  r.name = "chain";
  const int64_t n = o.smoke ? 4099 : (int64_t(1) << 26);
  r.what = "sigmoid(0.75x - 0.5) * tanh(x) + 0.5x, " + std::to_string(n) + " f32";
  const kiln::Tensor x = hashed({n}, 101);
  r.bytes = 8.0 * double(n);
  run_function(r, chain_function(n), {x}, o, [&](const kiln::Tensor& y) {
    SampleCheck chk;
    const float *xp = x.data<float>(), *yp = y.data<float>();
    for (int64_t i = 0; i < n; i += std::max<int64_t>(1, n / 4096)) {
      const double v = xp[i];
      chk.add(yp[i], sigmoid(v * 0.75 - 0.5) * std::tanh(v) + 0.5 * v);
    }
    return chk.max_err();
  });
  return r;
}

// Four spread rows of a row-wise result, each computed by `ref` in double.
double check_rows(const kiln::Tensor& x, const kiln::Tensor& y,
                  const std::function<void(const float*, int64_t, std::vector<double>&)>& ref) {
  const int64_t rows = x.size(0), cols = x.size(1);
  SampleCheck chk;
  std::vector<double> want(static_cast<size_t>(cols));
  for (int64_t row : {int64_t{0}, rows / 3, 2 * rows / 3, rows - 1}) {
    ref(x.data<float>() + row * cols, cols, want);
    for (int64_t c = 0; c < cols; ++c) chk.add(y.data<float>()[row * cols + c], want[size_t(c)]);
  }
  return chk.max_err();
}

GpuRow softmax_row(const Options& o) {
  GpuRow r;
  r.name = "softmax";
  const int64_t n = o.smoke ? 67 : 8192, d = o.smoke ? 1023 : 8192;
  r.what = "softmax over the last dim, " + std::to_string(n) + "x" + std::to_string(d) + " f32";
  const kiln::Tensor x = hashed({n, d}, 102, 4.0);
  r.bytes = 8.0 * double(n * d);
  run_function(r, softmax_function(n, d), {x}, o, [&](const kiln::Tensor& y) {
    return check_rows(x, y, [](const float* row, int64_t cols, std::vector<double>& out) {
      double mx = -INFINITY, sum = 0;
      for (int64_t c = 0; c < cols; ++c) mx = std::max(mx, double(row[c]));
      for (int64_t c = 0; c < cols; ++c) sum += out[size_t(c)] = std::exp(row[c] - mx);
      for (double& v : out) v /= sum;
    });
  });
  return r;
}

GpuRow layer_norm_row(const Options& o) {
  GpuRow r;
  r.name = "layer_norm";
  const int64_t n = o.smoke ? 67 : 8192, d = o.smoke ? 1023 : 8192;
  r.what = "layer norm over the last dim, " + std::to_string(n) + "x" + std::to_string(d) + " f32";
  const kiln::Tensor x = hashed({n, d}, 103, 2.0, 0.5);
  const kiln::Tensor w = hashed({d}, 104, 0.25, 1.0), b = hashed({d}, 105, 0.25);
  r.bytes = 8.0 * double(n * d);
  run_function(r, layer_norm_function(n, d), {x, w, b}, o, [&](const kiln::Tensor& y) {
    const float *wp = w.data<float>(), *bp = b.data<float>();
    return check_rows(x, y, [&](const float* row, int64_t cols, std::vector<double>& out) {
      double mean = 0, var = 0;
      for (int64_t c = 0; c < cols; ++c) mean += row[c];
      mean /= double(cols);
      for (int64_t c = 0; c < cols; ++c) var += (row[c] - mean) * (row[c] - mean);
      const double inv = 1.0 / std::sqrt(var / double(cols) + 1e-5);
      for (int64_t c = 0; c < cols; ++c) out[size_t(c)] = (row[c] - mean) * inv * wp[c] + bp[c];
    });
  });
  return r;
}

// a[M, K] @ b[K, N] in `dtype` (f32 or bf16; bf16 accumulates in f32 and
// rounds its output to bf16, so its tolerance is bf16's).
GpuRow gemm_row(const Options& o, kiln::DType dtype) {
  GpuRow r;
  const bool bf16 = dtype == kiln::DType::BF16;
  r.name = bf16 ? "bf16_gemm" : "sgemm";
  const int64_t m = o.smoke ? 67 : 4096, k = o.smoke ? 129 : 4096, n = o.smoke ? 95 : 4096;
  r.what = std::string(bf16 ? "bf16" : "f32") + " matmul " + std::to_string(m) + "x" +
           std::to_string(k) + " @ " + std::to_string(k) + "x" + std::to_string(n);
  kiln::Builder b(r.name);
  kiln::Var a = b.input("a", dtype, {m, k});
  kiln::Var w = b.input("b", dtype, {k, n});
  const kiln::Function f = b.build({kiln::matmul(a, w)});
  // The inputs as the function sees them, and as f32 for the reference.
  const kiln::Tensor a_in = hashed({m, k}, 106).to(dtype), b_in = hashed({k, n}, 107).to(dtype);
  const kiln::Tensor a32 = a_in.to(kiln::DType::F32), b32 = b_in.to(kiln::DType::F32);
  r.flops = 2.0 * double(m) * double(n) * double(k);
  run_function(r, f, {a_in, b_in}, o, [&](const kiln::Tensor& y) {
    const kiln::Tensor y32 = y.to(kiln::DType::F32);
    SampleCheck chk(bf16 ? 1e-2 : 1e-4);
    for (int64_t s = 0; s < 64; ++s) {
      const int64_t i = int64_t(hash32(108, uint64_t(s)) % uint64_t(m));
      const int64_t j = int64_t(hash32(109, uint64_t(s)) % uint64_t(n));
      double want = 0;
      for (int64_t kk = 0; kk < k; ++kk)
        want += double(a32.data<float>()[i * k + kk]) * b32.data<float>()[kk * n + j];
      chk.add(y32.data<float>()[i * n + j], want);
    }
    return chk.max_err();
  });
  return r;
}

GpuRow model_row(const Options& o, const std::string& name) {
  GpuRow r;
  r.name = name;
  const ModelCase c = model_case(name, o.smoke);
  r.what = (name == "mlp_issue6" ? "examples/mlp.kiln: " : "examples/" + name + ".kiln: ") + c.shapes;
  r.flops = c.flops;
  run_function(r, c.fn, c.inputs, o, c.check);
  return r;
}

// Host overhead per call: a one-element kernel called back to back; each
// sample is the mean over 200 calls (then one wait).
GpuRow launch_row(const Options& o) {
  GpuRow r;
  r.name = "launch";
  r.what = "y = x + 1 on one f32 element: host time per call (1 kernel), mean of 200";
  const kiln::Device device = kiln::Device::cuda(o.device);
  kiln::Builder b("launch");
  kiln::Var x = b.input("x", kiln::DType::F32, {1});
  kiln::CompileOptions co;
  co.device = device;
  kiln::CompiledFunction cf = kiln::compile(b.build({x + 1.0}), co);
  r.kernels = cf.num_kernels();
  const std::vector<kiln::Tensor> in = {kiln::Tensor::full({1}, 2.0).to(device)};
  r.max_err = cf(in).at(0).to(kiln::Device::cpu()).data<float>()[0] == 3.0f ? 0 : 1e30;
  runtime::cuda::CudaRuntime& rt = runtime::cuda::cuda_runtime(o.device);
  const int calls = o.smoke ? 10 : 200;
  for (int i = 0; i < calls; ++i) cf(in);
  rt.synchronize();
  for (int rep = 0; rep < (o.smoke ? 2 : 15); ++rep) {
    const int64_t t0 = monotonic_ns();
    for (int i = 0; i < calls; ++i) cf(in);
    rt.synchronize();
    r.time.seconds.push_back(static_cast<double>(monotonic_ns() - t0) * 1e-9 / calls);
  }
  return r;
}

GpuRow guarded(const std::string& name, const std::function<GpuRow()>& row) {
  try {
    return row();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kiln_gpu_bench: row %s failed: %s\n", name.c_str(), e.what());
    GpuRow r;
    r.name = name;
    r.error = e.what();
    return r;
  }
}

}  // namespace

std::vector<GpuRow> device_rows(const Options& o) {
  // Each row's full-size description; the row itself says its exact sizes.
  const std::vector<std::pair<std::string, std::string>> table = {
      {"copy", "device-to-device copy, 2^26 f32"},
      {"chain", "elementwise chain, 2^26 f32"},
      {"softmax", "softmax over the last dim, 8192x8192 f32"},
      {"layer_norm", "layer norm over the last dim, 8192x8192 f32"},
      {"sgemm", "f32 matmul 4096^3"},
      {"bf16_gemm", "bf16 matmul 4096^3"},
      {"mlp_issue6", "examples/mlp.kiln, 256x1024 -> 4096 -> 1024"},
      {"transformer", "examples/transformer.kiln, 8x128x256, 4 heads"},
      {"launch", "y = x + 1 on one f32 element: host time per call"}};
  std::vector<GpuRow> rows;
  const std::string why = device_unavailable(o.device);
  for (const auto& entry : table) {
    const std::string& name = entry.first;  // captured below (not a structured binding: C++17/clang 14)
    if (!why.empty()) {
      GpuRow r;
      r.name = name;
      r.what = entry.second;
      r.not_measured = "cuda:" + std::to_string(o.device) + " unavailable: " + why;
      rows.push_back(r);
      continue;
    }
    rows.push_back(guarded(name, [&]() -> GpuRow {
      if (name == "copy") return copy_row(o);
      if (name == "chain") return chain_row(o);
      if (name == "softmax") return softmax_row(o);
      if (name == "layer_norm") return layer_norm_row(o);
      if (name == "sgemm") return gemm_row(o, kiln::DType::F32);
      if (name == "bf16_gemm") return gemm_row(o, kiln::DType::BF16);
      if (name == "launch") return launch_row(o);
      return model_row(o, name);
    }));
    std::fprintf(stderr, "kiln_gpu_bench: %s done\n", name.c_str());
  }
  return rows;
}

Json row_json(const GpuRow& r) {
  Json j;
  j.str("what", r.what);
  if (!r.not_measured.empty()) return j.str("not_measured", r.not_measured);
  if (!r.error.empty()) j.str("error", r.error);
  if (!r.time.seconds.empty()) j.samples("time", r.time);
  j.num("bytes", r.bytes).num("flops", r.flops).num("max_err", r.max_err);
  j.num("kernels", r.kernels).num("compile_s", r.compile_s).str("algorithm", r.algorithm);
  if (r.nvrtc_cold_s > 0) j.num("nvrtc_cold_s", r.nvrtc_cold_s).num("disk_load_s", r.disk_load_s);
  return j;
}

}  // namespace kiln::bench::gpu
