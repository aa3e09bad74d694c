// gpu_reduce: reductions and normalizations onto teams of GPU threads, one
// team per row (gpu_schedule.h). Assumes what row_program (gpu_rows.cpp)
// guarantees of the row's items. Guarantees GPU-mapped loop IR in gpu_map's
// form that computes what the serial row loops compute, up to the order of
// float sums and products, which is fixed (warp shuffles, then a tree over
// the warps) and does not depend on timing. Rows take whole warps (W lanes,
// W a multiple of 32):
//
//   for (i0_blk, 0, ceil(N / R)) gpu_block {           R rows per block
//     allocate red0_0[f32 * B / 32] in gpu_shared       one partial per warp (W > 32 only)
//     allocate acc0[f32 * 1] in gpu_local               per-row scratch, a copy per thread
//     allocate x_r[f32 * 8] in gpu_local                the thread's elements of a row
//     allocate acc0_p[f32 * 1] in gpu_local             the thread's partial
//     for (i0_thr, 0, B) gpu_thread {                   phase: up to the first reduction
//       let i0 = i0_blk * R + i0_thr / W                its row; i0_lane = i0_thr % W
//       acc0[0] = -inf
//       acc0_p[0] = -inf; for (j...) { c = j * W + lane: acc0_p[0] = max(acc0_p[0], x[i0, c]) }
//     }
//     for (i0_thr, 0, B) gpu_thread {                   no barrier: a warp exchange
//       W == 32: acc0[0] = max(acc0[0], warp_reduce_max(acc0_p[0], 32)) ... and goes on
//       W > 32:  w = warp_reduce_max(acc0_p[0], 32); if (thr % 32 == 0) red0_0[thr / 32] = w
//     }
//     barrier                                           (W > 32)
//     for (i0_thr, 0, B) gpu_thread {                   phase: from the result on
//       acc0[0] = max(acc0[0], tree over red0_0[(thr - lane) / 32 ...])
//       ... the pointwise loops over the row, spread over the team ...
//     }
//   }
//
// Columns (a team's threads a warp apart) keep a shared-memory tree: each
// thread stores its partial in red[thr], log2 W barrier phases halve the
// live partials, and every thread reads the result.
//
// Statements outside the row's loops run on every thread of the team (on its
// own copy of the per-row scratch) or, when they write kernel memory, on its
// first thread. A row no longer than row_cache elements per thread is read
// from memory once: each thread keeps its elements in GpuLocal registers,
// filled where the row is first read, and the later loops read them there
// (values a loop stores along the row are kept there too). With a row length
// known only at run time both versions exist, chosen in each phase by the
// same uniform condition. Reductions over an outer dim take the columns
// layout: a team's threads are i0_thr / R apart and adjacent threads take
// adjacent columns, so every load of a warp is one contiguous run.
#include <functional>
#include <map>

#include "ir/loop/analysis.h"
#include "ir/loop/simplify.h"
#include "ir/loop/visitor.h"
#include "ir/loop/warp.h"
#include "kiln/error.h"
#include "passes/schedule/gpu_internal.h"
#include "passes/schedule/schedule.h"

