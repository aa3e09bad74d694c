// The CPU's fused attention kernel (see attention.h for the nest).
#include "passes/lower/cpu/attention.h"

#include <algorithm>
#include <limits>

#include "ir/loop/prefetch.h"
#include "ir/loop/simplify.h"
#include "ir/loop/visitor.h"
#include "kiln/error.h"
#include "passes/lower/cpu/gemm_internal.h"
#include "passes/schedule/schedule.h"

namespace kiln::passes::lower {

using namespace kiln::loop;  // NOLINT
using gemm_detail::ceil_div;
using gemm_detail::guard_loads;
using gemm_detail::MicroTile;
using gemm_detail::parallel_tasks;

namespace {

// Query rows per task: a multiple of the micro-rows, so tasks never share one.
constexpr int64_t kQueryRowsPerTask = 64;

Expr lowest_finite(DType t) {
  return t == DType::F64 ? imm(t, -std::numeric_limits<double>::max())
                         : imm(t, -double(std::numeric_limits<float>::max()));
}

// Software prefetches (to cache `level`) of the lines the loads in `e` read.
class PrefetchLoads : public IRVisitor {
 public:
  explicit PrefetchLoads(int64_t level) : level_(level) {}
  std::vector<Stmt> fetches;

 protected:
  void visit_node(const Load* op) override {
    if (op->index.type().lanes == 1) {
      fetches.push_back(ExternCall::make(kPrefetchCall, {op->index, make_int(level_)}, {op->buf}));
    }
    IRVisitor::visit_node(op);
  }

