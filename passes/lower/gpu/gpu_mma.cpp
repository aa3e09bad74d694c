// The tensor-core GEMM for GPU targets (see gpu_mma.h for the nest it builds
// and why it is shaped so) and its candidate, "gemm.mma".
#include "passes/lower/gpu/gpu_mma.h"

#include "ir/loop/simplify.h"
#include "ir/loop/warp_mma.h"
#include "passes/lower/gpu/gpu_gemm.h"

namespace kiln::passes::lower {

using namespace kiln::loop;  // NOLINT

std::string GpuMmaTiling::str() const {
  return std::to_string(bm) + "x" + std::to_string(bn) + " tiles, K slabs of " +
         std::to_string(bk) + ", " + std::to_string(warps_m * warps_n) + " warps of " +
         std::to_string(warp_m()) + "x" + std::to_string(warp_n()) + ", mma.m16n8k16";
}

bool gpu_mma_supported(const GpuTarget& target, std::string* why) {
  const GpuMmaTiling t;
  if (target.compute_capability < 80) {
    *why = target.name + " has no mma.m16n8k16 (compute capability 8.0 or more)";
    return false;
  }
  if (t.shared_bytes() > target.shared_memory_per_block || t.threads() > target.max_threads_per_block ||
      target.warp_size != 32) {
    *why = target.name + " lacks the shared memory, threads or warp size of " + t.str();
    return false;
  }
  return true;
}

namespace {

Expr ceil_div(const Expr& a, int64_t b) {
  return simplify((a + make_int(b - 1)) / make_int(b));
}

class GpuMma {
 public:
  GpuMma(LowerContext& ctx, const GemmSpec& s, DType op, const GpuMmaTiling& t)
      : ctx_(ctx), s_(s), op_(op), t_(t) {
    KILN_INTERNAL_CHECK(op == DType::F16 || op == DType::BF16, "gpu mma: operands of " << dtype_name(op));
    KILN_INTERNAL_CHECK(s.acc == DType::F32, "gpu mma: accumulation in " << dtype_name(s.acc));
    KILN_INTERNAL_CHECK(t.warp_m() % kWarpMmaM == 0 && t.warp_n() % kWarpMmaN == 0 &&
                            t.bk % kWarpMmaK == 0 && (t.bk + t.pad) % 2 == 0,
                        "gpu mma: tiles not made of m16n8k16 products (" << t.str() << ")");
    KILN_INTERNAL_CHECK((t.bm * t.bk) % t.threads() == 0 && (t.bn * t.bk) % t.threads() == 0,
                        "gpu mma: the slabs do not divide among the threads (" << t.str() << ")");
    threads_ = t.threads();
    ld_ = t.bk + t.pad;
    mt_ = t.warp_m() / kWarpMmaM;
    nt_ = t.warp_n() / kWarpMmaN;
  }

