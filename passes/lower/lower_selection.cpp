// Lowerings of the selection ops (sort, topk, kthvalue, median, nanmedian) to plain loop
// IR, so every backend runs them: a loop nest over the kept dims (the rows),
// and per row
//   - sort, kthvalue, (nan)median, topk with a large k: the row's keys copied into
//     scratch (widened: f32 for f16/bf16, i64 for integers and bool) and a
//     bottom-up merge sort of a permutation: ceil(log2 n) passes, each merging
//     runs of width w from one half of a 2n-element index buffer into the
//     other. Merging takes the left run's element unless the right one is
//     strictly before it, so the sort is stable; "before" puts NaN after
//     every number (before every number when descending), which is PyTorch's
//     stable order. O(n log n) time, 3n elements of scratch per row.
//   - topk with k <= kSelectMaxK: k selection passes over the row, each
//     taking the first element (in the same order, ties by index) that comes
//     after the one taken before: O(k n), no scratch arrays.
// median takes the lower median of the sorted row, or the row's first NaN
// (counted while copying the keys: the first NaN sits at n - count in the
// stable ascending order). nanmedian takes the lower median of the row's
// n - count numbers, which come first in that order (position 0, a NaN,
// when all are NaN).
//
// The scratch is per-row stack memory (the LLVM backend moves a large or
// run-time sized one to the heap). On a GPU each thread sorts one row in its
// own local array, which must have a constant size: a sort along a dim of
// run-time size, or one longer than kGpuMaxRow, is refused for cuda.
#include "ir/loop/simplify.h"
#include "passes/lower/lower_internal.h"

namespace kiln::passes::lower {
namespace {

using namespace kiln::loop;  // NOLINT

constexpr int64_t kSelectMaxK = 16;
constexpr int64_t kGpuMaxRow = 4096;

// Whether a comes strictly before b in PyTorch's stable sort order.
Expr before(const Expr& a, const Expr& b, bool descending) {
  Expr strict = descending ? a > b : a < b;
  if (!is_floating(a.type().dtype)) return strict;
  return descending ? (strict || (is_nan(a) && !is_nan(b))) : (strict || (is_nan(b) && !is_nan(a)));
}

Expr let_var(LowerContext& ctx, const std::string& prefix, DType t) {
  return Var::make({t, 1}, ctx.fresh(prefix));
}

// How a node sees its one sorted dim.
struct Rows {
  const Operand* x = nullptr;
  int64_t dim = -1;  // -1: a 0-dim x (one element)
  Expr n;            // the size along dim
  std::vector<Expr> kept;

  Rows(const NodeLowering& node, const std::string& op) {
    x = &node.in(0);
    const int64_t rank = x->rank();
    n = make_int(1);
    if (rank > 0) {
      dim = wrap_dim(node.attrs().get_int("dim"), rank);
      n = x->dims[size_t(dim)];
    }
    for (int64_t d = 0; d < rank; ++d) {
      if (d != dim) kept.push_back(x->dims[size_t(d)]);
    }
    if (node.ctx.options().target.kind == TargetKind::CUDA) {
      int64_t size = 0;
      if (!is_const_int(n, &size) || size > kGpuMaxRow) {
        unsupported(node, op + " along a dim of " +
                              (is_const_int(n, &size)
                                   ? "more than " + std::to_string(kGpuMaxRow) + " elements"
                                   : std::string("run-time size")) +
                              " is not supported on cuda yet (each GPU thread sorts a row in "
                              "local memory of a constant size)" +
                              (node.node.loc().known() ? " at " + node.node.loc().str() : ""));
      }
    }
  }
  // The index of x (or of an output shaped like x) at column c of row `row`.
  Index at(const Index& row, const Expr& c) const {
    if (dim < 0) return {};
    Index full = row;
    full.insert(full.begin() + dim, c);
    return full;
  }
  // A reduced output's index (kthvalue, median).
  Index reduced_at(const Index& row, bool keepdim) const {
    return keepdim ? at(row, make_int(0)) : row;
  }
};

// Per-row scratch of a merge sort and the statements that fill and sort it.
struct SortedRow {
  Buf keys;      // n keys
  Buf perm;      // 2n i64: the order lives in the half starting at src
  Scratch src;   // 0 or n
  Scratch nans;  // NaN count (median)
  std::vector<Scratch> scalars;

