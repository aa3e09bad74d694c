// The seeded choice helper the random-graph tests (differential_test,
// fusion_random_test) draw their programs with.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

namespace kiln::test {

class Gen {
 public:
  explicit Gen(uint64_t seed) : rng_(seed) {}
  int pick(int n) { return int(rng_() % uint64_t(n)); }
  bool coin() { return pick(2) == 0; }
  template <typename T>
  const T& one_of(const std::vector<T>& v) {
    return v[size_t(pick(int(v.size())))];
  }

 private:
  std::mt19937_64 rng_;
};

}  // namespace kiln::test
