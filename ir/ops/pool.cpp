// Op family: conv (pooling part) — max_pool2d and avg_pool2d over NCHW (or
// unbatched CHW) inputs with torch.nn.functional's rules.
//
// torch's rules kept here: stride [] means the kernel size; padding is
// symmetric and at most half the kernel; in ceil mode the last window must start
// inside the input or its leading padding; max pooling pads with -inf (NaN
// wins); avg pooling divides by the window clipped to the padded input
// (count_include_pad) or to the input, unless divisor_override is given.
#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <type_traits>

#include "ir/ops/contraction_internal.h"
#include "ir/ops/ops.h"
#include "kiln/error.h"

namespace kiln::ir::contraction {
namespace {

struct PoolWindows {
  Window h, w;
};

PoolWindows pool_windows(const InferContext& ctx, bool has_dilation) {
  std::vector<int64_t> kernel = ints_attr(ctx, "kernel_size", 2, 1);
  std::vector<int64_t> stride =
      ctx.attrs.get_ints("stride").empty() ? kernel : ints_attr(ctx, "stride", 2, 1);
  std::vector<int64_t> pad = ints_attr(ctx, "padding", 2, 0);
  std::vector<int64_t> dilation =
      has_dilation ? ints_attr(ctx, "dilation", 2, 1) : std::vector<int64_t>{1, 1};
  bool ceil_mode = ctx.attrs.get_bool("ceil_mode");
  if (pad[0] > kernel[0] / 2 || pad[1] > kernel[1] / 2) {
    ctx.fail("padding must be at most half the kernel size, got padding " +
             attr_str(AttrValue(pad)) + " for kernel_size " + attr_str(AttrValue(kernel)));
  }
  PoolWindows pw;
  pw.h = Window{kernel[0], stride[0], dilation[0], pad[0], pad[0], ceil_mode};
  pw.w = Window{kernel[1], stride[1], dilation[1], pad[1], pad[1], ceil_mode};
  return pw;
}

std::vector<Type> infer_pool(const InferContext& ctx, bool is_max) {
  const TensorType& x = ctx.tensor(0);
  const int64_t r = x.rank();
  std::string what = "input x is " + x.str();
  if (r != 3 && r != 4) ctx.fail("input x must be 3-D (C, H, W) or 4-D (N, C, H, W): " + what);
  check_operand_types(ctx, {{"x", &x}},
                      is_max ? DTypeRule::FloatingOrIntegral : DTypeRule::FloatingOnly);
  for (int64_t d = r - 3; d < r; ++d) {
    const Dim& dim = x.dims[size_t(d)];
    if (dim.is_static() && dim.value == 0) {
      ctx.fail("input x must have non-empty channel and spatial dims: " + what);
    }
  }
  PoolWindows pw = pool_windows(ctx, is_max);
  if (!is_max && !ctx.attrs.is_none("divisor_override") &&
      ctx.attrs.get_int("divisor_override") == 0) {
    ctx.fail("attribute 'divisor_override' must not be zero");
  }
  Dims out(x.dims.begin(), x.dims.end() - 2);
  out.push_back(window_output_dim(ctx, x.dims[size_t(r - 2)], pw.h, "H", what));
  out.push_back(window_output_dim(ctx, x.dims[size_t(r - 1)], pw.w, "W", what));
  return {Type::tensor(x.dtype, out, x.device)};
}

// The pooled input as a 4-D wide view, the windows and the batched output
// shape; shared by both references.
struct PoolSetup {
  Tensor x;
  PoolWindows pw;
  int64_t N, C, H, W, OH, OW;
  Shape out_shape;  // the op's output shape (3-D for an unbatched input)
};

PoolSetup pool_setup(const RefContext& ctx, bool is_max) {
  PoolSetup s;
  s.x = as_batched(widen(ctx.inputs[0]));
  s.pw = pool_windows(InferContext{ctx.op, ctx.input_types, ctx.attrs}, is_max);
  s.N = s.x.size(0), s.C = s.x.size(1), s.H = s.x.size(2), s.W = s.x.size(3);
  s.OH = s.pw.h.output_size(s.H), s.OW = s.pw.w.output_size(s.W);
  Shape computed{s.N, s.C, s.OH, s.OW};
  if (ctx.inputs[0].dim() == 3) computed.erase(computed.begin());
  s.out_shape = checked_output_shape(ctx, 0, computed);
  return s;
}

// The kernel taps [first, end) of a window starting at input index `start`
// that read indices in [0, size).
struct TapRange {
  int64_t first, end;
};
TapRange taps_in_input(int64_t start, const Window& w, int64_t size) {
  const int64_t d = w.dilation;
  const int64_t first = start < 0 ? (-start + d - 1) / d : 0;
  const int64_t end = size - 1 - start < 0 ? 0 : std::min(w.kernel, (size - 1 - start) / d + 1);
  return {first, std::max(first, end)};
}

template <typename T>
Tensor max_pool_typed(const PoolSetup& s, DType wide) {
  Tensor out = Tensor::empty({s.N, s.C, s.OH, s.OW}, wide);
  const T* px = s.x.data<T>();
  T* po = out.data<T>();
  const Shape& xs = s.x.strides();
  const Window& wh = s.pw.h;
  const Window& ww = s.pw.w;
  for (int64_t n = 0; n < s.N; ++n) {
    for (int64_t c = 0; c < s.C; ++c) {
      const T* plane = px + n * xs[0] + c * xs[1];
      for (int64_t oh = 0; oh < s.OH; ++oh) {
        for (int64_t ow = 0; ow < s.OW; ++ow) {
          T best = std::numeric_limits<T>::has_infinity ? -std::numeric_limits<T>::infinity()
                                                        : std::numeric_limits<T>::lowest();
          // Only the taps that land in the input (-inf padding never wins):
          // a huge ceil-mode kernel has few of them.
          const TapRange ty = taps_in_input(oh * wh.stride - wh.pad_before, wh, s.H);
          const TapRange tx = taps_in_input(ow * ww.stride - ww.pad_before, ww, s.W);
          for (int64_t ky = ty.first; ky < ty.end; ++ky) {
            const int64_t iy = oh * wh.stride - wh.pad_before + ky * wh.dilation;
            if (iy < 0 || iy >= s.H) continue;
            for (int64_t kx = tx.first; kx < tx.end; ++kx) {
              const int64_t ix = ow * ww.stride - ww.pad_before + kx * ww.dilation;
              if (ix < 0 || ix >= s.W) continue;
              T v = plane[iy * xs[2] + ix * xs[3]];
              bool nan = false;
              if constexpr (std::is_floating_point_v<T>) nan = std::isnan(v);
              if (v > best || nan) best = v;  // torch: NaN propagates
            }
          }
          po[((n * s.C + c) * s.OH + oh) * s.OW + ow] = best;
        }
      }
    }
  }
  return out;
}

std::vector<Tensor> ref_max_pool2d(const RefContext& ctx) {
  PoolSetup s = pool_setup(ctx, true);
  Tensor out = s.x.dtype() == DType::F64 ? max_pool_typed<double>(s, DType::F64)
                                         : max_pool_typed<int64_t>(s, DType::I64);
  Tensor shaped = out.view_as_strided(s.out_shape, contiguous_strides(s.out_shape), 0);
  return {shaped.to(ctx.output_types[0].dtype())};
}

std::vector<Tensor> ref_avg_pool2d(const RefContext& ctx) {
  PoolSetup s = pool_setup(ctx, false);
  const bool include_pad = ctx.attrs.get_bool("count_include_pad");
  const bool has_divisor = !ctx.attrs.is_none("divisor_override");
  const int64_t divisor = has_divisor ? ctx.attrs.get_int("divisor_override") : 0;
  Tensor out = Tensor::empty({s.N, s.C, s.OH, s.OW}, DType::F64);
  const double* px = s.x.data<double>();
  double* po = out.data<double>();
  const Shape& xs = s.x.strides();
  const Window& wh = s.pw.h;
  const Window& ww = s.pw.w;
  for (int64_t n = 0; n < s.N; ++n) {
    for (int64_t c = 0; c < s.C; ++c) {
      const double* plane = px + n * xs[0] + c * xs[1];
      for (int64_t oh = 0; oh < s.OH; ++oh) {
        for (int64_t ow = 0; ow < s.OW; ++ow) {
          // The window clipped to the padded input (a ceil-mode window may run
          // past it) counts for count_include_pad; clipped to the input, it is
          // what gets summed.
          int64_t y0 = oh * wh.stride - wh.pad_before, x0 = ow * ww.stride - ww.pad_before;
          int64_t y1 = std::min(y0 + wh.kernel, s.H + wh.pad_after);
          int64_t x1 = std::min(x0 + ww.kernel, s.W + ww.pad_after);
          const int64_t padded_count = (y1 - y0) * (x1 - x0);
          y0 = std::max<int64_t>(y0, 0), x0 = std::max<int64_t>(x0, 0);
          y1 = std::min(y1, s.H), x1 = std::min(x1, s.W);
          double& o = po[((n * s.C + c) * s.OH + oh) * s.OW + ow];
          if (y0 >= y1 || x0 >= x1) {
            o = 0;
            continue;
          }
          double sum = 0;
          for (int64_t iy = y0; iy < y1; ++iy) {
            for (int64_t ix = x0; ix < x1; ++ix) sum += plane[iy * xs[2] + ix * xs[3]];
          }
          const int64_t count = has_divisor   ? divisor
                                : include_pad ? padded_count
                                              : (y1 - y0) * (x1 - x0);
          o = sum / static_cast<double>(count);
        }
      }
    }
  }
  Tensor shaped = out.view_as_strided(s.out_shape, contiguous_strides(s.out_shape), 0);
  return {shaped.to(ctx.output_types[0].dtype())};
}

AttrSpec ints(const char* name, std::optional<std::vector<int64_t>> def) {
  AttrSpec a{name, AttrKind::Ints, std::nullopt, false};
  if (def) a.default_value = AttrValue(*def);
  return a;
}

}  // namespace

void register_pool_ops(OpRegistry& r) {
  r.add(OpDef{
      .name = "max_pool2d",
      .operands = {{"x"}},
      .attrs = {ints("kernel_size", std::nullopt),
                ints("stride", std::vector<int64_t>{}),
                ints("padding", std::vector<int64_t>{0, 0}),
                ints("dilation", std::vector<int64_t>{1, 1}),
                {"ceil_mode", AttrKind::Bool, AttrValue(false)}},
      .category = OpCategory::Contraction,
      .doc = "2-D max pooling over NCHW x (stride [] = kernel_size; -inf padding).",
      .infer = [](const InferContext& ctx) { return infer_pool(ctx, true); },
      .reference = ref_max_pool2d,
  });
  r.add(OpDef{
      .name = "avg_pool2d",
      .operands = {{"x"}},
      .attrs = {ints("kernel_size", std::nullopt),
                ints("stride", std::vector<int64_t>{}),
                ints("padding", std::vector<int64_t>{0, 0}),
                {"ceil_mode", AttrKind::Bool, AttrValue(false)},
                {"count_include_pad", AttrKind::Bool, AttrValue(true)},
                {"divisor_override", AttrKind::Int, AttrValue(NoneAttr{}), true}},
      .category = OpCategory::Contraction,
      .doc = "2-D average pooling over NCHW x (stride [] = kernel_size; torch's divisor rules).",
      .infer = [](const InferContext& ctx) { return infer_pool(ctx, false); },
      .reference = ref_avg_pool2d,
  });
}

}  // namespace kiln::ir::contraction
