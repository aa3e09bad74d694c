// kiln_bench — Kiln's side of bench/: the machine's limits (STREAM triad, FMA
// peak), Kiln's throughput, contraction and model rows, oneDNN's SGEMM and
// compile latency, printed as one JSON object that scripts/bench merges with
// bench/peers.py's output into the table.
//
//   kiln_bench [--quick | --smoke] [--threads N] [--json FILE] [--only GROUPS]
//   kiln_bench --first-compile          (internal: one fresh-process compile)
//
// --quick keeps every size and runs fewer repetitions; --smoke runs tiny sizes
// once and exits non-zero if any result is wrong (a check that the bench builds
// and runs, not a measurement). --only runs some groups (comma-separated:
// bandwidth, fma, sgemm, conv, mlp, examples, rewrites, compile, compile_models; for
// working on one row, scripts/bench always runs all). The thread count (default 2) goes to the
// triad, the FMA peak, oneDNN and Kiln's pool through KILN_NUM_THREADS, which
// must be set before Kiln's first call, hence here.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "bench/bench_util.h"
#include "bench/compile_latency.h"
#include "bench/contraction_rows.h"
#include "bench/fma_peak.h"
#include "bench/kiln_rows.h"
#include "bench/model_rows.h"
#include "bench/rewrite_rows.h"
#include "bench/stream_triad.h"
#include "kiln/kiln.h"
#include "runtime/thread_pool.h"

namespace {

using kiln::bench::Json;

Json row_json(const kiln::bench::RowResult& r) {
  Json j;
  return j.samples("time", r.samples)
      .num("bytes", r.bytes)
      .num("max_err", r.max_err)
      .boolean("ok", r.ok)
      .num("kernels", r.kernels)
      .num("compile_s", r.compile_s)
      .num("flops", r.flops)
      .num("input_sum", r.input_sum)
      .str("algorithm", r.algorithm);
}

Json fma_json(const kiln::bench::FmaPeakResult& r) {
  Json j;
  return j.samples("time", r.samples)
      .num("flops", r.flops)
      .num("threads", r.threads)
      .boolean("ok", r.ok);
}

// A row that throws is reported as {"error": ...} and the other rows still
// run. For Kiln's side (an op it cannot compile, a script it cannot lower)
// that is a failure (*all_ok = false); for a peer's (oneDNN: all_ok null) it
// only makes the row "not measured".
Json guarded(const std::function<Json()>& row, bool* all_ok) {
  try {
    return row();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kiln_bench: row failed: %s\n", e.what());
    if (all_ok) *all_ok = false;
    Json j;
    return j.str("error", e.what());
  }
}

Json model_json(const kiln::bench::ModelResult& m) {
  return row_json(m.row).num("kernels_unfused", m.kernels_unfused).str("shapes", m.shapes);
}

// FMA peak on 1 thread and on `threads`: 2^18 steps of 16 chains take ~0.5 ms
// on a 4.5 GHz core with two 512-bit FMA pipes (tiny for --smoke). Many short
// calls rather than a few long ones: on a shared machine only a short call
// finds both cores free, and the best of them is the peak.
Json fma_group(int threads, bool smoke, const kiln::bench::Plan& plan, bool* all_ok) {
  std::fprintf(stderr, "kiln_bench: fma peak...\n");
  const int64_t iters = smoke ? int64_t(1) << 14 : int64_t(1) << 18;
  auto one = kiln::bench::run_fma_peak(1, iters, plan.fma_budget);
  auto all = kiln::bench::run_fma_peak(threads, iters, plan.fma_budget);
  *all_ok = *all_ok && one.ok && all.ok;
  Json j;
  return j.str("isa", one.isa)
      .num("lanes", one.lanes)
      .num("chains", one.chains)
      .num("iters", double(iters))
      .obj("t1", fma_json(one))
      .obj("tn", fma_json(all));
}

// Square SGEMM, Kiln then oneDNN for each size.
Json sgemm_group(int threads, bool smoke, const kiln::bench::Plan& plan, bool* all_ok) {
  const std::vector<int64_t> sizes =
      smoke ? std::vector<int64_t>{32, 64} : std::vector<int64_t>{256, 512, 1024, 2048};
  Json j;
  std::string sizes_text;
  for (int64_t n : sizes) {
    std::fprintf(stderr, "kiln_bench: sgemm %lld...\n", static_cast<long long>(n));
    Json row;
    row.num("n", double(n));
    row.obj("kiln", guarded(
                        [&] {
                          auto r = kiln::bench::run_kiln_sgemm(n, plan.budget);
                          *all_ok = *all_ok && r.ok;
                          return row_json(r);
                        },
                        all_ok));
    std::string note;
    row.obj("dnnl", guarded(
                        [&] {
                          auto r = kiln::bench::run_dnnl_sgemm(n, threads, plan.budget, &note);
                          Json d;
                          if (!note.empty()) return d.str("error", note);
                          *all_ok = *all_ok && r.ok;
                          return row_json(r);
                        },
                        nullptr));
    j.obj(std::to_string(n), row);
    sizes_text += (sizes_text.empty() ? "" : ",") + std::to_string(n);
  }
  return j.str("sizes", sizes_text)
      .boolean("dnnl_found", kiln::bench::have_dnnl())
      .str("dnnl_version", kiln::bench::dnnl_version())
      .num("dnnl_threads", kiln::bench::dnnl_threads());
}

Json conv_group(bool smoke, const kiln::bench::Plan& plan, bool* all_ok) {
  Json j;
  for (const kiln::bench::ConvShape& s : kiln::bench::conv_shapes(smoke)) {
    std::fprintf(stderr, "kiln_bench: conv %s...\n", s.key.c_str());
    j.obj(s.key, guarded(
                     [&] {
                       auto r = kiln::bench::run_kiln_conv(s, plan.budget);
                       *all_ok = *all_ok && r.ok;
                       return row_json(r)
                           .str("label", s.label)
                           .num("cin", double(s.cin))
                           .num("cout", double(s.cout))
                           .num("hw", double(s.hw))
                           .num("k", double(s.k))
                           .num("pad", double(s.pad))
                           .num("groups", double(s.groups));
                     },
                     all_ok));
  }
  return j;
}

int usage() {
  std::fprintf(stderr,
               "usage: kiln_bench [--quick | --smoke] [--threads N] [--json FILE] "
               "[--only GROUPS]\n"
               "       kiln_bench --first-compile\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  const int64_t t_main = kiln::bench::monotonic_ns();
  if (argc == 2 && std::string(argv[1]) == "--first-compile") {
    return kiln::bench::first_compile_child(t_main);
  }

  kiln::bench::Plan plan;
  bool smoke = false;
  int threads = 2;
  std::string json_path;
  std::string only;  // empty: every group
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--quick") {
      plan = {true, 3, 5, 5, 3, 3, 5, {1.0, 2, 20}, {0.3, 20, 200}};
    } else if (a == "--smoke") {
      smoke = true;
      plan = {true, 2, 2, 2, 2, 1, 2, {0.0, 2, 2}, {0.0, 2, 2}};
    } else if (a == "--threads" && i + 1 < argc) {
      threads = std::atoi(argv[++i]);
      if (threads < 1) return usage();
    } else if (a == "--json" && i + 1 < argc) {
      json_path = argv[++i];
    } else if (a == "--only" && i + 1 < argc) {
      only = "," + std::string(argv[++i]) + ",";
    } else {
      return usage();
    }
  }

