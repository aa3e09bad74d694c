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
#include "bench/compile_latency.h"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "bench/kiln_rows.h"
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

}  // namespace

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