namespace kiln::passes {

using namespace kiln::loop;                // NOLINT
using namespace kiln::passes::gpu_detail;  // NOLINT

namespace {

int64_t pow2_at_least(int64_t n) {
  int64_t p = 1;
  while (p < n) p *= 2;
  return p;
}
int64_t pow2_at_most(int64_t n) {
  int64_t p = 1;
  while (p * 2 <= n) p *= 2;
  return p;
}

// How a block's threads are shared out: B threads, R teams (rows) of W.
struct Team {
  int64_t threads = 256, lanes = 256, rows = 1;
  bool columns = false;
};

Team choose_team(const RowProgram& p, const GpuTarget& target, const GpuScheduleOptions& o) {
  const int64_t cap = pow2_at_most(std::max<int64_t>(1, target.max_threads_per_block));
  const int64_t warp = std::max<int64_t>(1, target.warp_size);
  Team t;
  if (p.row.empty()) {
    t.threads = t.lanes =
        std::min(cap, pow2_at_most(std::max<int64_t>(1, o.full_reduction_threads)));
    return t;
  }
  const int64_t block = std::min(cap, pow2_at_most(std::max<int64_t>(1, o.threads)));
  int64_t rows = 0;
  bool const_rows = is_const_int(p.rows, &rows);
  if (p.columns) {
    t.columns = true;
    t.rows = std::min<int64_t>(warp, block);
    if (const_rows && rows < t.rows) t.rows = pow2_at_least(std::max<int64_t>(rows, 1));
    t.lanes = std::max<int64_t>(1, block / t.rows);
    t.threads = t.lanes * t.rows;
    return t;
  }
  // Enough threads per row that each keeps at most row_cache elements, from a
  // warp (several rows per block) to a whole block per row.
  int64_t longest = 0;
  bool symbolic = false;
  for (const RowItem& it : p.items) {
    if (it.kind == RowItem::Scalar) continue;
    int64_t e = 0;
    if (is_const_int(simplify(it.extent), &e)) {
      longest = std::max(longest, e);
    } else {
      symbolic = true;
    }
  }
  int64_t per = std::max<int64_t>(1, o.row_cache);
  int64_t lanes = symbolic ? pow2_at_most(std::max<int64_t>(1, o.symbolic_row_threads))
                           : pow2_at_least((longest + per - 1) / per);
  t.lanes = std::min(cap, std::max(std::min(warp, cap), lanes));
  t.threads = std::max(t.lanes, block);
  t.rows = t.threads / t.lanes;
  return t;
}

// Rewrites a reduction loop's accumulator updates into its partials.
class ToPartials : public IRMutator {
 public:
  explicit ToPartials(std::map<std::pair<const BufferNode*, int64_t>, Buf> partial)
      : partial_(std::move(partial)) {}

 protected:
  using IRMutator::visit;
  Stmt visit(const Store* op, const Stmt& self) override {
    int64_t k = 0;
    if (!is_const_int(op->index, &k)) return IRMutator::visit(op, self);
    auto it = partial_.find({op->buf.get(), k});
    if (it == partial_.end()) return IRMutator::visit(op, self);
    const Binary* b = op->value.as<Binary>();
    Expr mine = Load::make(it->second, make_int(0));
    auto self_load = [&](const Expr& e) {
      const Load* l = e.as<Load>();
      return l && l->buf.get() == op->buf.get();
    };
    Expr value =
        self_load(b->a) ? Binary::make(b->op, mine, b->b) : Binary::make(b->op, b->a, mine);
    return Store::make(it->second, make_int(0), value);
  }

 private:
  std::map<std::pair<const BufferNode*, int64_t>, Buf> partial_;
};

// A buffer element along the row that one thread keeps in registers.
struct Cached {
  Buf buf;       // the kernel buffer
  Expr index;    // its index, in the row and element variables
  Buf regs;      // GpuLocal, row_cache elements
  size_t first;  // the item that fills it (read-only) or first stores it
  bool written;  // values a loop stores, forwarded to later loops
  // Items whose stores need not reach memory: a later item stores every
  // element again, and they load none (later items read the registers).
  std::set<size_t> dead_stores;
};

// Loads of the cached elements from their registers, stores also into them.
class UseCache : public IRMutator {
 public:
  UseCache(const std::vector<Cached>& cached, size_t item, Expr j)
      : cached_(cached), item_(item), j_(std::move(j)) {}

 protected:
  using IRMutator::visit;
  const Cached* find(const Buf& b, const Expr& index) const {
    for (const Cached& c : cached_) {
      if (c.buf.get() == b.get() && equal(simplify(index), c.index)) return &c;
    }
    return nullptr;
  }
  Expr visit(const Load* op, const Expr& self) override {
    Expr e = IRMutator::visit(op, self);
    const Load* l = e.as<Load>();
    const Cached* c = l->predicate.defined() ? nullptr : find(l->buf, l->index);
    if (!c || (c->written ? item_ <= c->first : item_ < c->first)) return e;
    return Load::make(c->regs, j_);
  }
  Stmt visit(const Store* op, const Stmt& self) override {
    Stmt s = IRMutator::visit(op, self);
    const Store* st = s.as<Store>();
    const Cached* c = st->predicate.defined() ? nullptr : find(st->buf, st->index);
    if (!c || !c->written) return s;
    Stmt keep = Store::make(c->regs, j_, st->value);
    if (c->dead_stores.count(item_)) return keep;
    return Block::make({keep, Store::make(st->buf, st->index, Load::make(c->regs, j_))});
  }

