// mark_stream_stores (schedule.h): the stores of a nest that write a kernel
// buffer for the last time in the kernel (nothing after them, nor anything in
// a loop around them, reads the buffer), marked `stream(value, big)` so the
// CPU backend writes them with non-temporal (streaming) stores when the
// kernel's output is large (docs/schedules.md, "Streaming stores").
#include <map>
#include <string>
#include <vector>

#include "ir/loop/analysis.h"
#include "ir/loop/simplify.h"
#include "ir/loop/visitor.h"
#include "passes/schedule/schedule.h"

namespace kiln::passes {

using namespace kiln::loop;  // NOLINT

namespace {

// One pass in program order: the stores, the loads after each, and how many
// elements each store writes (the product of its loops' extents, when none of
// them depends on an enclosing loop or on a variable bound inside the nest: a
// LetStmt's variable is out of scope where `big` sums the stores of other
// branches, e.g. a kernel's two layout versions).
class Events : public IRVisitor {
 public:
  struct StoreInfo {
    const Store* store = nullptr;
    Expr elements;            // undefined: unknown
    size_t loads_before = 0;  // loads_ entries seen when the store happened
    std::vector<const For*> loops;  // the loops around it, outermost first
  };
  std::vector<StoreInfo> stores;
  std::vector<const BufferNode*> loads;
  std::map<const For*, std::pair<size_t, size_t>> loop_loads;  // its body's loads entries

 protected:
  void visit_node(const For* op) override {
    visit(op->min);
    visit(op->extent);
    bool fixed = true;
    for (const For* f : loops_) fixed = fixed && !uses_var(op->extent, f->var.as<Var>()->name);
    for (const std::string& v : lets_) fixed = fixed && !uses_var(op->extent, v);
    loops_.push_back(op);
    fixed_.push_back(fixed);
    size_t first = loads.size();
    visit(op->body);
    loop_loads[op] = {first, loads.size()};
    loops_.pop_back();
    fixed_.pop_back();
  }
  void visit_node(const LetStmt* op) override {
    visit(op->value);
    lets_.push_back(op->var.as<Var>()->name);
    visit(op->body);
    lets_.pop_back();
  }
  void visit_node(const Load* op) override {
    IRVisitor::visit_node(op);
    loads.push_back(op->buf.get());
  }
  void visit_node(const Store* op) override {
    IRVisitor::visit_node(op);  // its own loads come first
    StoreInfo s;
    s.store = op;
    s.loads_before = loads.size();
    s.loops = loops_;
    Expr n = make_int(1);
    for (size_t i = 0; i < loops_.size(); ++i) {
      if (!fixed_[i]) return stores.push_back(s);
      n = n * max(loops_[i]->extent, make_int(0));
    }
    s.elements = n;
    stores.push_back(s);
  }

 private:
  std::vector<const For*> loops_;
  std::vector<bool> fixed_;
  std::vector<std::string> lets_;  // LetStmt variables in scope
};

class Wrap : public IRMutator {
 public:
  Wrap(const std::map<const Store*, bool>& marked, Expr big)
      : marked_(marked), big_(std::move(big)) {}

 protected:
  Stmt visit(const Store* op, const Stmt& self) override {
    if (!marked_.count(op)) return self;
    Expr v = Call::make(op->value.type(), "stream", {op->value, big_});
    return Store::make(op->buf, op->index, v, op->predicate);
  }

 private:
  const std::map<const Store*, bool>& marked_;
  Expr big_;
};

}  // namespace

Stmt mark_stream_stores(const Stmt& s, const std::vector<Buf>& kernel_buffers,
                        const std::vector<Stmt>& later, int64_t min_bytes) {
  if (min_bytes <= 0 || !s.defined()) return s;
  Events ev;
  ev.visit(s);
  Events after;
  for (const Stmt& l : later) after.visit(l);
  std::map<const BufferNode*, bool> params;
  for (const Buf& b : kernel_buffers) params[b.get()] = true;
  std::map<const Store*, bool> marked;
  Expr bytes = make_int(0);
  for (const Events::StoreInfo& st : ev.stores) {
    const BufferNode* buf = st.store->buf.get();
    if (!params.count(buf) || !st.elements.defined()) continue;
    bool reread = false;
    for (size_t i = st.loads_before; i < ev.loads.size(); ++i) {
      reread = reread || ev.loads[i] == buf;
    }
    for (const BufferNode* b : after.loads) reread = reread || b == buf;
    // A load in a loop around the store may read it back on a later trip
    // (an accumulation over blocks, a row rescaled in place).
    for (const For* f : st.loops) {
      auto [first, end] = ev.loop_loads.at(f);
      for (size_t i = first; i < end; ++i) reread = reread || ev.loads[i] == buf;
    }
    if (reread) continue;
    marked[st.store] = true;
    bytes = bytes + st.elements * make_int(int64_t(dtype_size(buf->dtype)));
  }
  if (marked.empty()) return s;
  Expr big = simplify(bytes >= make_int(min_bytes));
  int64_t known = 0;
  if (is_const_int(big, &known) && known == 0) return s;
  Wrap w(marked, big);
  return w.mutate(s);
}

}  // namespace kiln::passes
