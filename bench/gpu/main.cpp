// kiln_gpu_bench — Kiln's side of the GPU bench (issue 12, item 8): the rows
// of gpu_rows.h as one JSON object, which bench/gpu/report_gpu.py merges with
// bench/gpu/peers_gpu.py's (cuBLAS, cuBLASLt, PyTorch eager and
// torch.compile on the same device) into the table. scripts/gpu-check runs
// all three on the GPU machine.
//
//   kiln_gpu_bench [--smoke] [--device N] [--budget S] [--only device|compile] [--json FILE]
//
// --smoke: small sizes, a few repetitions (a check that the bench builds and
// runs, not a measurement; the test suite runs it without a GPU, where the
// device rows say why they were not measured). Exits non-zero when a row
// that ran failed (an error or a wrong output); rows not measured are not
// failures.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <unistd.h>

#include "bench/gpu/gpu_rows.h"
#include "kiln/kiln.h"

namespace {

int usage() {
  std::fprintf(stderr,
               "usage: kiln_gpu_bench [--smoke] [--device N] [--budget SECONDS] "
               "[--only device|compile] [--json FILE]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace kiln::bench;
  gpu::Options o;
  o.budget.seconds = 1.0;
  o.budget.min_reps = 3;
  o.budget.max_reps = 100;
  std::string json_path, only;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--smoke") {
      o.smoke = true;
    } else if (a == "--device") {
      o.device = std::atoi(value().c_str());
    } else if (a == "--budget") {
      o.budget.seconds = std::atof(value().c_str());
    } else if (a == "--only") {
      only = value();
    } else if (a == "--json") {
      json_path = value();
    } else {
      return usage();
    }
  }
  if (o.smoke) {
    o.budget.seconds = 0.01;
    o.budget.min_reps = 2;
    o.budget.max_reps = 3;
  }
  // The compile rows' disk cache: a directory of this run's own, set before
  // Kiln's first call (the disk cache reads it once).
  char dir_template[] = "/tmp/kiln-gpu-bench-XXXXXX";
  const char* cache_dir = mkdtemp(dir_template);
  if (!cache_dir) {
    std::perror("kiln_gpu_bench: mkdtemp");
    return 1;
  }
  setenv("KILN_CACHE_DIR", cache_dir, 1);
  unsetenv("KILN_CACHE");

  std::vector<gpu::GpuRow> rows;
  if (only.empty() || only == "device") {
    for (gpu::GpuRow& r : gpu::device_rows(o)) rows.push_back(std::move(r));
  }
  if (only.empty() || only == "compile") {
    for (gpu::GpuRow& r : gpu::compile_rows(o)) rows.push_back(std::move(r));
  }
  std::error_code ec;
  std::filesystem::remove_all(cache_dir, ec);

  std::string device_name = "cuda:" + std::to_string(o.device) + " (unavailable)";
  for (const kiln::DeviceInfo& d : kiln::devices()) {
    if (d.device == kiln::Device::cuda(o.device) && d.available) device_name = d.name;
  }
  Json rows_json;
  bool ok = true;
  for (const gpu::GpuRow& r : rows) {
    rows_json.obj(r.name, gpu::row_json(r));
    if (!r.error.empty()) ok = false;
  }
  Json top;
  top.str("tool", "kiln_gpu_bench").str("device", device_name).boolean("smoke", o.smoke);
  top.boolean("ok", ok).obj("rows", rows_json);
  const std::string text = top.dump() + "\n";
  if (json_path.empty()) {
    std::cout << text;
  } else {
    std::ofstream(json_path) << text;
  }
  return ok ? 0 : 1;
}