 private:
  const std::vector<Cached>& cached_;
  size_t item_;
  Expr j_;
};

// The loads of `s` that run whenever `s` does: in its straight-line
// statements, not under a branch or in an inner loop.
std::vector<const Load*> unconditional_loads(const Stmt& s) {
  struct Loads : IRVisitor {
    using IRVisitor::visit_node;
    std::vector<const Load*> found;
    void visit_node(const Load* op) override {
      found.push_back(op);
      IRVisitor::visit_node(op);
    }
  } loads;
  std::vector<Stmt> work = {s};
  while (!work.empty()) {
    Stmt t = work.back();
    work.pop_back();
    if (const Block* b = t.as<Block>()) {
      for (const Stmt& c : b->stmts) work.push_back(c);
    } else if (const LetStmt* l = t.as<LetStmt>()) {
      loads.visit(l->value);
      work.push_back(l->body);
    } else if (const Allocate* a = t.as<Allocate>()) {
      work.push_back(a->body);
    } else if (const Store* st = t.as<Store>()) {
      loads.visit(st->index);
      loads.visit(st->value);
    }
  }
  return loads.found;
}

// The stores of `s`, and whether each is straight-line.
struct StoreSite {
  const BufferNode* buf;
  bool unconditional;
};
std::vector<StoreSite> stores_of(const Stmt& s) {
  struct Stores : IRVisitor {
    using IRVisitor::visit_node;
    std::vector<StoreSite> found;
    int depth = 0;  // inside a branch or a loop
    void visit_node(const Store* op) override { found.push_back({op->buf.get(), depth == 0}); }
    void visit_node(const IfThenElse* op) override {
      ++depth;
      IRVisitor::visit_node(op);
      --depth;
    }
    void visit_node(const For* op) override {
      ++depth;
      IRVisitor::visit_node(op);
      --depth;
    }
  } st;
  st.visit(s);
  return st.found;
}

std::set<const BufferNode*> written_in(const Stmt& s) {
  std::set<const BufferNode*> out;
  for (const StoreSite& st : stores_of(s)) out.insert(st.buf);
  return out;
}

class Scheduler {
 public:
  Scheduler(const Kernel& k, const RowProgram& p, const Team& team, const GpuTarget& target,
            const GpuScheduleOptions& o, Names& names)
      : k_(k), p_(p), t_(team), target_(target), o_(o), names_(names) {
    const std::string base = p.row.empty() ? "gpu" : p.row;
    blk_ = Var::make(i64_t(), names_.fresh(base + "_blk"));
    thr_ = Var::make(i64_t(), names_.fresh(base + "_thr"));
    lane_ = Var::make(i64_t(), names_.fresh(base + "_lane"));
    j_ = Var::make(i64_t(), names_.fresh(p.c + "_j"));
    c_ = Var::make(i64_t(), p.c);
    if (!p.row.empty()) row_ = Var::make(i64_t(), p.row);
  }

