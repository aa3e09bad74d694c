// Internal helper for runtime/: visits every element of a strided view in
// row-major (C) order, handing the callback the element's offset in elements
// relative to the view's first element. Used by copies, printing and npy I/O.
#pragma once

#include <cstdint>
#include <vector>

#include "kiln/tensor.h"

namespace kiln::detail {

template <typename Fn>
void for_each_offset(const Shape& sizes, const Shape& strides, Fn&& fn) {
  for (int64_t s : sizes) {
    if (s == 0) return;
  }
  const size_t rank = sizes.size();
  std::vector<int64_t> index(rank, 0);
  int64_t offset = 0;
  while (true) {
    fn(offset);
    // Odometer increment from the innermost dim.
    size_t d = rank;
    while (d > 0) {
      --d;
      if (++index[d] < sizes[d]) {
        offset += strides[d];
        break;
      }
      offset -= strides[d] * (sizes[d] - 1);
      index[d] = 0;
      if (d == 0) return;
    }
    if (rank == 0) return;
  }
}

}  // namespace kiln::detail
