// Timing and JSON helpers shared by the bench's rows.
//
// Every measurement times each repetition on its own with CLOCK_MONOTONIC
// (steady_clock) and keeps all samples, so a row reports min and median of N.
// The machine is shared, so ratios use the minimum (best of N, as STREAM does);
// the median is printed next to it to show how noisy the run was.
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <ctime>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace kiln::bench {

// CLOCK_MONOTONIC in nanoseconds: the same clock Python's time.monotonic_ns()
// reads, so timestamps taken in a child process compare with the parent's.
inline int64_t monotonic_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

struct Samples {
  std::vector<double> seconds;  // one entry per timed repetition

  double min() const {
    return seconds.empty() ? 0 : *std::min_element(seconds.begin(), seconds.end());
  }
  double median() const {
    if (seconds.empty()) return 0;
    std::vector<double> s = seconds;
    std::sort(s.begin(), s.end());
    size_t n = s.size();
    return n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
  }
};

// Runs fn `warmup` times untimed, then `reps` times, timing each call.
inline Samples time_reps(int warmup, int reps, const std::function<void()>& fn) {
  for (int i = 0; i < warmup; ++i) fn();
  Samples s;
  s.seconds.reserve(static_cast<size_t>(reps));
  for (int i = 0; i < reps; ++i) {
    int64_t t0 = monotonic_ns();
    fn();
    s.seconds.push_back(static_cast<double>(monotonic_ns() - t0) * 1e-9);
  }
  return s;
}

// How long a row may spend on timed calls: repetitions stop once `seconds`
// of samples are in and at least `min_reps` were taken, and never go past
// `max_reps`. Contraction and model rows use it, because Kiln's naive
// GEMM/conv loops take seconds per call where a tuned library takes
// milliseconds, and the bench must stay bounded either way. The cap is high
// so that fast calls still spread over a good part of the budget: on a shared
// machine a few hundred calls in a row can all land in one busy spell.
struct Budget {
  double seconds = 3.0;
  int min_reps = 2;
  int max_reps = 200;
};

// A call this slow is its own warm-up: the first (checked) call of a row is
// timed and kept as its first sample, since the page faults and cache misses
// a warm-up would absorb are far below 1% of it.
constexpr double kSelfWarmingCallS = 1.0;

// Times fn under `budget`. `first_call_s` is how long the row's first,
// checking call took (already done, untimed): below kSelfWarmingCallS two
// untimed warm-ups follow; at or above it that call is the first sample.
inline Samples time_budget(const Budget& budget, double first_call_s,
                           const std::function<void()>& fn) {
  Samples s;
  double total = 0;
  if (first_call_s >= kSelfWarmingCallS) {
    s.seconds.push_back(first_call_s);
    total = first_call_s;
  } else {
    for (int i = 0; i < 2; ++i) fn();
  }
  while (int(s.seconds.size()) < budget.max_reps &&
         (int(s.seconds.size()) < budget.min_reps || total < budget.seconds)) {
    int64_t t0 = monotonic_ns();
    fn();
    double dt = static_cast<double>(monotonic_ns() - t0) * 1e-9;
    s.seconds.push_back(dt);
    total += dt;
  }
  return s;
}

// The check of the contraction and model rows: an element passes when
// |got - want| <= 1e-4 (|want| + rms), rms being the root mean square of the
// reference over the checked sample. A sum of K products rounded in f32 is
// off by ~2^-24 sqrt(K) times its terms' scale, which the rms tracks; a
// bound relative to |want| alone would fail every output that cancels to
// near zero, while a wrong index or a dropped term is off by ~rms and fails.
class SampleCheck {
 public:
  // `tol` replaces 1e-4 in the bound (the GPU bench's bf16 rows: 1e-2).
  explicit SampleCheck(double tol = 1e-4) : tol_(tol) {}
  void add(double got, double want) {
    got_.push_back(got);
    want_.push_back(want);
  }
  // Worst |got - want| as a fraction of the tolerance (<= 1 passes); NaN or
  // an empty sample fails.
  double max_err() const {
    if (want_.empty()) return 1e30;
    double sq = 0;
    for (double w : want_) sq += w * w;
    const double rms = std::sqrt(sq / double(want_.size()));
    double worst = 0;
    for (size_t i = 0; i < want_.size(); ++i) {
      double e = std::abs(got_[i] - want_[i]) / (tol_ * (std::abs(want_[i]) + rms) + 1e-30);
      if (!(e <= worst)) worst = std::isnan(e) ? 1e30 : e;
    }
    return worst;
  }
  size_t size() const { return want_.size(); }

 private:
  double tol_;
  std::vector<double> got_, want_;
};

// Like time_reps, alternating with `companion` (timed into *companion_out):
// the bandwidth rows alternate with triad passes so both see the same
// neighbours on a shared machine, and "% of triad" compares like with like.
inline Samples time_reps_alternating(int warmup, int reps, const std::function<void()>& fn,
                                     const std::function<void()>& companion,
                                     Samples* companion_out) {
  for (int i = 0; i < warmup; ++i) {
    companion();
    fn();
  }
  Samples s;
  for (int i = 0; i < reps; ++i) {
    int64_t t0 = monotonic_ns();
    companion();
    int64_t t1 = monotonic_ns();
    fn();
    int64_t t2 = monotonic_ns();
    companion_out->seconds.push_back(static_cast<double>(t1 - t0) * 1e-9);
    s.seconds.push_back(static_cast<double>(t2 - t1) * 1e-9);
  }
  return s;
}

// A flat JSON object builder: enough for numbers, strings, sample lists and
// nested objects, which is all the bench prints.
class Json {
 public:
  Json& num(const std::string& key, double v) {
    std::ostringstream os;
    os.precision(9);
    os << v;
    return raw(key, os.str());
  }
  Json& str(const std::string& key, const std::string& v) { return raw(key, quote(v)); }
  Json& boolean(const std::string& key, bool v) { return raw(key, v ? "true" : "false"); }
  Json& obj(const std::string& key, const Json& v) { return raw(key, v.dump()); }
  Json& samples(const std::string& key, const Samples& s) {
    Json j;
    j.num("min_s", s.min()).num("median_s", s.median()).num("reps", double(s.seconds.size()));
    std::ostringstream os;
    os.precision(9);
    os << "[";
    for (size_t i = 0; i < s.seconds.size(); ++i) os << (i ? ", " : "") << s.seconds[i];
    os << "]";
    j.raw("all_s", os.str());
    return obj(key, j);
  }
  std::string dump() const {
    std::string out = "{";
    for (size_t i = 0; i < fields_.size(); ++i) {
      out += (i ? ", " : "") + quote(fields_[i].first) + ": " + fields_[i].second;
    }
    return out + "}";
  }

 private:
  Json& raw(const std::string& key, const std::string& text) {
    fields_.emplace_back(key, text);
    return *this;
  }
  static std::string quote(const std::string& s) {
    std::string out = "\"";
    for (char c : s) {
      if (c == '"' || c == '\\') {
        out += '\\';
        out += c;
      } else if (static_cast<unsigned char>(c) < 0x20) {
        out += ' ';
      } else {
        out += c;
      }
    }
    return out + "\"";
  }
  std::vector<std::pair<std::string, std::string>> fields_;
};

// How many repetitions each kind of row runs (--quick shrinks them, never the sizes).
struct Plan {
  bool quick = false;
  int triad_reps = 10;   // alone; the triad also runs before each bandwidth-row call
  int stream_reps = 30;  // y = x*a + b
  int chain_reps = 30;
  int norm_reps = 15;     // softmax, layer norm
  int spawn_reps = 10;    // fresh-process first compiles
  int compile_reps = 30;  // cold / disk / memory compiles
  Budget budget;          // contraction and model rows, each side
  // FMA peak, each thread count and pass: ~0.5 ms calls, up to 1000 of them
  // or 1 s (a busy machine makes the 2-thread calls slow, not the best one).
  Budget fma_budget{1.0, 50, 1000};
};

}  // namespace kiln::bench
