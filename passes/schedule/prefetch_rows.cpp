// prefetch_next_rows (schedule.h): while a row loop's later passes compute
// from cache, fetch the next row of the memory they read.
//
// A row op (softmax, log_softmax) lowers to a loop over rows whose body is a
// sequence of passes over one row: the first reads the row from memory (a
// max), the next compute from the cached row (exp). The hardware prefetchers
// follow misses, so during a pass that hits the cache nothing is fetched and
// memory idles: the passes of a row run one after the other with the memory
// stream. A prefetch of the next row's line in each iteration of such a pass
// overlaps the two, and the next row's first pass then reads from cache.
#include <map>
#include <set>
#include <vector>

#include "ir/loop/analysis.h"
#include "ir/loop/prefetch.h"
#include "ir/loop/simplify.h"
#include "ir/loop/visitor.h"
#include "passes/schedule/schedule.h"
#include "passes/schedule/schedule_internal.h"

namespace kiln::passes {

using namespace kiln::loop;  // NOLINT

namespace {

using BufSet = std::set<const BufferNode*>;

// The passes over a row: the loops directly inside its loop's body.
using schedule_detail::child_loops;

// What one pass does: the kernel buffers it loads at an index that moves
// with the row, and its innermost loops.
struct PassInfo {
  struct Inner {
    const For* loop = nullptr;
    bool calls = false;  // an intrinsic call (exp, log, ...): compute-heavy
    std::vector<const Load*> dense_loads;  // ramp(base, 1, lanes) loads of kernel buffers
  };
  BufSet row_loads;
  std::vector<Inner> inner;
};

PassInfo pass_info(const For* pass, const std::string& row, const BufSet& kernel) {
  struct Walker : IRVisitor {
    using IRVisitor::visit_node;
    const std::string& row;
    const BufSet& kernel;
    PassInfo info;
    PassInfo::Inner* inner = nullptr;  // the innermost loop being walked
    Walker(const std::string& r, const BufSet& k) : row(r), kernel(k) {}
    void visit_node(const For* op) override {
      if (!child_loops(op->body).empty()) return IRVisitor::visit_node(op);
      info.inner.push_back({op, false, {}});
      inner = &info.inner.back();
      IRVisitor::visit_node(op);
      inner = nullptr;
    }
    void visit_node(const Call* op) override {
      if (inner && op->name != "stream") inner->calls = true;
      IRVisitor::visit_node(op);
    }
    void visit_node(const Load* op) override {
      if (kernel.count(op->buf.get()) && uses_var(op->index, row)) {
        info.row_loads.insert(op->buf.get());
        const Ramp* r = op->index.as<Ramp>();
        int64_t stride = 0;
        if (inner && r && is_const_int(r->stride, &stride) && stride == 1) {
          inner->dense_loads.push_back(op);
        }
      }
      IRVisitor::visit_node(op);
    }
  } w(row, kernel);
  w.visit_node(pass);
  return w.info;
}

// Prepends the prefetches to the chosen innermost loops.
class Prepend : public IRMutator {
 public:
  explicit Prepend(std::map<const For*, std::vector<Stmt>> add) : add_(std::move(add)) {}

 protected:
  using IRMutator::visit;
  Stmt visit(const For* op, const Stmt& self) override {
    auto it = add_.find(op);
    if (it == add_.end()) return IRMutator::visit(op, self);
    std::vector<Stmt> body = it->second;
    body.push_back(op->body);
    return For::make(op->var, op->min, op->extent, op->for_kind, Block::make(body));
  }

 private:
  std::map<const For*, std::vector<Stmt>> add_;
};

class RowPrefetcher : public IRMutator {
 public:
  RowPrefetcher(BufSet kernel, int level) : kernel_(std::move(kernel)), level_(level) {}

 protected:
  using IRMutator::visit;
  Stmt visit(const For* op, const Stmt& self) override {
    if (op->for_kind == ForKind::Vectorized) return self;
    std::vector<const For*> passes = child_loops(op->body);
    if (passes.size() < 2) return IRMutator::visit(op, self);
    const std::string& row = op->var.as<Var>()->name;
    Expr next = op->var + make_int(1);
    BufSet cached;  // kernel buffers an earlier pass of this row read
    std::map<const For*, std::vector<Stmt>> add;
    for (const For* pass : passes) {
      PassInfo info = pass_info(pass, row, kernel_);
      for (const PassInfo::Inner& in : info.inner) {
        if (!in.calls) continue;
        std::vector<Stmt> fetches;
        std::vector<Expr> seen;
        for (const Load* l : in.dense_loads) {
          if (!cached.count(l->buf.get())) continue;
          Expr at = simplify(substitute(l->index.as<Ramp>()->base, row, next));
          bool dup = false;
          for (const Expr& e : seen) dup = dup || equal(e, at);
          if (dup) continue;
          seen.push_back(at);
          fetches.push_back(ExternCall::make(kPrefetchCall, {at, make_int(level_)}, {l->buf}));
        }
        if (!fetches.empty()) add[in.loop] = fetches;
      }
      cached.insert(info.row_loads.begin(), info.row_loads.end());
    }
    if (add.empty()) return IRMutator::visit(op, self);
    Prepend p(std::move(add));
    return For::make(op->var, op->min, op->extent, op->for_kind, p.mutate(op->body));
  }

 private:
  BufSet kernel_;
  int level_;
};

}  // namespace

Stmt prefetch_next_rows(const Stmt& s, const std::vector<Buf>& kernel_buffers, int level) {
  if (!s.defined() || level < 0) return s;
  BufSet kernel;
  for (const Buf& b : kernel_buffers) kernel.insert(b.get());
  RowPrefetcher r(std::move(kernel), level);
  return r.mutate(s);
}

}  // namespace kiln::passes
