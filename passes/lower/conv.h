// The conv2d lowerings (lower_conv.cpp registers them; docs/conv.md shows the
// nests): what they share. ConvGeometry is what the graph says about one
// conv2d node (static channels and kernel, spatial sizes when static), read
// by the candidates' applies() and score() and by their lowerings;
// ConvOperands is the same node as its lowering sees it (the input, weight
// and bias as index functions, spatial sizes as expressions). RegisterTile is
// the register-blocked multiply-accumulate the direct, Winograd and depthwise
// kernels are built from.
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

// Vector lanes the kernels use for the accumulation dtype of `t` on `target`.
int conv_lanes(DType t, const CpuTarget& target);

// `e` with every load predicated by `pred` (and-ed with its own): masked lanes
// read as zero and touch no memory.
Expr predicated(const Expr& e, const Expr& pred);

// Whether the input's rows are contiguous -- x[n, c, iy, ix] at a flat offset
// of iy * W + ix from x[n, c, 0, 0], so x[n, c, 0, p] reads pixel p of the
// flattened image -- as a condition on its strides (constant for packed
// buffers). False when x is not read straight from a buffer through an index
// affine in (iy, ix).
Expr input_rows_contiguous(const ConvOperands& c, LowerContext& ctx);

// How a candidate wants its input (conv_input.cpp): the fast candidates
// vectorize along the width, so an input whose width is strided in memory
// (channels-last data through an inlined permute) is first copied into a
// packed NCHW heap buffer. An input read through stride parameters (a graph
// input) is, with Version, versioned: a copy of the kernel assumes its
// last-dim stride is 1 (and, with VersionRows, its rows contiguous for flat
// tiles), the other copy repacks; the other inputs' last-dim strides (an
// epilogue's operands) join the same versions. Repack only repacks known
// strided layouts and leaves stride parameters to the candidate (the GEMM
// versions its own reads). The default schedule leaves nests with parallel
// loops alone, so this is the candidates' own versioning.
enum class DenseInput : uint8_t { Repack, Version, VersionRows };
RootFn with_dense_input(RootFn inner, DenseInput how);

// A row of output columns in blocks of `cols`: block(col0, masked) for each,
// where only blocks with a load outside the input row or a lane past OW are
// masked. With static sizes the blocks are classified here (left border
// blocks one by one with constant col0, so their masks fold; an interior
// loop without masks; right border blocks); else one masked loop.
Stmt over_column_blocks(const ConvOperands& c, LowerContext& ctx, int64_t cols,
                        const std::function<Stmt(const Expr& col0, bool masked)>& block);

// Integer helpers: ceil(a / b) for b > 0, and a range test.
Expr ceil_div(const Expr& a, int64_t b);
Expr in_range(const Expr& i, const Expr& size);

// A register tile: `rows` x `vectors` vectors of `lanes` accumulators of dtype
// `acc`, in one stack scratch whose every access is at a constant offset (so
// LLVM keeps the tile in vector registers). Each operation is a loop over the
// lanes that it vectorizes itself: the callbacks get the vector's number and
// the lane variable, and build scalar expressions of it.
//
// update(a, b) multiplies a broadcast operand per row with a vector per
// column group and accumulates (the outer product of a GEMM micro-kernel):
//   let b_v = b(v, l)                            (one vector load per vector)
//   acc[r][v][l] = fma(b_v, a(r), acc[r][v][l])  (for every r, v)
class RegisterTile {
 public:
  RegisterTile(LowerContext& ctx, int rows, int vectors, int lanes, DType acc);

  int rows() const { return rows_; }
  int vectors() const { return vectors_; }
  int lanes() const { return lanes_; }

  using LaneFn = std::function<Expr(int vec, const Expr& lane)>;
  using RowFn = std::function<Expr(int row)>;

  // acc = value(row, vec, lane).
  Stmt init(const std::function<Expr(int row, int vec, const Expr& lane)>& value) const;
  // acc += a(row) * b(vec, lane); b's loads are predicated by guard(vec, lane)
  // when a guard is given and returns a defined expression. A row whose a()
  // is undefined is left out of the update.
  Stmt update(const RowFn& a, const LaneFn& b, const LaneFn& guard = {}) const;
  // acc += a(row, vec, lane) * b(vec, lane): a first operand that varies by
  // lane too (element-wise products).
  Stmt update_lanes(const std::function<Expr(int row, int vec, const Expr& lane)>& a,
                    const LaneFn& b, const LaneFn& guard = {}) const;
  // For every element where guard(vec, lane) holds (all without a guard):
  // emit(row, vec, lane, finish(row, acc)). finish (a bias add) runs outside
  // the guard, so its loads stay unmasked broadcasts; emit's loads and stores
  // are masked by the guard.
  using FinishFn = std::function<Expr(int row, const Expr& acc)>;
  Stmt store(
      const FinishFn& finish,
      const std::function<Stmt(int row, int vec, const Expr& lane, const Expr& value)>& emit,
      const LaneFn& guard = {}) const;
  // `body` with the tile's scratch allocated around it.
  Stmt allocate(Stmt body) const;

 private:
  Stmt over_lanes(const std::function<Stmt(const Expr& l)>& body) const;
  Expr index(int row, int vec, const Expr& l) const;

  LowerContext& ctx_;
  int rows_, vectors_, lanes_;
  DType acc_;
  Buf buf_;
};

// How conv.direct lays out a tile (conv_direct.cpp shows both modes): `rows`
// output channels x vectors(), the vectors over `row_block` output rows of
// `row_vectors` vectors each (rows mode) or over `row_vectors` vectors of
// consecutive pixels of the flattened image (flat mode).
struct DirectPlan {
  bool flat = false;
  int rows = 1;
  int row_block = 1;
  int row_vectors = 1;
  int lanes = 1;
  double lane_use = 1;  // the fraction of computed lanes that are outputs
  // Task order: pixel blocks outermost (consecutive tasks reuse one input
  // block) or output-channel blocks outermost (they reuse the weights).
  bool pixels_outer = false;
  int vectors() const { return flat ? row_vectors : row_block * row_vectors; }
};
// The plan conv.direct's heuristic picks; rows mode only when !allow_flat.
DirectPlan plan_direct(const ConvGeometry& g, const CpuTarget& t, bool allow_flat = true);
// The direct convolution of `plan`; a flat plan checks at run time that the
// input's rows are contiguous and falls back to `rows_plan` when not.
Stmt lower_direct_plan(NodeLowering& n, const OutBuf& out, const DirectPlan& plan,
                       const DirectPlan& rows_plan);

// The candidates (one file each). Each fills an AlgorithmLowering.
AlgorithmLowering conv_naive();      // lower_conv.cpp
AlgorithmLowering conv_direct();     // conv_direct.cpp
AlgorithmLowering conv_depthwise();  // conv_depthwise.cpp
AlgorithmLowering conv_winograd();   // conv_winograd.cpp
AlgorithmLowering conv_1x1();        // conv_gemm.cpp
AlgorithmLowering conv_im2col();     // conv_gemm.cpp

}  // namespace kiln::passes::lower
