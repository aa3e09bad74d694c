// Compile latency of the elementwise chain kernel (kiln_rows.h: chain_function).
//
// (1) first compile in a fresh process: the parent spawns `kiln_bench
//     --first-compile` with KILN_CACHE=off; the child stamps CLOCK_MONOTONIC at
//     main entry, right before its first Kiln call and after compile() returns.
//     "In-process" is first Kiln call -> compiled (LLVM start-up included);
//     "from spawn" is the parent's stamp before posix_spawn -> compiled (adds
//     exec, dynamic loading and static initialisers).
// (2) cold compile once started: in-memory cache cleared, disk cache off.
// (3) load from the disk cache: in-memory cache cleared, disk cache on
//     (KILN_CACHE_DIR is a temporary directory main() made).
// (4) in-memory hit: the same compile() again with nothing cleared.
// Every compile() runs the whole pipeline up to the cache lookup (the key is
// the scheduled loop IR), so (3) and (4) include lowering and scheduling.
// (5) cold compiles of models whose depth repeats one piece (issue 14, item
//     5): one layer of examples/transformer.kiln, a stack of 12 such layers
//     sharing their weights, and tests/models/lstm.py unrolled over 128 steps;
//     identical kernels are generated once, so depth costs graph passes and
//     lowering, not code generation.
#include "bench/compile_latency.h"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "bench/kiln_rows.h"
#ifndef KILN_SOURCE_DIR
#error "KILN_SOURCE_DIR must name the source tree (bench/CMakeLists.txt sets it)"
#endif
#include "kiln/kiln.h"
#include "runtime/kernel_cache.h"

extern char** environ;

