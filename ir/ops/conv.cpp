// Op family: conv — conv2d over NCHW (or unbatched CHW) inputs, like
// torch.nn.functional.conv2d; the pooling ops of this family live in pool.cpp.
//
// Padding is [ph, pw] (symmetric) or [top, bottom, left, right]: torch's
// padding='same' with an even kernel pads unevenly, and the frontend resolves it
// to the 4-int form. Inference needs static channels and a static weight; a
// symbolic batch dim passes through, a symbolic H or W only where the window
// keeps its size. The reference is a direct loop in f64.
#include <sstream>

#include "ir/ops/contraction_internal.h"
#include "ir/ops/ops.h"
#include "kiln/error.h"

namespace kiln::ir {
namespace {

using contraction::describe;
using contraction::Named;
using contraction::Window;

struct ConvWindows {
  Window h, w;
  int64_t groups = 1;
};

// [top, bottom, left, right] from padding's 1, 2 or 4 values.
std::vector<int64_t> conv_padding(const InferContext& ctx) {
  std::vector<int64_t> p = ctx.attrs.get_ints("padding");
  if (p.size() == 1) p = {p[0], p[0], p[0], p[0]};
  if (p.size() == 2) p = {p[0], p[0], p[1], p[1]};
  if (p.size() != 4) {
    ctx.fail(
        "attribute 'padding' must have 1, 2 ([ph, pw]) or 4 ([top, bottom, left, right]) "
        "values, got " +
        attr_str(AttrValue(ctx.attrs.get_ints("padding"))));
  }
  for (int64_t v : p) {
    if (v < 0) {
      ctx.fail("attribute 'padding' values must be at least 0, got " +
               attr_str(AttrValue(ctx.attrs.get_ints("padding"))));
    }
  }
  return p;
}

ConvWindows conv_windows(const InferContext& ctx, int64_t kh, int64_t kw) {
  std::vector<int64_t> stride = contraction::ints_attr(ctx, "stride", 2, 1);
  std::vector<int64_t> dilation = contraction::ints_attr(ctx, "dilation", 2, 1);
  std::vector<int64_t> pad = conv_padding(ctx);
  ConvWindows cw;
  cw.h = Window{kh, stride[0], dilation[0], pad[0], pad[1], false};
  cw.w = Window{kw, stride[1], dilation[1], pad[2], pad[3], false};
  cw.groups = ctx.attrs.get_int("groups");
  if (cw.groups < 1)
    ctx.fail("attribute 'groups' must be at least 1, got " + std::to_string(cw.groups));
  return cw;
}

std::vector<Type> infer_conv2d(const InferContext& ctx) {
  const TensorType& x = ctx.tensor(0);
  const TensorType& w = ctx.tensor(1);
  const TensorType* bias = ctx.inputs[2].is_none() ? nullptr : &ctx.tensor(2);
  std::string all = bias ? describe({{"x", &x}, {"weight", &w}, {"bias", bias}})
                         : describe({{"x", &x}, {"weight", &w}});
  if (x.rank() != 3 && x.rank() != 4) {
    ctx.fail("input x must be 3-D (C, H, W) or 4-D (N, C, H, W): " + all);
  }
  if (w.rank() != 4) {
    ctx.fail("weight must be 4-D [out_channels, in_channels/groups, kH, kW]: " + all);
  }
  if (bias) {
    contraction::check_operand_types(ctx, {{"x", &x}, {"weight", &w}, {"bias", bias}},
                                     contraction::DTypeRule::FloatingOnly);
  } else {
    contraction::check_operand_types(ctx, {{"x", &x}, {"weight", &w}},
                                     contraction::DTypeRule::FloatingOnly);
  }
  if (!dims_are_static(w.dims)) ctx.fail("weight must have a static shape: " + all);
  const int64_t r = x.rank();
  const Dim& channels = x.dims[size_t(r - 3)];
  if (!channels.is_static()) ctx.fail("the channel dim of input x must be static: " + all);
  const int64_t C = channels.value;
  const int64_t Cout = w.dims[0].value, Cin_g = w.dims[1].value;
  const int64_t kh = w.dims[2].value, kw = w.dims[3].value;
  if (kh < 1 || kw < 1) ctx.fail("kernel size must be at least 1x1: " + all);
  ConvWindows cw = conv_windows(ctx, kh, kw);
  const int64_t g = cw.groups;
  std::ostringstream os;
  if (C % g != 0) {
    os << "input channels (" << C << ") are not divisible by groups (" << g << "): " << all;
  } else if (Cout % g != 0) {
    os << "out_channels (" << Cout << ") are not divisible by groups (" << g << "): " << all;
  } else if (Cin_g * g != C) {
    os << "weight expects " << Cin_g * g << " input channels (" << Cin_g << " per group, groups "
       << g << ") but input x has " << C << ": " << all;
  } else if (bias && !(bias->rank() == 1 && bias->dims[0] == Dim(Cout))) {
    os << "bias must be 1-D with out_channels (" << Cout << ") elements: " << all;
  }
  if (!os.str().empty()) ctx.fail(os.str());
  std::string what = "input x is " + x.str();
  Dims out;
  if (r == 4) out.push_back(x.dims[0]);
  out.push_back(Dim(Cout));
  out.push_back(contraction::window_output_dim(ctx, x.dims[size_t(r - 2)], cw.h, "H", what));
  out.push_back(contraction::window_output_dim(ctx, x.dims[size_t(r - 1)], cw.w, "W", what));
  return {Type::tensor(x.dtype, out, x.device)};
}

std::vector<Tensor> ref_conv2d(const RefContext& ctx) {
  const bool unbatched = ctx.inputs[0].dim() == 3;
  const Tensor x = contraction::as_batched(contraction::widen(ctx.inputs[0]));
  const Tensor w = contraction::widen(ctx.inputs[1]);
  const int64_t N = x.size(0), C = x.size(1), H = x.size(2), W = x.size(3);
  const int64_t Cout = w.size(0), Cin_g = w.size(1), KH = w.size(2), KW = w.size(3);
  ConvWindows cw = conv_windows(InferContext{ctx.op, ctx.input_types, ctx.attrs}, KH, KW);
  const int64_t OH = cw.h.output_size(H), OW = cw.w.output_size(W);
  const int64_t Cout_g = Cout / cw.groups;
  KILN_INTERNAL_CHECK(Cin_g * cw.groups == C, "conv2d: channels unchecked");
  Shape batched_out{N, Cout, OH, OW};
  Shape out_shape =
      contraction::checked_output_shape(ctx, 0, unbatched ? Shape{Cout, OH, OW} : batched_out);

  std::vector<double> bias(size_t(Cout), 0.0);
  if (ctx.inputs[2].defined()) {
    Tensor b = contraction::widen(ctx.inputs[2]);
    for (int64_t o = 0; o < Cout; ++o) bias[size_t(o)] = b.data<double>()[o * b.stride(0)];
  }
  const double* px = x.data<double>();
  const double* pw = w.data<double>();
  const Shape& xs = x.strides();
  const Shape& ws = w.strides();
  Tensor out = Tensor::empty(batched_out, DType::F64);
  double* po = out.data<double>();
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t oc = 0; oc < Cout; ++oc) {
      const int64_t c0 = (oc / Cout_g) * Cin_g;  // first input channel of oc's group
      for (int64_t oh = 0; oh < OH; ++oh) {
        for (int64_t ow = 0; ow < OW; ++ow) {
          double acc = 0;
          for (int64_t ic = 0; ic < Cin_g; ++ic) {
            for (int64_t ky = 0; ky < KH; ++ky) {
              const int64_t iy = oh * cw.h.stride - cw.h.pad_before + ky * cw.h.dilation;
              if (iy < 0 || iy >= H) continue;  // zero padding
              for (int64_t kx = 0; kx < KW; ++kx) {
                const int64_t ix = ow * cw.w.stride - cw.w.pad_before + kx * cw.w.dilation;
                if (ix < 0 || ix >= W) continue;
                acc += px[n * xs[0] + (c0 + ic) * xs[1] + iy * xs[2] + ix * xs[3]] *
                       pw[oc * ws[0] + ic * ws[1] + ky * ws[2] + kx * ws[3]];
              }
            }
          }
          po[((n * Cout + oc) * OH + oh) * OW + ow] = acc + bias[size_t(oc)];
        }
      }
    }
  }
  Tensor shaped = out.view_as_strided(out_shape, contiguous_strides(out_shape), 0);
  return {shaped.to(ctx.output_types[0].dtype())};
}

}  // namespace

void register_conv_ops(OpRegistry& r) {
  r.add(OpDef{
      .name = "conv2d",
      .operands = {{"x"}, {"weight"}, {"bias", OperandKind::OptionalTensor}},
      .attrs = {{"stride", AttrKind::Ints, AttrValue(std::vector<int64_t>{1, 1})},
                {"padding", AttrKind::Ints, AttrValue(std::vector<int64_t>{0, 0})},
                {"dilation", AttrKind::Ints, AttrValue(std::vector<int64_t>{1, 1})},
                {"groups", AttrKind::Int, AttrValue(int64_t{1})}},
      .category = OpCategory::Contraction,
      .doc = "2-D convolution of NCHW x with weight [out, in/groups, kH, kW], plus bias[out].",
      .infer = infer_conv2d,
      .reference = ref_conv2d,
  });
  contraction::register_pool_ops(r);
}

}  // namespace kiln::ir
