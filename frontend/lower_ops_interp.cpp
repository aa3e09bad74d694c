// Op table, part 5: F.interpolate and the F.upsample spellings (issue 13),
// built from slices/expands and matmuls with constant weight matrices (see
// lower_ops_spatial.cpp's header comment and docs/language.md).
#include <algorithm>
#include <cmath>
#include <optional>

#include "frontend/lower_spatial.h"

namespace kiln::frontend {

namespace {

using namespace spatial;  // NOLINT

// --- F.interpolate ------------------------------------------------------------------------

// PyTorch's index math (aten/src/ATen/native/UpSample.h), in the precision T
// its CPU kernels use: float for f32 inputs, double for f64.
template <typename T>
T scale_value(int64_t in, int64_t out, std::optional<double> scale) {
  return (scale && *scale > 0) ? static_cast<T>(1.0 / *scale)
                               : static_cast<T>(in) / static_cast<T>(out);
}
template <typename T>
T area_scale(int64_t in, int64_t out, bool align_corners, std::optional<double> scale) {
  if (align_corners) return out > 1 ? static_cast<T>(in - 1) / static_cast<T>(out - 1) : T(0);
  return scale_value<T>(in, out, scale);
}
// The source index is computed in double from the (float or double) scale,
// as PyTorch's double literals make it.
double source_index(double scale, int64_t dst, bool align_corners, bool cubic) {
  if (align_corners) return scale * double(dst);
  const double src = scale * (double(dst) + 0.5) - 0.5;
  return (!cubic && src < 0) ? 0.0 : src;
}

// Source index per output index of the nearest modes (always float math, as PyTorch).
std::vector<int64_t> nearest_source(int64_t in, int64_t out, std::optional<double> scale,
                                    bool exact) {
  std::vector<int64_t> src(static_cast<size_t>(out));
  const float sc = scale_value<float>(in, out, scale);
  for (int64_t i = 0; i < out; ++i) {
    int64_t s = 0;
    if (exact) {
      s = static_cast<int64_t>(std::floor(static_cast<float>((double(i) + 0.5) * double(sc))));
    } else if (out == in) {
      s = i;
    } else if (out == 2 * in) {
      s = i >> 1;
    } else {
      s = static_cast<int64_t>(std::floor(static_cast<float>(i) * sc));
    }
    src[size_t(i)] = std::min(s, in - 1);
  }
  return src;
}

// The [in, out] weight matrix of linear (cubic=false) or cubic interpolation.
template <typename T>
std::vector<double> interp_matrix(int64_t in, int64_t out, bool align_corners,
                                  std::optional<double> scale, bool cubic) {
  std::vector<double> mt(size_t(in * out), 0.0);
  auto add = [&](int64_t i, int64_t o, T w) { mt[size_t(i * out + o)] += double(w); };
  const double ratio = double(area_scale<T>(in, out, align_corners, scale));
  for (int64_t o = 0; o < out; ++o) {
    if (!cubic) {
      if (in == out) {
        add(o, o, T(1));
        continue;
      }
      const double real = source_index(ratio, o, align_corners, false);
      const int64_t i0 = std::min(static_cast<int64_t>(real), in - 1);
      const int64_t i1 = i0 + (i0 < in - 1 ? 1 : 0);
      const T l1 = static_cast<T>(std::min(std::max(real - double(i0), 0.0), 1.0));
      add(i0, o, T(1) - l1);
      add(i1, o, l1);
      continue;
    }
    const double real = source_index(ratio, o, align_corners, true);
    const int64_t i0 = static_cast<int64_t>(std::floor(real));
    const T t = static_cast<T>(real - double(i0));
    const T A = T(-0.75);
    auto cc1 = [A](T x) { return ((A + T(2)) * x - (A + T(3))) * x * x + T(1); };
    auto cc2 = [A](T x) { return ((A * x - T(5) * A) * x + T(8) * A) * x - T(4) * A; };
    const T w[4] = {cc2(t + T(1)), cc1(t), cc1(T(1) - t), cc2(T(1) - t + T(1))};
    for (int64_t j = 0; j < 4; ++j) add(std::clamp<int64_t>(i0 - 1 + j, 0, in - 1), o, w[j]);
  }
  return mt;
}

bool is_identity(const std::vector<double>& mt, int64_t in, int64_t out) {
  if (in != out) return false;
  for (int64_t i = 0; i < in; ++i) {
    for (int64_t o = 0; o < out; ++o) {
      if (mt[size_t(i * out + o)] != (i == o ? 1.0 : 0.0)) return false;
    }
  }
  return true;
}

// x gathered along dim d by a nondecreasing source-index list, as a cat of
// regular pieces (a strided slice, or a slice whose elements each repeat r
// times); nullptr when that takes more than max_pieces pieces.
ir::Value* gather_runs(Bound& b, ir::Value* x, int64_t d, const std::vector<int64_t>& src,
                       size_t max_pieces) {
  std::vector<std::pair<int64_t, int64_t>> runs;  // (source index, repeat count)
  for (int64_t s : src) {
    if (!runs.empty() && runs.back().first == s) {
      ++runs.back().second;
    } else {
      runs.push_back({s, 1});
    }
  }
  struct Piece {
    int64_t start, count, step, repeat;
  };
  std::vector<Piece> pieces;
  for (size_t k = 0; k < runs.size();) {
    const auto [j, r] = runs[k];
    int64_t step = 1;
    if (r == 1 && k + 1 < runs.size() && runs[k + 1].second == 1) step = runs[k + 1].first - j;
    size_t c = 1;
    while (k + c < runs.size() && runs[k + c].second == r &&
           runs[k + c].first == j + int64_t(c) * step) {
      ++c;
    }
    pieces.push_back({j, int64_t(c), step, r});
    k += c;
    if (pieces.size() > max_pieces) return nullptr;
  }
  Shape shape = static_shape_of(b, x);
  std::vector<ir::Value*> parts;
  for (const Piece& p : pieces) {
    ir::Value* v = slice(b, x, d, p.start, p.start + (p.count - 1) * p.step + 1, p.step);
    if (p.repeat > 1) {
      Shape es = shape, merged = shape;
      es[size_t(d)] = p.count;
      es.insert(es.begin() + d + 1, p.repeat);
      merged[size_t(d)] = p.count * p.repeat;
      v = ap(b, "unsqueeze", {v}, {{"dim", d + 1}});
      v = reshape(b, ap(b, "expand", {v}, {{"size", es}}), merged);
    }
    parts.push_back(v);
  }
  return cat(b, parts, d);
}

std::optional<double> number(const Val& v) {
  if (v.kind == Val::Kind::Int || v.kind == Val::Kind::Float) return v.num();
  return std::nullopt;
}

Val interpolate(Bound& b, std::string mode, std::optional<bool> align_corners, bool recompute) {
  ir::Value* x = b.tensor("input");
  static const char* const kModes =
      "nearest | linear | bilinear | bicubic | trilinear | area | "
      "nearest-exact";
  const bool nearest = mode == "nearest" || mode == "nearest-exact";
  if (!nearest && mode != "area" && mode != "linear" && mode != "bilinear" && mode != "bicubic" &&
      mode != "trilinear") {
    b.fail("mode", "unknown mode '" + mode + "'; supported modes: " + kModes);
  }
  if (nearest || mode == "area") {
    if (align_corners) {
      b.fail("align_corners",
             "align_corners option can only be set with the interpolating "
             "modes: linear | bilinear | bicubic | trilinear");
    }
  }
  const bool corners = align_corners.value_or(false);
  const int64_t r = rank(x), nd = r - 2;
  if (r < 3 || r > 5) {
    b.fail("input", short_name(b) +
                        " expects a 3-D, 4-D or 5-D input (N, C, spatial...) for mode '" + mode +
                        "', got " + x->type().str());
  }
  const int64_t need = mode == "linear"                          ? 3
                       : mode == "bilinear" || mode == "bicubic" ? 4
                       : mode == "trilinear"                     ? 5
                                                                 : r;
  if (need != r) {
    b.fail("input", "got a " + std::to_string(r) + "-D input, but " + mode + " mode needs a " +
                        std::to_string(need) + "-D input");
  }
  if (nearest) {
    if (x->type().dtype() == DType::Bool)
      b.fail("input", short_name(b) + " expects a numeric input, got bool");
  } else {
    check_floating(b, x);
  }
  if (b.given("antialias") && b.bool_("antialias"))
    b.fail("antialias", "antialias=True is not supported yet");
  const bool has_size = !b.is_none("size"), has_scale = !b.is_none("scale_factor");
  if (has_size && has_scale) b.fail("only one of size or scale_factor should be defined");
  if (!has_size && !has_scale) b.fail("either size or scale_factor should be defined");
  if (recompute && has_size) {
    b.fail("recompute_scale_factor",
           "recompute_scale_factor is not meaningful with an explicit size");
  }
  Shape in = static_shape_of(b, x);
  std::vector<int64_t> out(static_cast<size_t>(nd));
  std::vector<std::optional<double>> scales(static_cast<size_t>(nd));
  if (has_size) {
    std::vector<int64_t> s = b.ints("size");
    if (s.size() == 1 && !b.val("size").is_seq()) s.resize(size_t(nd), s[0]);
    if (int64_t(s.size()) != nd) {
      b.fail("size",
             "input and output must have the same number of spatial dimensions, but "
             "got input with " +
                 std::to_string(nd) +
                 " spatial dims and an output "
                 "size of " +
                 std::to_string(s.size()));
    }
    out = s;
  } else {
    const Val& v = b.val("scale_factor");
    std::vector<Val> items = v.is_seq() ? v.items : std::vector<Val>(size_t(nd), v);
    if (int64_t(items.size()) != nd) {
      b.fail("scale_factor",
             "input and scale_factor must have the same number of spatial "
             "dimensions, but got input with " +
                 std::to_string(nd) + " spatial dims and a scale_factor of " +
                 std::to_string(items.size()));
    }
    if (mode == "area") recompute = true;
    for (int64_t i = 0; i < nd; ++i) {
      std::optional<double> f = number(items[size_t(i)]);
      if (!f) b.fail("scale_factor", "scale_factor must be a number or a tuple of numbers");
      out[size_t(i)] = int64_t(std::floor(double(in[size_t(2 + i)]) * *f));
      if (!recompute) scales[size_t(i)] = *f;
    }
  }
  for (int64_t i = 0; i < nd; ++i) {
    if (in[size_t(2 + i)] <= 0 || out[size_t(i)] <= 0) {
      b.fail("input and output sizes should be greater than 0, but got input " + x->type().str() +
             " and output spatial size " + std::to_string(out[size_t(i)]) + " at dim " +
             std::to_string(2 + i));
    }
  }
  const bool f64 = x->type().dtype() == DType::F64;
  ir::Value* y = x;
  for (int64_t i = nd - 1; i >= 0; --i) {
    const int64_t d = 2 + i, n = in[size_t(d)], m = out[size_t(i)];
    std::vector<double> mt;
    if (nearest) {
      std::vector<int64_t> src = nearest_source(n, m, scales[size_t(i)], mode == "nearest-exact");
      bool floating = is_floating(x->type().dtype());
      if (ir::Value* g = gather_runs(b, y, d, src, floating ? 32 : src.size())) {
        y = g;
        continue;
      }
      mt.assign(size_t(n * m), 0.0);
      for (int64_t o = 0; o < m; ++o) mt[size_t(src[size_t(o)] * m + o)] = 1.0;
    } else if (mode == "area") {
      mt.assign(size_t(n * m), 0.0);
      for (int64_t o = 0; o < m; ++o) {
        const int64_t s = window_start(o, m, n), e = window_end(o, m, n);
        for (int64_t j = s; j < e; ++j) mt[size_t(j * m + o)] = 1.0 / double(e - s);
      }
    } else {
      const bool cubic = mode == "bicubic";
      mt = f64 ? interp_matrix<double>(n, m, corners, scales[size_t(i)], cubic)
               : interp_matrix<float>(n, m, corners, scales[size_t(i)], cubic);
    }
    if (!is_identity(mt, n, m)) y = apply_matrix(b, y, d, n, m, mt);
  }
  if (y == x) y = ap(b, "copy", {y});
  return b.L.fresh(y);
}

std::optional<bool> opt_bool(Bound& b, const std::string& name) {
  if (b.is_none(name)) return std::nullopt;
  return b.bool_(name);
}

}  // namespace

void add_interp_ops(std::vector<OpEntry>& t) {
  t.push_back({"interpolate", kF,
               "input, size=None, scale_factor=None, mode='nearest', align_corners=None, "
               "recompute_scale_factor=None, antialias=False",
               [](Bound& b) {
                 return interpolate(b, b.str("mode"), opt_bool(b, "align_corners"),
                                    opt_bool(b, "recompute_scale_factor").value_or(false));
               }});
  t.push_back({"upsample", kF,
               "input, size=None, scale_factor=None, mode='nearest', "
               "align_corners=None",
               [](Bound& b) {
                 return interpolate(b, b.str("mode"), opt_bool(b, "align_corners"), false);
               }});
  t.push_back({"upsample_nearest", kF, "input, size=None, scale_factor=None",
               [](Bound& b) { return interpolate(b, "nearest", std::nullopt, false); }});
  t.push_back({"upsample_bilinear", kF, "input, size=None, scale_factor=None",
               [](Bound& b) { return interpolate(b, "bilinear", true, false); }});
}

}  // namespace kiln::frontend
