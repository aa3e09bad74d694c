// The GEMM generator's entry point, its blocking, the micro-tile every
// algorithm is built from, and the packed (BLIS-style) algorithm; the small
// and GEMV algorithms are in gemm_small.cpp. See gemm.h for the loop nests.
//
// Assumes: M, N, K >= 0 (symbolic dims are bound to sizes). Guarantees: each
// output element's final value is passed to spec.store exactly once; partial
// sums over K blocks live in scratch of the generator's own, never in the
// output; no operand element outside [0, M) x [0, K) / [0, K) x [0, N) is read.
#include <algorithm>
#include <functional>

#include "ir/loop/analysis.h"
#include "ir/loop/simplify.h"
#include "ir/loop/visitor.h"
#include "kiln/error.h"
#include "passes/lower/cpu/gemm_internal.h"
#include "passes/schedule/schedule.h"

namespace kiln::passes::lower {

using namespace kiln::loop;  // NOLINT

std::string GemmBlocking::str() const {
  return "mr " + std::to_string(mr) + " nr " + std::to_string(nr()) + " (" + std::to_string(nv) +
         " x " + std::to_string(lanes) + " lanes) kc " + std::to_string(kc) + " mc " +
         std::to_string(mc) + " nc " + std::to_string(nc) +
         (nc_narrow != nc ? " (" + std::to_string(nc_narrow) + " while A fits a quarter of L3)"
                          : "");
}

GemmBlocking gemm_blocking(const CpuTarget& t, DType acc, int64_t M, int64_t N, int64_t K) {
  GemmBlocking b;
  const int64_t bytes = int64_t(dtype_size(acc));
  b.lanes = std::max(1, t.lanes(int(bytes)));
  // The micro-tile: mr * nv accumulators, nv vectors of B and one broadcast of
  // A fit the register file with room to spare. With 32 registers 6 x 4 (24
  // accumulators, 10 loads per 24 FMAs) measured best among 8 x 3, 14 x 2,
  // 5 x 5 and 4 x 6 on Zen 5; with 16, 6 x 2. A scalar machine gets 4 x 4.
  if (b.lanes == 1) {
    b.mr = 4, b.nv = 4;
  } else if (t.vector_registers >= 32) {
    b.mr = 6, b.nv = 4;
  } else {
    b.mr = 6, b.nv = 2;
  }
  auto round_up = [](int64_t v, int64_t m) { return (v + m - 1) / m * m; };
  // KC: the B micro-panel (kc x nr), reused by every row block of a tile,
  // stays in half of L2. Up to that, K is not split at all (no partial sums
  // leave the registers); beyond it, into equal blocks. So KC follows the L2
  // size: 2048 with 1 MiB (Zen 5), 4096 with 2 MiB (Emerald Rapids).
  const int64_t kc_max =
      std::clamp<int64_t>((t.l2_bytes / 2) / (b.nr() * bytes) / 64 * 64, 256, 4096);
  b.kc = kc_max;
  if (K >= 0) {
    const int64_t blocks = std::max<int64_t>(1, (K + kc_max - 1) / kc_max);
    b.kc = blocks == 1 ? std::max<int64_t>(K, 1) : round_up((K + blocks - 1) / blocks, 16);
  }
  // A K block longer than 2048 (only an L2 of 2 MiB or more allows one):
  // 12 x 2 instead of 6 x 4 halves the B micro-panel each micro-row streams
  // and the bytes read per FMA (12 + 32 floats per k for 24 FMAs, against
  // 6 + 64). One core of the Xeon, CPU time: 256x4096 -> 1024 linear 17-19 ms
  // against 20-30 ms, 512x3072 -> 768 17.3-17.8 against 19.5-21; no change at
  // K <= 2048 (square 512..2048, K = 256/1024 linears), where Zen 5 measured
  // 6 x 4 ahead of the 2-vector tiles, so shorter K keeps it.
  if (b.lanes > 1 && t.vector_registers >= 32 && b.kc > 2048) b.mr = 12, b.nv = 2;
  const int64_t mr = b.mr, nr = b.nr();
  // MC: the A block of a tile (mc x kc), re-read for every micro-panel of B,
  // stays in a third of L2 next to the B micro-panel.
  b.mc = std::clamp<int64_t>((t.l2_bytes / 3) / (b.kc * bytes) / mr * mr, mr, 16 * mr);
  // NC: the tile's width; each B micro-panel streams through once per tile.
  // Each task packs the B column block it multiplies (see packed_gemm), and
  // every column block reads all of A once more: while A is small enough to
  // stay in L3 (a quarter of it), narrow blocks of 2 NR win (the packed block
  // stays nearer L2; 256x4096x1024 5.6 ms vs 6.2 ms at 8 NR on Zen 5);
  // otherwise re-reading A costs more than that gains (2048^3: 40 ms at 8 NR,
  // 44 ms at 2 NR). Unknown M or K: packed_gemm picks one at run time.
  //
  // The narrow block is also kept to a quarter of L2 (kc x nc): next to the
  // A block (a third) it then stays in L2 with room for C. That is 1 NR for
  // a 12 x 2 tile at K = 4096 (512 KiB) and 6 x 4 at K = 2048 (Xeon, L2 2
  // MiB; A/B interleaved, min of 3, load ~2): 256x4096 -> 1024 linear 11.29
  // against 12.08 ms on one core, 5.59 against 6.03 on two; 512x2048 -> 512
  // 2.56 against 2.73 on two.
  b.nc = 8 * nr;
  b.nc_narrow = 2 * nr;
  if (K >= 0) {
    b.nc_narrow =
        std::clamp<int64_t>((t.l2_bytes / 4) / (b.kc * bytes) / nr * nr, nr, b.nc_narrow);
  }
  if (M >= 0 && K >= 0) {
    if (M * K * bytes <= t.l3_bytes / 4) b.nc = b.nc_narrow;
    b.nc_narrow = b.nc;
  }
  if (N >= 0) {
    b.nc = std::min(b.nc, std::max(nr, round_up(N, nr)));
    b.nc_narrow = std::min(b.nc_narrow, b.nc);
  }
  if (M >= 0) b.mc = std::min(b.mc, std::max(mr, round_up(M, mr)));
  // Enough tiles for every core to take a few (the pool balances them).
  if (M >= 0 && N >= 0 && t.cores > 1) {
    auto tiles = [&] { return ((M + b.mc - 1) / b.mc) * ((N + b.nc - 1) / b.nc); };
    while (tiles() < 4 * int64_t(t.cores)) {
      if (b.nc > 2 * nr) {
        b.nc = round_up(b.nc / 2, nr);
        b.nc_narrow = b.nc;
      } else if (b.mc > mr) {
        b.mc = round_up(b.mc / 2, mr);
      } else {
        break;
      }
    }
  }
  return b;
}

namespace gemm_detail {

Expr ceil_div(const Expr& a, int64_t b) {
  return simplify((a + make_int(b - 1)) / make_int(b));
}

namespace {

class LoadGuard : public IRMutator {
 public:
  explicit LoadGuard(Expr pred) : pred_(std::move(pred)) {}
  using IRMutator::mutate;