  std::optional<Kernel> run(std::string* why) {
    plan_cache();
    std::vector<Phase> phases;
    int64_t e = 0;
    if (cached_.empty()) {
      phases = build(false);
    } else if (is_const_int(simplify(cache_extent_), &e)) {
      phases = build(e <= capacity());
    } else {
      // Both versions, chosen in each phase by the same uniform condition.
      std::vector<Phase> fast = build(true), slow = build(false);
      KILN_INTERNAL_CHECK(fast.size() == slow.size(), "gpu_reduce: versions differ in phases");
      Expr fits = cache_extent_ <= make_int(capacity());
      for (size_t i = 0; i < fast.size(); ++i) {
        KILN_INTERNAL_CHECK(fast[i].barrier == slow[i].barrier,
                            "gpu_reduce: versions differ in barriers");
        Stmt a = Block::make(fast[i].stmts), b = Block::make(slow[i].stmts);
        phases.push_back({{equal(a, b) ? a : IfThenElse::make(fits, a, b)}, fast[i].barrier});
      }
    }
    int64_t shared = 0;
    for (const auto& [key, buf] : red_) shared += red_size() * int64_t(dtype_size(buf->dtype));
    if (shared > target_.shared_memory_per_block) {
      *why = "the partial results need " + std::to_string(shared) +
             " bytes of shared memory, more than a block has";
      return std::nullopt;
    }
    std::vector<Stmt> body;
    for (const Phase& ph : phases) {
      // A phase after a warp exchange needs no barrier: its values move
      // between the lanes of a warp through shuffles, not memory.
      if (!body.empty() && ph.barrier) body.push_back(Barrier::make());
      body.push_back(thread_loop(Block::make(ph.stmts)));
    }
    Stmt block = Block::make(body);
    for (const Buf& p : warp_order_) {
      block = Allocate::make(p, make_int(1), MemoryScope::GpuLocal, block);
    }
    for (const Cached& c : cached_) {
      block = Allocate::make(c.regs, make_int(o_.row_cache), MemoryScope::GpuLocal, block);
    }
    for (auto it = p_.locals.rbegin(); it != p_.locals.rend(); ++it) {
      const Allocate* a = it->as<Allocate>();
      block = Allocate::make(a->buf, a->size, MemoryScope::GpuLocal, block);
    }
    for (const auto& [key, buf] : red_) {
      block = Allocate::make(buf, make_int(red_size()), MemoryScope::GpuShared, block);
    }
    Expr grid = p_.row.empty() ? make_int(1)
                               : simplify((p_.rows + make_int(t_.rows - 1)) / make_int(t_.rows));
    Kernel out = k_;
    out.body = For::make(blk_, make_int(0), grid, ForKind::GpuBlock, block);
    return out;
  }

 private:
  int64_t capacity() const { return o_.row_cache * t_.lanes; }

  // One barrier phase, or a phase that follows the last without a barrier.
  struct Phase {
    std::vector<Stmt> stmts;
    bool barrier = true;
  };

  // Rows of whole warps combine their partials with warp shuffles (a warp per
  // row: no shared memory and no barrier; a block per row: one shared
  // partial per warp and one barrier). Columns (a team's threads a warp
  // apart) keep the shared-memory tree.
  bool shuffles() const {
    return !t_.columns && target_.warp_size == kWarp && t_.lanes >= kWarp &&
           t_.threads % kWarp == 0;
  }
  int64_t red_size() const { return shuffles() ? t_.threads / kWarp : t_.threads; }