 private:
  int64_t level_;
};

}  // namespace

Stmt generate_attention(LowerContext& ctx, const AttentionSpec& spec, const CpuTarget& target) {
  const DType acc = spec.acc;
  const int lanes = std::max(1, target.lanes(int(dtype_size(acc))));
  // The value tile's lanes: no wider than the values' dim needs.
  int olanes = lanes;
  while (olanes > 1 && olanes / 2 >= spec.Dv) olanes /= 2;
  const int nv_o = int((spec.Dv + olanes - 1) / olanes);
  const bool whole = spec.Dv % olanes == 0;
  const int nv_s = 2;
  const int64_t NS = int64_t(nv_s) * lanes;  // keys per block
  // Keys per chunk: the softmax's max, exp and sums run once per row and
  // chunk over all its sub-blocks of NS keys (T <= KC: one chunk, no rescale).
  const int64_t KC = NS * 8;
  const int mr = std::clamp((target.vector_registers - 4) / (nv_o + nv_s), 1, 6);
  const Expr T = spec.T, S = spec.S, D = spec.D;
  const Expr zero = make_int(0);
  // Each task packs the keys its rows read, so larger query blocks pack less
  // in all (causal, T = 128: one block packs 128 keys, two of 64 pack 64 +
  // 128); they are taken while the batch still gives every core 4 tasks.
  int64_t rows_per_task = kQueryRowsPerTask;
  int64_t nb = 0, nt = 0;
  if (is_const_int(simplify(product(spec.batch)), &nb) && is_const_int(simplify(T), &nt)) {
    for (int64_t c : {256, 128}) {
      if (nb * ((nt + c - 1) / c) >= 4 * int64_t(std::max(1, target.cores))) {
        rows_per_task = c;
        break;
      }
    }
  }
  const int64_t QC = (rows_per_task + mr - 1) / mr * mr;

  Expr qblocks = ceil_div(T, QC);
  Expr tasks = simplify(product(spec.batch) * qblocks);
  Expr work = simplify(make_int(QC) * S * (D + make_int(spec.Dv)));
  return parallel_tasks(ctx, tasks, work, target, [&](const Expr& t) {
    Index bi;
    Expr qc = t;
    if (!spec.batch.empty()) {
      bi = unflatten(simplify(t / qblocks), spec.batch);
      qc = simplify(t % qblocks);
    }
    Expr q0 = Var::make(i64_t(), ctx.fresh("q0"));
    Expr kend = Var::make(i64_t(), ctx.fresh("kend"));
    Expr sp = Var::make(i64_t(), ctx.fresh("sp"));
    Buf kt = ctx.scratch_buf("kt_p", acc);

    // The task's keys, transposed to [d][j], then zeros up to sp (a copy
    // loop without clamps or guards, and a fill).
    Expr pj = ctx.loop_var("j"), pd = ctx.loop_var("d");
    Expr zj = ctx.loop_var("j"), zd = ctx.loop_var("d");
    // A static D that is a multiple of 8 copies 8 elements a loop step
    // (unrolled: the loop's own increments and branch were most of a copy).
    int64_t dconst = 0;
    const bool unroll8 = is_const_int(simplify(D), &dconst) && dconst % 8 == 0 && dconst > 0;
    Stmt copy_row;
    if (unroll8) {
      Expr pu = ctx.loop_var("u");
      Expr d = pd * make_int(8) + pu;
      copy_row = For::make(
          pd, zero, make_int(dconst / 8), ForKind::Serial,
          For::make(pu, zero, make_int(8), ForKind::Unrolled,
                    Store::make(kt, d * sp + pj, cast_to(spec.kt(bi, d, pj), acc))));
    } else {
      copy_row = For::make(pd, zero, D, ForKind::Serial,
                           Store::make(kt, pd * sp + pj, cast_to(spec.kt(bi, pd, pj), acc)));
    }
    // With the copy of key row j, prefetch key row j + 8 (to L1), value row j
    // and query row q0 + j (to L2), one element a line: as head views of a
    // projection their rows are pages apart, which the hardware's prefetchers
    // do not follow.
    if (unroll8 && dconst <= 512 && lanes >= 8) {
      PrefetchLoads pf(0);
      for (int64_t d = 0; d < dconst; d += lanes) {
        pf.visit(spec.kt(bi, make_int(d), min(pj + make_int(8), S - make_int(1))));
      }
      PrefetchLoads pv(1);
      for (int64_t e = 0; e < spec.Dv; e += lanes) pv.visit(spec.v(bi, pj, make_int(e)));
      for (int64_t d = 0; d < dconst; d += lanes) {
        pv.visit(spec.q(bi, min(q0 + pj, T - make_int(1)), make_int(d)));
      }
      std::vector<Stmt> all = pf.fetches;
      all.insert(all.end(), pv.fetches.begin(), pv.fetches.end());
      all.push_back(copy_row);
      copy_row = Block::make(all);
    }
    Stmt pack = Block::make({
        For::make(pj, zero, kend, ForKind::Serial, copy_row),
        For::make(zd, zero, D, ForKind::Serial,
                  For::make(zj, kend, sp - kend, ForKind::Serial,
                            Store::make(kt, zd * sp + zj, imm(acc, 0)))),
    });

    // One block of mr query rows.
    Expr ir = ctx.loop_var("ir");
    Expr i0 = Var::make(i64_t(), ctx.fresh("i0"));
    Expr last_row = simplify(T - make_int(1));
    auto row = [&](const Expr& i) { return min(i0 + i, last_row); };
    MicroTile o(ctx, mr, nv_o, olanes, acc, target.fma);
    MicroTile s(ctx, mr, nv_s, lanes, acc, target.fma);
    // p: the chunk's scores, then probabilities, [i][KC]; mx / sm: per-row
    // vector accumulators of the max and the sum ([i][lanes], registers).
    Buf pb = ctx.scratch_buf("p", acc), mb = ctx.scratch_buf("m", acc),
        lb = ctx.scratch_buf("l", acc), ab = ctx.scratch_buf("alpha", acc),
        msb = ctx.scratch_buf("m_safe", acc), mxb = ctx.scratch_buf("mx", acc),
        smb = ctx.scratch_buf("sm", acc);
    auto slot = [&](const Expr& i, const Expr& j) { return i * make_int(KC) + j; };
    auto lane = [&](const Expr& i, const Expr& l) { return i * make_int(lanes) + l; };

    std::vector<Stmt> init{o.fill([&](const Expr&, const Expr&) { return imm(acc, 0); })};
    for (int i = 0; i < mr; ++i) {
      init.push_back(Store::make(mb, make_int(i), lowest(acc)));
      init.push_back(Store::make(lb, make_int(i), imm(acc, 0)));
    }

    // The key chunk c0 .. c0 + cn, in sub-blocks of NS keys.
    Expr kc = ctx.loop_var("kc");
    Expr c0 = Var::make(i64_t(), ctx.fresh("c0"));
    Expr cn = Var::make(i64_t(), ctx.fresh("cn"));
    Expr nsb = Var::make(i64_t(), ctx.fresh("nsb"));
    // The vectors holding the chunk's keys (the lanes past cn are -inf).
    Expr nvec = Var::make(i64_t(), ctx.fresh("nvec"));
    std::vector<Stmt> chunk;
    {
      Expr sb = ctx.loop_var("sb");
      Expr j0 = Var::make(i64_t(), ctx.fresh("j0"));
      std::vector<Stmt> block;
      block.push_back(s.fill([&](const Expr&, const Expr&) { return imm(acc, 0); }));
      block.push_back(s.update(
          D, [&](const Expr& i, const Expr& d) { return cast_to(spec.q(bi, row(i), d), acc); },
          [&](const Expr& j, const Expr& d) { return Load::make(kt, d * sp + j0 + j); }));
      auto scores = [&](bool edge) {
        return s.each([&](const Expr& i, const Expr& j, const Expr& c) {
          Expr key = j0 + j;
          Expr value = cast_to(spec.score(bi, row(i), key), acc);
          if (edge) {
            Expr in = key < S;
            Expr scored =
                guard_loads(cast_to(spec.score(bi, row(i), min(key, S - make_int(1))), acc), in);
            // Causal: the keys past the query's index are -inf (a compare, not
            // the mask's values).
            Expr keep = spec.causal ? (in && key <= i0 + i) : in;
            value = Select::make(keep, scored, lowest(acc));
          }
          return LetStmt::make(spec.score_var, cast_to(c, spec.score_var.type().dtype),
                               Store::make(pb, slot(i, sb * make_int(NS) + j), value));
        });
      };
      // Only the sub-block that crosses S or (causal) the diagonal compares
      // indices; the others store the scores as they are.
      Expr inner = j0 + make_int(NS) <= S;
      if (spec.causal) inner = inner && j0 + make_int(NS - 1) <= i0;
      block.push_back(IfThenElse::make(simplify(inner), scores(false), scores(true)));
      chunk.push_back(For::make(sb, zero, nsb, ForKind::Serial,
                                LetStmt::make(j0, c0 + sb * make_int(NS), Block::make(block))));
    }
    // Per-row max over the chunk: lane-wise (a compare and select, cheaper
    // than the NaN-propagating max; a NaN score still makes the row NaN
    // through its exp), then across the lanes.
    auto tile = [&](const std::function<Stmt(const Expr& i, const Expr& l)>& body) {
      Expr i = ctx.loop_var("i"), l = ctx.loop_var("l");
      Stmt st = For::make(l, zero, make_int(lanes), ForKind::Serial, body(i, l));
      st = gemm_detail::vectorize_or_unroll(st, l.as<Var>()->name);
      return For::make(i, zero, make_int(mr), ForKind::Unrolled, st);
    };
    auto across = [&](const Buf& b, const std::function<Expr(const Expr&, const Expr&)>& op) {
      std::vector<Stmt> tree;
      for (int i = 0; i < mr; ++i) {
        for (int h = lanes / 2; h >= 1; h /= 2) {
          Expr base = make_int(int64_t(i) * lanes);
          Expr lo = h == 1 ? base : Ramp::make(base, make_int(1), h);
          Expr hi = h == 1 ? base + make_int(h) : Ramp::make(base + make_int(h), make_int(1), h);
          tree.push_back(Store::make(b, lo, op(Load::make(b, lo), Load::make(b, hi))));
        }
      }
      return Block::make(tree);
    };
    auto sel_max = [](const Expr& a, const Expr& b) { return Select::make(b > a, b, a); };
    Expr u = ctx.loop_var("u");
    chunk.push_back(tile([&](const Expr& i, const Expr& l) {
      return Store::make(mxb, lane(i, l), lowest(acc));
    }));
    chunk.push_back(For::make(u, zero, nvec, ForKind::Serial,
                              tile([&](const Expr& i, const Expr& l) {
                                Expr p = Load::make(pb, slot(i, u * make_int(lanes) + l));
                                return Store::make(mxb, lane(i, l),
                                                   sel_max(Load::make(mxb, lane(i, l)), p));
                              })));
    chunk.push_back(across(mxb, sel_max));
    for (int i = 0; i < mr; ++i) {
      Expr ii = make_int(i);
      Expr m_new = Var::make({acc, 1}, ctx.fresh("m_new"));
      Expr m_safe = Var::make({acc, 1}, ctx.fresh("m_safe"));
      Stmt st = Block::make({Store::make(ab, ii, call("exp", {Load::make(mb, ii) - m_safe})),
                             Store::make(msb, ii, m_safe), Store::make(mb, ii, m_new)});
      st = LetStmt::make(m_safe, max(m_new, lowest_finite(acc)), st);
      st = LetStmt::make(m_new, max(Load::make(mb, ii), Load::make(mxb, make_int(int64_t(i) * lanes))),
                         st);
      chunk.push_back(st);
    }
    // p = exp(s - m), summed lane-wise, then across the lanes.
    chunk.push_back(tile([&](const Expr& i, const Expr& l) {
      return Store::make(smb, lane(i, l), imm(acc, 0));
    }));
    Expr u2 = ctx.loop_var("u");
    chunk.push_back(For::make(
        u2, zero, nvec, ForKind::Serial, tile([&](const Expr& i, const Expr& l) {
          Expr e = Var::make({acc, 1}, ctx.fresh("e"));
          Expr at = slot(i, u2 * make_int(lanes) + l);
          return LetStmt::make(
              e, call("exp", {Load::make(pb, at) - Load::make(msb, i)}),
              Block::make({Store::make(pb, at, e),
                           Store::make(smb, lane(i, l), Load::make(smb, lane(i, l)) + e)}));
        })));
    chunk.push_back(across(smb, [](const Expr& a, const Expr& b) { return a + b; }));
    for (int i = 0; i < mr; ++i) {
      Expr ii = make_int(i);
      chunk.push_back(Store::make(lb, ii,
                                  Load::make(lb, ii) * Load::make(ab, ii) +
                                      Load::make(smb, make_int(int64_t(i) * lanes))));
    }
    chunk.push_back(o.map([&](const Expr& i, const Expr&, const Expr& old) {
      return old * Load::make(ab, i);
    }));
    Expr dv = make_int(spec.Dv);
    chunk.push_back(o.update(
        cn, [&](const Expr& i, const Expr& jj) { return Load::make(pb, slot(i, jj)); },
        [&](const Expr& e, const Expr& jj) {
          // Whole vectors (Dv a multiple of the lanes): plain vector loads, no
          // clamp or mask (which the backend would turn into gathers).
          if (whole) return cast_to(spec.v(bi, c0 + jj, e), acc);
          return guard_loads(cast_to(spec.v(bi, c0 + jj, min(e, dv - make_int(1))), acc), e < dv);
        }));
    Expr keys = spec.causal ? simplify(min(S, i0 + make_int(mr))) : S;
    Stmt kbody = Block::make(chunk);
    kbody = LetStmt::make(nvec, ceil_div(cn, lanes), kbody);
    kbody = LetStmt::make(nsb, ceil_div(cn, NS), kbody);
    kbody = LetStmt::make(cn, min(make_int(KC), keys - c0), kbody);
    kbody = LetStmt::make(c0, kc * make_int(KC), kbody);
    Stmt kloop = For::make(kc, zero, ceil_div(keys, KC), ForKind::Serial, kbody);

    Stmt out = o.each(
        [&](const Expr& i, const Expr& e, const Expr& c) {
          Expr value = c * Load::make(ab, i);
          value = simplify(Select::make(S == zero, imm(acc, 0), value));
          if (whole) return spec.store(bi, i0 + i, e, value);
          return IfThenElse::make(e < dv, spec.store(bi, i0 + i, e, value));
        },
        [&](const Expr& i) { return i0 + i < T; });
    // 1 / l per row (in alpha's slots), then products: mr * nv_o vector
    // divides were ~10 cycles each (a row of 0 / 0 is still NaN: 0 * inf).
    std::vector<Stmt> recip;
    for (int i = 0; i < mr; ++i) {
      recip.push_back(Store::make(ab, make_int(i), imm(acc, 1) / Load::make(lb, make_int(i))));
    }
    Stmt rows = Block::make({Block::make(init), kloop, Block::make(recip), out});
    rows = s.allocate(o.allocate(rows));
    for (const Buf& b : {pb, mb, lb, ab, msb, mxb, smb}) {
      int64_t n = b.get() == pb.get() ? mr * KC : mr;
      if (b.get() == mxb.get() || b.get() == smb.get()) n = int64_t(mr) * lanes;
      rows = Allocate::make(b, make_int(n), MemoryScope::Stack, rows);
    }
    rows = LetStmt::make(i0, q0 + ir * make_int(mr), rows);
    Expr row_blocks = ceil_div(simplify(min(make_int(QC), T - q0)), mr);
    Stmt body = Block::make({pack, For::make(ir, zero, row_blocks, ForKind::Serial, rows)});
    body = Allocate::make(kt, simplify(max(D, make_int(1)) * sp), MemoryScope::Heap, body);
    body = LetStmt::make(sp, simplify(ceil_div(kend, NS) * make_int(NS)), body);
    Expr kend_value = spec.causal ? simplify(min(S, q0 + make_int(QC))) : S;
    body = LetStmt::make(kend, kend_value, body);
    return LetStmt::make(q0, simplify(qc * make_int(QC)), body);
  });
}

}  // namespace kiln::passes::lower

