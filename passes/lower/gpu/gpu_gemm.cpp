// The tiled SIMT GEMM for GPU targets (see gpu_gemm.h for the nest it
// builds and why it is shaped so).
#include "passes/lower/gpu/gpu_gemm.h"

#include <algorithm>

#include "ir/loop/simplify.h"

namespace kiln::passes::lower {

using namespace kiln::loop;  // NOLINT

int64_t GpuGemmTiling::shared_bytes(DType acc) const {
  // Two buffers of each slab; A's rows (and a k-contiguous B's) padded by one.
  return 2 * bk * ((bm + 1) + (bn + 1)) * int64_t(dtype_size(acc));
}

std::string GpuGemmTiling::str() const {
  return std::to_string(bm) + "x" + std::to_string(bn) + " tiles, K slabs of " +
         std::to_string(bk) + ", " + std::to_string(tm) + "x" + std::to_string(tn) +
         " per thread, " + std::to_string(threads()) + " threads";
}

GpuGemmTiling gpu_gemm_tiling(const GpuTarget& target, DType acc) {
  GpuGemmTiling t;
  // 64x64 tiles of 4x4 micro-tiles: 16 accumulators and 8 operands per
  // thread stay well inside the register budget of 256 threads, and the
  // slabs (17 KiB in f32, 33 KiB in f64) inside the default 48 KiB.
  while ((t.shared_bytes(acc) > target.shared_memory_per_block && t.bk > 4) ||
         (t.threads() > target.max_threads_per_block && t.bm > t.tm)) {
    if (t.shared_bytes(acc) > target.shared_memory_per_block) {
      t.bk /= 2;
    } else {
      t.bm /= 2;
    }
  }
  return t;
}

namespace {

Expr ceil_div(const Expr& a, int64_t b) {
  return simplify((a + make_int(b - 1)) / make_int(b));
}

class GpuGemm {
 public:
  GpuGemm(LowerContext& ctx, const GemmSpec& s, const GpuGemmTiling& t)
      : ctx_(ctx), s_(s), t_(t), acc_t_(s.acc) {
    KILN_INTERNAL_CHECK(t.bm % t.tm == 0 && t.bn % t.tn == 0,
                        "gpu gemm: the micro-tile does not divide the tile (" << t.str() << ")");
    KILN_INTERNAL_CHECK((t.bm * t.bk) % t.threads() == 0 && (t.bk * t.bn) % t.threads() == 0,
                        "gpu gemm: the slabs do not divide among the threads (" << t.str() << ")");
    threads_ = t.threads();
    tx_n_ = t.bn / t.tn;
    lda_ = t.bm + 1;
    ldb_ = s.b_contiguous_k ? t.bn + 1 : t.bn;
  }

  Stmt build() {
    As_ = ctx_.scratch_buf("As", acc_t_);
    Bs_ = ctx_.scratch_buf("Bs", acc_t_);
    acc_ = ctx_.scratch_buf("acc", acc_t_);
    blk_ = ctx_.loop_var("blk");
    m0_ = Var::make(i64_t(), ctx_.fresh("m0"));
    n0_ = Var::make(i64_t(), ctx_.fresh("n0"));
    for (size_t d = 0; d < s_.batch.size(); ++d) {
      batch_.push_back(Var::make(i64_t(), ctx_.fresh("b")));
    }
    slabs_ = ceil_div(s_.K, t_.bk);

    std::vector<Stmt> phases;
    phases.push_back(thread_loop(
        [&](const Expr&, const Expr&, const Expr& thr) {
          std::vector<Stmt> body;
          for (int64_t i = 0; i < t_.tm * t_.tn; ++i) {
            body.push_back(Store::make(acc_, make_int(i), imm(acc_t_, 0)));
          }
          body.push_back(stage_slab(thr, make_int(0), make_int(0), nullptr, nullptr));
          return Block::make(body);
        },
        /*coords=*/false));
    phases.push_back(Barrier::make());
    phases.push_back(k_loop());
    phases.push_back(
        thread_loop([&](const Expr& tx, const Expr& ty, const Expr&) { return epilogue(tx, ty); }));
    Stmt body = Block::make(phases);
    body = Allocate::make(acc_, make_int(t_.tm * t_.tn), MemoryScope::GpuLocal, body);
    body = Allocate::make(Bs_, make_int(2 * t_.bk * ldb_), MemoryScope::GpuShared, body);
    body = Allocate::make(As_, make_int(2 * t_.bk * lda_), MemoryScope::GpuShared, body);

    // Blocks walk N fastest, then M, then the batch.
    const Expr tiles_n = ceil_div(s_.N, t_.bn), tiles_m = ceil_div(s_.M, t_.bm);
    const Expr tile = blk_;
    Expr rest = simplify(tile / tiles_n);
    Index bi = unflatten(simplify(rest / tiles_m), s_.batch);
    for (size_t d = batch_.size(); d-- > 0;) body = LetStmt::make(batch_[d], bi[d], body);
    body = LetStmt::make(n0_, simplify((tile % tiles_n) * make_int(t_.bn)), body);
    body = LetStmt::make(m0_, simplify((rest % tiles_m) * make_int(t_.bm)), body);
    Expr grid = simplify(product(s_.batch) * tiles_m * tiles_n);
    return For::make(blk_, make_int(0), grid, ForKind::GpuBlock, body);
  }