  // Which row elements stay in registers (see the top comment).
  void plan_cache() {
    if (p_.row.empty() || o_.row_cache < 1) return;
    const RowItem* first = nullptr;
    for (const RowItem& it : p_.items) {
      if (it.kind != RowItem::Scalar && !it.flattened) {
        first = &it;
        break;
      }
    }
    if (!first) return;
    cache_extent_ = simplify(first->extent);
    int64_t e = 0;
    if (is_const_int(cache_extent_, &e) && e > capacity()) return;
    std::vector<bool> takes(p_.items.size(), false);
    for (size_t i = 0; i < p_.items.size(); ++i) {
      const RowItem& it = p_.items[i];
      takes[i] =
          it.kind != RowItem::Scalar && !it.flattened && equal(simplify(it.extent), cache_extent_);
    }
    std::set<const BufferNode*> written = written_in(k_.body);
    std::set<std::string> allowed = {p_.row, p_.c};
    for (const auto& [var, value] : p_.row_lets) allowed.insert(var.as<Var>()->name);
    for (const Expr& s : k_.scalars) allowed.insert(s.as<Var>()->name);
    auto plain = [&](const Expr& index) {
      if (index.type().lanes != 1) return false;
      for (const std::string& v : vars_of(index)) {
        if (!allowed.count(v)) return false;
      }
      return true;
    };
    struct Candidate {
      Buf buf;
      Expr index;
      size_t first = 0;
      int readers = 0;  // items that read it after it is filled
      bool ok = true;
      bool written = false;
      std::vector<size_t> stores;  // written: the items that store it, in order
      std::set<size_t> loads;      // and those that load it
    };
    std::vector<Candidate> cands;
    auto find = [&](const BufferNode* b, const Expr& index) -> Candidate* {
      for (Candidate& c : cands) {
        if (c.buf.get() == b && equal(c.index, index)) return &c;
      }
      return nullptr;
    };
    // Read-only elements read in two loops or more, unconditionally in the first.
    for (size_t i = 0; i < p_.items.size(); ++i) {
      if (!takes[i]) continue;
      struct AllLoads : IRVisitor {
        using IRVisitor::visit_node;
        std::vector<const Load*> found;
        void visit_node(const Load* op) override {
          found.push_back(op);
          IRVisitor::visit_node(op);
        }
      } all;
      all.visit(p_.items[i].stmt);
      std::vector<const Load*> sure = unconditional_loads(p_.items[i].stmt);
      std::set<Candidate*> seen;
      for (const Load* l : all.found) {
        if (written.count(l->buf.get()) || l->predicate.defined() || !plain(l->index)) continue;
        Expr index = simplify(l->index);
        Candidate* c = find(l->buf.get(), index);
        if (!c) {
          bool unconditional = false;
          for (const Load* s : sure) unconditional = unconditional || s == l;
          if (!unconditional) continue;  // another load of it may be; then it counts
          cands.push_back({l->buf, index, i, 0, true, false, {}, {}});
          c = &cands.back();
        }
        if (seen.insert(c).second && c->first != i) ++c->readers;
      }
    }
    // Written elements: every store straight-line in a loop that keeps them,
    // read in a later one.
    for (const BufferNode* b : written) {
      Candidate cand;
      bool found = false;
      for (size_t i = 0; i < p_.items.size() && cand.ok; ++i) {
        const RowItem& it = p_.items[i];
        bool touches = false;
        for (const StoreSite& s : stores_of(it.stmt)) {
          if (s.buf != b) continue;
          touches = true;
          if (!s.unconditional) cand.ok = false;
        }
        struct Uses : IRVisitor {
          using IRVisitor::visit_node;
          const BufferNode* b;
          std::vector<Expr> loads;
          Buf buf;
          void visit_node(const Load* op) override {
            if (op->buf.get() == b) {
              loads.push_back(op->index);
              buf = op->buf;
            }
            IRVisitor::visit_node(op);
          }
          void visit_node(const Store* op) override {
            if (op->buf.get() == b) buf = op->buf;
            IRVisitor::visit_node(op);
          }
        } uses;
        uses.b = b;
        uses.visit(it.stmt);
        const bool stores_it = touches;
        touches = touches || !uses.loads.empty();
        if (!touches) continue;
        if (stores_it) cand.stores.push_back(i);
        if (!uses.loads.empty()) cand.loads.insert(i);
        if (!takes[i] || it.kind == RowItem::Scalar) {
          cand.ok = false;
          break;
        }
        if (!found) {
          bool stores_here = false;
          for (const StoreSite& s : stores_of(it.stmt)) stores_here = stores_here || s.buf == b;
          if (!stores_here) {
            cand.ok = false;  // read before it is written: old contents
            break;
          }
          found = true;
          cand.buf = uses.buf;
          cand.first = i;
          cand.written = true;
          cand.index = index_of_store(it.stmt, b);
          if (!cand.index.defined() || !plain(cand.index)) cand.ok = false;
        } else if (!uses.loads.empty()) {
          ++cand.readers;
        }
      }
      if (found && cand.ok && cand.readers > 0) cands.push_back(cand);
    }
    std::stable_sort(cands.begin(), cands.end(),
                     [](const Candidate& a, const Candidate& b) { return a.readers > b.readers; });
    for (const Candidate& c : cands) {
      if (!c.ok || c.readers < 1 || cached_.size() >= kMaxCached) continue;
      Buf regs = make_buf(names_.fresh(c.buf->name + "_r"), c.buf->dtype);
      cached_.push_back({c.buf, c.index, regs, c.first, c.written, {}});
      for (size_t s = 0; s + 1 < c.stores.size(); ++s) {
        if (!c.loads.count(c.stores[s])) cached_.back().dead_stores.insert(c.stores[s]);
      }
    }
  }

