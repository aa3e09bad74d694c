// The CPU's conv2d candidates (one file each under passes/lower/cpu/) and
// what they share: how they get a dense input (conv_input.cpp), column
// blocks, and RegisterTile, the register-blocked multiply-accumulate the
// direct, Winograd and depthwise kernels are built from (conv_tile.cpp).
//
// Internal to passes/lower.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "passes/lower/conv.h"

namespace kiln::passes::lower {

// Vector lanes the kernels use for the accumulation dtype of `t` on `target`.
int conv_lanes(DType t, const CpuTarget& target);

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
  Stmt store(const FinishFn& finish,
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
AlgorithmLowering conv_direct();     // conv_direct.cpp
AlgorithmLowering conv_depthwise();  // conv_depthwise.cpp
AlgorithmLowering conv_winograd();   // conv_winograd.cpp
AlgorithmLowering conv_1x1();        // conv_gemm.cpp
AlgorithmLowering conv_im2col();     // conv_gemm.cpp

// Those candidates, in registration order, each with the dense-input
// handling it needs (conv_input.cpp); they serve CPU targets only.
std::vector<AlgorithmLowering> cpu_conv_algorithms();

}  // namespace kiln::passes::lower
