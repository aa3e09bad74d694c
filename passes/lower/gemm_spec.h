// The problem a matrix multiplication lowering solves, independent of the
// target: C[b, m, n] = sum_k A[b, m, k] * B[b, k, n] with the operands as
// index functions and the store of each final element as a callback (so
// transposed, strided, broadcast or layout-inlined operands, an im2col view
// and fused epilogues cost nothing to express). lower_matmul.cpp builds one
// per matmul/bmm/linear node; the naive nest and each target's generators
// (passes/lower/cpu/gemm.h) consume it.
//
// Internal to passes/lower.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "passes/lower/lower_internal.h"

namespace kiln::passes::lower {

// The problem, as a lowering sees it. Dims are i64 expressions (immediates or
// symbolic-dim Vars); the generated loops take their bounds at run time.
struct GemmSpec {
  using Operand = std::function<Expr(const Index& batch, const Expr& row, const Expr& col)>;
  using Store =
      std::function<Stmt(const Index& batch, const Expr& m, const Expr& n, const Expr& value)>;

  std::vector<Expr> batch;  // batch dims, outermost first (may be empty)
  Expr M, N, K;
  Operand a;               // a(batch, m, k): an element of A (any floating dtype)
  Operand b;               // b(batch, k, n): an element of B
  DType acc = DType::F32;  // F32 (f32/f16/bf16 operands) or F64
  // The final value of C(batch, m, n), of dtype `acc`: called once per output
  // element in the generated code, possibly inside a loop the generator then
  // vectorizes (m, n and value are then scalar expressions of its variable;
  // loads in the statement are masked like the element's own).
  Store store;

  // Layout hints (performance only; any index function is correct): whether
  // A's elements are contiguous along m (a transposed A) rather than k, and
  // B's along k (a linear layer's [N, K] weight) rather than n.
  bool a_contiguous_m = false;
  bool b_contiguous_k = false;
  // Whether A (B) is the same for every batch index: a broadcast operand
  // (batched A times one matrix B folds the batch into M when B is invariant).
  bool a_batch_invariant = false;
  bool b_batch_invariant = false;
  // Scalar parameters (by Var name) the code that reads the operands is
  // versioned on, usually the operands' last-dim strides and 1: a stride that
  // is 1 at run time then gives dense vector loads instead of gathers.
  std::vector<std::pair<std::string, int64_t>> specialize;
};

// The GemmSpec of a matmul/bmm/linear node (operands, accumulation dtype,
// layout hints, the unit-stride versions worth making) with its store
// attached: linear's bias added, then the output's epilogue or store.
GemmSpec node_gemm_spec(NodeLowering& n, const std::vector<OutBuf>& outs);

}  // namespace kiln::passes::lower
