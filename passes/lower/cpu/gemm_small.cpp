// The GEMM algorithms that do not pack (see gemm.h): "small" runs the packed
// algorithm's micro-tiles straight over the operands, "gemv" computes one
// output row or column as dot products (vectorized along K) or as a
// one-row micro-tile (vectorized along the output).
//
// Assumes and guarantees what gemm.cpp does; gemv needs M == 1 or N == 1.
#include <algorithm>

#include "ir/loop/simplify.h"
#include "kiln/error.h"
#include "passes/lower/cpu/gemm_internal.h"
#include "passes/schedule/schedule.h"

namespace kiln::passes::lower::gemm_detail {

using namespace kiln::loop;  // NOLINT

namespace {

// The tasks of a nest over (batch, blocks): task t covers block t % blocks of
// batch element t / blocks.
struct BatchTask {
  Index batch;
  Expr block;
};

BatchTask batch_task(const Expr& t, const Expr& blocks, const std::vector<Expr>& batch) {
  if (batch.empty()) return {{}, t};
  return {unflatten(simplify(t / blocks), batch), simplify(t % blocks)};
}

// One scalar accumulator per output element: the fallback for operands whose
// strides the fast version was not specialized for (views other than the
// usual unit-stride rows). Compact, so the fallback costs little compile time.
Stmt plain_gemm(LowerContext& ctx, const GemmSpec& spec, const CpuTarget& target) {
  const DType acc = spec.acc;
  Expr rows = simplify(product(spec.batch) * spec.M);
  Expr work = simplify(spec.N * max(spec.K, make_int(1)));
  return parallel_tasks(ctx, rows, work, target, [&](const Expr& t) {
    BatchTask bt = batch_task(t, spec.M, spec.batch);
    Expr n = ctx.loop_var("n"), k = ctx.loop_var("k");
    Scratch sum = make_scratch(ctx, "sum", acc);
    Expr term = cast_to(spec.a(bt.batch, bt.block, k), acc) * cast_to(spec.b(bt.batch, k, n), acc);
    Stmt loop = For::make(k, make_int(0), spec.K, ForKind::Serial, sum.store(sum.load() + term));
    Stmt body = allocate({sum}, Block::make({sum.store(imm(acc, 0)), loop,
                                             spec.store(bt.batch, bt.block, n, sum.load())}));
    return For::make(n, make_int(0), spec.N, ForKind::Serial, body);
  });
}

// `fast` when the strides that its vector loads depend on are 1 (the spec's
// `specialize` values used by the `probes`, the vector operands read at
// placeholder indices), plain_gemm otherwise.
Stmt fast_or_plain(LowerContext& ctx, const Stmt& fast, const GemmSpec& spec,
                   const CpuTarget& target, const std::vector<Expr>& probes) {
  std::vector<std::pair<std::string, int64_t>> used;
  for (const auto& v : spec.specialize) {
    for (const Expr& p : probes) {
      if (uses_var(p, v.first)) {
        used.push_back(v);
        break;
      }
    }
  }
  if (used.empty()) return fast;
  const Stmt both = specialize(fast, used);
  const IfThenElse* versions = both.as<IfThenElse>();
  return IfThenElse::make(versions->cond, versions->then_case, plain_gemm(ctx, spec, target));
}

Index probe_batch(const GemmSpec& spec) {
  Index b;
  for (size_t d = 0; d < spec.batch.size(); ++d) b.push_back(Var::make(i64_t(), "probe_b"));
  return b;
}

// The register tile of the unpacked algorithms: mr rows x nv vectors of lanes.
struct DirectTiles {
  int mr, nv, lanes;
};

// C = A B in micro-tiles read straight from the operands, one block of mr
// rows (all of N) per task. Rows past M read row M-1 and are not stored;
// columns past N are masked.

Stmt direct_tiles(LowerContext& ctx, const GemmSpec& spec, const CpuTarget& target,
                  const DirectTiles& shape) {
  const DType acc = spec.acc;
  const Expr M = spec.M, N = spec.N, K = spec.K;
  MicroTile tile(ctx, shape.mr, shape.nv, shape.lanes, acc, target.fma);
  const int64_t MR = tile.mr(), NR = tile.nr();
  Expr mblocks = ceil_div(M, MR);
  Expr tasks = simplify(product(spec.batch) * mblocks);
  Expr work = simplify(make_int(MR) * N * max(K, make_int(1)));
  Stmt s = parallel_tasks(ctx, tasks, work, target, [&](const Expr& t) {
    BatchTask bt = batch_task(t, mblocks, spec.batch);
    Expr m0 = Var::make(i64_t(), ctx.fresh("m0")), n0 = Var::make(i64_t(), ctx.fresh("n0"));
    Expr jr = ctx.loop_var("jr");
    Expr last_row = simplify(M - make_int(1));
    Stmt body =
        Block::make({tile.fill([&](const Expr&, const Expr&) { return imm(acc, 0); }),
                     tile.update(
                         K,
                         [&](const Expr& i, const Expr& k) {
                           return spec.a(bt.batch, min(m0 + i, last_row), k);
                         },
                         [&](const Expr& j, const Expr& k) {
                           Expr n = n0 + j;
                           return guard_loads(cast_to(spec.b(bt.batch, k, n), acc), n < N);
                         }),
                     tile.each(
                         [&](const Expr& i, const Expr& j, const Expr& v) {
                           Expr n = n0 + j;
                           return IfThenElse::make(n < N, spec.store(bt.batch, m0 + i, n, v));
                         },
                         [&](const Expr& i) { return m0 + i < M; })});
    body = tile.allocate(body);
    body = LetStmt::make(n0, jr * make_int(NR), body);
    body = For::make(jr, make_int(0), ceil_div(N, NR), ForKind::Serial, body);
    return LetStmt::make(m0, simplify(bt.block * make_int(MR)), body);
  });
  // Only B is read as vectors: A's strides change addresses, not instructions.
  Expr pk = Var::make(i64_t(), "probe_k"), pn = Var::make(i64_t(), "probe_n");
  return fast_or_plain(ctx, s, spec, target, {spec.b(probe_batch(spec), pk, pn)});
}

// One output vector y[p] = sum_k x(k) * w(k, p), p in [0, P), as dot
// products along k: `rows` outputs per task share each load of x.
Stmt dot_rows(LowerContext& ctx, const GemmSpec& spec, const CpuTarget& target, const Expr& P,
              const std::function<Expr(const Index&, const Expr& k)>& x,
              const std::function<Expr(const Index&, const Expr& k, const Expr& p)>& w,
              const std::function<Stmt(const Index&, const Expr& p, const Expr& v)>& store) {
  const DType acc = spec.acc;
  const int lanes = std::max(1, target.lanes(int(dtype_size(acc))));
  constexpr int64_t kRows = 4;
  Expr blocks = ceil_div(P, kRows);
  Expr tasks = simplify(product(spec.batch) * blocks);
  Expr work = simplify(make_int(kRows) * max(spec.K, make_int(1)));
  Stmt s = parallel_tasks(ctx, tasks, work, target, [&](const Expr& t) {
    BatchTask bt = batch_task(t, blocks, spec.batch);
    Expr p0 = Var::make(i64_t(), ctx.fresh("p0"));
    Expr k = ctx.loop_var("k");
    Expr last = simplify(P - make_int(1));
    std::vector<Scratch> sums;
    std::vector<Stmt> init, update, out;
    Expr xk = cast_to(x(bt.batch, k), acc);
    for (int64_t r = 0; r < kRows; ++r) {
      Scratch a = make_scratch(ctx, "dot", acc);
      sums.push_back(a);
      init.push_back(a.store(imm(acc, 0)));
      Expr p = simplify(min(p0 + make_int(r), last));
      update.push_back(a.store(a.load() + xk * cast_to(w(bt.batch, k, p), acc)));
      Expr pr = p0 + make_int(r);
      out.push_back(IfThenElse::make(pr < P, store(bt.batch, pr, a.load())));
    }
    Stmt loop = For::make(k, make_int(0), spec.K, ForKind::Serial, Block::make(update));
    // An operand the vectorizer cannot widen keeps scalar dot products.
    if (lanes > 1 && !why_not_vectorize_reduction(loop, k.as<Var>()->name, lanes, 2)) {
      loop = vectorize_reduction(loop, k.as<Var>()->name, lanes, 2);
    }
    Stmt body = allocate(sums, Block::make({Block::make(init), loop, Block::make(out)}));
    return LetStmt::make(p0, simplify(bt.block * make_int(kRows)), body);
  });
  Expr pk = Var::make(i64_t(), "probe_k"), pp = Var::make(i64_t(), "probe_p");
  Index pb = probe_batch(spec);
  return fast_or_plain(ctx, s, spec, target, {x(pb, pk), w(pb, pk, pp)});
}

}  // namespace

Stmt small_gemm(LowerContext& ctx, const GemmSpec& spec_in, const CpuTarget& target) {
  const GemmSpec spec = fold_batch_into_m(spec_in);
  const GemmBlocking blk = gemm_blocking(target, spec.acc);
  return direct_tiles(ctx, spec, target, {blk.mr, blk.nv, blk.lanes});
}

Stmt gemv(LowerContext& ctx, const GemmSpec& spec, const CpuTarget& target) {
  int64_t m = 0, n = 0;
  const bool row = is_const_int(spec.M, &m) && m == 1;
  const bool col = is_const_int(spec.N, &n) && n == 1;
  KILN_INTERNAL_CHECK(row || col, "gemv: neither M nor N is 1");
  const GemmBlocking blk = gemm_blocking(target, spec.acc);
  const Expr zero = make_int(0);
  if (row && (spec.b_contiguous_k || col)) {
    // y[n] = sum_k a[k] * B[k, n], B contiguous along k: dot products.
    return dot_rows(
        ctx, spec, target, spec.N,
        [&](const Index& b, const Expr& k) { return spec.a(b, zero, k); },
        [&](const Index& b, const Expr& k, const Expr& p) { return spec.b(b, k, p); },
        [&](const Index& b, const Expr& p, const Expr& v) { return spec.store(b, zero, p, v); });
  }
  if (col && !spec.a_contiguous_m) {
    // y[m] = sum_k A[m, k] * b[k], A contiguous along k: dot products.
    return dot_rows(
        ctx, spec, target, spec.M,
        [&](const Index& b, const Expr& k) { return spec.b(b, k, zero); },
        [&](const Index& b, const Expr& k, const Expr& p) { return spec.a(b, p, k); },
        [&](const Index& b, const Expr& p, const Expr& v) { return spec.store(b, p, zero, v); });
  }
  // The output's own dim is contiguous: one row of vector accumulators along
  // it, each k a broadcast of the vector operand (enough of them to cover the
  // FMA latency).
  const int nv = std::max(1, std::min(8, target.vector_registers / 2 - 1));
  if (row) return direct_tiles(ctx, spec, target, {1, nv, blk.lanes});
  GemmSpec t = spec;  // y^T = b^T A^T: the column as a row
  t.M = spec.N, t.N = spec.M;
  t.a = [&spec](const Index& b, const Expr& m, const Expr& k) { return spec.b(b, k, m); };
  t.b = [&spec](const Index& b, const Expr& k, const Expr& n) { return spec.a(b, n, k); };
  t.store = [&spec](const Index& b, const Expr& m, const Expr& n, const Expr& v) {
    return spec.store(b, n, m, v);
  };
  return direct_tiles(ctx, t, target, {1, nv, blk.lanes});
}

}  // namespace kiln::passes::lower::gemm_detail
