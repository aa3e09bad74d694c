// `kiln run FILE`: loads a .kir graph or a script def, builds its inputs from
// --input specs, runs it on a backend and writes or summarizes the outputs.
// By default the function is compiled (kiln::compile: LLVM when built with it)
// for the host; --device picks another device, --backend=interp runs the
// reference interpreter instead.
#include <algorithm>
#include <chrono>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>

#include "kiln/compile.h"

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

    "  --check              compare the backend against the reference interpreter\n"
    "  --seed S             seed for generated inputs (default 0; input i uses S+i)\n"
    "  --bench N            after a warm-up run, time N runs; prints to stderr\n"
    "                       bench: compile_ms=X median_ms=Y min_ms=Z runs=N\n"
    "  --profile            after the run, profile one more call and print, per\n"
    "                       kernel: time and share of the call, category,\n"
    "                       algorithm, bytes, flops, GB/s, GFLOP/s and the share\n"
    "                       of the machine's measured bandwidth and FMA peak\n"
    "                       (docs/profiling.md)\n"
    "  --trace FILE.json    write that profiled call as a Chrome/Perfetto\n"
    "                       trace-event file (kernels, parallel chunks per thread)\n";

constexpr const char* kHelpTail =
    "  -h, --help           show this help\n"
    "\n"
    "Before compiling, the graph pipeline (type inference, canonicalization,\n"
    "constant folding, simplification, CSE, DCE) runs on the function, for every\n"
    "backend; --check still compares with the interpreter on the graph as given.\n";

// Largest |a - b| over all elements (NaN where exactly one side is NaN counts
// as infinite); shapes and dtypes must agree.
double max_abs_err(const Tensor& a, const Tensor& b) {
  KILN_USER_CHECK(a.sizes() == b.sizes() && a.dtype() == b.dtype(),
                  "check: backend output " << shape_str(a.sizes()) << " " << dtype_name(a.dtype())
                                           << " differs from the interpreter's "
                                           << shape_str(b.sizes()) << " " << dtype_name(b.dtype()));
  Tensor x = a.contiguous().to(DType::F64), y = b.contiguous().to(DType::F64);
  const double* px = x.data<double>();
  const double* py = y.data<double>();
  double worst = 0;
  for (int64_t i = 0; i < x.numel(); ++i) {
    bool nx = std::isnan(px[i]), ny = std::isnan(py[i]);
    if (nx && ny) continue;
    if (nx != ny) return INFINITY;
    if (px[i] == py[i]) continue;  // equal infinities
    worst = std::max(worst, std::fabs(px[i] - py[i]));
  }
  return worst;
}

double ms_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

}  // namespace

int cmd_run(const Args& args) {
  ArgReader r("run", args);
  std::optional<std::string> file;
  std::string fn;
  std::vector<InputArg> inputs;
  std::vector<std::string> output_paths;
  bool check = false;
  uint64_t seed = 0;
  int64_t bench = 0;
  bool profile = false;
  std::optional<std::string> trace_path;
  OptimizeOptions opt;
  CompileOptions options;
  while (!r.done()) {
    if (r.help()) {
      std::fputs(kHelp, stdout);
      std::fputs(device_flags_help().c_str(), stdout);
      std::fputs(autotune_flags_help().c_str(), stdout);
      std::fputs(pipeline_flags_help("(on stderr)").c_str(), stdout);
      std::fputs(kHelpTail, stdout);
      return 0;
    }
    if (auto v = r.value({"fn", "entry"})) {
      fn = *v;
    } else if (auto v = r.value({"input"})) {
      inputs.push_back(split_input(*v));
    } else if (auto v = r.value({"output"})) {
      output_paths.push_back(*v);
    } else if (read_device_flag(r, &options)) {
    } else if (read_pipeline_flag(r, &opt)) {
    } else if (read_autotune_flag(r, &options)) {
    } else if (r.flag("check")) {
      check = true;
    } else if (auto v = r.value({"seed"})) {
      int64_t s = std::get<int64_t>(parse_value("--seed", *v, ParamKind::Int).storage());
      KILN_USER_CHECK(s >= 0, "run: --seed must be >= 0, got " << s);
      seed = static_cast<uint64_t>(s);
    } else if (auto v = r.value({"bench"})) {
      bench = std::get<int64_t>(parse_value("--bench", *v, ParamKind::Int).storage());
      KILN_USER_CHECK(bench >= 1, "run: --bench needs a run count >= 1, got " << bench);
    } else if (r.flag("profile")) {
      profile = true;
    } else if (auto v = r.value({"trace"})) {
      KILN_USER_CHECK(!v->empty(), "run: --trace needs a file name");
      trace_path = *v;
    } else if (auto p = r.positional(); p && !file) {
      file = p;
    } else {
      r.unknown();
    }
  }
  KILN_USER_CHECK(file, "run: missing FILE (see 'kiln run --help')");

  auto start = std::chrono::steady_clock::now();
  Program program = load_program(*file);
  double load_ms = ms_since(start);
  Bound bound = bind_program(program, fn, inputs, seed, /*make_tensors=*/true);
  double compile_ms = load_ms + bound.lower_ms;

  size_t num_outputs = bound.fn.outputs().size();
  KILN_USER_CHECK(output_paths.size() <= num_outputs,
                  "run: " << output_paths.size() << " --output paths given, but @"
                          << bound.fn.name() << " returns " << num_outputs << " value(s)");

  // Tuning measures at the sizes given here (symbolic dims included).
  options.example_shapes = shapes_of(bound.tensors);
  auto compile_start = std::chrono::steady_clock::now();
  // The driver runs the graph pipeline itself so its printing flags work;
  // compile() then skips it.
  options.optimize = false;
  opt.log = &std::cerr;
  std::fflush(stdout);
  Function optimized = optimize(bound.fn, opt);
  options.passes = opt;  // the loop pipeline's printing and timing
  CompiledFunction compiled = compile(optimized, options);
  compile_ms += ms_since(compile_start);

  std::vector<Tensor> outs = compiled(bound.tensors);
  std::vector<double> times;
  for (int64_t i = 0; i < bench; ++i) {
    auto t = std::chrono::steady_clock::now();
    outs = compiled(bound.tensors);
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
    std::vector<Tensor> want = bound.fn.run_interpreter(bound.tensors);
    double worst = 0;
    for (size_t i = 0; i < outs.size(); ++i) worst = std::max(worst, max_abs_err(outs[i], want[i]));
    std::fprintf(stderr, "check: %s vs interpreter: max_abs_err=%g\n", compiled.backend().c_str(),
                 worst);
  }
  if (profile || trace_path) {
    // A call after the first: buffers and code are warm, as in a steady loop.
    CallProfile prof;
    compiled.profile(bound.tensors, &prof);
    if (profile) {
      std::fputs(prof.table().c_str(), stdout);
      std::fflush(stdout);
    }
    if (trace_path) {
      std::ofstream f(*trace_path, std::ios::binary | std::ios::trunc);
      KILN_USER_CHECK(f, "run: cannot write trace '" << *trace_path << "': " << std::strerror(errno));
      f << prof.trace_json();
      f.close();
      KILN_USER_CHECK(f, "run: writing trace '" << *trace_path << "' failed");
    }
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
