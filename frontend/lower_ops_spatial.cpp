// Op table, part 4: spatial nn ops (issue 13) — F.pad, pixel_shuffle,
// conv1d, conv_transpose1d/2d, the 1-D pools, adaptive pools, F.unfold and
// F.fold — as compositions of existing registry ops (F.interpolate is in
// lower_ops_interp.cpp).
//
// Everything here is index bookkeeping done at compile time on static shapes:
// a pad is a cat of slices (reflect/circular), expanded edges (replicate) or
// filled blocks (constant); a transposed conv is conv2d over the zero-stuffed
// input with the flipped, channel-swapped weight; an adaptive window that
// does not tile the input is a cat of per-window amax (max) or a constant
// averaging matrix (avg); unfold stacks one strided slice of the padded input
// per kernel tap, and fold sums the taps back, each zero-stuffed and placed.
// Interpolation is separable, so each spatial dim is resampled on its own:
// nearest by slices/expands when the source indices form few regular runs,
// the linear/cubic modes (and irregular nearest) by a matmul with a constant
// [in, out] weight matrix whose entries follow PyTorch's own index and
// weight formulas.
#include <algorithm>
#include <cmath>
#include <optional>

#include "frontend/lower_spatial.h"
#include "kiln/error.h"

namespace kiln::frontend {

namespace {

using namespace spatial;  // NOLINT

// --- conv1d, conv_transpose, 1-D pools ----------------------------------------------------

Val conv1d(Bound& b) {
  ir::Value* x = b.tensor("input");
  ir::Value* w = b.tensor("weight");
  check_rank(b, x, 2, 3, "a 2-D (C, L) or 3-D (N, C, L) input");
  if (rank(w) != 3) {
    b.fail("weight", short_name(b) +
                         " expects a 3-D weight [out_channels, in_channels/groups, kW], got " +
                         w->type().str());
  }
  int64_t stride = ntuple(b, "stride", 1)[0], dilation = ntuple(b, "dilation", 1)[0];
  std::vector<int64_t> padding;
  const Val& p = b.val("padding");
  if (p.kind == Val::Kind::Str) {
    if (p.s == "valid") {
      padding = {0, 0};
    } else if (p.s == "same") {
      if (stride != 1)
        b.fail("padding", "padding='same' is not supported for strided convolutions");
      int64_t total = dilation * (b.L.static_dim(w, 2, b.span("weight")) - 1);
      padding = {0, 0, total / 2, total - total / 2};  // the odd one after, as PyTorch
    } else {
      b.fail("padding",
             "padding must be 'same', 'valid', an int or a tuple of 1 int, got '" + p.s + "'");
    }
  } else {
    padding = {0, ntuple(b, "padding", 1)[0]};
  }
  ir::Value* x2 = ap(b, "unsqueeze", {x}, {{"dim", int64_t(-2)}});
  ir::Value* w2 = ap(b, "unsqueeze", {w}, {{"dim", int64_t(2)}});
  ir::Value* y = ap(b, "conv2d", {x2, w2, b.opt_tensor("bias")},
                    {{"stride", std::vector<int64_t>{1, stride}},
                     {"padding", padding},
                     {"dilation", std::vector<int64_t>{1, dilation}},
                     {"groups", b.int_("groups")}});
  return b.L.fresh(ap(b, "squeeze", {y}, {{"dim", std::vector<int64_t>{-2}}}));
}

// Inserts s-1 zeros between neighbours along dim d: n -> (n-1)*s+1.
ir::Value* zero_stuff(Bound& b, ir::Value* x, int64_t d, int64_t s) {
  if (s == 1) return x;
  Shape shape = static_shape_of(b, x);
  const int64_t n = shape[size_t(d)];
  if (n == 0) return x;
  ir::Value* u = ap(b, "unsqueeze", {x}, {{"dim", d + 1}});
  Shape zs = shape;
  zs.insert(zs.begin() + d + 1, s - 1);
  u = ap(b, "cat", {u, fill(b, zs, 0, x->type().dtype())}, {{"dim", d + 1}});
  Shape merged = shape;
  merged[size_t(d)] = n * s;
  return slice(b, reshape(b, u, merged), d, 0, (n - 1) * s + 1);
}

// The kernel reversed along dim d.
ir::Value* flip(Bound& b, ir::Value* w, int64_t d) {
  const int64_t k = b.L.static_dim(w, d, b.span("weight"));
  std::vector<ir::Value*> taps;
  for (int64_t i = k - 1; i >= 0; --i) taps.push_back(slice(b, w, d, i, i + 1));
  return cat(b, taps, d);
}

// conv_transpose{1,2}d as conv2d: the input is zero-stuffed by the stride and
// padded by dilation*(k-1)-padding (plus output_padding after; a negative
// amount crops), the weight [Cin, Cout/g, kH, kW] becomes
// [Cout, Cin/g, kH, kW] with both kernel axes reversed. Every output element
// is then the same sum of products the scatter formulation adds up.
Val conv_transpose(Bound& b, int nd) {
  ir::Value* x = b.tensor("input");
  ir::Value* w = b.tensor("weight");
  check_rank(b, x, nd + 1, nd + 2,
             nd == 1 ? "a 2-D (C, L) or 3-D (N, C, L) input"
                     : "a 3-D (C, H, W) or 4-D (N, C, H, W) input");
  check_floating(b, x);
  if (rank(w) != nd + 2) {
    b.fail("weight", short_name(b) + " expects a " + std::to_string(nd + 2) +
                         "-D weight [in_channels, out_channels/groups, kernel...], got " +
                         w->type().str());
  }
  std::vector<int64_t> stride = ntuple(b, "stride", size_t(nd)),
                       padding = ntuple(b, "padding", size_t(nd)),
                       out_pad = ntuple(b, "output_padding", size_t(nd)),
                       dilation = ntuple(b, "dilation", size_t(nd));
  const int64_t groups = b.int_("groups");
  if (groups < 1) b.fail("groups", "groups must be at least 1, got " + std::to_string(groups));
  for (int a = 0; a < nd; ++a) {
    if (stride[size_t(a)] < 1 || dilation[size_t(a)] < 1)
      b.fail("stride and dilation must be at least 1");
    if (padding[size_t(a)] < 0) b.fail("padding", "padding must be non-negative");
    if (out_pad[size_t(a)] < 0 ||
        out_pad[size_t(a)] >= std::max(stride[size_t(a)], dilation[size_t(a)])) {
      b.fail("output_padding",
             "output padding must be smaller than either stride or dilation, got output_padding " +
                 std::to_string(out_pad[size_t(a)]) + ", stride " +
                 std::to_string(stride[size_t(a)]) + ", dilation " +
                 std::to_string(dilation[size_t(a)]));
    }
  }
  const bool unbatched = rank(x) == nd + 1;
  if (unbatched) x = ap(b, "unsqueeze", {x}, {{"dim", int64_t(0)}});
  if (nd == 1) {
    x = ap(b, "unsqueeze", {x}, {{"dim", int64_t(2)}});
    w = ap(b, "unsqueeze", {w}, {{"dim", int64_t(2)}});
    for (auto* v : {&stride, &padding, &out_pad, &dilation}) v->insert(v->begin(), (*v)[0]);
    stride[0] = dilation[0] = 1, padding[0] = out_pad[0] = 0;
  }
  Shape ws = static_shape_of(b, w);  // [Cin, Cout/g, kH, kW]
  const int64_t cin = b.L.static_dim(x, 1, b.span("input"));
  if (cin != ws[0] || cin % groups != 0 || ws[0] % groups != 0) {
    b.fail("weight", "weight " + w->type().str() + " does not fit an input with " +
                         std::to_string(cin) + " channels and groups=" + std::to_string(groups) +
                         " (expected [in_channels, out_channels/groups, kernel...])");
  }
  // [g, Cin/g, Cout/g, kH, kW] -> [g, Cout/g, Cin/g, kH, kW] -> [Cout, Cin/g, kH, kW]
  ir::Value* wc = reshape(b, w, {groups, ws[0] / groups, ws[1], ws[2], ws[3]});
  wc = ap(b, "permute", {wc}, {{"dims", std::vector<int64_t>{0, 2, 1, 3, 4}}});
  wc = reshape(b, wc, {groups * ws[1], ws[0] / groups, ws[2], ws[3]});
  wc = flip(b, flip(b, wc, 2), 3);
  std::vector<int64_t> conv_pad;
  for (int a = 0; a < 2; ++a) {
    const int64_t d = 2 + a;
    x = zero_stuff(b, x, d, stride[size_t(a)]);
    const int64_t k = ws[size_t(d)], span_k = dilation[size_t(a)] * (k - 1);
    int64_t before = span_k - padding[size_t(a)], after = before + out_pad[size_t(a)];
    const int64_t n = b.L.static_dim(x, d, b.span("input"));
    const int64_t out_size = n + before + after - span_k;
    if (out_size <= 0) {
      b.fail("input", "the output size of spatial dim " + std::to_string(a) + " would be " +
                          std::to_string(out_size) + " (input " + x->type().str() +
                          "); it is too small");
    }
    if (before < 0) x = slice(b, x, d, -before, n), before = 0;
    if (after < 0) {
      const int64_t m = b.L.static_dim(x, d, b.span("input"));
      x = slice(b, x, d, 0, std::max<int64_t>(0, m + after));
      after = 0;
    }
    conv_pad.push_back(before);
    conv_pad.push_back(after);
  }
  ir::Value* y = ap(b, "conv2d", {x, wc, b.opt_tensor("bias")},
                    {{"stride", std::vector<int64_t>{1, 1}},
                     {"padding", conv_pad},
                     {"dilation", dilation},
                     {"groups", groups}});
  if (nd == 1) y = ap(b, "squeeze", {y}, {{"dim", std::vector<int64_t>{2}}});
  if (unbatched) y = ap(b, "squeeze", {y}, {{"dim", std::vector<int64_t>{0}}});
  return b.L.fresh(y);
}

Val pool1d(Bound& b, bool is_max) {
  ir::Value* x = b.tensor("input");
  check_rank(b, x, 2, 3, "a 2-D (C, L) or 3-D (N, C, L) input");
  const int64_t k = ntuple(b, "kernel_size", 1)[0];
  std::vector<int64_t> stride;
  if (!b.is_none("stride") && !(b.val("stride").is_seq() && b.val("stride").items.empty()))
    stride = {1, ntuple(b, "stride", 1)[0]};
  ir::Attrs attrs{{"kernel_size", std::vector<int64_t>{1, k}},
                  {"stride", stride},
                  {"padding", std::vector<int64_t>{0, ntuple(b, "padding", 1)[0]}},
                  {"ceil_mode", b.bool_("ceil_mode")}};
  if (is_max) {
    if (b.bool_("return_indices"))
      b.fail("return_indices", "return_indices=True is not supported yet");
    attrs.set("dilation", std::vector<int64_t>{1, ntuple(b, "dilation", 1)[0]});
  } else {
    attrs.set("count_include_pad", b.bool_("count_include_pad"));
  }
  if (stride.empty()) attrs.set("stride", std::vector<int64_t>{1, k});
  ir::Value* u = ap(b, "unsqueeze", {x}, {{"dim", int64_t(-2)}});
  ir::Value* y = ap(b, is_max ? "max_pool2d" : "avg_pool2d", {u}, attrs);
  return b.L.fresh(ap(b, "squeeze", {y}, {{"dim", std::vector<int64_t>{-2}}}));
}

// --- adaptive pools -----------------------------------------------------------------------

// x pooled along dim d (of a 3-D/4-D x) to `out` adaptive windows.
ir::Value* adaptive_along(Bound& b, ir::Value* x, int64_t d, int64_t out, bool is_max) {
  const int64_t in = b.L.static_dim(x, d, b.span("input"));
  if (out == in) return x;
  if (out == 0) return slice(b, x, d, 0, 0);
  if (in % out == 0) {
    const bool h = d == rank(x) - 2;
    std::vector<int64_t> k{h ? in / out : 1, h ? 1 : in / out};
    ir::Attrs attrs{{"kernel_size", k}, {"stride", k}};
    return ap(b, is_max ? "max_pool2d" : "avg_pool2d", {x}, attrs);
  }
  if (is_max) {
    std::vector<ir::Value*> pieces;
    for (int64_t i = 0; i < out; ++i) {
      pieces.push_back(ap(b, "amax",
                          {slice(b, x, d, window_start(i, out, in), window_end(i, out, in))},
                          reduce_attrs({d}, true)));
    }
    return cat(b, pieces, d);
  }
  std::vector<double> mt(size_t(in * out), 0.0);
  for (int64_t i = 0; i < out; ++i) {
    const int64_t s = window_start(i, out, in), e = window_end(i, out, in);
    for (int64_t j = s; j < e; ++j) mt[size_t(j * out + i)] = 1.0 / double(e - s);
  }
  return apply_matrix(b, x, d, in, out, mt);
}

// output_size for nd spatial dims: an int, or a tuple whose None entries keep the input size.
std::vector<int64_t> adaptive_size(Bound& b, ir::Value* x, size_t nd) {
  const Val& v = b.val("output_size");
  std::vector<int64_t> out;
  if (v.is_seq()) {
    if (v.items.size() != nd)
      b.fail("output_size", "output_size must have " + std::to_string(nd) + " elements");
    for (size_t i = 0; i < nd; ++i) {
      const Val& it = v.items[i];
      int64_t d = rank(x) - int64_t(nd) + int64_t(i);
      if (it.kind == Val::Kind::None) {
        out.push_back(b.L.static_dim(x, d, b.span("input")));
      } else if (it.kind == Val::Kind::Int) {
        out.push_back(it.i);
      } else {
        b.fail("output_size", "output_size must hold ints or None, found " + kind_name(it));
      }
    }
  } else {
    out = ntuple(b, "output_size", nd);
  }
  for (int64_t o : out) {
    if (o < 0) {
      b.fail("output_size", "elements of output_size must be greater than or equal to 0, got " +
                                ir::attr_str(ir::AttrValue(out)));
    }
  }
  return out;
}

Val adaptive_pool(Bound& b, int nd, bool is_max) {
  ir::Value* x = b.tensor("input");
  check_rank(b, x, nd + 1, nd + 2,
             nd == 1 ? "a 2-D (C, L) or 3-D (N, C, L) input"
                     : "a 3-D (C, H, W) or 4-D (N, C, H, W) input");
  if (is_max) {
    if (b.bool_("return_indices"))
      b.fail("return_indices", "return_indices=True is not supported yet");
    if (x->type().dtype() == DType::Bool)
      b.fail("input", short_name(b) + " expects a numeric input, got bool");
  } else {
    check_floating(b, x);
  }
  std::vector<int64_t> out = adaptive_size(b, x, size_t(nd));
  for (int64_t d = rank(x) - nd; d < rank(x); ++d) {
    if (b.L.static_dim(x, d, b.span("input")) == 0)
      b.fail("input", short_name(b) + " expects non-empty spatial dims, got " + x->type().str());
  }
  if (std::count(out.begin(), out.end(), 0)) {
    // An empty result: x cut to at most one element per spatial dim, expanded
    // to the output shape (symbolic leading dims stay symbolic).
    ir::Value* v = x;
    std::vector<int64_t> size(size_t(rank(x) - nd), -1);
    for (int64_t i = 0; i < nd; ++i) {
      v = slice(b, v, rank(x) - nd + i, 0, out[size_t(i)] == 0 ? 0 : 1);
      size.push_back(out[size_t(i)]);
    }
    return b.L.fresh(ap(b, "expand", {v}, {{"size", size}}));
  }
  ir::Value* y = x;
  if (nd == 1) y = ap(b, "unsqueeze", {y}, {{"dim", int64_t(-2)}});
  const int64_t r = rank(y);
  if (!is_max && nd == 2 && out[0] == 1 && out[1] == 1)
    return b.L.fresh(ap(b, "mean", {y}, reduce_attrs({-2, -1}, true)));
  y = adaptive_along(b, y, r - 1, out[size_t(nd - 1)], is_max);
  if (nd == 2) y = adaptive_along(b, y, r - 2, out[0], is_max);
  if (nd == 1) y = ap(b, "squeeze", {y}, {{"dim", std::vector<int64_t>{-2}}});
  if (y == x) y = ap(b, "copy", {y});
  return b.L.fresh(y);
}

// --- pixel_shuffle ------------------------------------------------------------------------

Val pixel_shuffle(Bound& b, bool up) {
  ir::Value* x = b.tensor("input");
  const std::string arg = up ? "upscale_factor" : "downscale_factor";
  if (rank(x) < 3)
    b.fail("input",
           short_name(b) + " expects an input with at least 3 dims, got " + x->type().str());
  const int64_t f = b.int_(arg);
  if (f <= 0) b.fail(arg, arg + " must be greater than 0, got " + std::to_string(f));
  Shape s = static_shape_of(b, x);
  const size_t r = s.size();
  Shape lead(s.begin(), s.end() - 3);
  const int64_t c = s[r - 3], h = s[r - 2], w = s[r - 1];
  const int64_t L = int64_t(lead.size());
  std::vector<int64_t> perm;
  for (int64_t i = 0; i < L; ++i) perm.push_back(i);
  Shape split = lead, merged = lead;
  if (up) {
    if (c % (f * f) != 0) {
      b.fail("input",
             "pixel_shuffle expects its input's channel dim to be divisible by the "
             "square of upscale_factor, but input.size(-3)=" +
                 std::to_string(c) + " is not divisible by " + std::to_string(f * f));
    }
    split.insert(split.end(), {c / (f * f), f, f, h, w});
    for (int64_t p : {0, 3, 1, 4, 2}) perm.push_back(L + p);
    merged.insert(merged.end(), {c / (f * f), h * f, w * f});
  } else {
    if (h % f != 0 || w % f != 0) {
      b.fail("input",
             "pixel_unshuffle expects height and width to be divisible by "
             "downscale_factor, got " +
                 x->type().str() + " and " + std::to_string(f));
    }
    split.insert(split.end(), {c, h / f, f, w / f, f});
    for (int64_t p : {0, 2, 4, 1, 3}) perm.push_back(L + p);
    merged.insert(merged.end(), {c * f * f, h / f, w / f});
  }
  ir::Value* y = ap(b, "permute", {reshape(b, x, split)}, {{"dims", perm}});
  return b.L.fresh(reshape(b, y, merged));
}

// --- F.pad --------------------------------------------------------------------------------

Val pad(Bound& b) {
  ir::Value* x = b.tensor("input");
  std::vector<int64_t> p = b.ints("pad");
  const std::string mode = b.str("mode");
  const int64_t r = rank(x), k = int64_t(p.size()) / 2;
  if (p.size() % 2 != 0) b.fail("pad", "padding length must be divisible by 2");
  if (k > r) b.fail("pad", "padding length too large for a " + std::to_string(r) + "-D input");
  if (mode != "constant" && mode != "reflect" && mode != "replicate" && mode != "circular") {
    b.fail("mode", "unknown padding mode '" + mode +
                       "'; expected 'constant', 'reflect', 'replicate' or 'circular'");
  }
  if (mode != "constant") {
    if (k < 1 || k > 3 || r < k + 1 || r > k + 2) {
      b.fail("pad", "'" + mode + "' padding of the last " + std::to_string(k) + " dims needs a " +
                        std::to_string(k + 1) + "-D or " + std::to_string(k + 2) +
                        "-D input, got " + x->type().str());
    }
    if (!b.is_none("value") && b.float_("value") != 0)
      b.fail("value", "padding mode '" + mode + "' doesn't take in value argument");
  }
  const double value = b.is_none("value") ? 0.0 : b.float_("value");
  const DType dt = x->type().dtype();
  ir::Value* y = x;
  for (int64_t i = 0; i < k; ++i) {
    const int64_t d = r - 1 - i;
    int64_t lo = p[size_t(2 * i)], hi = p[size_t(2 * i + 1)];
    int64_t n = b.L.static_dim(y, d, b.span("input"));
    if (mode == "circular" && (lo < 0 || hi < 0) && n + lo + hi >= 0) {
      // PyTorch wraps the cropped input around.
      y = slice(b, y, d, std::max<int64_t>(-lo, 0), n + std::min<int64_t>(hi, 0));
      n += std::min<int64_t>(lo, 0) + std::min<int64_t>(hi, 0);
      lo = std::max<int64_t>(lo, 0), hi = std::max<int64_t>(hi, 0);
    }
    const int64_t before = std::max<int64_t>(lo, 0), after = std::max<int64_t>(hi, 0);
    if (n + lo + hi < 0) {
      b.fail("pad", "the padded size of dim " + std::to_string(d) + " (" + std::to_string(n) +
                        " + " + std::to_string(lo) + " + " + std::to_string(hi) +
                        ") would be negative");
    }
    if (mode == "reflect" && (before >= n || after >= n)) {
      b.fail("pad", "argument #" + std::to_string(2 * i) +
                        ": padding size should be less than "
                        "the corresponding input dimension, but got: padding (" +
                        std::to_string(lo) + ", " + std::to_string(hi) + ") at dimension " +
                        std::to_string(d) + " of input " + x->type().str());
    }
    if ((mode == "circular") && (before > n || after > n)) {
      b.fail("pad", "padding value causes wrapping around more than once: padding (" +
                        std::to_string(lo) + ", " + std::to_string(hi) + ") at dimension " +
                        std::to_string(d) + " of input " + x->type().str());
    }
    if (mode == "replicate" && n == 0 && (before || after)) {
      b.fail("input", "replicate padding needs a non-empty dim " + std::to_string(d) + ", got " +
                          x->type().str());
    }
    std::vector<ir::Value*> pieces;
    Shape s = static_shape_of(b, y);
    auto block = [&](int64_t count) {
      Shape bs = s;
      bs[size_t(d)] = count;
      return fill(b, bs, value, dt);
    };
    auto edge = [&](int64_t at, int64_t count) {
      Shape es = s;
      es[size_t(d)] = count;
      return ap(b, "expand", {slice(b, y, d, at, at + 1)}, {{"size", es}});
    };
    if (before) {
      if (mode == "constant") pieces.push_back(block(before));
      if (mode == "replicate") pieces.push_back(edge(0, before));
      if (mode == "circular") pieces.push_back(slice(b, y, d, n - before, n));
      if (mode == "reflect") {
        for (int64_t j = before; j >= 1; --j) pieces.push_back(slice(b, y, d, j, j + 1));
      }
    }
    pieces.push_back(y);
    if (after) {
      if (mode == "constant") pieces.push_back(block(after));
      if (mode == "replicate") pieces.push_back(edge(n - 1, after));
      if (mode == "circular") pieces.push_back(slice(b, y, d, 0, after));
      if (mode == "reflect") {
        for (int64_t j = n - 2; j >= n - 1 - after; --j) pieces.push_back(slice(b, y, d, j, j + 1));
      }
    }
    y = cat(b, pieces, d);
    // Negative pads crop, after the positive side was padded from the whole input.
    if (lo < 0 || hi < 0)
      y = slice(b, y, d, -std::min<int64_t>(lo, 0), before + n + after + std::min<int64_t>(hi, 0));
  }
  if (y == x) y = ap(b, "copy", {y});
  return b.L.fresh(y);
}

// --- F.unfold / F.fold --------------------------------------------------------------------

// x with `lo` zeros before and `hi` after along dim d (both at least 0).
ir::Value* zero_pad(Bound& b, ir::Value* x, int64_t d, int64_t lo, int64_t hi) {
  if (lo == 0 && hi == 0) return x;
  Shape s = static_shape_of(b, x);
  std::vector<ir::Value*> pieces;
  auto zeros = [&](int64_t n) {
    Shape z = s;
    z[size_t(d)] = n;
    return fill(b, z, 0, x->type().dtype());
  };
  if (lo) pieces.push_back(zeros(lo));
  pieces.push_back(x);
  if (hi) pieces.push_back(zeros(hi));
  return cat(b, pieces, d);
}

struct Patches {
  std::vector<int64_t> k, d, p, s;
  int64_t blocks(int64_t size, int a) const {  // windows along spatial axis a
    return (size + 2 * p[size_t(a)] - d[size_t(a)] * (k[size_t(a)] - 1) - 1) / s[size_t(a)] + 1;
  }
};

Patches patch_args(Bound& b) {
  Patches pa{ntuple(b, "kernel_size", 2), ntuple(b, "dilation", 2), ntuple(b, "padding", 2),
             ntuple(b, "stride", 2)};
  for (int a = 0; a < 2; ++a) {
    if (pa.k[size_t(a)] < 1 || pa.d[size_t(a)] < 1 || pa.s[size_t(a)] < 1 || pa.p[size_t(a)] < 0)
      b.fail("kernel_size, dilation and stride must be at least 1 and padding at least 0");
  }
  return pa;
}

// im2col: [N, C, H, W] -> [N, C*kh*kw, L], one strided slice of the padded input per tap.
Val unfold(Bound& b) {
  ir::Value* x = b.tensor("input");
  check_rank(b, x, 3, 4, "a 3-D (C, H, W) or 4-D (N, C, H, W) input");
  Patches pa = patch_args(b);
  const bool unbatched = rank(x) == 3;
  if (unbatched) x = ap(b, "unsqueeze", {x}, {{"dim", int64_t(0)}});
  Shape s = static_shape_of(b, x);
  const int64_t oh = pa.blocks(s[2], 0), ow = pa.blocks(s[3], 1);
  if (oh < 1 || ow < 1) {
    b.fail("input", "unfold: the kernel does not fit the padded input " + x->type().str() +
                        " (blocks " + std::to_string(oh) + " x " + std::to_string(ow) + ")");
  }
  x = zero_pad(b, zero_pad(b, x, 2, pa.p[0], pa.p[0]), 3, pa.p[1], pa.p[1]);
  std::vector<ir::Value*> taps;
  for (int64_t ky = 0; ky < pa.k[0]; ++ky) {
    for (int64_t kx = 0; kx < pa.k[1]; ++kx) {
      const int64_t y0 = ky * pa.d[0], x0 = kx * pa.d[1];
      ir::Value* t = slice(b, x, 2, y0, y0 + (oh - 1) * pa.s[0] + 1, pa.s[0]);
      taps.push_back(slice(b, t, 3, x0, x0 + (ow - 1) * pa.s[1] + 1, pa.s[1]));
    }
  }
  ir::Value* y = taps.size() == 1 ? ap(b, "unsqueeze", {taps[0]}, {{"dim", int64_t(2)}})
                                  : ap(b, "stack", taps, {{"dim", int64_t(2)}});
  y = reshape(b, y, {s[0], s[1] * pa.k[0] * pa.k[1], oh * ow});
  if (unbatched) y = ap(b, "squeeze", {y}, {{"dim", std::vector<int64_t>{0}}});
  return b.L.fresh(y);
}

// col2im, the adjoint of unfold: every tap's blocks are zero-stuffed by the
// stride, placed at their offset in the padded output and summed; the
// padding is then cropped.
Val fold(Bound& b) {
  ir::Value* x = b.tensor("input");
  check_rank(b, x, 2, 3, "a 2-D (C*kh*kw, L) or 3-D (N, C*kh*kw, L) input");
  Patches pa = patch_args(b);
  std::vector<int64_t> out = ntuple(b, "output_size", 2);
  const bool unbatched = rank(x) == 2;
  if (unbatched) x = ap(b, "unsqueeze", {x}, {{"dim", int64_t(0)}});
  Shape s = static_shape_of(b, x);
  const int64_t K = pa.k[0] * pa.k[1];
  const int64_t oh = pa.blocks(out[0], 0), ow = pa.blocks(out[1], 1);
  if (s[1] % K != 0 || oh < 1 || ow < 1 || s[2] != oh * ow) {
    b.fail("input", "fold expects an input of shape (N, C*" + std::to_string(K) + ", " +
                        std::to_string(std::max<int64_t>(oh, 0) * std::max<int64_t>(ow, 0)) +
                        ") for output_size " + ir::attr_str(ir::AttrValue(out)) + ", got " +
                        x->type().str());
  }
  const int64_t C = s[1] / K, hp = out[0] + 2 * pa.p[0], wp = out[1] + 2 * pa.p[1];
  ir::Value* cols = reshape(b, x, {s[0], C, K, oh, ow});
  ir::Value* sum = nullptr;
  for (int64_t ky = 0; ky < pa.k[0]; ++ky) {
    for (int64_t kx = 0; kx < pa.k[1]; ++kx) {
      ir::Value* t = ap(b, "select", {cols}, {{"dim", int64_t(2)}, {"index", ky * pa.k[1] + kx}});
      t = zero_stuff(b, zero_stuff(b, t, 2, pa.s[0]), 3, pa.s[1]);
      const int64_t y0 = ky * pa.d[0], x0 = kx * pa.d[1];
      const int64_t hy = (oh - 1) * pa.s[0] + 1, hx = (ow - 1) * pa.s[1] + 1;
      t = zero_pad(b, t, 2, y0, hp - y0 - hy);
      t = zero_pad(b, t, 3, x0, wp - x0 - hx);
      sum = sum ? ap(b, "add", {sum, t}) : t;
    }
  }
  ir::Value* y =
      slice(b, slice(b, sum, 2, pa.p[0], pa.p[0] + out[0]), 3, pa.p[1], pa.p[1] + out[1]);
  if (unbatched) y = ap(b, "squeeze", {y}, {{"dim", std::vector<int64_t>{0}}});
  return b.L.fresh(y);
}

}  // namespace

void add_spatial_ops(std::vector<OpEntry>& t) {
  const unsigned FT = kF | kTorch;
  t.push_back({"pad", kF, "input, pad, mode='constant', value=None", pad});
  t.push_back({"pixel_shuffle", FT, "input, upscale_factor",
               [](Bound& b) { return pixel_shuffle(b, true); }});
  t.push_back({"pixel_unshuffle", FT, "input, downscale_factor",
               [](Bound& b) { return pixel_shuffle(b, false); }});
  t.push_back({"conv1d", FT, "input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1",
               conv1d});
  for (int nd : {1, 2}) {
    t.push_back({"conv_transpose" + std::to_string(nd) + "d", FT,
                 "input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, "
                 "dilation=1",
                 [nd](Bound& b) { return conv_transpose(b, nd); }});
  }
  t.push_back({"max_pool1d", FT,
               "input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, "
               "return_indices=False",
               [](Bound& b) { return pool1d(b, true); }});
  t.push_back({"avg_pool1d", FT,
               "input, kernel_size, stride=None, padding=0, ceil_mode=False, "
               "count_include_pad=True",
               [](Bound& b) { return pool1d(b, false); }});
  for (int nd : {1, 2}) {
    std::string n = std::to_string(nd) + "d";
    t.push_back({"adaptive_avg_pool" + n, FT, "input, output_size",
                 [nd](Bound& b) { return adaptive_pool(b, nd, false); }});
    t.push_back({"adaptive_max_pool" + n, FT, "input, output_size, return_indices=False",
                 [nd](Bound& b) { return adaptive_pool(b, nd, true); }});
  }
  t.push_back({"unfold", kF, "input, kernel_size, dilation=1, padding=0, stride=1", unfold});
  t.push_back(
      {"fold", kF, "input, output_size, kernel_size, dilation=1, padding=0, stride=1", fold});
  add_interp_ops(t);
}

}  // namespace kiln::frontend