namespace kiln::passes::lower {

namespace {

// Batch dims of an operand (the first `rank` of `dims`) aligned right against
// a batch index; static size-1 dims read index 0.
Index batch_of(const std::vector<Expr>& dims, size_t rank, const Index& outer) {
  Index idx;
  const size_t lead = outer.size() - rank;
  for (size_t d = 0; d < rank; ++d) {
    int64_t s = 0;
    idx.push_back(is_const_int(dims[d], &s) && s == 1 ? make_int(0) : outer[lead + d]);
  }
  return idx;
}

// The stride parameters of the kernel's inputs along their last dim that
// `s` uses: versioning on them being 1 turns gathers into vector loads.
std::vector<std::pair<std::string, int64_t>> last_dim_strides(LowerContext& ctx, const Stmt& s) {
  std::vector<std::pair<std::string, int64_t>> out;
  for (const ScalarParam& p : ctx.scalars()) {
    if (p.role != ScalarRole::Stride) continue;
    const BufferParam& b = ctx.buffers()[size_t(p.buffer)];
    const std::string& name = p.var.as<Var>()->name;
    if (p.dim + 1 == int(b.shape.size()) && loop::uses_var(s, name)) out.push_back({name, 1});
  }
  return out;
}

}  // namespace

RootFn attention_root(const Operand& q, const Operand& kt, const Operand& v, const Expr& score_var,
                      const Operand& score, const std::vector<Expr>& score_dims, int64_t dv,
                      bool causal) {
  return [=](NodeLowering& n, const std::vector<OutBuf>& outs) {
    KILN_INTERNAL_CHECK(n.ctx.options().target.is_cpu(), "attention.flash on a non-CPU target");
    const OutBuf out = outs[0];
    const size_t sb = score_dims.size() - 2, qb = size_t(q.rank()) - 2,
                 kb = size_t(kt.rank()) - 2, vb = size_t(v.rank()) - 2;
    AttentionSpec spec;
    spec.batch.assign(out.dims.begin(), out.dims.end() - 2);
    spec.T = score_dims[sb];
    spec.S = score_dims[sb + 1];
    spec.D = q.dims.back();
    spec.Dv = dv;
    spec.acc = n.out_dtype();
    spec.causal = causal;
    spec.q = [=](const Index& b, const Expr& i, const Expr& d) {
      Index idx = batch_of(q.dims, qb, batch_of(score_dims, sb, b));
      idx.push_back(i);
      idx.push_back(d);
      return q.at(idx);
    };
    spec.kt = [=](const Index& b, const Expr& d, const Expr& j) {
      Index idx = batch_of(kt.dims, kb, batch_of(score_dims, sb, b));
      idx.push_back(d);
      idx.push_back(j);
      return kt.at(idx);
    };
    spec.v = [=](const Index& b, const Expr& j, const Expr& e) {
      Index idx = batch_of(v.dims, vb, b);
      idx.push_back(j);
      idx.push_back(e);
      return v.at(idx);
    };
    spec.score_var = score_var;
    spec.score = [=](const Index& b, const Expr& i, const Expr& j) {
      Index idx = batch_of(score_dims, sb, b);
      idx.push_back(i);
      idx.push_back(j);
      return score.at(idx);
    };
    spec.store = [out](const Index& b, const Expr& i, const Expr& e, const Expr& value) {
      Index idx = b;
      idx.push_back(i);
      idx.push_back(e);
      return store_at(out, idx, value);
    };
    Stmt s = generate_attention(n.ctx, spec, n.ctx.options().target.cpu);
    std::vector<std::pair<std::string, int64_t>> used = last_dim_strides(n.ctx, s);
    return used.empty() ? s : specialize(s, used);
  };
}

}  // namespace kiln::passes::lower