  static Expr index_of_store(const Stmt& s, const BufferNode* b) {
    struct Finder : IRVisitor {
      using IRVisitor::visit_node;
      const BufferNode* b = nullptr;
      Expr index;
      void visit_node(const Store* op) override {
        if (op->buf.get() == b && !index.defined()) index = simplify(op->index);
        IRVisitor::visit_node(op);
      }
    } f;
    f.b = b;
    f.visit(s);
    return f.index;
  }

  // The phases, each a list of statements of one thread's work.
  std::vector<Phase> build(bool cached) {
    std::vector<Phase> phases(1);
    int site = 0;
    for (size_t i = 0; i < p_.items.size(); ++i) {
      const RowItem& it = p_.items[i];
      if (it.kind == RowItem::Scalar) {
        phases.back().stmts.push_back(
            it.lane0 ? IfThenElse::make(lane_ == make_int(0), it.stmt) : it.stmt);
        continue;
      }
      if (it.kind == RowItem::Pointwise) {
        phases.back().stmts.push_back(loop_over_row(it, i, it.stmt, cached));
        continue;
      }
      if (shuffles()) {
        reduce_with_shuffles(it, i, cached, site % 2, phases);
        ++site;
        continue;
      }
      // A reduction: the thread's partial, the tree, then every thread's result.
      std::map<std::pair<const BufferNode*, int64_t>, Buf> partial;
      std::vector<Buf> reds;
      for (size_t a = 0; a < it.accs.size(); ++a) {
        const RowItem::Accumulator& acc = it.accs[a];
        partial[{acc.buf.get(), acc.index}] =
            make_buf(names_.fresh(acc.buf->name + "_p"), acc.buf->dtype);
        reds.push_back(red_buffer(site % 2, a, acc.buf->dtype));
      }
      Stmt loop = loop_over_row(it, i, ToPartials(partial).mutate(it.stmt), cached);
      std::vector<Stmt> init, publish;
      for (size_t a = 0; a < it.accs.size(); ++a) {
        const RowItem::Accumulator& acc = it.accs[a];
        const Buf& p = partial[{acc.buf.get(), acc.index}];
        init.push_back(
            Store::make(p, make_int(0), reduction_identity(acc.op, {acc.buf->dtype, 1})));
        publish.push_back(Store::make(reds[a], thr_, Load::make(p, make_int(0))));
      }
      Stmt work = Block::make({Block::make(init), loop, Block::make(publish)});
      for (const auto& [key, p] : partial)
        work = Allocate::make(p, make_int(1), MemoryScope::Stack, work);
      phases.back().stmts.push_back(work);
      const int64_t stride = t_.columns ? t_.rows : 1;
      for (int64_t s = t_.lanes / 2; s >= 1; s /= 2) {
        std::vector<Stmt> step;
        for (size_t a = 0; a < it.accs.size(); ++a) {
          Expr mine = Load::make(reds[a], thr_);
          Expr other = Load::make(reds[a], thr_ + make_int(s * stride));
          step.push_back(Store::make(reds[a], thr_, Binary::make(it.accs[a].op, mine, other)));
        }
        phases.push_back({{IfThenElse::make(lane_ < make_int(s), Block::make(step))}, true});
      }
      Expr first = t_.columns ? thr_ % make_int(t_.rows) : thr_ - lane_;
      std::vector<Stmt> result;
      for (size_t a = 0; a < it.accs.size(); ++a) {
        const RowItem::Accumulator& acc = it.accs[a];
        Expr old = Load::make(acc.buf, make_int(acc.index));
        result.push_back(Store::make(acc.buf, make_int(acc.index),
                                     Binary::make(acc.op, old, Load::make(reds[a], first))));
      }
      phases.push_back({result, true});
      ++site;
    }
    return phases;
  }