  // Before Kiln's first call: the pool reads KILN_NUM_THREADS once, and the disk
  // cache gets a private directory so (3) never reads a stale entry.
  setenv("KILN_NUM_THREADS", std::to_string(threads).c_str(), 1);
  unsetenv("KILN_CACHE");
  std::string cache_dir_template =
      (std::filesystem::temp_directory_path() / "kiln-bench-cache-XXXXXX").string();
  const char* cache_dir = mkdtemp(cache_dir_template.data());
  if (cache_dir) setenv("KILN_CACHE_DIR", cache_dir, 1);

  int status = 0;
  try {
    // Sizes: arrays far beyond the 32 MiB LLC of the machine the README shows
    // (the triad's three arrays are 3 x 128 MiB), unless --smoke.
    const int64_t stream_n = smoke ? int64_t(1) << 16 : int64_t(1) << 25;
    const int64_t chain_n = smoke ? int64_t(1) << 16 : int64_t(1) << 24;
    const int64_t rows = smoke ? 64 : 4096, cols = smoke ? 256 : 4096;
    auto want = [&](const char* group) {
      return only.empty() || only.find("," + std::string(group) + ",") != std::string::npos;
    };

    Json out;
    out.num("threads", threads)
        .num("kiln_pool_threads", kiln::num_threads())
        .num("hardware_threads", std::thread::hardware_concurrency())
        .boolean("quick", plan.quick)
        .boolean("smoke", smoke);
    bool all_ok = true;
    if (want("bandwidth")) {
      // The triad runs alone first, then once before every timed call of the
      // bandwidth rows (stream, softmax, layer norm): its best of all those
      // passes is the bandwidth each "% of triad" divides by.
      std::fprintf(stderr, "kiln_bench: triad...\n");
      kiln::bench::Samples triad_samples;
      double triad_bytes = 0;
      bool triad_ok = false;
      {
        kiln::bench::Triad triad(stream_n, threads);
        kiln::bench::Companion companion{[&] { triad.pass(); }, &triad_samples};
        triad_samples = kiln::bench::time_reps(/*warmup=*/2, plan.triad_reps, companion.fn);
        triad_bytes = triad.bytes();
        triad_ok = triad.ok();

        std::fprintf(stderr, "kiln_bench: stream...\n");
        auto stream = kiln::bench::run_stream(stream_n, plan.stream_reps, companion);
        out.obj("stream", row_json(stream).num("n", double(stream_n)));
        std::fprintf(stderr, "kiln_bench: softmax...\n");
        auto softmax = kiln::bench::run_softmax(rows, cols, plan.norm_reps, companion);
        out.obj("softmax", row_json(softmax).num("rows", double(rows)).num("cols", double(cols)));
        std::fprintf(stderr, "kiln_bench: layer norm...\n");
        auto layer_norm = kiln::bench::run_layer_norm(rows, cols, plan.norm_reps, companion);
        out.obj("layer_norm",
                row_json(layer_norm).num("rows", double(rows)).num("cols", double(cols)));
        all_ok = stream.ok && softmax.ok && layer_norm.ok && triad_ok && triad.ok();
      }
      Json tj;
      out.obj("triad", tj.samples("time", triad_samples)
                           .num("bytes", triad_bytes)
                           .num("n", double(stream_n))
                           .boolean("ok", triad_ok));
      std::fprintf(stderr, "kiln_bench: chain...\n");
      auto chain = kiln::bench::run_chain(chain_n, plan.chain_reps);
      out.obj("chain", row_json(chain).num("n", double(chain_n)));
      all_ok = all_ok && chain.ok;
    }
    if (want("fma")) out.obj("fma", fma_group(threads, smoke, plan, &all_ok));
    if (want("sgemm")) out.obj("sgemm", sgemm_group(threads, smoke, plan, &all_ok));
    if (want("conv")) out.obj("conv", conv_group(smoke, plan, &all_ok));
    if (want("mlp")) {
      std::fprintf(stderr, "kiln_bench: mlp (issue 6)...\n");
      out.obj("mlp", guarded(
                         [&] {
                           auto m = kiln::bench::run_mlp_row(smoke, plan.budget);
                           all_ok = all_ok && m.row.ok;
                           return model_json(m);
                         },
                         &all_ok));
    }
    if (want("examples")) {
      Json ex;
      for (const std::string& name : kiln::bench::example_names()) {
        std::fprintf(stderr, "kiln_bench: example %s...\n", name.c_str());
        ex.obj(name, guarded(
                         [&] {
                           auto m = kiln::bench::run_example(name, smoke, plan.budget);
                           all_ok = all_ok && m.row.ok;
                           return model_json(m);
                         },
                         &all_ok));
      }
      out.obj("examples", ex);
    }
    if (want("rewrites")) {
      Json rw;
      for (const std::string& key : kiln::bench::rewrite_pair_names()) {
        std::fprintf(stderr, "kiln_bench: rewrite pair %s...\n", key.c_str());
        rw.obj(key, guarded(
                        [&] {
                          auto p = kiln::bench::run_rewrite_pair(key, smoke, plan.budget);
                          all_ok = all_ok && p.form_row.ok && p.peer_row.ok;
                          Json j;
                          return j.str("form", p.form)
                              .str("peer", p.peer)
                              .str("shapes", p.shapes)
                              .num("threads", p.threads ? p.threads : kiln::num_threads())
                              .obj("form_row", row_json(p.form_row))
                              .obj("peer_row", row_json(p.peer_row));
                        },
                        &all_ok));
      }
      out.obj("rewrites", rw);
    }

    if (want("compile")) {
      std::fprintf(stderr, "kiln_bench: compile latency...\n");
      out.obj("compile", kiln::bench::run_compile_latency(plan.compile_reps));
      // This very binary, whatever path or PATH lookup started it.
      std::error_code ec;
      std::string self = std::filesystem::read_symlink("/proc/self/exe", ec).string();
      Json first =
          kiln::bench::run_first_compile(ec ? std::string(argv[0]) : self, plan.spawn_reps);
      all_ok = all_ok && first.dump().find("\"error\"") == std::string::npos;
      out.obj("first_compile", first);
    }
    if (want("compile_models")) {
      std::fprintf(stderr, "kiln_bench: compile latency of deep models...\n");
      out.obj("compile_models", guarded(
                                    [&] {
                                      return kiln::bench::run_model_compile_latency(
                                          std::min(plan.compile_reps, 3), smoke);
                                    },
                                    &all_ok));
    }
    // Again at the end (and scripts/bench runs `--only fma` once more after
    // the peers): the peak is the best over all three, since the neighbours'
    // load comes and goes and a busy spell would understate it.
    if (want("fma")) out.obj("fma_end", fma_group(threads, smoke, plan, &all_ok));
    out.boolean("all_ok", all_ok);

    std::string text = out.dump() + "\n";
    if (json_path.empty()) {
      std::cout << text;
    } else {
      std::ofstream(json_path) << text;
    }
    if (!all_ok) {
      std::fprintf(stderr, "kiln_bench: some results were wrong (see \"ok\" in the JSON)\n");
      status = 1;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kiln_bench: %s\n", e.what());
    status = 1;
  }
  if (cache_dir) {
    std::error_code ec;
    std::filesystem::remove_all(cache_dir, ec);
  }
  return status;
}