 private:
  // for (thr, 0, T) gpu_thread { let tx = thr % (BN/TN), ty = thr / (BN/TN); body }
  // (without the lets when `coords` is false: the body reads only thr).
  Stmt thread_loop(const std::function<Stmt(const Expr&, const Expr&, const Expr&)>& body,
                   bool coords = true) {
    Expr thr = ctx_.loop_var("thr");
    Expr tx = Var::make(i64_t(), ctx_.fresh("tx")), ty = Var::make(i64_t(), ctx_.fresh("ty"));
    Stmt b = body(tx, ty, thr);
    if (coords) {
      b = LetStmt::make(ty, thr / make_int(tx_n_), b);
      b = LetStmt::make(tx, thr % make_int(tx_n_), b);
    }
    return For::make(thr, make_int(0), make_int(threads_), ForKind::GpuThread, b);
  }

  // The slab of A and B at k0 into shared buffer `buf` (0 or 1). With
  // registers `ra`/`rb` given, the loads go there (element r of this
  // thread's share) and the returned statement is the loads; the stores
  // into shared memory are then `store_slab`. Without, they go straight to
  // shared memory.
  Stmt stage_slab(const Expr& thr, const Expr& k0, const Expr& buf, const Buf* ra, const Buf* rb) {
    std::vector<Stmt> out;
    for (int64_t r = 0; r < t_.bm * t_.bk / threads_; ++r) {
      auto [mm, kk] = a_element(thr, r);
      Expr m = simplify(m0_ + mm), k = simplify(k0 + kk);
      Expr v = cast_to(s_.a(batch_, m, k), acc_t_);
      Expr in = m < s_.M && k < s_.K;
      Expr at = simplify(buf * make_int(t_.bk * lda_) + kk * make_int(lda_) + mm);
      out.push_back(ra ? guarded(in, *ra, make_int(r), v) : guarded(in, As_, at, v));
    }
    for (int64_t r = 0; r < t_.bk * t_.bn / threads_; ++r) {
      auto [kk, nn] = b_element(thr, r);
      Expr k = simplify(k0 + kk), n = simplify(n0_ + nn);
      Expr v = cast_to(s_.b(batch_, k, n), acc_t_);
      Expr in = k < s_.K && n < s_.N;
      Expr at = simplify(buf * make_int(t_.bk * ldb_) + kk * make_int(ldb_) + nn);
      out.push_back(rb ? guarded(in, *rb, make_int(r), v) : guarded(in, Bs_, at, v));
    }
    return Block::make(out);
  }

  // The registers of `stage_slab` into shared buffer `buf`.
  Stmt store_slab(const Expr& thr, const Expr& buf, const Buf& ra, const Buf& rb) {
    std::vector<Stmt> out;
    for (int64_t r = 0; r < t_.bm * t_.bk / threads_; ++r) {
      auto [mm, kk] = a_element(thr, r);
      Expr at = simplify(buf * make_int(t_.bk * lda_) + kk * make_int(lda_) + mm);
      out.push_back(Store::make(As_, at, Load::make(ra, make_int(r))));
    }
    for (int64_t r = 0; r < t_.bk * t_.bn / threads_; ++r) {
      auto [kk, nn] = b_element(thr, r);
      Expr at = simplify(buf * make_int(t_.bk * ldb_) + kk * make_int(ldb_) + nn);
      out.push_back(Store::make(Bs_, at, Load::make(rb, make_int(r))));
    }
    return Block::make(out);
  }

  // Element r of thread thr's share of an A slab as (m, k), of a B slab as (k, n).
  std::pair<Expr, Expr> a_element(const Expr& thr, int64_t r) const {
    return slab_a_element(s_, t_.bm, t_.bk, threads_, thr, r);
  }
  std::pair<Expr, Expr> b_element(const Expr& thr, int64_t r) const {
    return slab_b_element(s_, t_.bk, t_.bn, threads_, thr, r);
  }

  // buf[at] = in ? v : 0, reading the operand only when in bounds.
  Stmt guarded(const Expr& in, const Buf& buf, const Expr& at, const Expr& v) const {
    return IfThenElse::make(in, Store::make(buf, at, v), Store::make(buf, at, imm(acc_t_, 0)));
  }

  // for (s, 0, slabs) { thread phase: prefetch s + 1, multiply s, store s + 1; barrier }
  Stmt k_loop() {
    Expr slab = ctx_.loop_var("slab");
    Stmt phase = thread_loop([&](const Expr& tx, const Expr& ty, const Expr& thr) {
      Buf ra = ctx_.scratch_buf("ra", acc_t_), rb = ctx_.scratch_buf("rb", acc_t_);
      const Expr cur = slab % make_int(2), next = make_int(1) - slab % make_int(2);
      const Expr more = slab + make_int(1) < slabs_;
      Stmt prefetch =
          stage_slab(thr, simplify((slab + make_int(1)) * make_int(t_.bk)), next, &ra, &rb);
      Stmt body = Block::make({IfThenElse::make(more, prefetch), micro_kernel(tx, ty, cur),
                               IfThenElse::make(more, store_slab(thr, next, ra, rb))});
      body = Allocate::make(rb, make_int(t_.bk * t_.bn / threads_), MemoryScope::Stack, body);
      return Allocate::make(ra, make_int(t_.bm * t_.bk / threads_), MemoryScope::Stack, body);
    });
    return For::make(slab, make_int(0), slabs_, ForKind::Serial,
                     Block::make({phase, Barrier::make()}));
  }

