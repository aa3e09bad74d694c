// Op table, part 4: spatial nn ops (issue 13) — F.pad, pixel_shuffle,
// conv1d, conv_transpose1d/2d, the 1-D pools, adaptive pools and
// F.interpolate — as compositions of existing registry ops.
//
// Everything here is index bookkeeping done at compile time on static shapes:
// a pad is a cat of slices (reflect/circular), expanded edges (replicate) or
// filled blocks (constant); a transposed conv is conv2d over the zero-stuffed
// input with the flipped, channel-swapped weight; an adaptive window that
// does not tile the input is a cat of per-window amax (max) or a constant
// averaging matrix (avg); interpolation is separable, so each spatial dim is
// resampled on its own: nearest by slices/expands when the source indices
// form few regular runs, the linear/cubic modes (and irregular nearest) by a
// matmul with a constant [in, out] weight matrix whose entries are computed
// with PyTorch's own index and weight formulas (in float for f32 inputs, in
// double for f64, as PyTorch's CPU kernels do).
#include <algorithm>
#include <cmath>
#include <optional>

#include "frontend/lower.h"
#include "kiln/error.h"

namespace kiln::frontend {

namespace {

ir::Value* ap(Bound& b, const std::string& op, std::vector<ir::Value*> in, ir::Attrs attrs = {}) {
  return b.L.apply1(op, std::move(in), std::move(attrs), b.call.callee);
}

int64_t rank(ir::Value* x) { return x->type().rank(); }

Shape static_shape_of(Bound& b, ir::Value* x) {
  Shape s;
  for (int64_t d = 0; d < rank(x); ++d) s.push_back(b.L.static_dim(x, d, b.span("input")));
  return s;
}

ir::Value* slice(Bound& b, ir::Value* x, int64_t d, int64_t start, int64_t end, int64_t step = 1) {
  return ap(b, "slice", {x}, {{"dim", d}, {"start", start}, {"end", end}, {"step", step}});
}

ir::Value* reshape(Bound& b, ir::Value* x, const Shape& s) {
  return ap(b, "reshape", {x}, {{"shape", s}});
}

ir::Value* fill(Bound& b, const Shape& s, double value, DType dt) {
  return ap(b, "full", {}, {{"size", s}, {"value", value}, {"dtype", dt}});
}

ir::Value* cat(Bound& b, const std::vector<ir::Value*>& pieces, int64_t d) {
  return pieces.size() == 1 ? pieces[0] : ap(b, "cat", pieces, {{"dim", d}});
}

// A constant tensor of x's dtype holding `vals` (row-major).
ir::Value* const_tensor(Bound& b, const Shape& shape, const std::vector<double>& vals, DType dt) {
  Tensor t = Tensor::empty(shape, dt);
  Tensor flat = t.view_as_strided({t.numel()}, {1}, 0);
  for (int64_t k = 0; k < t.numel(); ++k) flat.set(std::vector<int64_t>{k}, vals[size_t(k)]);
  try {
    return b.L.graph().constant(t, b.L.file().loc(b.call.callee));
  } catch (const Error& e) {
    b.L.fail(b.call.callee, e.what());
  }
}

// An int or a tuple of n ints.
std::vector<int64_t> ntuple(Bound& b, const std::string& name, size_t n) {
  std::vector<int64_t> v = b.ints(name);
  if (v.size() == 1) v.resize(n, v[0]);
  if (v.size() != n) {
    b.fail(name, "'" + name + "' must be an int or a tuple of " + std::to_string(n) +
                     " ints, got " + std::to_string(v.size()) + " values");
  }
  return v;
}

// "conv1d" for "F.conv1d", to start messages as the other nn ops do.
std::string short_name(const Bound& b) { return b.fn.substr(b.fn.rfind('.') + 1); }

void check_rank(Bound& b, ir::Value* x, int64_t lo, int64_t hi, const std::string& what) {
  if (rank(x) < lo || rank(x) > hi)
    b.fail("input", short_name(b) + " expects " + what + ", got " + x->type().str());
}

void check_floating(Bound& b, ir::Value* x) {
  if (!is_floating(x->type().dtype()))
    b.fail("input", short_name(b) + " expects a floating input, got " + x->type().str());
}

// y = x resampled along dim d by the [in, out] matrix mt (out[o] = sum_i x[i] * mt[i][o]).
ir::Value* apply_matrix(Bound& b, ir::Value* x, int64_t d, int64_t in, int64_t out,
                        const std::vector<double>& mt) {
  const int64_t last = rank(x) - 1;
  ir::Value* m = const_tensor(b, {in, out}, mt, x->type().dtype());
  if (d != last) x = ap(b, "transpose", {x}, {{"dim0", d}, {"dim1", last}});
  ir::Value* y = ap(b, "matmul", {x, m});
  if (d != last) y = ap(b, "transpose", {y}, {{"dim0", d}, {"dim1", last}});
  return y;
}

// --- conv1d, conv_transpose, 1-D pools ----------------------------------------------------

Val conv1d(Bound& b) {
  ir::Value* x = b.tensor("input");
  ir::Value* w = b.tensor("weight");
  check_rank(b, x, 2, 3, "a 2-D (C, L) or 3-D (N, C, L) input");
  if (rank(w) != 3) {
    b.fail("weight", short_name(b) + " expects a 3-D weight [out_channels, in_channels/groups, kW], got " +
                         w->type().str());
  }
  int64_t stride = ntuple(b, "stride", 1)[0], dilation = ntuple(b, "dilation", 1)[0];
  std::vector<int64_t> padding;
  const Val& p = b.val("padding");
  if (p.kind == Val::Kind::Str) {
    if (p.s == "valid") {
      padding = {0, 0};
    } else if (p.s == "same") {
      if (stride != 1) b.fail("padding", "padding='same' is not supported for strided convolutions");
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

int64_t window_start(int64_t i, int64_t out, int64_t in) { return (i * in) / out; }
int64_t window_end(int64_t i, int64_t out, int64_t in) { return ((i + 1) * in + out - 1) / out; }

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
    if (x->type().dtype() == DType::Bool) b.fail("input", short_name(b) + " expects a numeric input, got bool");
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
  if (rank(x) < 3) b.fail("input", short_name(b) + " expects an input with at least 3 dims, got " + x->type().str());
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
      b.fail("input", "pixel_shuffle expects its input's channel dim to be divisible by the "
                      "square of upscale_factor, but input.size(-3)=" + std::to_string(c) +
                          " is not divisible by " + std::to_string(f * f));
    }
    split.insert(split.end(), {c / (f * f), f, f, h, w});
    for (int64_t p : {0, 3, 1, 4, 2}) perm.push_back(L + p);
    merged.insert(merged.end(), {c / (f * f), h * f, w * f});
  } else {
    if (h % f != 0 || w % f != 0) {
      b.fail("input", "pixel_unshuffle expects height and width to be divisible by "
                      "downscale_factor, got " + x->type().str() + " and " + std::to_string(f));
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
      b.fail("pad", "'" + mode + "' padding of the last " + std::to_string(k) +
                        " dims needs a " + std::to_string(k + 1) + "-D or " +
                        std::to_string(k + 2) + "-D input, got " + x->type().str());
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
      b.fail("pad", "argument #" + std::to_string(2 * i) + ": padding size should be less than "
                    "the corresponding input dimension, but got: padding (" + std::to_string(lo) +
                        ", " + std::to_string(hi) + ") at dimension " + std::to_string(d) +
                        " of input " + x->type().str());
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
  static const char* const kModes = "nearest | linear | bilinear | bicubic | trilinear | area | "
                                    "nearest-exact";
  const bool nearest = mode == "nearest" || mode == "nearest-exact";
  if (!nearest && mode != "area" && mode != "linear" && mode != "bilinear" &&
      mode != "bicubic" && mode != "trilinear") {
    b.fail("mode", "unknown mode '" + mode + "'; supported modes: " + kModes);
  }
  if (nearest || mode == "area") {
    if (align_corners) {
      b.fail("align_corners", "align_corners option can only be set with the interpolating "
                              "modes: linear | bilinear | bicubic | trilinear");
    }
  }
  const bool corners = align_corners.value_or(false);
  const int64_t r = rank(x), nd = r - 2;
  if (r < 3 || r > 5) {
    b.fail("input", short_name(b) + " expects a 3-D, 4-D or 5-D input (N, C, spatial...) for mode '" + mode +
                        "', got " + x->type().str());
  }
  const int64_t need = mode == "linear" ? 3 : mode == "bilinear" || mode == "bicubic" ? 4
                                          : mode == "trilinear"                       ? 5
                                                                                      : r;
  if (need != r) {
    b.fail("input", "got a " + std::to_string(r) + "-D input, but " + mode + " mode needs a " +
                        std::to_string(need) + "-D input");
  }
  if (nearest) {
    if (x->type().dtype() == DType::Bool) b.fail("input", short_name(b) + " expects a numeric input, got bool");
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
      b.fail("size", "input and output must have the same number of spatial dimensions, but "
                     "got input with " + std::to_string(nd) + " spatial dims and an output "
                     "size of " + std::to_string(s.size()));
    }
    out = s;
  } else {
    const Val& v = b.val("scale_factor");
    std::vector<Val> items = v.is_seq() ? v.items : std::vector<Val>(size_t(nd), v);
    if (int64_t(items.size()) != nd) {
      b.fail("scale_factor", "input and scale_factor must have the same number of spatial "
                             "dimensions, but got input with " + std::to_string(nd) +
                                 " spatial dims and a scale_factor of " +
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
  t.push_back({"interpolate", kF,
               "input, size=None, scale_factor=None, mode='nearest', align_corners=None, "
               "recompute_scale_factor=None, antialias=False",
               [](Bound& b) {
                 return interpolate(b, b.str("mode"), opt_bool(b, "align_corners"),
                                    opt_bool(b, "recompute_scale_factor").value_or(false));
               }});
  t.push_back({"upsample", kF, "input, size=None, scale_factor=None, mode='nearest', "
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