  // A reduction over a row of whole warps: each thread's partial in a
  // GpuLocal register, a butterfly of shuffles within each warp, and for a
  // row of several warps one shared partial per warp, which every thread of
  // the row folds in warp order after one barrier.
  void reduce_with_shuffles(const RowItem& it, size_t item, bool cached, int parity,
                            std::vector<Phase>& phases) {
    std::map<std::pair<const BufferNode*, int64_t>, Buf> partial;
    std::vector<Buf> partials, warps;
    for (const RowItem::Accumulator& acc : it.accs) {
      // One partial per accumulator, shared by both versions of a phase.
      auto [at, fresh] = warp_partials_.try_emplace({acc.buf.get(), acc.index});
      if (fresh) {
        at->second.partial = make_buf(names_.fresh(acc.buf->name + "_p"), acc.buf->dtype);
        at->second.warp = make_buf(names_.fresh(acc.buf->name + "_w"), acc.buf->dtype);
        warp_order_.push_back(at->second.partial);
      }
      partial[{acc.buf.get(), acc.index}] = at->second.partial;
      partials.push_back(at->second.partial);
      warps.push_back(at->second.warp);
    }
    Stmt loop = loop_over_row(it, item, ToPartials(partial).mutate(it.stmt), cached);
    std::vector<Stmt> work;
    for (size_t a = 0; a < it.accs.size(); ++a) {
      const RowItem::Accumulator& acc = it.accs[a];
      work.push_back(
          Store::make(partials[a], make_int(0), reduction_identity(acc.op, {acc.buf->dtype, 1})));
    }
    work.push_back(loop);
    phases.back().stmts.push_back(Block::make(work));
    auto combine_into = [&](size_t a, const Expr& v) {
      const RowItem::Accumulator& acc = it.accs[a];
      Expr old = Load::make(acc.buf, make_int(acc.index));
      return Store::make(acc.buf, make_int(acc.index), Binary::make(acc.op, old, v));
    };
    std::vector<Stmt> result;
    if (t_.lanes == kWarp) {
      for (size_t a = 0; a < it.accs.size(); ++a) {
        result.push_back(
            combine_into(a, make_warp_reduce(it.accs[a].op, partials[a], make_int(0), kWarp)));
      }
      phases.push_back({result, false});
      return;
    }
    // Every lane shuffles (the mask is the whole warp); lane 0 of each warp
    // publishes the warp's result.
    std::vector<Stmt> publish;
    for (size_t a = 0; a < it.accs.size(); ++a) {
      const RowItem::Accumulator& acc = it.accs[a];
      Buf red = red_buffer(parity, a, acc.buf->dtype);
      const Buf& w = warps[a];
      Stmt s = Block::make(
          {Store::make(w, make_int(0), make_warp_reduce(acc.op, partials[a], make_int(0), kWarp)),
           IfThenElse::make(thr_ % make_int(kWarp) == make_int(0),
                            Store::make(red, thr_ / make_int(kWarp), Load::make(w, make_int(0))))});
      publish.push_back(Allocate::make(w, make_int(1), MemoryScope::Stack, s));
      // The row's warps in a balanced tree (log2 of them deep), the same in
      // every thread: broadcast reads of shared memory.
      Expr first = (thr_ - lane_) / make_int(kWarp);
      std::function<Expr(int64_t, int64_t)> fold = [&](int64_t lo, int64_t n) -> Expr {
        if (n == 1) return Load::make(red, simplify(first + make_int(lo)));
        return Binary::make(acc.op, fold(lo, n / 2), fold(lo + n / 2, n - n / 2));
      };
      result.push_back(combine_into(a, fold(0, t_.lanes / kWarp)));
    }
    phases.push_back({publish, false});
    phases.push_back({result, true});
  }