  // for (k, 0, BK) { a_i = As[cur][k][ty + i*TY]; b_j = Bs[cur][k][tx + j*TX];
  //                  acc[i*TN + j] = fma(a_i, b_j, acc[i*TN + j]) }
  Stmt micro_kernel(const Expr& tx, const Expr& ty, const Expr& cur) {
    Expr k = ctx_.loop_var("k");
    const int64_t ty_m = t_.bm / t_.tm;
    std::vector<Expr> a, b;
    std::vector<std::pair<Expr, Expr>> lets;
    for (int64_t i = 0; i < t_.tm; ++i) {
      Expr at = cur * make_int(t_.bk * lda_) + k * make_int(lda_) + ty + make_int(i * ty_m);
      a.push_back(Var::make({acc_t_, 1}, ctx_.fresh("a")));
      lets.push_back({a.back(), Load::make(As_, simplify(at))});
    }
    for (int64_t j = 0; j < t_.tn; ++j) {
      Expr at = cur * make_int(t_.bk * ldb_) + k * make_int(ldb_) + tx + make_int(j * tx_n_);
      b.push_back(Var::make({acc_t_, 1}, ctx_.fresh("b")));
      lets.push_back({b.back(), Load::make(Bs_, simplify(at))});
    }
    std::vector<Stmt> fmas;
    for (int64_t i = 0; i < t_.tm; ++i) {
      for (int64_t j = 0; j < t_.tn; ++j) {
        Expr slot = make_int(i * t_.tn + j);
        fmas.push_back(Store::make(
            acc_, slot, call("fma", {a[size_t(i)], b[size_t(j)], Load::make(acc_, slot)})));
      }
    }
    Stmt body = Block::make(fmas);
    for (auto it = lets.rbegin(); it != lets.rend(); ++it) {
      body = LetStmt::make(it->first, it->second, body);
    }
    return For::make(k, make_int(0), make_int(t_.bk), ForKind::Unrolled, body);
  }

  // Each accumulator through the spec's store, guarded at the ragged edges.
  Stmt epilogue(const Expr& tx, const Expr& ty) {
    const int64_t ty_m = t_.bm / t_.tm;
    std::vector<Stmt> out;
    for (int64_t i = 0; i < t_.tm; ++i) {
      for (int64_t j = 0; j < t_.tn; ++j) {
        Expr m = simplify(m0_ + ty + make_int(i * ty_m));
        Expr n = simplify(n0_ + tx + make_int(j * tx_n_));
        Stmt st = s_.store(batch_, m, n, Load::make(acc_, make_int(i * t_.tn + j)));
        out.push_back(IfThenElse::make(m < s_.M && n < s_.N, st));
      }
    }
    return Block::make(out);
  }

  LowerContext& ctx_;
  const GemmSpec& s_;
  const GpuGemmTiling t_;
  const DType acc_t_;
  int64_t threads_ = 256, tx_n_ = 16, lda_ = 65, ldb_ = 64;
  Buf As_, Bs_, acc_;
  Expr blk_, m0_, n0_, slabs_;
  Index batch_;
};

}  // namespace

Stmt generate_gpu_gemm(LowerContext& ctx, const GemmSpec& spec, const GpuGemmTiling& tiling) {
  return GpuGemm(ctx, spec, tiling).build();
}

std::pair<Expr, Expr> slab_split(const Expr& thr, int64_t r, int64_t w, int64_t threads) {
  if (threads % w == 0) {
    return {simplify(thr / make_int(w) + make_int(r * (threads / w))), simplify(thr % make_int(w))};
  }
  Expr e = simplify(thr + make_int(r * threads));
  return {simplify(e / make_int(w)), simplify(e % make_int(w))};
}

std::pair<Expr, Expr> slab_a_element(const GemmSpec& s, int64_t bm, int64_t bk, int64_t threads,
                                     const Expr& thr, int64_t r) {
  if (s.a_contiguous_m) {
    auto [kk, mm] = slab_split(thr, r, bm, threads);
    return {mm, kk};
  }
  return slab_split(thr, r, bk, threads);
}

std::pair<Expr, Expr> slab_b_element(const GemmSpec& s, int64_t bk, int64_t bn, int64_t threads,
                                     const Expr& thr, int64_t r) {
  if (s.b_contiguous_k) {
    auto [nn, kk] = slab_split(thr, r, bk, threads);
    return {kk, nn};
  }
  return slab_split(thr, r, bn, threads);
}

}  // namespace kiln::passes::lower
