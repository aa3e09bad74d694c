// Timing and JSON helpers shared by the bench's rows.
//
// Every measurement times each repetition on its own with CLOCK_MONOTONIC
// (steady_clock) and keeps all samples, so a row reports min and median of N.
// The machine is shared, so ratios use the minimum (best of N, as STREAM does);
// the median is printed next to it to show how noisy the run was.
#pragma once

#include <algorithm>
#include <chrono>
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
};

}  // namespace kiln::bench