 protected:
  using IRMutator::visit;
  Expr visit(const Load* op, const Expr&) override {
    Expr index = mutate(op->index);
    Expr pred = op->predicate.defined() ? (mutate(op->predicate) && pred_) : pred_;
    return Load::make(op->buf, index, pred);
  }

 private:
  Expr pred_;
};

}  // namespace

Expr guard_loads(const Expr& e, const Expr& pred) {
  LoadGuard g(pred);
  return g.mutate(e);
}

Stmt vectorize_or_unroll(const Stmt& s, const std::string& var) {
  if (why_not_vectorize(s, var)) return unroll(s, var);
  return vectorize(s, var);
}

Stmt versioned(const Stmt& s, const GemmSpec& spec) {
  std::vector<std::pair<std::string, int64_t>> used;
  for (const auto& v : spec.specialize) {
    if (uses_var(s, v.first)) used.push_back(v);
  }
  return used.empty() ? s : specialize(s, used);
}

Stmt parallel_tasks(LowerContext& ctx, const Expr& tasks, const Expr& work_per_task,
                    const CpuTarget& target, const std::function<Stmt(const Expr& t)>& body) {
  Expr t = ctx.loop_var("t");
  if (target.cores <= 1) return For::make(t, make_int(0), tasks, ForKind::Serial, body(t));
  // At most 4 workers per core, each at least ~10 us of work (below that,
  // waking a thread costs more than it saves), each taking every P-th task:
  // the thread pool then hands out single workers, so uneven task counts
  // (26 tiles on 2 cores) still split evenly, which its own chunking of a
  // loop over the tasks (4 chunks per thread) would not.
  constexpr int64_t kGrain = int64_t(1) << 18;
  Expr total = simplify(tasks * max(work_per_task, make_int(1)));
  Expr p = simplify(max(
      min(make_int(4 * int64_t(target.cores)), min(tasks, total / make_int(kGrain))), make_int(1)));
  Expr workers = is_const(p) ? p : Var::make(i64_t(), ctx.fresh("workers"));
  Expr w = ctx.loop_var("w"), j = ctx.loop_var("j");
  Stmt loop =
      For::make(w, make_int(0), workers, ForKind::Parallel,
                For::make(j, make_int(0), simplify((tasks - w + workers - make_int(1)) / workers),
                          ForKind::Serial, body(w + j * workers)));
  return is_const(p) ? loop : LetStmt::make(workers, p, loop);
}

GemmSpec fold_batch_into_m(const GemmSpec& spec) {
  if (spec.batch.empty() || !spec.b_batch_invariant) return spec;
  GemmSpec f = spec;
  const std::vector<Expr> batch = spec.batch;
  const Expr M = spec.M;
  f.batch.clear();
  f.M = simplify(product(batch) * M);
  f.b_batch_invariant = false;
  auto split = [batch, M](const Expr& row) {
    return std::make_pair(unflatten(simplify(row / M), batch), simplify(row % M));
  };
  GemmSpec::Operand a = spec.a, b = spec.b;
  GemmSpec::Store store = spec.store;
  const Index zeros(batch.size(), make_int(0));
  f.a = [a, split](const Index&, const Expr& m, const Expr& k) {
    auto [bi, r] = split(m);
    return a(bi, r, k);
  };
  f.b = [b, zeros](const Index&, const Expr& k, const Expr& n) { return b(zeros, k, n); };
  f.store = [store, split](const Index&, const Expr& m, const Expr& n, const Expr& v) {
    auto [bi, r] = split(m);
    return store(bi, r, n, v);
  };
  return f;
}

// --- the micro-tile -------------------------------------------------------------------------

MicroTile::MicroTile(LowerContext& ctx, int mr, int nv, int lanes, DType acc, bool fma)
    : ctx_(ctx), mr_(mr), nv_(nv), lanes_(lanes), acc_(acc), fma_(fma) {
  buf_ = ctx.scratch_buf("acc", acc);
}

Expr MicroTile::slot(const Expr& i, const Expr& j) const {
  return i * make_int(nr()) + j;
}

Stmt MicroTile::tile_loops(const std::function<Stmt(const Expr& i, const Expr& j)>& body,
                           const std::function<Expr(const Expr& i)>& row_ok) const {
  Expr i = ctx_.loop_var("i"), v = ctx_.loop_var("v"), l = ctx_.loop_var("l");
  return wrap_tile(body(i, v * make_int(lanes_) + l), i, v, l, row_ok, ForKind::Unrolled);
}

Stmt MicroTile::wrap_tile(const Stmt& body, const Expr& i, const Expr& v, const Expr& l,
                          const std::function<Expr(const Expr& i)>& row_ok,
                          ForKind rows) const {
  Stmt s = For::make(l, make_int(0), make_int(lanes_), ForKind::Serial, body);
  s = vectorize_or_unroll(s, l.as<Var>()->name);
  s = For::make(v, make_int(0), make_int(nv_), ForKind::Unrolled, s);
  if (row_ok) s = IfThenElse::make(row_ok(i), s);
  return For::make(i, make_int(0), make_int(mr_), rows, s);
}

Stmt MicroTile::fill(const Element& value) const {
  return tile_loops([&](const Expr& i, const Expr& j) {
    return Store::make(buf_, slot(i, j), cast_to(value(i, j), acc_));
  });
}

Stmt MicroTile::update(const Expr& extent, const Operand& a, const Operand& b) const {
  Expr k = ctx_.loop_var("k");
  Stmt step = tile_loops([&](const Expr& i, const Expr& j) {
    Expr x = cast_to(a(i, k), acc_), y = cast_to(b(j, k), acc_);
    Expr old = Load::make(buf_, slot(i, j));
    Expr v = fma_ ? Call::make({acc_, 1}, "fma", {x, y, old}) : old + x * y;
    return Store::make(buf_, slot(i, j), v);
  });
  return For::make(k, make_int(0), extent, ForKind::Serial, step);
}

Stmt MicroTile::map(
    const std::function<Expr(const Expr& i, const Expr& j, const Expr& old)>& value) const {
  return tile_loops([&](const Expr& i, const Expr& j) {
    return Store::make(buf_, slot(i, j), cast_to(value(i, j, Load::make(buf_, slot(i, j))), acc_));
  });
}

namespace {

// Calls that become long instruction sequences (codegen/llvm/vector_math.cpp):
// everything but the few that are one instruction or a plain select.
class ExpandingCalls : public IRVisitor {
 public:
  int count = 0;