  Stmt build() {
    As_ = ctx_.scratch_buf("As", op_);
    Bs_ = ctx_.scratch_buf("Bs", op_);
    acc_ = ctx_.scratch_buf("acc", DType::F32);
    Expr blk = ctx_.loop_var("blk");
    m0_ = Var::make(i64_t(), ctx_.fresh("m0"));
    n0_ = Var::make(i64_t(), ctx_.fresh("n0"));
    for (size_t d = 0; d < s_.batch.size(); ++d) batch_.push_back(Var::make(i64_t(), ctx_.fresh("b")));
    slabs_ = ceil_div(s_.K, t_.bk);

    std::vector<Stmt> phases;
    phases.push_back(thread_loop([&](const Expr& thr) {
      std::vector<Stmt> body;
      for (int64_t i = 0; i < t_.accumulators(); ++i) {
        body.push_back(Store::make(acc_, make_int(i), make_zero({DType::F32, 1})));
      }
      body.push_back(stage_slab(thr, make_int(0), make_int(0), nullptr, nullptr));
      return Block::make(body);
    }));
    phases.push_back(Barrier::make());
    phases.push_back(k_loop());
    phases.push_back(thread_loop([&](const Expr& thr) { return warp_lets(thr, epilogue()); }));
    Stmt body = Block::make(phases);
    body = Allocate::make(acc_, make_int(t_.accumulators()), MemoryScope::GpuLocal, body);
    body = Allocate::make(Bs_, make_int(2 * t_.bn * ld_), MemoryScope::GpuShared, body);
    body = Allocate::make(As_, make_int(2 * t_.bm * ld_), MemoryScope::GpuShared, body);

    // Blocks walk N fastest, then M, then the batch.
    const Expr tiles_n = ceil_div(s_.N, t_.bn), tiles_m = ceil_div(s_.M, t_.bm);
    Expr rest = simplify(blk / tiles_n);
    Index bi = unflatten(simplify(rest / tiles_m), s_.batch);
    for (size_t d = batch_.size(); d-- > 0;) body = LetStmt::make(batch_[d], bi[d], body);
    body = LetStmt::make(n0_, simplify((blk % tiles_n) * make_int(t_.bn)), body);
    body = LetStmt::make(m0_, simplify((rest % tiles_m) * make_int(t_.bm)), body);
    Expr grid = simplify(product(s_.batch) * tiles_m * tiles_n);
    return For::make(blk, make_int(0), grid, ForKind::GpuBlock, body);
  }

 private:
  Stmt thread_loop(const std::function<Stmt(const Expr&)>& body) {
    Expr thr = ctx_.loop_var("thr");
    return For::make(thr, make_int(0), make_int(threads_), ForKind::GpuThread, body(thr));
  }

  // let lane = thr % 32, wm = (thr / 32) / WARPS_N * WM, wn = (thr / 32) % WARPS_N * WN in body
  // (the Vars lane_, wm_, wn_ are fresh per phase).
  Stmt warp_lets(const Expr& thr, const Stmt& body) {
    Stmt b = body;
    const Expr warp = thr / make_int(32);
    b = LetStmt::make(wn_, simplify((warp % make_int(t_.warps_n)) * make_int(t_.warp_n())), b);
    b = LetStmt::make(wm_, simplify((warp / make_int(t_.warps_n)) * make_int(t_.warp_m())), b);
    return LetStmt::make(lane_, thr % make_int(32), b);
  }

  void fresh_warp_vars() {
    lane_ = Var::make(i64_t(), ctx_.fresh("lane"));
    wm_ = Var::make(i64_t(), ctx_.fresh("wm"));
    wn_ = Var::make(i64_t(), ctx_.fresh("wn"));
  }

  // The slab of A and B at k0 into shared buffer `buf` (0 or 1): into the
  // registers `ra`/`rb` when given (store_slab then moves them), else
  // straight into shared memory.
  Stmt stage_slab(const Expr& thr, const Expr& k0, const Expr& buf, const Buf* ra, const Buf* rb) {
    std::vector<Stmt> out;
    for (int64_t r = 0; r < t_.bm * t_.bk / threads_; ++r) {
      auto [mm, kk] = a_element(thr, r);
      Expr m = simplify(m0_ + mm), k = simplify(k0 + kk);
      Expr in = m < s_.M && k < s_.K;
      if (ra) {
        out.push_back(guarded(in, *ra, make_int(r), cast_to(s_.a(batch_, m, k), DType::F32)));
      } else {
        out.push_back(guarded(in, As_, a_at(buf, mm, kk), cast_to(s_.a(batch_, m, k), op_)));
      }
    }
    for (int64_t r = 0; r < t_.bk * t_.bn / threads_; ++r) {
      auto [kk, nn] = b_element(thr, r);
      Expr k = simplify(k0 + kk), n = simplify(n0_ + nn);
      Expr in = k < s_.K && n < s_.N;
      if (rb) {
        out.push_back(guarded(in, *rb, make_int(r), cast_to(s_.b(batch_, k, n), DType::F32)));
      } else {
        out.push_back(guarded(in, Bs_, b_at(buf, nn, kk), cast_to(s_.b(batch_, k, n), op_)));
      }
    }
    return Block::make(out);
  }

