// Compile-latency rows for the elementwise chain kernel (see compile_latency.cpp).
#pragma once

#include <string>

#include "bench/bench_util.h"

namespace kiln::bench {

// --first-compile mode: called first thing in main of a fresh process; builds
// and compiles the chain with every cache off and prints one JSON line with
// monotonic timestamps. Returns the exit status.
int first_compile_child(int64_t t_main_ns);

// Spawns `self --first-compile` `reps` times and returns the JSON object of
// the fresh-process row (in-process and from-spawn samples).
Json run_first_compile(const std::string& self, int reps);

// Cold (in-memory cache cleared, disk cache off), disk-cache load (memory
// cleared, disk on with a temporary KILN_CACHE_DIR) and in-memory hit compiles.
Json run_compile_latency(int reps);

// Cold compiles (memory cache cleared, disk cache off) of one transformer
// layer, 12 weight-shared layers and an LSTM unrolled over 128 steps (tiny
// depths for --smoke).
Json run_model_compile_latency(int reps, bool smoke);

}  // namespace kiln::bench
