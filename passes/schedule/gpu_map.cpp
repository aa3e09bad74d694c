// gpu_map: the loops of a lowered kernel onto GPU blocks and threads (see
// schedule.h). Assumes a lowered, unscheduled kernel: its top-level
// statements run one after another, and the iterations of the outermost
// loop of each write disjoint elements (what the CPU schedule relies on when
// it runs that loop in parallel). Guarantees a valid serial program in GPU
// form: every statement runs inside one GpuBlock loop and one GpuThread loop
// per barrier phase, so the loop evaluator (the sim device) computes what the
// unmapped kernel computes, and a CUDA emitter can print it as is.
#include <functional>
#include <set>

#include "ir/loop/simplify.h"
#include "ir/loop/visitor.h"
#include "kiln/error.h"
#include "passes/schedule/gpu_internal.h"
#include "passes/schedule/schedule.h"

namespace kiln::passes {

using namespace kiln::loop;  // NOLINT
using gpu_detail::is_mapped;
using gpu_detail::vars_of;

namespace {

// `s` with its leading LetStmts peeled off (into `lets`, outermost first).
Stmt peel_lets(const Stmt& s, std::vector<const LetStmt*>* lets) {
  Stmt cur = s;
  while (const LetStmt* l = cur.as<LetStmt>()) {
    lets->push_back(l);
    cur = l->body;
  }
  return cur;
}

// `body` under the peeled lets again.
Stmt wrap_lets(const std::vector<const LetStmt*>& lets, Stmt body) {
  for (auto it = lets.rbegin(); it != lets.rend(); ++it) {
    body = LetStmt::make((*it)->var, (*it)->value, body);
  }
  return body;
}

const std::string& name_of(const Expr& var) {
  return var.as<Var>()->name;
}

class Mapper {
 public:
  Mapper(const Kernel& k, const GpuTarget& t) : k_(k) {
    threads_ = std::max<int64_t>(1, std::min<int64_t>(kThreadsPerBlock, t.max_threads_per_block));
    for (const Expr& s : k.scalars) scalars_.insert(name_of(s));
  }

  Stmt map() {
    std::vector<Stmt> parts;
    if (const Block* b = k_.body.as<Block>()) {
      parts = b->stmts;
    } else {
      parts = {k_.body};
    }
    if (parts.size() == 1) {
      if (Stmt grid = over_grid(parts[0]); grid.defined()) return grid;
    }
    return in_one_block(parts);
  }

 private:
  // Threads per block of the grid mapping: enough warps to hide latency, few
  // enough that small outputs still spread over many SMs.
  static constexpr int64_t kThreadsPerBlock = 256;

  // A kernel that is one loop whose extent the launch can compute from the
  // kernel's scalar parameters: one thread per iteration, in blocks.
  //   for (i, lo, n) { S(i) }
  // becomes
  //   for (i_blk, 0, (n + 255) / 256) gpu_block {
  //     for (i_thr, 0, 256) gpu_thread {
  //       if (i_blk * 256 + i_thr < n) { S(lo + i_blk * 256 + i_thr) }
  //     }
  //   }
  Stmt over_grid(const Stmt& part) {
    std::vector<const LetStmt*> lets;
    const For* f = peel_lets(part, &lets).as<For>();
    if (!f || f->for_kind != ForKind::Serial) return Stmt();
    for (const std::string& v : vars_of(f->extent)) {
      if (!scalars_.count(v)) return Stmt();  // e.g. bound by a peeled let
    }
    for (const std::string& v : vars_of(f->min)) {
      if (!scalars_.count(v)) return Stmt();
    }
    const std::string& var = name_of(f->var);
    Expr blk = Var::make(i64_t(), var + "_blk"), thr = Var::make(i64_t(), var + "_thr");
    Expr B = make_int(threads_);
    Expr idx = blk * B + thr;
    Stmt body = substitute(f->body, var, simplify(f->min + idx));
    Stmt guarded = IfThenElse::make(idx < f->extent, body);
    Stmt threads = For::make(thr, make_int(0), B, ForKind::GpuThread, guarded);
    Expr blocks = simplify((f->extent + make_int(threads_ - 1)) / B);
    return wrap_lets(lets, For::make(blk, make_int(0), blocks, ForKind::GpuBlock, threads));
  }