namespace kiln::bench {

namespace {

constexpr int64_t kChainN = int64_t(1) << 24;

kiln::CompileOptions options(bool disk) {
  kiln::CompileOptions o;
  o.use_cache = true;
  o.disk_cache = disk;
  return o;
}

double since(int64_t t0) {
  return static_cast<double>(monotonic_ns() - t0) * 1e-9;
}

// Reads "key": number from the child's one-line JSON.
bool field(const std::string& json, const std::string& key, double* out) {
  size_t at = json.find("\"" + key + "\":");
  if (at == std::string::npos) return false;
  *out = std::strtod(json.c_str() + at + key.size() + 3, nullptr);
  return true;
}

bool dir_has_files(const char* dir) {
  std::error_code ec;
  if (!dir) return false;
  for (auto it = std::filesystem::recursive_directory_iterator(dir, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    if (it->is_regular_file(ec)) return true;
  }
  return false;
}

std::string read_source(const std::string& relative) {
  std::ifstream in(std::string(KILN_SOURCE_DIR) + "/" + relative);
  if (!in) throw kiln::Error("compile_latency: cannot read " + relative);
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

// examples/transformer.kiln's layer applied `layers` times with one set of
// weights (the example's comment shapes: 2x16x64, 4 heads).
kiln::Function transformer_stack(int layers) {
  const std::string source = read_source("examples/transformer.kiln") + R"(

def transformer_stack(x: Tensor, ln1_w: Tensor, ln1_b: Tensor, w_qkv: Tensor, b_qkv: Tensor,
                      w_o: Tensor, b_o: Tensor, ln2_w: Tensor, ln2_b: Tensor,
                      w_up: Tensor, b_up: Tensor, w_down: Tensor, b_down: Tensor,
                      heads: int = 4, layers: int = 12) -> Tensor:
    for i in range(layers):
        x = transformer_layer(x, ln1_w, ln1_b, w_qkv, b_qkv, w_o, b_o, ln2_w, ln2_b,
                              w_up, b_up, w_down, b_down, heads)
    return x
)";
  const int64_t b = 2, t = 16, c = 64;
  auto f32 = [](const char* name, std::vector<kiln::Dim> dims) {
    return kiln::bind_tensor(name, kiln::DType::F32, std::move(dims));
  };
  return kiln::Script::from_source(source, "transformer_stack.kiln")
      .lower("transformer_stack",
             {f32("x", {b, t, c}), f32("ln1_w", {c}), f32("ln1_b", {c}),
              f32("w_qkv", {3 * c, c}), f32("b_qkv", {3 * c}), f32("w_o", {c, c}),
              f32("b_o", {c}), f32("ln2_w", {c}), f32("ln2_b", {c}), f32("w_up", {4 * c, c}),
              f32("b_up", {4 * c}), f32("w_down", {c, 4 * c}), f32("b_down", {c}),
              kiln::bind_value("heads", int64_t{4}), kiln::bind_value("layers", int64_t(layers))});
}

// tests/models/lstm.py over `steps` time steps: batch 4, input and hidden 32.
kiln::Function lstm(int64_t steps) {
  const int64_t b = 4, in = 32, h = 32;
  auto f32 = [](const char* name, std::vector<kiln::Dim> dims) {
    return kiln::bind_tensor(name, kiln::DType::F32, std::move(dims));
  };
  return kiln::Script::from_source(read_source("tests/models/lstm.py"), "lstm.py")
      .lower("lstm", {f32("input", {steps, b, in}), f32("hx", {b, h}), f32("cx", {b, h}),
                      f32("w_ih", {4 * h, in}), f32("w_hh", {4 * h, h}), f32("b_ih", {4 * h}),
                      f32("b_hh", {4 * h})});
}

}  // namespace

Json run_model_compile_latency(int reps, bool smoke) {
  struct Row {
    const char* name;
    kiln::Function f;
  };
  std::vector<Row> rows = {{"transformer_1", transformer_stack(1)},
                           {"transformer_12", transformer_stack(smoke ? 2 : 12)},
                           {"lstm_128", lstm(smoke ? 4 : 128)}};
  runtime::KernelCache& cache = runtime::KernelCache::global();
  Json j;
  for (const Row& r : rows) {
    Samples s;
    int kernels = 0;
    for (int i = 0; i < reps; ++i) {
      cache.clear();
      int64_t t0 = monotonic_ns();
      kernels = kiln::compile(r.f, options(false)).num_kernels();
      s.seconds.push_back(since(t0));
    }
    Json row;
    row.samples("cold", s).num("kernels", double(kernels));
    j.obj(r.name, row);
  }
  return j;
}

int first_compile_child(int64_t t_main_ns) {
  try {
    int64_t t_kiln = monotonic_ns();
    kiln::CompiledFunction cf = kiln::compile(chain_function(kChainN), options(/*disk=*/false));
    int64_t t_done = monotonic_ns();
    std::printf(
        "{\"t_main_ns\": %lld, \"t_kiln_ns\": %lld, \"t_done_ns\": %lld, \"kernels\": %d}\n",
        static_cast<long long>(t_main_ns), static_cast<long long>(t_kiln),
        static_cast<long long>(t_done), cf.num_kernels());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kiln_bench --first-compile: %s\n", e.what());
    return 1;
  }
}

Json run_first_compile(const std::string& self, int reps) {
  std::vector<std::string> env_store;
  for (char** e = environ; *e; ++e) {
    std::string kv = *e;
    if (kv.rfind("KILN_CACHE=", 0) != 0) env_store.push_back(kv);
  }
  env_store.push_back("KILN_CACHE=off");
  std::vector<char*> envp;
  for (std::string& s : env_store) envp.push_back(s.data());
  envp.push_back(nullptr);

  Samples in_process, from_spawn, from_main;
  std::string error;
  for (int i = 0; i < reps && error.empty(); ++i) {
    int fds[2];
    if (pipe(fds) != 0) {
      error = "pipe failed";
      break;
    }
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
    posix_spawn_file_actions_addclose(&actions, fds[0]);
    std::string arg0 = self, arg1 = "--first-compile";
    char* argv[] = {arg0.data(), arg1.data(), nullptr};
    pid_t pid = 0;
    int64_t t_spawn = monotonic_ns();
    int rc = posix_spawn(&pid, self.c_str(), &actions, nullptr, argv, envp.data());
    posix_spawn_file_actions_destroy(&actions);
    close(fds[1]);
    std::string out;
    char buf[512];
    ssize_t got = 0;
    while (rc == 0 && (got = read(fds[0], buf, sizeof buf)) > 0) out.append(buf, size_t(got));
    close(fds[0]);
    int status = 0;
    if (rc == 0) waitpid(pid, &status, 0);
    double t_main = 0, t_kiln = 0, t_done = 0;
    if (rc != 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0 ||
        !field(out, "t_main_ns", &t_main) || !field(out, "t_kiln_ns", &t_kiln) ||
        !field(out, "t_done_ns", &t_done)) {
      error = "child failed (spawn rc " + std::to_string(rc) + ", output '" + out + "')";
      break;
    }
    in_process.seconds.push_back((t_done - t_kiln) * 1e-9);
    from_main.seconds.push_back((t_done - t_main) * 1e-9);
    from_spawn.seconds.push_back((t_done - double(t_spawn)) * 1e-9);
  }
  Json j;
  if (!error.empty()) return j.str("error", error);
  return j.samples("in_process", in_process)
      .samples("from_main", from_main)
      .samples("from_spawn", from_spawn);
}

Json run_compile_latency(int reps) {
  kiln::Function f = chain_function(kChainN);
  runtime::KernelCache& cache = runtime::KernelCache::global();
  kiln::compile(f, options(false));  // LLVM is started; (1) measures start-up

  // The cache is cleared outside the timed region: only compile() is timed.
  auto cleared_compiles = [&](bool disk) {
    Samples s;
    for (int i = 0; i < reps; ++i) {
      cache.clear();
      int64_t t0 = monotonic_ns();
      kiln::compile(f, options(disk));
      s.seconds.push_back(since(t0));
    }
    return s;
  };
  Samples cold = cleared_compiles(false);

  Json j;
  j.samples("cold", cold);

  const char* dir = std::getenv("KILN_CACHE_DIR");
  cache.clear();
  kiln::compile(f, options(true));  // writes the disk entry
  if (!dir_has_files(dir)) {
    // No disk cache behind the switch (or it failed): say so rather than
    // report in-memory-cleared compiles as disk loads.
    j.str("disk_note",
          std::string("nothing written under KILN_CACHE_DIR=") + (dir ? dir : "(unset)"));
  } else {
    j.samples("disk", cleared_compiles(true));
  }

  kiln::compile(f, options(false));
  Samples memory = time_reps(3, reps, [&] { kiln::compile(f, options(false)); });
  j.samples("memory", memory);
  j.num("stats_hits", double(cache.stats().hits)).num("stats_misses", double(cache.stats().misses));
  return j;
}

}  // namespace kiln::bench
