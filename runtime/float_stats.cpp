// float_stats: min, max, mean and NaN count of a floating tensor in one
// streaming pass over its elements (strided views included), for printing
// outputs. It never copies the tensor: a 2 GiB f32 output is summarised in
// place, where converting it to f64 first would need 4 GiB more.
#include <algorithm>
#include <cmath>
#include <limits>

#include "kiln/element.h"
#include "kiln/error.h"
#include "kiln/tensor.h"
#include "runtime/device.h"
#include "runtime/strided.h"

namespace kiln {
namespace {

// Values are summed in blocks and the block sums added to the total, so the
// rounding error grows with the number of blocks rather than of values.
constexpr int64_t kBlock = 4096;

class Accumulator {
 public:
  void add(double v) {
    if (std::isnan(v)) {
      ++stats_.nan_count;
      return;
    }
    lo_ = std::min(lo_, v);
    hi_ = std::max(hi_, v);
    block_sum_ += v;
    if (++block_count_ == kBlock) flush();
  }

  FloatStats finish() {
    flush();
    if (stats_.count == 0) {
      stats_.min = stats_.max = stats_.mean = std::numeric_limits<double>::quiet_NaN();
    } else {
      stats_.min = lo_;
      stats_.max = hi_;
      stats_.mean = total_ / static_cast<double>(stats_.count);
    }
    return stats_;
  }

 private:
  void flush() {
    total_ += block_sum_;
    stats_.count += block_count_;
    block_sum_ = 0;
    block_count_ = 0;
  }

  FloatStats stats_;
  double lo_ = std::numeric_limits<double>::infinity();
  double hi_ = -std::numeric_limits<double>::infinity();
  double block_sum_ = 0, total_ = 0;
  int64_t block_count_ = 0;
};

template <typename T>
void add_packed(Accumulator& acc, const Tensor& t) {
  const T* p = t.data<T>();
  for (int64_t i = 0, n = t.numel(); i < n; ++i) acc.add(static_cast<double>(p[i]));
}

}  // namespace

FloatStats float_stats(const Tensor& t) {
  KILN_USER_CHECK(t.defined() && is_floating(t.dtype()),
                  "float_stats: needs a defined tensor of a floating dtype");
  runtime::check_host_readable(t, "float_stats");
  Accumulator acc;
  if (t.is_contiguous() && t.dtype() == DType::F32) {
    add_packed<float>(acc, t);
  } else if (t.is_contiguous() && t.dtype() == DType::F64) {
    add_packed<double>(acc, t);
  } else {
    const auto* base = static_cast<const char*>(t.data_ptr());
    const auto elem = static_cast<int64_t>(t.element_size());
    const DType dtype = t.dtype();
    detail::for_each_offset(t.sizes(), t.strides(), [&](int64_t offset) {
      acc.add(load_as_double(dtype, base + offset * elem));
    });
  }
  return acc.finish();
}

}  // namespace kiln