  Stmt store_slab(const Expr& thr, const Expr& buf, const Buf& ra, const Buf& rb) {
    std::vector<Stmt> out;
    for (int64_t r = 0; r < t_.bm * t_.bk / threads_; ++r) {
      auto [mm, kk] = a_element(thr, r);
      out.push_back(Store::make(As_, a_at(buf, mm, kk), cast_to(Load::make(ra, make_int(r)), op_)));
    }
    for (int64_t r = 0; r < t_.bk * t_.bn / threads_; ++r) {
      auto [kk, nn] = b_element(thr, r);
      out.push_back(Store::make(Bs_, b_at(buf, nn, kk), cast_to(Load::make(rb, make_int(r)), op_)));
    }
    return Block::make(out);
  }

  Expr a_at(const Expr& buf, const Expr& mm, const Expr& kk) const {
    return simplify(buf * make_int(t_.bm * ld_) + mm * make_int(ld_) + kk);
  }
  Expr b_at(const Expr& buf, const Expr& nn, const Expr& kk) const {
    return simplify(buf * make_int(t_.bn * ld_) + nn * make_int(ld_) + kk);
  }

  // Element r of thread thr's share of an A slab as (m, k), of a B slab as (k, n).
  std::pair<Expr, Expr> a_element(const Expr& thr, int64_t r) const {
    return slab_a_element(s_, t_.bm, t_.bk, threads_, thr, r);
  }
  std::pair<Expr, Expr> b_element(const Expr& thr, int64_t r) const {
    return slab_b_element(s_, t_.bk, t_.bn, threads_, thr, r);
  }

  Stmt guarded(const Expr& in, const Buf& buf, const Expr& at, const Expr& v) const {
    return IfThenElse::make(in, Store::make(buf, at, v),
                            Store::make(buf, at, make_zero({buf->dtype, 1})));
  }

  // for (s, 0, slabs) { thread phase: prefetch s + 1, multiply s, store s + 1; barrier }
  Stmt k_loop() {
    Expr slab = ctx_.loop_var("slab");
    Stmt phase = thread_loop([&](const Expr& thr) {
      fresh_warp_vars();
      Buf ra = ctx_.scratch_buf("ra", DType::F32), rb = ctx_.scratch_buf("rb", DType::F32);
      const Expr cur = slab % make_int(2), next = make_int(1) - slab % make_int(2);
      const Expr more = slab + make_int(1) < slabs_;
      Stmt prefetch =
          stage_slab(thr, simplify((slab + make_int(1)) * make_int(t_.bk)), next, &ra, &rb);
      Stmt body = Block::make({IfThenElse::make(more, prefetch), products(cur),
                               IfThenElse::make(more, store_slab(thr, next, ra, rb))});
      body = Allocate::make(rb, make_int(t_.bk * t_.bn / threads_), MemoryScope::Stack, body);
      body = Allocate::make(ra, make_int(t_.bm * t_.bk / threads_), MemoryScope::Stack, body);
      return warp_lets(thr, body);
    });
    fresh_warp_vars();  // the epilogue's
    return For::make(slab, make_int(0), slabs_, ForKind::Serial,
                     Block::make({phase, Barrier::make()}));
  }

  // The warp's sub-tile times slab `cur`: one warp MMA per m16n8 tile and
  // 16-wide step of k, written out (constant accumulator offsets).
  Stmt products(const Expr& cur) {
    std::vector<Stmt> out;
    const Expr a_base = simplify(cur * make_int(t_.bm * ld_) + wm_ * make_int(ld_));
    const Expr b_base = simplify(cur * make_int(t_.bn * ld_) + wn_ * make_int(ld_));
    for (int64_t kk = 0; kk < t_.bk; kk += kWarpMmaK) {
      for (int64_t i = 0; i < mt_; ++i) {
        for (int64_t j = 0; j < nt_; ++j) {
          Expr a = simplify(a_base + make_int(i * kWarpMmaM * ld_ + kk));
          Expr b = simplify(b_base + make_int(j * kWarpMmaN * ld_ + kk));
          out.push_back(ExternCall::make(
              kWarpMmaCall, {make_int((i * nt_ + j) * 4), a, make_int(ld_), b, make_int(ld_), lane_},
              {acc_, As_, Bs_}));
        }
      }
    }
    return Block::make(out);
  }

