// Machine peaks — what the profiler (api/profile.cpp) divides achieved rates
// by: the memory bandwidth a STREAM-triad-like loop reaches and the f32 FMA
// throughput, both on every thread of Kiln's pool, measured once.
//
// Bandwidth: a[i] = b[i] + s * c[i] over three f64 arrays well beyond the
// last-level cache (each max(2 x L3, 16 MiB), at most 128 MiB), split across
// the pool, best of several passes; 24 bytes per element are counted (two
// reads and a write, no write-allocate traffic), as STREAM does and as the
// profiler counts a kernel's bytes. FMA: 12 independent chains of
// acc = acc * m + a per vector register of the widest vector unit the CPU has
// (AVX-512, AVX2+FMA, else SSE2 mul+add or scalar std::fma), chunks spread
// over the pool, best of several runs; 2 flops per lane per step.
//
// Cached: one DiskCache entry in the `machine/` subdirectory of the kernel
// cache's directory ($KILN_CACHE_DIR, ...), keyed by the CPU's description
// (runtime/cpu_info.h), the pool's size, the vector unit and Kiln's version,
// with every DiskCache rule (header, checksums, key and description compared,
// trust checks, atomic writes). A record that does not parse, or holds a
// value out of range (not finite, <= 0, beyond 100 TB/s or 10 PFLOP/s), or
// names another thread count or vector unit, is reported once on stderr and
// measured again, and the new record replaces it. The record keeps the load
// average it was measured at (see load_or_measure_machine_peaks). KILN_CACHE=off: measured
// once per process. Nothing here throws.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "runtime/kernel_cache.h"

namespace kiln::runtime {

struct MachinePeaks {
  double bandwidth_gbs = 0;  // GB/s (10^9 bytes)
  double fma_gflops = 0;     // f32 GFLOP/s, an FMA being 2
  int threads = 0;           // the pool threads both ran on
  std::string isa;           // the vector unit of the FMA loop: "avx512f", "avx2+fma", ...
  std::string source;        // "measured" or "cache" (this process's first use)
  double load = -1;          // 1-minute load average when measured (-1: unknown)
};

// The peaks of this machine: from memory, else the disk cache, else measured
// (about a quarter of a second) and stored. Thread-safe; measured at most
// once per process.
const MachinePeaks& machine_peaks();

// Measures now (no cache).
MachinePeaks measure_machine_peaks();
// What machine_peaks() does the first time, every time: the disk cache's
// record when it is valid (source "cache"), else measured and stored. A valid
// record measured while the machine was clearly busier (remeasure_when_quieter:
// its 1-minute load average higher than now by 1 and by half) is measured again now, and the better of the two
// values of each peak is kept and stored with the load of now: peaks taken on
// a busy machine do not stay low for good. `load_now` is the current 1-minute
// load average (-1: unknown, never re-measures); tests pass their own.
MachinePeaks load_or_measure_machine_peaks();
MachinePeaks load_or_measure_machine_peaks(double load_now);
bool remeasure_when_quieter(double load_then, double load_now);
double current_load_average();

// The cache record's text and back; nullopt for anything that is not exactly
// such a record with values in range. Exposed for tests.
std::string serialize_machine_peaks(const MachinePeaks& p);
std::optional<MachinePeaks> parse_machine_peaks(std::string_view text);
// The key text of this machine's entry (CPU, threads, vector unit, version;
// also the entry's description), its 128-bit key, and the entry's path
// (empty when the disk cache is off).
std::string machine_peaks_key_text();
CacheKey machine_peaks_key();
std::string machine_peaks_entry_path();

}  // namespace kiln::runtime
