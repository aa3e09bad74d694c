// Tensor::to_string: PyTorch-style text for a tensor, e.g.
//   tensor([[1., 2.],
//           [3., 4.]], dtype=f32)
//
// Follows torch's formatter: floats print as "1." when every value is whole,
// with 4 decimals otherwise, and in scientific notation when the magnitudes
// span too wide a range; every element is right-aligned to a common width.
// Tensors with more than `max_elements` elements show the first and last
// three entries of each dim with "..." between. Unlike torch, the dtype is
// always printed. Rows wrap at 80 columns like torch's default linewidth.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "kiln/element.h"
#include "kiln/tensor.h"
#include "runtime/device.h"

namespace kiln {
namespace {

constexpr int64_t kEdgeItems = 3;
constexpr int kLineWidth = 80;

std::string printf_double(const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), fmt, v);
  return buf;
}

class Printer {
 public:
  Printer(const Tensor& t, bool summarize) : t_(t), summarize_(summarize) {}

  std::string run(int indent) {
    collect(0, 0);
    choose_float_format();
    for (const std::string& s : texts_) width_ = std::max(width_, s.size());
    next_ = 0;
    return emit(0, 0, indent);
  }

 private:
  // Indices of dim `d` that are shown (all, or the edges when summarizing).
  std::vector<int64_t> shown(int64_t d, bool* elided) const {
    int64_t n = t_.sizes()[size_t(d)];
    std::vector<int64_t> idx;
    *elided = summarize_ && n > 2 * kEdgeItems;
    if (*elided) {
      for (int64_t i = 0; i < kEdgeItems; ++i) idx.push_back(i);
      for (int64_t i = n - kEdgeItems; i < n; ++i) idx.push_back(i);
    } else {
      for (int64_t i = 0; i < n; ++i) idx.push_back(i);
    }
    return idx;
  }

  const char* element(int64_t offset) const {
    return static_cast<const char*>(t_.data_ptr()) +
           offset * static_cast<int64_t>(t_.element_size());
  }

  // First pass: the shown values in print order (formatting needs all of them
  // to pick a common style and width).
  void collect(int64_t d, int64_t offset) {
    if (d == t_.dim()) {
      const char* p = element(offset);
      if (is_floating(t_.dtype())) {
        values_.push_back(load_as_double(t_.dtype(), p));
      } else if (t_.dtype() == DType::Bool) {
        texts_.push_back(load_as_int(t_.dtype(), p) ? "True" : "False");
      } else {
        texts_.push_back(std::to_string(load_as_int(t_.dtype(), p)));
      }
      return;
    }
    bool elided = false;
    for (int64_t i : shown(d, &elided)) collect(d + 1, offset + i * t_.strides()[size_t(d)]);
  }

  void choose_float_format() {
    if (!is_floating(t_.dtype())) return;
    bool int_mode = true, any = false;
    double lo = 0, hi = 0;
    for (double v : values_) {
      if (!std::isfinite(v)) continue;
      if (v != std::ceil(v)) int_mode = false;
      double a = std::fabs(v);
      if (a == 0) continue;
      lo = any ? std::min(lo, a) : a;
      hi = any ? std::max(hi, a) : a;
      any = true;
    }
    bool sci;
    if (int_mode) {
      sci = any && hi > 1e8;
    } else {
      sci = any && (hi / lo > 1000 || hi > 1e8 || lo < 1e-4);
    }
    for (double v : values_) {
      if (std::isnan(v)) {
        texts_.push_back("nan");
      } else if (std::isinf(v)) {
        texts_.push_back(v > 0 ? "inf" : "-inf");
      } else if (sci) {
        texts_.push_back(printf_double("%.4e", v));
      } else if (int_mode) {
        texts_.push_back(printf_double("%.0f", v) + ".");
      } else {
        texts_.push_back(printf_double("%.4f", v));
      }
    }
  }

  std::string pad(const std::string& s) const {
    return std::string(width_ - std::min(width_, s.size()), ' ') + s;
  }

  // Second pass: nested brackets; `indent` is the column of this level's '['.
  std::string emit(int64_t d, int64_t offset, int indent) {
    if (d == t_.dim()) return pad(texts_[next_++]);
    bool elided = false;
    std::vector<int64_t> idx = shown(d, &elided);
    const int64_t stride = t_.strides()[size_t(d)];
    std::vector<std::string> parts;
    const bool last = d == t_.dim() - 1;
    for (size_t k = 0; k < idx.size(); ++k) {
      if (elided && k == size_t(kEdgeItems)) parts.push_back(last ? " ..." : "...");
      parts.push_back(emit(d + 1, offset + idx[k] * stride, indent + 1));
    }
    const std::string newline_indent = "\n" + std::string(size_t(indent + 1), ' ');
    std::string out = "[";
    if (last) {
      // Rows wrap at torch's 80 columns: as many elements per line as fit.
      const size_t per_line =
          std::max<size_t>(1, size_t(std::max(0, kLineWidth - indent)) / (width_ + 2));
      for (size_t k = 0; k < parts.size(); ++k) {
        if (k > 0) out += k % per_line == 0 ? "," + newline_indent : ", ";
        out += parts[k];
      }
    } else {
      // Blank lines between blocks grow with the rank below, as in torch.
      const std::string sep = "," + std::string(size_t(t_.dim() - d - 2), '\n') + newline_indent;
      for (size_t k = 0; k < parts.size(); ++k) out += (k > 0 ? sep : "") + parts[k];
    }
    return out + "]";
  }

  const Tensor& t_;
  bool summarize_;
  std::vector<double> values_;
  std::vector<std::string> texts_;
  size_t width_ = 0;
  size_t next_ = 0;
};

}  // namespace

std::string Tensor::to_string(int64_t max_elements) const {
  if (!defined()) return "tensor(undefined)";
  runtime::check_host_readable(*this, "Tensor::to_string");
  std::ostringstream os;
  os << "tensor(";
  const int64_t n = numel();
  if (n == 0) {
    os << "[]";
    if (dim() != 1) {
      // Python tuple spelling, as torch prints it: (0,) (0, 5).
      os << ", size=(";
      for (int64_t i = 0; i < dim(); ++i) os << (i ? ", " : "") << sizes_[size_t(i)];
      os << (dim() == 1 ? ",)" : ")");
    }
  } else {
    Printer printer(*this, n > max_elements);
    os << printer.run(7);  // 7 == strlen("tensor(")
  }
  os << ", dtype=" << dtype_name(dtype_) << ")";
  return os.str();
}

}  // namespace kiln
