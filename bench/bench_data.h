// Inputs of the contraction and model rows, given by a formula that
// bench/peers.py evaluates the same way (hashed() there), so Kiln and its
// peers compute on identical data without passing files around.
//
// Element i of stream `seed` is a 32-bit integer hash of (seed, i), whose top
// 24 bits make a uniform value u in [-1, 1) exactly (a 24-bit integer times
// 2^-23). The element is float(offset + scale * u) with that expression in
// double: exact for the power-of-two scales used, and one IEEE rounding to f32
// otherwise, which numpy's astype(float32) repeats bit for bit.
#pragma once

#include <cstdint>
#include <vector>

#include "kiln/kiln.h"

namespace kiln::bench {

inline uint32_t hash32(uint64_t seed, uint64_t i) {
  uint32_t h = static_cast<uint32_t>(i * 0x9E3779B1ull + seed * 0x85EBCA77ull);
  h ^= h >> 16;
  h *= 0x7FEB352Du;
  h ^= h >> 15;
  h *= 0x846CA68Bu;
  h ^= h >> 16;
  return h;
}

inline double hashed_uniform(uint64_t seed, uint64_t i) {
  return static_cast<double>(static_cast<int32_t>(hash32(seed, i) >> 8) - (1 << 23)) * 0x1p-23;
}

inline kiln::Tensor hashed(const kiln::Shape& shape, uint64_t seed, double scale = 1.0,
                           double offset = 0.0) {
  kiln::Tensor t = kiln::Tensor::empty(shape, kiln::DType::F32);
  float* p = t.data<float>();
  const int64_t n = t.numel();
  for (int64_t i = 0; i < n; ++i) {
    p[i] = static_cast<float>(offset + scale * hashed_uniform(seed, uint64_t(i)));
  }
  return t;
}

// sum |x| over the f32 inputs, in double: printed in the JSON next to the same
// sum peers.py takes of its inputs, so report.py can tell that both sides
// computed on the same data.
inline double input_sum(const std::vector<kiln::Tensor>& ts) {
  double s = 0;
  for (const kiln::Tensor& t : ts) {
    const float* p = t.data<float>();
    for (int64_t i = 0; i < t.numel(); ++i) s += p[i] < 0 ? -double(p[i]) : double(p[i]);
  }
  return s;
}

}  // namespace kiln::bench
