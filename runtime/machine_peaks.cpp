// Machine peaks: the triad and FMA loops, and their cache entry (see
// machine_peaks.h). The vector kernels are compiled for their ISA with target
// attributes and only called when cpu_info says the CPU has it, so the rest
// of the library stays baseline.
#include "runtime/machine_peaks.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <sstream>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "runtime/cpu_info.h"
#include "runtime/disk_cache.h"
#include "runtime/kernel_cache.h"
#include "runtime/thread_pool.h"

namespace kiln::runtime {

namespace {

// The best rate (units per second, in 10^9) over `reps` timed runs of `run`:
// the best, because a run a neighbour slowed says more about the neighbour.
template <class Run>
double best_rate(int reps, double units, Run run) {
  double best = 0;
  for (int rep = 0; rep < reps; ++rep) {
    auto t = std::chrono::steady_clock::now();
    run();
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
    if (s > 0) best = std::max(best, units / s * 1e-9);
  }
  return best;
}

// ------------------------------------------------------------------------------- FMA

// acc converges to add / (1 - mul) = 1: values stay normal.
constexpr float kMul = 0.999f, kAdd = 0.001f;
constexpr int kChains = 12;  // enough independent chains to cover 2 ports x 4-6 cycles

struct FmaUnit {
  const char* isa;
  int lanes;  // f32 lanes per register
  // Runs the chains `iters` steps; returns a value that depends on every lane.
  float (*run)(int64_t iters);
};

#if defined(__x86_64__)
#define KILN_CHAINS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)

__attribute__((target("avx512f"))) float fma_avx512(int64_t iters) {
  const __m512 m = _mm512_set1_ps(kMul), a = _mm512_set1_ps(kAdd);
#define INIT(j) __m512 acc##j = _mm512_set1_ps(0.01f * (j + 1));
  KILN_CHAINS(INIT)
#undef INIT
  for (int64_t i = 0; i < iters; ++i) {
#define STEP(j) acc##j = _mm512_fmadd_ps(acc##j, m, a);
    KILN_CHAINS(STEP)
#undef STEP
  }
  __m512 sum = _mm512_setzero_ps();
#define SUM(j) sum = _mm512_add_ps(sum, acc##j);
  KILN_CHAINS(SUM)
#undef SUM
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, sum);
  float s = 0;
  for (float v : lanes) s += v;
  return s;
}

__attribute__((target("avx2,fma"))) float fma_avx2(int64_t iters) {
  const __m256 m = _mm256_set1_ps(kMul), a = _mm256_set1_ps(kAdd);
#define INIT(j) __m256 acc##j = _mm256_set1_ps(0.01f * (j + 1));
  KILN_CHAINS(INIT)
#undef INIT
  for (int64_t i = 0; i < iters; ++i) {
#define STEP(j) acc##j = _mm256_fmadd_ps(acc##j, m, a);
    KILN_CHAINS(STEP)
#undef STEP
  }
  __m256 sum = _mm256_setzero_ps();
#define SUM(j) sum = _mm256_add_ps(sum, acc##j);
  KILN_CHAINS(SUM)
#undef SUM
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, sum);
  float s = 0;
  for (float v : lanes) s += v;
  return s;
}

// SSE2 has no FMA: a multiply and an add per step, counted as 2 flops like an FMA.
float fma_sse2(int64_t iters) {
  const __m128 m = _mm_set1_ps(kMul), a = _mm_set1_ps(kAdd);
#define INIT(j) __m128 acc##j = _mm_set1_ps(0.01f * (j + 1));
  KILN_CHAINS(INIT)
#undef INIT
  for (int64_t i = 0; i < iters; ++i) {
#define STEP(j) acc##j = _mm_add_ps(_mm_mul_ps(acc##j, m), a);
    KILN_CHAINS(STEP)
#undef STEP
  }
  __m128 sum = _mm_setzero_ps();
#define SUM(j) sum = _mm_add_ps(sum, acc##j);
  KILN_CHAINS(SUM)
#undef SUM
  alignas(16) float lanes[4];
  _mm_store_ps(lanes, sum);
  return lanes[0] + lanes[1] + lanes[2] + lanes[3];
}
#undef KILN_CHAINS
#else
// Elsewhere: plain std::fma over an array the compiler may vectorize.
float fma_scalar(int64_t iters) {
  float acc[kChains];
  for (int j = 0; j < kChains; ++j) acc[j] = 0.01f * float(j + 1);
  for (int64_t i = 0; i < iters; ++i) {
    for (float& v : acc) v = std::fma(v, kMul, kAdd);
  }
  float s = 0;
  for (float v : acc) s += v;
  return s;
}
#endif