  // Anything else runs in one block: each top-level statement is a barrier
  // phase; a loop phase spreads its iterations over the threads (thread t
  // takes iterations t, t + 256, ...), any other statement runs on thread 0.
  //   for (gpu_blk, 0, 1) gpu_block {
  //     for (i_thr, 0, 256) gpu_thread { for (i_j, 0, (n - i_thr + 255) / 256) { S(i_j * 256 +
  //     i_thr) } } barrier for (gpu_thr1, 0, 256) gpu_thread { if (gpu_thr1 == 0) { T } }
  //   }
  Stmt in_one_block(const std::vector<Stmt>& parts) {
    std::vector<Stmt> phases;
    int phase = 0;
    for (const Stmt& part : parts) {
      if (!phases.empty()) phases.push_back(Barrier::make());
      std::vector<const LetStmt*> lets;
      const For* f = peel_lets(part, &lets).as<For>();
      Expr B = make_int(threads_);
      if (f && f->for_kind == ForKind::Serial) {
        const std::string& var = name_of(f->var);
        Expr thr = Var::make(i64_t(), var + "_thr"), j = Var::make(i64_t(), var + "_j");
        Stmt body = substitute(f->body, var, simplify(f->min + j * B + thr));
        Expr trips = simplify(max((f->extent - thr + make_int(threads_ - 1)) / B, make_int(0)));
        Stmt strided = For::make(j, make_int(0), trips, ForKind::Serial, body);
        phases.push_back(
            For::make(thr, make_int(0), B, ForKind::GpuThread, wrap_lets(lets, strided)));
      } else {
        Expr thr = Var::make(i64_t(), "gpu_thr" + std::to_string(phase));
        phases.push_back(For::make(thr, make_int(0), B, ForKind::GpuThread,
                                   IfThenElse::make(thr == make_int(0), part)));
      }
      ++phase;
    }
    Expr blk = Var::make(i64_t(), "gpu_blk");
    return For::make(blk, make_int(0), make_int(1), ForKind::GpuBlock, Block::make(phases));
  }

  const Kernel& k_;
  int64_t threads_ = kThreadsPerBlock;
  std::set<std::string> scalars_;
};

}  // namespace

GpuLaunchShape gpu_launch_shape(const Kernel& k) {
  // Simplification removes loops of extent 0 (a kernel of a zero-size
  // output), and a block or phase left empty with them: such a kernel has
  // nothing to run in parallel and is launched as one thread.
  if (!k.body.defined() || !is_mapped(k.body)) return {make_int(1), make_int(1)};
  std::vector<const LetStmt*> lets;
  const For* blocks = peel_lets(k.body, &lets).as<For>();
  KILN_INTERNAL_CHECK(
      blocks && blocks->for_kind == ForKind::GpuBlock,
      "gpu_launch_shape: kernel " << k.name << " is not one block loop over thread loops");
  // The block's scratch (shared and per-thread arrays) and lets come before
  // its phases; a phase is a thread loop, a barrier, or a serial loop every
  // thread of the block runs alike (a GEMM's loop over K slabs) around
  // phases of its own.
  const For* threads = nullptr;
  std::function<void(const Stmt&)> phases = [&](const Stmt& s) {
    if (const Allocate* a = s.as<Allocate>()) return phases(a->body);
    if (const LetStmt* l = s.as<LetStmt>()) return phases(l->body);
    if (const Block* b = s.as<Block>()) {
      for (const Stmt& p : b->stmts) phases(p);
      return;
    }
    const For* f = s.as<For>();
    if (!f) return;
    if (f->for_kind == ForKind::Serial) return phases(f->body);
    KILN_INTERNAL_CHECK(f->for_kind == ForKind::GpuThread, "gpu_launch_shape: kernel "
                                                               << k.name << " has a "
                                                               << for_kind_name(f->for_kind)
                                                               << " loop in its block");
    KILN_INTERNAL_CHECK(
        !threads || equal(threads->extent, f->extent),
        "gpu_launch_shape: kernel " << k.name << "'s thread loops differ in extent");
    threads = f;
  };
  phases(blocks->body);
  for (const LetStmt* l : lets) {
    KILN_INTERNAL_CHECK(
        !vars_of(blocks->extent).count(name_of(l->var)),
        "gpu_launch_shape: kernel " << k.name << "'s grid depends on a let inside it");
  }
  return {blocks->extent, threads ? threads->extent : make_int(1)};
}

Kernel gpu_map(const Kernel& k, const GpuTarget& target) {
  Kernel out = k;
  if (!k.body.defined() || is_mapped(k.body)) return out;
  out.body = Mapper(k, target).map();
  return out;
}

}  // namespace kiln::passes
