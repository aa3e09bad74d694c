// The conv2d lowerings (lower_conv.cpp registers them; docs/conv.md shows the
// nests): what every target's candidates share. ConvGeometry is what the
// graph says about one conv2d node (static channels and kernel, spatial sizes
// when static), read by the candidates' applies() and score() and by their
// lowerings; ConvOperands is the same node as its lowering sees it (the
// input, weight and bias as index functions, spatial sizes as expressions).
// The CPU's candidates and their building blocks are in cpu/conv_cpu.h.
//
// Internal to passes/lower.
#pragma once

#include <functional>
#include <string>

#include "passes/lower/lower_internal.h"

namespace kiln::passes::lower {

// One conv2d node, from its types and attributes. Padding is [top, bottom,
// left, right]; spatial sizes are -1 where symbolic.
struct ConvGeometry {
  bool batched = true;  // x is [N, C, H, W] (else [C, H, W])
  DType dtype = DType::F32;
  bool has_bias = false;
  int64_t cin = 0, cout = 0, groups = 1, cin_g = 0, cout_g = 0, kh = 0, kw = 0;
  int64_t sh = 1, sw = 1, dh = 1, dw = 1;
  int64_t pt = 0, pb = 0, pl = 0, pr = 0;
  int64_t n = -1, h = -1, w = -1, oh = -1, ow = -1;
  // The input is a channels-last tensor seen through permute(0, 3, 1, 2)
  // (repacked to NCHW first when the permute is inlined: with_dense_input).
  bool channels_last = false;

  bool depthwise() const { return groups > 1 && cin_g == 1; }
  // Multiply-adds per image (0 when a spatial size is symbolic).
  double macs() const;
  std::string str() const;  // "3x3 s1 p1 d1 g1 64->64 @ 56x56"
};
ConvGeometry conv_geometry(const ir::Node& n);

// The node as its lowering sees it.
struct ConvOperands {
  ConvOperands(NodeLowering& n, const OutBuf& out);

  NodeLowering& node;
  const OutBuf& out;
  ConvGeometry g;
  Expr N, H, W, OH, OW;  // N is 1 for an unbatched input
  DType acc;             // accumulation dtype (f32 for f16/bf16/f32, f64)

  // x[n, c, iy, ix], w[oc, ic, ky, kx], bias[oc] (0 without bias), in `acc`.
  Expr x(const Expr& n, const Expr& c, const Expr& iy, const Expr& ix) const;
  Expr w(const Expr& oc, const Expr& ic, const Expr& ky, const Expr& kx) const;
  Expr bias(const Expr& oc) const;
  // value + bias[oc] (value without a bias).
  Expr with_bias(const Expr& oc, const Expr& value) const;
  // Stores the final `value` at out[n, oc, oy, ox] (through the epilogue when set).
  Stmt store(const Expr& n, const Expr& oc, const Expr& oy, const Expr& ox,
             const Expr& value) const;
};

// Whether a conv2d node is one the fast candidates handle at all: f16, bf16,
// f32 or f64 and static channels (the graph guarantees the latter).
bool conv_supported_dtype(DType t);

// `e` with every load predicated by `pred` (and-ed with its own): masked lanes
// read as zero and touch no memory.
Expr predicated(const Expr& e, const Expr& pred);

// Integer helpers: ceil(a / b) for b > 0, and a range test.
Expr ceil_div(const Expr& a, int64_t b);
Expr in_range(const Expr& i, const Expr& size);

// The plain nest every target has: one accumulator per output element,
// out-of-image taps skipped by a branch (lower_conv.cpp).
AlgorithmLowering conv_naive();

}  // namespace kiln::passes::lower