FmaUnit pick_fma_unit() {
#if defined(__x86_64__)
  const CpuInfo& cpu = host_cpu_info();
  if (cpu.avx512f) return {"avx512f", 16, fma_avx512};
  if (cpu.avx2 && cpu.fma) return {"avx2+fma", 8, fma_avx2};
  return {"sse2 (mul+add)", 4, fma_sse2};
#else
  return {"scalar fma", 1, fma_scalar};
#endif
}

volatile float g_sink = 0;  // keeps the loops' results alive

double measure_fma_gflops(const FmaUnit& unit, int threads) {
  // Chunks spread over the pool (several per thread, so a thread that wakes
  // late does not leave one idle); best of several runs.
  const int64_t chunks = int64_t(threads) * 8;
  const int64_t iters = 250000;  // per chunk: 3M FMAs per vector lane group
  std::vector<float> out(static_cast<size_t>(chunks));
  const double flops = 2.0 * unit.lanes * kChains * double(iters) * double(chunks);
  return best_rate(5, flops, [&] {
    parallel_for(0, chunks, 1, [&](int64_t b, int64_t e) {
      for (int64_t c = b; c < e; ++c) out[size_t(c)] = unit.run(iters);
    });
    for (float v : out) g_sink = g_sink + v;
  });
}

// ------------------------------------------------------------------------------- bandwidth

double measure_bandwidth_gbs() {
  const CpuInfo& cpu = host_cpu_info();
  const int64_t array_bytes =
      std::clamp<int64_t>(2 * cpu.l3_bytes, int64_t(16) << 20, int64_t(128) << 20);
  const int64_t n = array_bytes / int64_t(sizeof(double));
  // Uninitialized storage, first touched by the threads that use it.
  std::unique_ptr<double[]> a(new double[size_t(n)]), b(new double[size_t(n)]),
      c(new double[size_t(n)]);
  const int64_t grain = 1 << 16;
  parallel_for(0, n, grain, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) {
      a[size_t(i)] = 0;
      b[size_t(i)] = 1.0;
      c[size_t(i)] = 2.0;
    }
  });
  const double scalar = 3.0;
  const double best = best_rate(6, 3.0 * double(array_bytes), [&] {
    parallel_for(0, n, grain, [&](int64_t lo, int64_t hi) {
      double* pa = a.get();
      const double* pb = b.get();
      const double* pc = c.get();
      for (int64_t i = lo; i < hi; ++i) pa[i] = pb[i] + scalar * pc[i];
    });
  });
  g_sink = g_sink + float(a[size_t(n / 2)]);
  return best;
}

// ------------------------------------------------------------------------------- cache

constexpr const char* kRecordHeader = "kiln-machine-peaks 2";

bool in_range(double v, double max) {
  return std::isfinite(v) && v > 0 && v <= max;
}

std::string describe_problem(const MachinePeaks& p, const FmaUnit& unit, int threads) {
  if (p.threads != threads) {
    return "measured on " + std::to_string(p.threads) + " threads, the pool has " +
           std::to_string(threads);
  }
  if (p.isa != unit.isa) return "measured with " + p.isa + ", this CPU uses " + unit.isa;
  return "";
}

DiskCache& peaks_disk() {
  static DiskCache* cache = new DiskCache(DiskCache::Subdirectory{"machine", "machine-peaks cache"});
  return *cache;
}

CacheKey peaks_key(const std::string& key_text) {
  KeyHasher h;
  h.add("kiln-machine-peaks-key-v1").add(key_text);
  return h.key();
}

}  // namespace

double current_load_average() {
  double load[1] = {-1};
  return getloadavg(load, 1) == 1 ? load[0] : -1;
}

MachinePeaks load_or_measure_machine_peaks(double load_now) {
  const FmaUnit unit = pick_fma_unit();
  const int threads = num_threads();
  const std::string key_text = machine_peaks_key_text();
  DiskCache& disk = peaks_disk();
  std::optional<MachinePeaks> cached;
  if (disk.enabled()) {
    CacheKey key = peaks_key(key_text);
    if (std::optional<std::string> payload = disk.load(key, key_text)) {
      std::optional<MachinePeaks> p = parse_machine_peaks(*payload);
      std::string why = p ? describe_problem(*p, unit, threads) : "not a machine-peaks record";
      // A record an earlier Kiln wrote (format 1 had no load) is replaced
      // without a warning: nothing is wrong with it, it is just old.
      const bool older_format = !p && payload->rfind("kiln-machine-peaks ", 0) == 0 &&
                                payload->rfind(kRecordHeader, 0) != 0;
      if (p && why.empty()) {
        p->source = "cache";
        // Peaks measured while others used the cores come out low; once the
        // machine is clearly quieter, measure again and keep the better of
        // the two.
        if (!remeasure_when_quieter(p->load, load_now)) return *p;
        cached = p;
      } else if (!older_format) {
        std::fprintf(stderr, "kiln: warning: machine-peaks cache entry %s is corrupt (%s); measuring again\n",
                     disk.entry_path(key).c_str(), why.c_str());
      }
    }
  }
  MachinePeaks p = measure_machine_peaks();
  p.load = load_now;
  if (cached) {
    p.bandwidth_gbs = std::max(p.bandwidth_gbs, cached->bandwidth_gbs);
    p.fma_gflops = std::max(p.fma_gflops, cached->fma_gflops);
  }
  if (disk.enabled()) disk.store(peaks_key(key_text), key_text, serialize_machine_peaks(p));
  return p;
}