  // Each accumulator through the spec's store, guarded at the ragged edges.
  Stmt epilogue() {
    std::vector<Stmt> out;
    const Expr g = lane_ / make_int(4), q2 = (lane_ % make_int(4)) * make_int(2);
    for (int64_t i = 0; i < mt_; ++i) {
      for (int64_t j = 0; j < nt_; ++j) {
        for (int64_t r = 0; r < 4; ++r) {
          Expr m = simplify(m0_ + wm_ + g + make_int(i * kWarpMmaM + 8 * (r / 2)));
          Expr n = simplify(n0_ + wn_ + q2 + make_int(j * kWarpMmaN + r % 2));
          Stmt st = s_.store(batch_, m, n, Load::make(acc_, make_int((i * nt_ + j) * 4 + r)));
          out.push_back(IfThenElse::make(m < s_.M && n < s_.N, st));
        }
      }
    }
    return Block::make(out);
  }

  LowerContext& ctx_;
  const GemmSpec& s_;
  const DType op_;
  const GpuMmaTiling t_;
  int64_t threads_ = 256, ld_ = 40, mt_ = 4, nt_ = 4;
  Buf As_, Bs_, acc_;
  Expr m0_, n0_, slabs_, lane_, wm_, wn_;
  Index batch_;
};


}  // namespace

Stmt generate_gpu_mma(LowerContext& ctx, const GemmSpec& spec, DType op,
                      const GpuMmaTiling& tiling) {
  return GpuMma(ctx, spec, op, tiling).build();
}

AlgorithmLowering gpu_mma_candidate() {
  AlgorithmLowering a;
  a.name = "gemm.mma";
  a.targets = {TargetKind::CUDA};
  a.applies = [](const ir::Node& n, const Target& t, std::string* why_not) {
    const DType x = n.input(0)->type().dtype(), w = n.input(1)->type().dtype();
    if (x != w || (x != DType::F16 && x != DType::BF16)) {
      *why_not = "tensor cores take f16 or bf16 operands (these are " + std::string(dtype_name(x)) +
                 (x == w ? "" : " and " + std::string(dtype_name(w))) + ")";
      return false;
    }
    return gpu_mma_supported(t.gpu, why_not);
  };
  a.score = [](const ir::Node& n, const Target&, std::string* why) {
    auto [m, nn] = gemm_rows_and_columns(n);
    const GpuMmaTiling tiling;
    const std::string dims = "M " + gpu_size_text(m) + ", N " + gpu_size_text(nn);
    if ((m >= 0 && m < kGpuTileSmallSide) || (nn >= 0 && nn < kGpuTileSmallSide)) {
      *why = dims + ": a side under " + std::to_string(kGpuTileSmallSide) + " leaves most of a " +
             std::to_string(tiling.bm) + "x" + std::to_string(tiling.bn) + " tile idle";
      return -1.0;
    }
    *why = dims + (m < 0 || nn < 0 ? " (known at run time, assumed large)" : "") + ": " +
           dtype_name(n.input(0)->type().dtype()) +
           " operands on tensor cores, f32 accumulation (" + tiling.str() + ")";
    return 3.0;
  };
  a.root = [](NodeLowering& n, const std::vector<OutBuf>& outs) {
    GemmSpec spec = node_gemm_spec(n, outs);
    return generate_gpu_mma(n.ctx, spec, n.node.input(0)->type().dtype());
  };
  return a;
}

}  // namespace kiln::passes::lower
