// The STREAM-style triad that gives the machine's bandwidth (see stream_triad.cpp).
#pragma once

#include <cstdint>
#include <memory>

namespace kiln::bench {

// a[i] = b[i] + 3 * c[i] over three arrays of `n` floats on `threads` threads.
class Triad {
 public:
  Triad(int64_t n, int threads);  // allocates and first-touches the arrays
  ~Triad();
  Triad(const Triad&) = delete;
  Triad& operator=(const Triad&) = delete;

  void pass();           // one triad over the arrays
  bool ok() const;       // the result values check out (after one pass)
  double bytes() const;  // counted bytes per pass: 3 x 4 per element
  int64_t size() const { return n_; }

 private:
  struct Arrays;
  int64_t n_;
  int threads_;
  std::unique_ptr<Arrays> arrays_;
};

}  // namespace kiln::bench