 protected:
  void visit_node(const Call* op) override {
    static const char* const kCheap[] = {"fma",   "min",  "max",   "abs",   "sqrt", "floor",
                                         "ceil",  "trunc", "round", "copysign", "isnan",
                                         "stream", "rsqrt"};
    bool cheap = false;
    for (const char* c : kCheap) cheap = cheap || op->name == c;
    if (!cheap) ++count;
    IRVisitor::visit_node(op);
  }
};

}  // namespace

Stmt MicroTile::each(const Visit& visit, const std::function<Expr(const Expr& i)>& row_ok,
                     bool roll_heavy_rows) const {
  Expr i = ctx_.loop_var("i"), v = ctx_.loop_var("v"), l = ctx_.loop_var("l");
  // The accumulator is read outside the epilogue's guards: a masked load of
  // it would keep it in memory.
  Expr value = Var::make({acc_, 1}, ctx_.fresh("c"));
  Stmt work = visit(i, v * make_int(lanes_) + l, value);
  ExpandingCalls calls;
  calls.visit(work);
  if (!roll_heavy_rows || mr_ == 1 || calls.count == 0) {
    return wrap_tile(LetStmt::make(value, Load::make(buf_, slot(i, v * make_int(lanes_) + l)), work),
                     i, v, l, row_ok, ForKind::Unrolled);
  }
  // An epilogue of transcendental calls (erf-GELU, sigmoid, tanh) unrolled
  // over all MR rows multiplies the kernel's code, and LLVM's time on it, by
  // MR: the rows become a loop over a stack copy of the accumulators (a
  // variable index would keep the accumulators themselves out of registers
  // in the k loop). The copy is MR x NR/lanes stores and loads per
  // micro-tile, against MR x NR/lanes x kc FMAs.
  Buf rows = ctx_.scratch_buf("rows", acc_);
  Stmt copy = tile_loops([&](const Expr& ci, const Expr& cj) {
    return Store::make(rows, slot(ci, cj), Load::make(buf_, slot(ci, cj)));
  });
  Stmt loop = wrap_tile(
      LetStmt::make(value, Load::make(rows, slot(i, v * make_int(lanes_) + l)), work), i, v, l,
      row_ok, ForKind::Serial);
  return Allocate::make(rows, make_int(int64_t(mr_) * nr()), MemoryScope::Stack,
                        Block::make({copy, loop}));
}

Stmt MicroTile::allocate(const Stmt& body) const {
  return Allocate::make(buf_, make_int(int64_t(mr_) * nr()), MemoryScope::Stack, body);
}

// --- the packed algorithm -------------------------------------------------------------------

namespace {

// Packs one panel of an operand: dst[(d * K + k) * width + r] = value(p *
// width + r, k) for r in [0, width), zero for rows past `extent` (p is
// `panel`, d is `dst_panel`, by default the same). A full panel
// (the common case) runs without guards. When the operand is contiguous along
// its rows (B along n, a transposed A) the row loop is vectorized in chunks of
// `lanes`, and versioned on the spec's unit strides so the loads are dense;
// when it is contiguous along k (A, a linear layer's weight) the panel is a
// transpose, done as scalar copies in blocks along k (cheaper than gathers
// here), and a partial panel reads its last row again for the rows past the
// extent instead of branching around loads.
Stmt pack_panel(LowerContext& ctx, const GemmSpec& spec, const Buf& dst, const Expr& panel,
                int64_t width, int lanes, bool rows_contiguous, const Expr& extent, const Expr& K,
                const std::function<Expr(const Expr& row, const Expr& k)>& value,
                Expr dst_panel = Expr()) {
  if (!dst_panel.defined()) dst_panel = panel;
  const DType acc = spec.acc;
  const bool vector = rows_contiguous && lanes > 1;
  auto version = [&](bool guarded) {
    Expr k = ctx.loop_var("k"), r = ctx.loop_var("r");
    Expr row = panel * make_int(width) + r;
    Expr in = row < extent;
    Expr v;
    if (!guarded) {
      v = cast_to(value(row, k), acc);
    } else if (vector) {
      v = Select::make(in, guard_loads(cast_to(value(row, k), acc), in), imm(acc, 0));
    } else {
      v = Select::make(in, cast_to(value(min(row, extent - make_int(1)), k), acc), imm(acc, 0));
    }
    Stmt s = Store::make(dst, (dst_panel * K + k) * make_int(width) + r, v);
    if (vector) {
      const int64_t chunk = width % lanes == 0 ? lanes : width;
      Expr c = ctx.loop_var("rc"), l = ctx.loop_var("rl");
      s = substitute(s, r.as<Var>()->name, c * make_int(chunk) + l);
      s = For::make(l, make_int(0), make_int(chunk), ForKind::Serial, s);
      s = vectorize_or_unroll(s, l.as<Var>()->name);
      s = For::make(c, make_int(0), make_int(width / chunk), ForKind::Unrolled, s);
      return For::make(k, make_int(0), K, ForKind::Serial, s);
    }
    // A transpose in blocks of kStep along k: each row's kStep elements are
    // contiguous loads from one row, and the kStep x width block of the panel
    // being written stays in L1. (Unrolling the rows instead makes `width`
    // streams, 64 for B, which LLVM's loop strength reduction takes ~100 ms
    // to untangle.)
    constexpr int64_t kStep = 16, kGroup = 8;
    const std::string& kn = k.as<Var>()->name;
    Expr kb = ctx.loop_var("kb"), kk = ctx.loop_var("kk"), kt = ctx.loop_var("kt");
    Expr full = simplify(K / make_int(kStep));
    Stmt block = For::make(kk, make_int(0), make_int(kStep), ForKind::Unrolled,
                           substitute(s, kn, kb * make_int(kStep) + kk));
    Stmt main;
    if (width % kGroup == 0) {
      // Rows in groups of kGroup, each group over all of K, k outside the
      // rows: the stores of one k step are kGroup consecutive elements (half
      // a cache line, committed in pairs) and only kGroup rows are streamed
      // at a time. Against kStep elements of each row in turn (16 stores to 16
      // lines per row, all of a B panel's 64 rows per block), packing a
      // 4096 x 1024 linear weight took 1.66 instead of 2.43 ms on one Xeon
      // core (1024 x 4096: 2.16 against 2.99).
      Expr rg = ctx.loop_var("rg"), rr = ctx.loop_var("rr"), k2 = ctx.loop_var("k2");
      Stmt g = substitute(substitute(s, r.as<Var>()->name, rg * make_int(kGroup) + rr), kn,
                          kb * make_int(kStep) + k2);
      main = For::make(
          rg, make_int(0), make_int(width / kGroup), ForKind::Serial,
          For::make(kb, make_int(0), full, ForKind::Serial,
                    For::make(k2, make_int(0), make_int(kStep), ForKind::Serial,
                              For::make(rr, make_int(0), make_int(kGroup), ForKind::Unrolled, g))));
    } else {
      main = For::make(kb, make_int(0), full, ForKind::Serial,
                       For::make(r, make_int(0), make_int(width), ForKind::Serial, block));
    }
    Expr r2 = ctx.loop_var("r");
    Stmt rest = For::make(kt, make_int(0), simplify(K - full * make_int(kStep)), ForKind::Serial,
                          For::make(r2, make_int(0), make_int(width), ForKind::Serial,
                                    substitute(substitute(s, kn, full * make_int(kStep) + kt),
                                               r.as<Var>()->name, r2)));
    return Block::make({main, rest});
  };
  Stmt s = IfThenElse::make((panel + make_int(1)) * make_int(width) <= extent, version(false),
                            version(true));
  // Versioned on unit strides both ways: a transpose (a linear weight [N, K]
  // packed into B panels) then reads its kStep elements of a row as one
  // contiguous run instead of through a stride parameter (the F.linear MLP
  // 256x1024->4096->1024: 34.8 against 36.4 ms, one core, CPU time).
  return versioned(s, spec);
}

// Whether `index` moves by 1 per step of `k` within chunks of D >= 16
// consecutive k (a cache line of f32 or more): its terms in k are k or k % D
// (one of them, coefficient 1) and (k / D) * c. That is the row of a
// transposed-heads view, `ctx.transpose(1, 2).reshape(B, T, C)` over an
// attention output [B, H, T, D]: contiguous within each head's D elements.
// The micro-kernel only broadcasts A's elements one k at a time, so such a
// row is read in place like a contiguous one; the index costs a shift, a
// mask and an add per k, shared by the tile's rows.
bool contiguous_in_chunks(const Expr& index, const std::string& k) {
  std::vector<Expr> terms;
  std::function<void(const Expr&)> flatten = [&](const Expr& e) {
    const Binary* b = e.as<Binary>();
    if (b && b->op == BinOp::Add) {
      flatten(b->a);
      flatten(b->b);
    } else {
      terms.push_back(e);
    }
  };
  flatten(index);
  auto is_k = [&](const Expr& e) {
    const Var* v = e.as<Var>();
    return v && v->name == k;
  };
  int64_t chunk = 0;
  auto same_chunk = [&](const Expr& d) {
    int64_t c = 0;
    if (!is_const_int(d, &c) || c < 16 || (chunk != 0 && c != chunk)) return false;
    chunk = c;
    return true;
  };
  int unit_terms = 0;
  for (const Expr& t : terms) {
    if (!uses_var(t, k)) continue;
    const Binary* b = t.as<Binary>();
    if (is_k(t)) {
      ++unit_terms;
    } else if (b && b->op == BinOp::Mod && is_k(b->a) && same_chunk(b->b)) {
      ++unit_terms;
    } else if (b && b->op == BinOp::Mul) {
      const Expr& q = uses_var(b->a, k) ? b->a : b->b;
      const Expr& c = uses_var(b->a, k) ? b->b : b->a;
      const Binary* d = q.as<Binary>();
      if (uses_var(c, k) || !d || d->op != BinOp::Div || !is_k(d->a) || !same_chunk(d->b)) {
        return false;
      }
    } else {
      return false;
    }
  }
  return unit_terms == 1 && chunk != 0;
}

// Whether the micro-kernel can broadcast A straight from the operand instead
// of packing it: A is a plain load already of the accumulation dtype (no
// conversion, no computed element such as an im2col's padding) whose address
// steps by 1 along k, or by a stride parameter that is usually 1, or by 1
// within chunks of 16 or more k (contiguous_in_chunks). Measured on Zen 5,
// this beats packed A panels by 10-12% at 1024 and 2048 (and saves the
// packing); a transposed A (contiguous along m) is packed.
bool reads_rows_in_place(const GemmSpec& spec) {
  if (spec.a_contiguous_m) return false;
  Index pb;
  for (size_t d = 0; d < spec.batch.size(); ++d) pb.push_back(Var::make(i64_t(), "probe_b"));
  Expr pm = Var::make(i64_t(), "probe_m"), pk = Var::make(i64_t(), "probe_k");
  Expr e = spec.a(pb, pm, pk);
  const Load* l = e.as<Load>();
  if (!l || l->predicate.defined() || e.type().dtype != spec.acc) return false;
  Expr step = linear_coefficient(l->index, "probe_k");
  if (!step.defined()) return contiguous_in_chunks(l->index, "probe_k");
  int64_t c = 0;
  if (is_const_int(step, &c)) return c == 1;
  const Var* v = step.as<Var>();
  if (!v) return false;
  for (const auto& s : spec.specialize) {
    if (s.first == v->name && s.second == 1) return true;
  }
  return false;
}

Stmt let(const Expr& var, const Expr& value, const Stmt& body) {
  return LetStmt::make(var, simplify(value), body);
}

}  // namespace

Stmt packed_gemm(LowerContext& ctx, const GemmSpec& spec_in, const CpuTarget& target) {
  const GemmSpec spec = fold_batch_into_m(spec_in);
  int64_t m_static = -1, n_static = -1, k_static = -1;
  is_const_int(spec.M, &m_static), is_const_int(spec.N, &n_static), is_const_int(spec.K, &k_static);
  const GemmBlocking blk = gemm_blocking(target, spec.acc, m_static, n_static, k_static);
  const int64_t MR = blk.mr, NR = blk.nr(), KC = blk.kc, MC = blk.mc, NC = blk.nc;
  const DType acc = spec.acc;
  const Expr M = spec.M, N = spec.N, K = spec.K;

  Index bidx;
  for (size_t d = 0; d < spec.batch.size(); ++d) bidx.push_back(ctx.loop_var("b"));

  // Packing: every A and B panel of this batch element, one per task. An A
  // shared by the whole batch (a convolution's weights) is packed once.
  const bool a_once = !spec.batch.empty() && spec.a_batch_invariant;
  const Index a_batch = a_once ? Index(spec.batch.size(), make_int(0)) : bidx;
  Buf ap = ctx.scratch_buf("Ap", acc), bp = ctx.scratch_buf("Bp", acc);
  Expr mp = ceil_div(M, MR), np = ceil_div(N, NR);
  Expr p = Var::make(i64_t(), ctx.fresh("panel"));
  Expr q = Var::make(i64_t(), ctx.fresh("q"));
  Stmt pack_once, pack;
  // With A read in place, each task packs the B column block it uses (below).
  const bool direct_a = reads_rows_in_place(spec);
  if (!direct_a) {
    Stmt pack_a = pack_panel(ctx, spec, ap, p, MR, blk.lanes, spec.a_contiguous_m, M, K,
                             [&](const Expr& m, const Expr& k) { return spec.a(a_batch, m, k); });
    Stmt pack_b = pack_panel(ctx, spec, bp, q, NR, blk.lanes, !spec.b_contiguous_k, N, K,
                             [&](const Expr& n, const Expr& k) { return spec.b(bidx, k, n); });
    Expr panel_work = simplify(K * make_int(MR));  // an A panel; a B panel is NR / MR of them
    if (a_once) {
      pack_once = parallel_tasks(ctx, mp, panel_work, target,
                                 [&](const Expr& task) { return LetStmt::make(p, task, pack_a); });
      pack = parallel_tasks(ctx, np, simplify(panel_work * make_int(NR / MR)), target,
                            [&](const Expr& task) { return LetStmt::make(q, task, pack_b); });
    } else {
      pack = parallel_tasks(ctx, simplify(mp + np), panel_work, target, [&](const Expr& task) {
        Stmt s = IfThenElse::make(p < mp, pack_a, LetStmt::make(q, p - mp, pack_b));
        return LetStmt::make(p, task, s);
      });
    }
  }

  // The tiles: MC x NC blocks of C, K in blocks of KC.
  const bool one_block = k_static >= 0 && k_static <= KC;
  // NC as the loops see it: a run-time choice when the blocking leaves one
  // (A read in place, size of A unknown until run time).
  const bool nc_at_run_time = direct_a && blk.nc_narrow != blk.nc;
  Expr NCx = nc_at_run_time ? Var::make(i64_t(), ctx.fresh("ncb")) : make_int(NC);
  Expr tiles_m = ceil_div(M, MC), tiles_n = simplify((N + NCx - make_int(1)) / NCx);
  Expr t = Var::make(i64_t(), ctx.fresh("tile"));
  Expr i0 = Var::make(i64_t(), ctx.fresh("i0")), j0 = Var::make(i64_t(), ctx.fresh("j0"));
  Expr mc = Var::make(i64_t(), ctx.fresh("mc")), nc = Var::make(i64_t(), ctx.fresh("nc"));
  Expr kb = ctx.loop_var("kb");
  Expr kblocks = one_block ? make_int(1) : simplify(max(ceil_div(K, KC), make_int(1)));
  Expr p0 = Var::make(i64_t(), ctx.fresh("p0")), kc = Var::make(i64_t(), ctx.fresh("kc"));
  Expr jr = ctx.loop_var("jr"), ir = ctx.loop_var("ir");
  Expr m0 = Var::make(i64_t(), ctx.fresh("m0")), n0 = Var::make(i64_t(), ctx.fresh("n0"));
  Expr a0 = Var::make(i64_t(), ctx.fresh("a0")), b0 = Var::make(i64_t(), ctx.fresh("b0"));
  Buf cs = ctx.scratch_buf("Cs", acc);  // partial sums of the tile over K blocks
  // With A read in place, each task packs its own column block of B (below).
  Buf bt = ctx.scratch_buf("Bt", acc);
  const Buf& bsrc = direct_a ? bt : bp;

  MicroTile tile(ctx, blk.mr, blk.nv, blk.lanes, acc, target.fma);
  auto partial = [&](const Expr& i, const Expr& j) {
    return simplify((ir * make_int(MR) + i) * NCx + jr * make_int(NR) + j);
  };
  Stmt zero = tile.fill([&](const Expr&, const Expr&) { return imm(acc, 0); });
  Stmt update = tile.update(
      kc,
      [&](const Expr& i, const Expr& k) {
        // Rows past M read row M-1 (never stored); the row offset is
        // invariant in k, so only the k step remains in the loop.
        if (direct_a) return spec.a(bidx, min(m0 + i, M - make_int(1)), p0 + k);
        return Load::make(ap, a0 + k * make_int(MR) + i);
      },
      [&](const Expr& j, const Expr& k) { return Load::make(bsrc, b0 + k * make_int(NR) + j); });
  Stmt final_store = tile.each(
      [&](const Expr& i, const Expr& j, const Expr& v) {
        Expr n = n0 + j;
        return IfThenElse::make(n < N, spec.store(bidx, m0 + i, n, v));
      },
      [&](const Expr& i) { return m0 + i < M; }, /*roll_heavy_rows=*/true);
  Stmt micro;
  if (one_block) {
    micro = Block::make({zero, update, final_store});
  } else {
    Stmt resume =
        tile.fill([&](const Expr& i, const Expr& j) { return Load::make(cs, partial(i, j)); });
    Stmt keep = tile.each([&](const Expr& i, const Expr& j, const Expr& v) {
      return Store::make(cs, partial(i, j), v);
    });
    micro = Block::make({IfThenElse::make(kb == make_int(0), zero, resume), update,
                         IfThenElse::make(kb == kblocks - make_int(1), final_store, keep)});
  }
  micro = tile.allocate(micro);
  // The MC x NC tile at (i0, j0): its micro-tiles for every K block. B's
  // micro-panel for (jr, kb) starts at b_panel(jr) * K + p0 panels of NR.
  auto tile_body = [&](const Expr& b_panel) {
    Stmt m = let(m0, i0 + ir * make_int(MR),
                 let(n0, j0 + jr * make_int(NR),
                     let(a0, ((i0 / make_int(MR) + ir) * K + p0) * make_int(MR),
                         let(b0, (b_panel * K + p0) * make_int(NR), micro))));
    Stmt s = For::make(ir, make_int(0), ceil_div(mc, MR), ForKind::Serial, m);
    s = For::make(jr, make_int(0), ceil_div(nc, NR), ForKind::Serial, s);
    s = let(p0, kb * make_int(KC), let(kc, min(make_int(KC), K - p0), s));
    s = For::make(kb, make_int(0), kblocks, ForKind::Serial, s);
    if (!one_block) s = Allocate::make(cs, simplify(make_int(MC) * NCx), MemoryScope::Heap, s);
    return let(mc, min(make_int(MC), M - i0), let(nc, min(NCx, N - j0), s));
  };
  Stmt compute;
  if (direct_a) {
    // A is read in place, so only B needs packing, and each task packs the
    // NC-wide column block of B it multiplies into scratch of its own just
    // before using it (BLIS's order): the packed block is still in cache
    // when the micro-kernel reads it, instead of the whole packed B making a
    // round trip through memory between a packing phase and a compute phase.
    // A task is one column block and every `split`-th of its row tiles:
    // split > 1 (the block packed by each of its tasks) only when there are
    // too few column blocks to spread evenly over the cores.
    Expr per_block = simplify(NCx / make_int(NR));
    const int64_t cores = std::max(1, target.cores);
    auto even = [&](const Expr& s) {
      return simplify(tiles_n * s % make_int(cores) == make_int(0) ||
                      tiles_n * s >= make_int(4 * cores));
    };
    Expr split = make_int(std::min<int64_t>(cores, 8));
    for (int64_t c = std::min<int64_t>(cores, 8) - 1; c >= 1; --c) {
      split = Select::make(even(make_int(c)), make_int(c), split);
    }
    split = simplify(min(split, max(tiles_m, make_int(1))));
    Expr splitv = is_const(split) ? split : Var::make(i64_t(), ctx.fresh("split"));
    Expr jb = Var::make(i64_t(), ctx.fresh("jb")), part = Var::make(i64_t(), ctx.fresh("part"));
    Expr qq = ctx.loop_var("qq"), it = ctx.loop_var("it");
    Stmt pack_col = pack_panel(
        ctx, spec, bt, q, NR, blk.lanes, !spec.b_contiguous_k, N, K,
        [&](const Expr& n, const Expr& k) { return spec.b(bidx, k, n); }, qq);
    pack_col = For::make(qq, make_int(0), simplify(min(per_block, np - jb * per_block)),
                         ForKind::Serial, let(q, jb * per_block + qq, pack_col));
    Stmt rows =
        For::make(it, make_int(0), simplify((tiles_m - part + splitv - make_int(1)) / splitv),
                  ForKind::Serial, let(i0, (part + it * splitv) * make_int(MC), tile_body(jr)));
    Stmt task_body =
        Allocate::make(bt, simplify(NCx * K), MemoryScope::Heap, Block::make({pack_col, rows}));
    task_body = let(j0, jb * NCx, task_body);
    compute = parallel_tasks(ctx, simplify(tiles_n * splitv), simplify(M * K * NCx / splitv),
                             target, [&](const Expr& task) {
                               return let(jb, task / splitv, let(part, task % splitv, task_body));
                             });
    if (!is_const(split)) compute = LetStmt::make(splitv, split, compute);
    if (nc_at_run_time) {
      const int64_t bytes = int64_t(dtype_size(acc));
      Expr a_small = M * K * make_int(bytes) <= make_int(target.l3_bytes / 4);
      compute = LetStmt::make(
          NCx, simplify(Select::make(a_small, make_int(blk.nc_narrow), make_int(NC))), compute);
    }
  } else {
    Stmt tiles = let(i0, (t % tiles_m) * make_int(MC),
                     let(j0, (t / tiles_m) * make_int(NC), tile_body(j0 / make_int(NR) + jr)));
    compute = parallel_tasks(ctx, simplify(tiles_m * tiles_n), make_int(MC * NC * KC), target,
                             [&](const Expr& task) { return LetStmt::make(t, task, tiles); });
  }

  Stmt body = pack.defined() ? Block::make({pack, compute}) : compute;
  for (size_t d = bidx.size(); d-- > 0;) {
    body = For::make(bidx[d], make_int(0), spec.batch[d], ForKind::Serial, body);
  }
  body = Block::make({pack_once, body});
  if (!direct_a) {
    body = Allocate::make(bp, simplify(np * make_int(NR) * K), MemoryScope::Heap, body);
  }
  if (!direct_a)
    body = Allocate::make(ap, simplify(mp * make_int(MR) * K), MemoryScope::Heap, body);
  return body;
}

}  // namespace gemm_detail

Stmt generate_gemm(LowerContext& ctx, const GemmSpec& spec, GemmAlgorithm algorithm,
                   const CpuTarget& target) {
  KILN_INTERNAL_CHECK(spec.a && spec.b && spec.store, "gemm: operand or store missing");
  KILN_INTERNAL_CHECK(spec.acc == DType::F32 || spec.acc == DType::F64,
                      "gemm: accumulation in " << dtype_name(spec.acc));
  Stmt s;
  switch (algorithm) {
    case GemmAlgorithm::Packed:
      s = gemm_detail::packed_gemm(ctx, spec, target);
      break;
    case GemmAlgorithm::Small:
      s = gemm_detail::small_gemm(ctx, spec, target);
      break;
    case GemmAlgorithm::Gemv:
      s = gemm_detail::gemv(ctx, spec, target);
      break;
  }
  return simplify(s);
}

}  // namespace kiln::passes::lower