  // perm[src + c]: the column at sorted position c.
  Expr column(const Expr& c) const { return Load::make(perm, src.load() + c); }
  Expr key(const Expr& col) const { return Load::make(keys, col); }
};

Stmt sort_row(LowerContext& ctx, const Rows& rows, const Index& row, bool descending,
              SortedRow* s) {
  const Operand& x = *rows.x;
  const Expr& n = rows.n;
  DType key_t = accum_dtype(x.dtype);
  s->keys = ctx.scratch_buf("keys", key_t);
  s->perm = ctx.scratch_buf("perm", DType::I64);
  s->src = make_scratch(ctx, "src", DType::I64);
  s->nans = make_scratch(ctx, "nans", DType::I64);
  Scratch w = make_scratch(ctx, "width", DType::I64);
  Scratch i = make_scratch(ctx, "left", DType::I64);
  Scratch j = make_scratch(ctx, "right", DType::I64);
  s->scalars = {s->src, s->nans, w, i, j};

  // keys[c] = x[row, c]; perm[c] = c; count NaNs.
  Expr c = ctx.loop_var("c");
  Expr v = cast_to(x.at(rows.at(row, c)), key_t);
  std::vector<Stmt> fill{Store::make(s->keys, c, v), Store::make(s->perm, c, c)};
  if (is_floating(key_t)) {
    fill.push_back(
        s->nans.store(s->nans.load() + Select::make(is_nan(v), make_int(1), make_int(0))));
  }
  Stmt copy = For::make(c, make_int(0), n, ForKind::Serial, Block::make(fill));

  // One merge pass of width wv from perm[sv...] into perm[n - sv...].
  Expr wv = let_var(ctx, "w", DType::I64), sv = let_var(ctx, "s", DType::I64);
  Expr q = ctx.loop_var("q"), k = ctx.loop_var("k");
  Expr lo = let_var(ctx, "lo", DType::I64), mid = let_var(ctx, "mid", DType::I64),
       hi = let_var(ctx, "hi", DType::I64);
  Expr li = let_var(ctx, "li", DType::I64), rj = let_var(ctx, "rj", DType::I64);
  Expr take = let_var(ctx, "take_left", DType::Bool);
  Expr il = i.load(), jl = j.load();
  Expr take_value = il < mid && (jl >= hi || !before(s->key(rj), s->key(li), descending));
  Stmt step = Block::make({Store::make(s->perm, (n - sv) + k, Select::make(take, li, rj)),
                           i.store(il + Select::make(take, make_int(1), make_int(0))),
                           j.store(jl + Select::make(take, make_int(0), make_int(1)))});
  step = LetStmt::make(take, take_value, step);
  // Clamped reads: in bounds even once a run is used up.
  step = LetStmt::make(rj, Load::make(s->perm, sv + min(jl, hi - make_int(1))), step);
  step = LetStmt::make(li, Load::make(s->perm, sv + min(il, mid - make_int(1))), step);
  Stmt merge =
      Block::make({i.store(lo), j.store(mid), For::make(k, lo, hi - lo, ForKind::Serial, step)});
  merge = LetStmt::make(hi, min(lo + wv * make_int(2), n), merge);
  merge = LetStmt::make(mid, min(lo + wv, n), merge);
  merge = LetStmt::make(lo, q * (wv * make_int(2)), merge);
  Expr runs = (n + wv * make_int(2) - make_int(1)) / (wv * make_int(2));
  Stmt pass = Block::make({For::make(q, make_int(0), runs, ForKind::Serial, merge),
                           s->src.store(n - sv), w.store(wv * make_int(2))});
  pass = LetStmt::make(wv, w.load(), LetStmt::make(sv, s->src.load(), pass));
  pass = IfThenElse::make(w.load() < n, pass);

  // ceil(log2 n) passes; 62 guarded ones for a run-time n.
  int64_t size = 0, passes = 62;
  if (is_const_int(n, &size)) {
    passes = 0;
    while ((int64_t{1} << passes) < size) ++passes;
  }
  Stmt sort = For::make(ctx.loop_var("pass"), make_int(0), make_int(passes), ForKind::Serial, pass);
  return Block::make(
      {s->src.store(make_int(0)), s->nans.store(make_int(0)), w.store(make_int(1)), copy, sort});
}

// Wraps `body` in the row's scratch.
Stmt with_scratch(const Rows& rows, const SortedRow& s, Stmt body) {
  Expr n1 = simplify(max(rows.n, make_int(1)));
  body = allocate(s.scalars, body);
  body = Allocate::make(s.perm, simplify(n1 * make_int(2)), MemoryScope::Stack, body);
  return Allocate::make(s.keys, n1, MemoryScope::Stack, body);
}

Stmt for_rows(NodeLowering& node, const Rows& rows, const std::function<Stmt(const Index&)>& body) {
  return loop_nest(node.ctx, rows.kept, body);
}

// sort, and topk through a sort: the first `count` sorted elements of each row.
Stmt lower_leading(NodeLowering& node, const std::vector<OutBuf>& outs, const std::string& op,
                   bool descending, const Expr& count) {
  Rows rows(node, op);
  return for_rows(node, rows, [&](const Index& row) {
    SortedRow s;
    Stmt sort = sort_row(node.ctx, rows, row, descending, &s);
    Expr c = node.ctx.loop_var("c");
    Expr col = let_var(node.ctx, "col", DType::I64);
    Stmt put = LetStmt::make(col, s.column(c),
                             Block::make({store_at(outs[0], rows.at(row, c), s.key(col)),
                                          store_at(outs[1], rows.at(row, c), col)}));
    Stmt out = For::make(c, make_int(0), count, ForKind::Serial, put);
    return with_scratch(rows, s, Block::make({sort, out}));
  });
}

// topk with a small k: k selection passes over each row.
Stmt lower_select(NodeLowering& node, const std::vector<OutBuf>& outs, bool largest, int64_t k) {
  Rows rows(node, "topk");
  const Operand& x = *rows.x;
  DType key_t = accum_dtype(x.dtype);
  return for_rows(node, rows, [&](const Index& row) {
    LowerContext& ctx = node.ctx;
    Scratch best_v = make_scratch(ctx, "best", key_t),
            best_i = make_scratch(ctx, "best_i", DType::I64);
    Scratch prev_v = make_scratch(ctx, "prev", key_t),
            prev_i = make_scratch(ctx, "prev_i", DType::I64);
    Expr t = ctx.loop_var("t"), c = ctx.loop_var("c");
    Expr v = let_var(ctx, "v", key_t);
    // (v, c) comes after the element taken last, and before the best one so far
    // (c grows, so a tie with the best one never wins).
    Expr after_prev = t == make_int(0) || before(prev_v.load(), v, largest) ||
                      (!before(v, prev_v.load(), largest) && prev_i.load() < c);
    Expr better = best_i.load() < make_int(0) || before(v, best_v.load(), largest);
    Stmt scan =
        For::make(c, make_int(0), rows.n, ForKind::Serial,
                  LetStmt::make(v, cast_to(x.at(rows.at(row, c)), key_t),
                                IfThenElse::make(after_prev && better,
                                                 Block::make({best_v.store(v), best_i.store(c)}))));
    Stmt pick = Block::make({best_i.store(make_int(-1)), best_v.store(imm(key_t, 0)), scan,
                             store_at(outs[0], rows.at(row, t), best_v.load()),
                             store_at(outs[1], rows.at(row, t), best_i.load()),
                             prev_v.store(best_v.load()), prev_i.store(best_i.load())});
    Stmt body = Block::make({prev_v.store(imm(key_t, 0)), prev_i.store(make_int(-1)),
                             For::make(t, make_int(0), make_int(k), ForKind::Serial, pick)});
    return allocate({best_v, best_i, prev_v, prev_i}, body);
  });
}

// kthvalue and (nan)median: one position of each row's ascending order.
Stmt lower_pick(NodeLowering& node, const std::vector<OutBuf>& outs, bool is_median,
                bool skip_nan = false) {
  Rows rows(node, node.op());
  const bool keepdim = node.attrs().get_bool("keepdim");
  return for_rows(node, rows, [&](const Index& row) {
    SortedRow s;
    Stmt sort = sort_row(node.ctx, rows, row, false, &s);
    const Expr& n = rows.n;
    Expr pos;
    if (!is_median) {
      pos = make_int(node.attrs().get_int("k") - 1);
    } else if (skip_nan) {
      Expr m = n - s.nans.load();
      pos = Select::make(m > make_int(0), (m - make_int(1)) / make_int(2), make_int(0));
    } else {
      Expr nans = s.nans.load();
      pos = Select::make(nans > make_int(0), n - nans, (n - make_int(1)) / make_int(2));
    }
    Expr col = let_var(node.ctx, "col", DType::I64);
    Index at = rows.reduced_at(row, keepdim);
    Stmt put =
        LetStmt::make(col, s.column(pos),
                      Block::make({store_at(outs[0], at, s.key(col)), store_at(outs[1], at, col)}));
    // An empty row has no median (the reference rejects it): store nothing.
    return with_scratch(rows, s, Block::make({sort, IfThenElse::make(n > make_int(0), put)}));
  });
}

}  // namespace

void register_selection_lowerings(LoweringTable& t) {
  t["sort"].root = [](NodeLowering& n, const std::vector<OutBuf>& outs) {
    Rows rows(n, "sort");
    return lower_leading(n, outs, "sort", n.attrs().get_bool("descending"), rows.n);
  };
  t["topk"].root = [](NodeLowering& n, const std::vector<OutBuf>& outs) {
    const int64_t k = n.attrs().get_int("k");
    const bool largest = n.attrs().get_bool("largest");
    if (k <= kSelectMaxK) return lower_select(n, outs, largest, k);
    return lower_leading(n, outs, "topk", largest, make_int(k));
  };
  t["kthvalue"].root = [](NodeLowering& n, const std::vector<OutBuf>& outs) {
    return lower_pick(n, outs, false);
  };
  t["median"].root = [](NodeLowering& n, const std::vector<OutBuf>& outs) {
    return lower_pick(n, outs, true);
  };
  t["nanmedian"].root = [](NodeLowering& n, const std::vector<OutBuf>& outs) {
    return lower_pick(n, outs, true, true);
  };
}

}  // namespace kiln::passes::lower