MachinePeaks load_or_measure_machine_peaks() {
  return load_or_measure_machine_peaks(current_load_average());
}

bool remeasure_when_quieter(double load_then, double load_now) {
  // Lower by a core's worth and by half: the 1-minute average needs 40 s or
  // more to halve, so processes run seconds apart never measure twice.
  return load_then >= 0 && load_now >= 0 && load_then - load_now >= std::max(1.0, load_now);
}

MachinePeaks measure_machine_peaks() {
  MachinePeaks p;
  const FmaUnit unit = pick_fma_unit();
  p.threads = num_threads();
  p.isa = unit.isa;
  p.bandwidth_gbs = measure_bandwidth_gbs();
  p.fma_gflops = measure_fma_gflops(unit, p.threads);
  p.source = "measured";
  return p;
}

const MachinePeaks& machine_peaks() {
  static std::once_flag once;
  static MachinePeaks* peaks = nullptr;  // never destroyed: profiles may run during exit
  std::call_once(once, [] { peaks = new MachinePeaks(load_or_measure_machine_peaks()); });
  return *peaks;
}

std::string serialize_machine_peaks(const MachinePeaks& p) {
  std::ostringstream os;
  os.precision(17);
  os << kRecordHeader << "\n"
     << "bandwidth_gbs " << p.bandwidth_gbs << "\n"
     << "fma_gflops " << p.fma_gflops << "\n"
     << "threads " << p.threads << "\n"
     << "isa " << p.isa << "\n"
     << "load " << p.load << "\n";
  return os.str();
}

std::optional<MachinePeaks> parse_machine_peaks(std::string_view text) {
  if (text.empty() || text.back() != '\n') return std::nullopt;  // cut short
  std::istringstream in{std::string(text)};
  std::string line;
  if (!std::getline(in, line) || line != kRecordHeader) return std::nullopt;
  MachinePeaks p;
  auto field = [&](const char* name, std::string* value) {
    if (!std::getline(in, line)) return false;
    std::string prefix = std::string(name) + " ";
    if (line.compare(0, prefix.size(), prefix) != 0) return false;
    *value = line.substr(prefix.size());
    return !value->empty();
  };
  auto number = [](const std::string& s, double* v) {
    char* end = nullptr;
    *v = std::strtod(s.c_str(), &end);
    return end == s.c_str() + s.size();
  };
  std::string bw, fma, threads;
  double threads_value = 0;
  if (!field("bandwidth_gbs", &bw) || !number(bw, &p.bandwidth_gbs) ||
      !in_range(p.bandwidth_gbs, 1e5) || !field("fma_gflops", &fma) ||
      !number(fma, &p.fma_gflops) || !in_range(p.fma_gflops, 1e7) ||
      !field("threads", &threads) || !number(threads, &threads_value) ||
      threads_value != std::floor(threads_value) || !in_range(threads_value, 1 << 20) ||
      !field("isa", &p.isa)) {
    return std::nullopt;
  }
  // The load average when measured: -1 where the system could not say.
  std::string load;
  if (!field("load", &load) || !number(load, &p.load) || !std::isfinite(p.load) ||
      (p.load < 0 && p.load != -1) || p.load > 1e6) {
    return std::nullopt;
  }
  p.threads = int(threads_value);
  if (std::getline(in, line) || !in.eof()) return std::nullopt;  // nothing after the record
  return p;
}

std::string machine_peaks_key_text() {
  return "cpu " + host_cpu_info().str() + "; threads " + std::to_string(num_threads()) +
         "; fma " + pick_fma_unit().isa + "; kiln " KILN_VERSION;
}

CacheKey machine_peaks_key() {
  return peaks_key(machine_peaks_key_text());
}

std::string machine_peaks_entry_path() {
  return peaks_disk().entry_path(peaks_key(machine_peaks_key_text()));
}

}  // namespace kiln::runtime
