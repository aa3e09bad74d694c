// `kiln run FILE`: loads a .kir graph or a script def, builds its inputs from
// --input specs, runs it on a backend and writes or summarizes the outputs.
// Only the reference interpreter exists today; the backend and device tables
// below are where the compiled backends will slot in.
#include <algorithm>
#include <chrono>
#include <cstdio>

#include "tools/driver.h"

namespace kiln::cli {

namespace {

constexpr const char* kHelp =
    "usage: kiln run FILE [options]\n"
    "\n"
    "Runs a function on inputs and prints or writes its outputs. FILE is a .kir\n"
    "graph or a script (.kiln, .py); for a script, the def is specialized for the\n"
    "given inputs (tensor shapes and non-tensor values).\n"
    "\n"
    "options:\n"
    "  --fn NAME            the script def to run (default: the last one);\n"
    "                       --entry is an alias\n"
    "  --input NAME=SPEC    one argument, by parameter name, in any order. SPEC is\n"
    "                       PATH.npy, a generator KIND:DTYPE:DIMS with KIND one of\n"
    "                       randn, rand, zeros, ones, arange (randn:f32:32x784,\n"
    "                       rand:f16:7, zeros:i64:3x4; 0-dim: randn:f32: or\n"
    "                       randn:f32:scalar; a bare KIND takes the declared type),\n"
    "                       or a value for a non-tensor parameter (dim=1, eps=1e-5,\n"
    "                       flag=true, shape=[2,3], mode=floor)\n"
    "  --output PATH.npy    write the next output there (one per output, in order;\n"
    "                       outputs without one are summarized)\n"
    "  --backend NAME       interp (default; the reference interpreter)\n"
    "  --device DEV         cpu (default) or cuda\n"
    "  --check              compare the backend against the reference interpreter\n"
    "  --seed S             seed for generated inputs (default 0; input i uses S+i)\n"
    "  --bench N            after a warm-up run, time N runs; prints to stderr\n"
    "                       bench: compile_ms=X median_ms=Y min_ms=Z runs=N\n"
    "  -h, --help           show this help\n";

struct Backend {
  const char* name;
  const char* what;
};
// Known backends; the compiled CPU (llvm) and GPU (cuda) backends join here.
constexpr Backend kBackends[] = {
    {"interp", "reference interpreter"},
};

std::string backend_names() {
  std::string s;
  for (const Backend& b : kBackends) s += (s.empty() ? "" : ", ") + std::string(b.name);
  return s;
}

void check_backend(const std::string& name) {
  for (const Backend& b : kBackends) {
    if (name == b.name) return;
  }
  KILN_USER_ERROR("unknown backend '" << name << "'; known backends: " << backend_names());
}

void check_device(const std::string& dev) {
  if (dev == "cpu") return;
  KILN_USER_CHECK(!(dev == "cuda" || dev.starts_with("cuda:")),
                  "cuda device unavailable: Kiln was built without the CUDA backend");
  KILN_USER_ERROR("unknown device '" << dev << "'; known devices: cpu, cuda");
}

double ms_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

}  // namespace

int cmd_run(const Args& args) {
  ArgReader r("run", args);
  std::optional<std::string> file;
  std::string fn, backend = "interp", device = "cpu";
  std::vector<InputArg> inputs;
  std::vector<std::string> output_paths;
  bool check = false;
  uint64_t seed = 0;
  int64_t bench = 0;
  while (!r.done()) {
    if (r.help()) {
      std::fputs(kHelp, stdout);
      return 0;
    }
    if (auto v = r.value({"fn", "entry"})) {
      fn = *v;
    } else if (auto v = r.value({"input"})) {
      inputs.push_back(split_input(*v));
    } else if (auto v = r.value({"output"})) {
      output_paths.push_back(*v);
    } else if (auto v = r.value({"backend"})) {
      backend = *v;
    } else if (auto v = r.value({"device"})) {
      device = *v;
    } else if (r.flag("check")) {
      check = true;
    } else if (auto v = r.value({"seed"})) {
      int64_t s = std::get<int64_t>(parse_value("--seed", *v, ParamKind::Int).storage());
      KILN_USER_CHECK(s >= 0, "run: --seed must be >= 0, got " << s);
      seed = static_cast<uint64_t>(s);
    } else if (auto v = r.value({"bench"})) {
      bench = std::get<int64_t>(parse_value("--bench", *v, ParamKind::Int).storage());
      KILN_USER_CHECK(bench >= 1, "run: --bench needs a run count >= 1, got " << bench);
    } else if (auto p = r.positional(); p && !file) {
      file = p;
    } else {
      r.unknown();
    }
  }
  KILN_USER_CHECK(file, "run: missing FILE (see 'kiln run --help')");
  check_backend(backend);
  check_device(device);

  auto start = std::chrono::steady_clock::now();
  Program program = load_program(*file);
  double load_ms = ms_since(start);
  Bound bound = bind_program(program, fn, inputs, seed, /*make_tensors=*/true);
  double compile_ms = load_ms + bound.lower_ms;

  size_t num_outputs = bound.fn.outputs().size();
  KILN_USER_CHECK(output_paths.size() <= num_outputs,
                  "run: " << output_paths.size() << " --output paths given, but @"
                          << bound.fn.name() << " returns " << num_outputs << " value(s)");

  std::vector<Tensor> outs = bound.fn.run_interpreter(bound.tensors);
  std::vector<double> times;
  for (int64_t i = 0; i < bench; ++i) {
    auto t = std::chrono::steady_clock::now();
    outs = bound.fn.run_interpreter(bound.tensors);
    times.push_back(ms_since(t));
  }

  for (size_t i = 0; i < outs.size(); ++i) {
    std::vector<Dim> dims(outs[i].sizes().begin(), outs[i].sizes().end());
    std::string type = TensorSpec{outs[i].dtype(), dims}.str();
    if (i < output_paths.size()) {
      write_npy(output_paths[i], outs[i]);
      std::printf("output %zu: %s -> %s\n", i, type.c_str(), output_paths[i].c_str());
    } else {
      std::printf("output %zu: %s\n", i, tensor_summary(outs[i]).c_str());
    }
  }
  std::fflush(stdout);
  if (check) {
    // The interpreter is the reference, so it agrees with itself exactly.
    std::fprintf(stderr, "check: interpreter is the reference; max_abs_err=0\n");
  }
  if (bench > 0) {
    std::sort(times.begin(), times.end());
    size_t n = times.size();
    double median = n % 2 ? times[n / 2] : (times[n / 2 - 1] + times[n / 2]) / 2;
    std::fprintf(stderr, "bench: compile_ms=%.3f median_ms=%.3f min_ms=%.3f runs=%lld\n",
                 compile_ms, median, times.front(), static_cast<long long>(n));
  }
  return 0;
}

}  // namespace kiln::cli
