// Pieces the GEMM generators share (gemm.cpp: blocking and the packed
// algorithm; gemm_small.cpp: the small-matrix and GEMV algorithms): the
// register-blocked micro-tile and small loop-building helpers. Internal to
// passes/lower.
#pragma once

#include <functional>
#include <string>

#include "ir/loop/analysis.h"
#include "passes/lower/cpu/gemm.h"

namespace kiln::passes::lower::gemm_detail {

// ceil(a / b) for a >= 0, simplified.
Expr ceil_div(const Expr& a, int64_t b);

// `e` with `pred` and-ed into the predicate of every load in it: masked-off
// elements are never read (they read as zero).
Expr guard_loads(const Expr& e, const Expr& pred);

// `s` with loop `var` vectorized, or with it unrolled when its body cannot be
// vectorized (an epilogue the vectorizer rejects): either way the micro-tile's
// accumulators are only ever indexed by constants, so they stay in registers.
Stmt vectorize_or_unroll(const Stmt& s, const std::string& var);

// `s` versioned on the spec's `specialize` values that it uses.
Stmt versioned(const Stmt& s, const GemmSpec& spec);

// Whether `e` / `s` uses a variable: loop::uses_var (ir/loop/analysis.h).
using loop::uses_var;

// `body(t)` for each task t in [0, tasks), spread over at most 4 workers per
// core of `target` (worker w runs tasks w, w + P, ...), with at least ~10 us
// of work per worker given the work of one task; a problem smaller than that
// runs on the calling thread.
Stmt parallel_tasks(LowerContext& ctx, const Expr& tasks, const Expr& work_per_task,
                    const CpuTarget& target, const std::function<Stmt(const Expr& t)>& body);

// The batch dims of `spec` folded into M when B does not depend on the batch
// index: one larger GEMM with the same operands and stores.
GemmSpec fold_batch_into_m(const GemmSpec& spec);

// A micro-tile of mr x nr accumulators (nr = nv * lanes) in stack scratch that
// the LLVM backend keeps in vector registers: every access is at a constant
// offset once the unrolled row / vector loops are expanded. The element
// functions take (row i, column j) of the tile as scalar expressions; the
// column loop is vectorized, so j runs along vector lanes.
class MicroTile {
 public:
  using Element = std::function<Expr(const Expr& i, const Expr& j)>;
  using Operand = std::function<Expr(const Expr& row_or_col, const Expr& k)>;
  using Visit = std::function<Stmt(const Expr& i, const Expr& j, const Expr& value)>;

  MicroTile(LowerContext& ctx, int mr, int nv, int lanes, DType acc, bool fma);

  // acc[i, j] = value(i, j) for every element.
  Stmt fill(const Element& value) const;
  // for (k, 0, extent) acc[i, j] += a(i, k) * b(j, k): a is broadcast along
  // the row, b is read as vectors along j.
  Stmt update(const Expr& extent, const Operand& a, const Operand& b) const;
  // acc[i, j] = value(i, j, acc[i, j]) for every element (a rescale).
  Stmt map(const std::function<Expr(const Expr& i, const Expr& j, const Expr& old)>& value) const;
  // visit(i, j, acc[i, j]) for every element whose row passes `row_ok` (when
  // set); the statements may be stores of any kind (the epilogue). With
  // `roll_heavy_rows`, an epilogue with transcendental calls runs as a loop
  // over the rows of a stack copy of the tile instead of MR unrolled copies.
  Stmt each(const Visit& visit, const std::function<Expr(const Expr& i)>& row_ok = {},
            bool roll_heavy_rows = false) const;
  // `body` with the accumulators allocated around it.
  Stmt allocate(const Stmt& body) const;

  int mr() const { return mr_; }
  int nr() const { return nv_ * lanes_; }

 private:
  // for (i, 0, mr) unrolled [if row_ok(i)] for (v, 0, nv) unrolled
  //   for (l, 0, lanes) vectorized { body(i, v * lanes + l) }
  Stmt tile_loops(const std::function<Stmt(const Expr& i, const Expr& j)>& body,
                  const std::function<Expr(const Expr& i)>& row_ok = {}) const;
  // Those loops around `body` (built with the loop variables i, v, l), the
  // row loop of kind `rows`.
  Stmt wrap_tile(const Stmt& body, const Expr& i, const Expr& v, const Expr& l,
                 const std::function<Expr(const Expr& i)>& row_ok, loop::ForKind rows) const;
  Expr slot(const Expr& i, const Expr& j) const;

  LowerContext& ctx_;
  int mr_, nv_, lanes_;
  DType acc_;
  bool fma_;
  Buf buf_;
};

// The packed algorithm (gemm.cpp) and the other two (gemm_small.cpp).
Stmt packed_gemm(LowerContext& ctx, const GemmSpec& spec, const CpuTarget& target);
Stmt small_gemm(LowerContext& ctx, const GemmSpec& spec, const CpuTarget& target);
Stmt gemv(LowerContext& ctx, const GemmSpec& spec, const CpuTarget& target);

}  // namespace kiln::passes::lower::gemm_detail