  // Partials of reductions alternate between two arrays: by the time the one
  // after next writes an array, a barrier separates it from the last read of
  // the result there.
  Buf red_buffer(int parity, size_t acc, DType dtype) {
    auto key = std::make_tuple(parity, acc, dtype);
    auto it = red_.find(key);
    if (it != red_.end()) return it->second;
    Buf b =
        make_buf(names_.fresh("red" + std::to_string(parity) + "_" + std::to_string(acc)), dtype);
    red_[key] = b;
    return b;
  }

  // A loop over the row, spread over the team: element c = j * W + lane.
  Stmt loop_over_row(const RowItem& it, size_t item, const Stmt& body, bool cached) {
    const int64_t W = t_.lanes;
    Expr c = j_ * make_int(W) + lane_;
    bool keeps = cached && !it.flattened && equal(simplify(it.extent), cache_extent_);
    if (!keeps) {
      Expr trips = simplify((it.extent + make_int(W - 1)) / make_int(W));
      Stmt inner = LetStmt::make(c_, c, body);
      return For::make(j_, make_int(0), trips, ForKind::Serial,
                       IfThenElse::make(c < it.extent, inner));
    }
    std::vector<Stmt> fills;
    for (const Cached& k : cached_) {
      if (!k.written && k.first == item) {
        fills.push_back(Store::make(k.regs, j_, Load::make(k.buf, k.index)));
      }
    }
    Stmt inner = UseCache(cached_, item, j_).mutate(body);
    inner = LetStmt::make(c_, c, Block::make({Block::make(fills), inner}));
    Stmt loop = For::make(j_, make_int(0), make_int(o_.row_cache), ForKind::Serial,
                          IfThenElse::make(c < it.extent, inner));
    // Constant register indices: the array stays in registers.
    return unroll(loop, j_.as<Var>()->name);
  }

  Stmt thread_loop(const Stmt& work) {
    Stmt body = work;
    if (!p_.row.empty()) {
      if (t_.rows > 1) body = IfThenElse::make(row_ < p_.rows, body);
    }
    Expr lane = t_.columns ? thr_ / make_int(t_.rows) : thr_ % make_int(t_.lanes);
    if (t_.rows == 1 && !t_.columns) lane = thr_;
    for (auto it = p_.row_lets.rbegin(); it != p_.row_lets.rend(); ++it) {
      body = LetStmt::make(it->first, it->second, body);
    }
    body = LetStmt::make(lane_, lane, body);
    if (!p_.row.empty()) {
      Expr item = t_.columns ? thr_ % make_int(t_.rows) : thr_ / make_int(t_.lanes);
      body = LetStmt::make(row_, simplify(blk_ * make_int(t_.rows) + item), body);
    }
    return For::make(thr_, make_int(0), make_int(t_.threads), ForKind::GpuThread, body);
  }

  static constexpr size_t kMaxCached = 4;
  static constexpr int64_t kWarp = 32;

  const Kernel& k_;
  const RowProgram& p_;
  Team t_;
  const GpuTarget& target_;
  const GpuScheduleOptions& o_;
  Names& names_;
  Expr blk_, thr_, lane_, j_, c_, row_;
  Expr cache_extent_;
  std::vector<Cached> cached_;
  std::map<std::tuple<int, size_t, DType>, Buf> red_;
  struct WarpPartial {
    Buf partial;  // GpuLocal: the thread's partial, which its warp reduces
    Buf warp;     // stack: the warp's result, which lane 0 publishes
  };
  std::map<std::pair<const BufferNode*, int64_t>, WarpPartial> warp_partials_;
  std::vector<Buf> warp_order_;  // the partials, in the order they were made
};

}  // namespace

Kernel gpu_reduce(const Kernel& k, const GpuTarget& target, const GpuScheduleOptions& options) {
  if (!k.body.defined() || is_mapped(k.body)) return k;
  Names names(k);
  std::string why;
  std::optional<RowProgram> p = row_program(k, names, &why);
  if (!p) return k;
  Team team = choose_team(*p, target, options);
  std::optional<Kernel> out = Scheduler(k, *p, team, target, options, names).run(&why);
  if (!out) return k;
  out->body = simplify(out->body);
  return *out;
}

}  // namespace kiln::passes
