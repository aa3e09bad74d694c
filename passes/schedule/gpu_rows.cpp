// row_program: a lowered reduction kernel read as one row's work, for
// gpu_reduce (gpu_internal.h). Assumes a lowered, unscheduled kernel. The
// kernel is either loops over the same rows, one after another, or (a
// reduction of a whole tensor) no row loop at all, the body being one row.
// Guarantees, for a program it returns, that a team of threads may run a row
// as gpu_reduce does, with the result of the serial loops:
//   - per-row scratch (Allocates in the row, and lets, which become one-element
//     scratch) has a constant size, so each thread can hold a copy;
//   - every loop over the row starts at 0 and is either pointwise (it writes
//     no per-row scratch) or a reduction: straight-line updates
//     `acc[k] = op(acc[k], value)` with op one of + * min max && ||, each
//     accumulator updated once and read nowhere else in the loop (so partial
//     results may be combined in any order: exact for min/max/&&/|| and
//     integers, reassociated for float sums and products, as on the CPU);
//   - a kernel buffer written in the row is touched only at one index
//     (the same expression of the row and element variables everywhere), so
//     the thread that takes an element in one loop takes it in every loop and
//     no thread reads what another wrote; or it is written outside the loops
//     (one thread does that) and not read in the row;
//   - statements outside the loops write either per-row scratch (every thread
//     runs them on its own copy, computing the same values) or kernel memory.
// Anything else is refused with a reason.
#include <map>

#include "ir/loop/analysis.h"
#include "ir/loop/simplify.h"
#include "ir/loop/visitor.h"
#include "kiln/error.h"
#include "passes/schedule/gpu_internal.h"
#include "passes/schedule/schedule_internal.h"

namespace kiln::passes::gpu_detail {

using namespace kiln::loop;  // NOLINT

namespace {

const std::string& name_of(const Expr& var) {
  return var.as<Var>()->name;
}

// Replaces every access to buffer `from` by one to `to`.
class ReplaceBuf : public IRMutator {
 public:
  ReplaceBuf(const BufferNode* from, Buf to) : from_(from), to_(std::move(to)) {}

 protected:
  using IRMutator::visit;
  Expr visit(const Load* op, const Expr& self) override {
    Expr e = IRMutator::visit(op, self);
    const Load* l = e.as<Load>();
    return l->buf.get() == from_ ? Load::make(to_, l->index, l->predicate) : e;
  }
  Stmt visit(const Store* op, const Stmt& self) override {
    Stmt s = IRMutator::visit(op, self);
    const Store* st = s.as<Store>();
    return st->buf.get() == from_ ? Store::make(to_, st->index, st->value, st->predicate) : s;
  }

 private:
  const BufferNode* from_;
  Buf to_;
};

// Every access of a statement, and the names bound inside it.
struct Accesses : IRVisitor {
  using IRVisitor::visit_node;
  struct Access {
    const BufferNode* buf;
    Expr index;
    bool write;
    const Load* load;  // the load node (reads)
  };
  std::vector<Access> list;
  std::set<std::string> bound;
  std::set<const BufferNode*> allocated;
  void visit_node(const Load* op) override {
    list.push_back({op->buf.get(), op->index, false, op});
    IRVisitor::visit_node(op);
  }
  void visit_node(const Store* op) override {
    list.push_back({op->buf.get(), op->index, true, nullptr});
    IRVisitor::visit_node(op);
  }
  void visit_node(const For* op) override {
    bound.insert(name_of(op->var));
    IRVisitor::visit_node(op);
  }
  void visit_node(const LetStmt* op) override {
    bound.insert(name_of(op->var));
    IRVisitor::visit_node(op);
  }
  void visit_node(const Let* op) override {
    bound.insert(name_of(op->var));
    IRVisitor::visit_node(op);
  }
  void visit_node(const Allocate* op) override {
    allocated.insert(op->buf.get());
    IRVisitor::visit_node(op);
  }
};

Accesses accesses_of(const Stmt& s) {
  Accesses a;
  a.visit(s);
  return a;
}

bool is_accumulator_op(BinOp op) {
  return op == BinOp::Add || op == BinOp::Mul || op == BinOp::Min || op == BinOp::Max ||
         op == BinOp::And || op == BinOp::Or;
}

class Builder {
 public:
  Builder(const Kernel& k, Names& names) : k_(k), names_(names) {
    for (const Expr& s : k.scalars) scalars_.insert(name_of(s));
  }

  std::optional<RowProgram> build(std::string* why) {
    why_ = why;
    std::vector<Stmt> parts = top_level(k_.body);
    Stmt row_body = rows_of(parts);
    if (!ok()) return std::nullopt;
    p_.c = names_.fresh(p_.row.empty() ? "gpu_c" : p_.row + "_c");
    linearize(row_body);
    if (!ok()) return std::nullopt;
    bool reduces = false;
    for (const RowItem& it : p_.items) reduces = reduces || it.kind == RowItem::Reduction;
    if (!reduces) return fail("no loop reduces along the row");
    check_rows_disjoint();
    check_kernel_memory();
    if (!ok()) return std::nullopt;
    p_.columns = contiguous_across_rows();
    return p_;
  }

 private:
  bool ok() const { return why_->empty(); }
  std::nullopt_t fail(const std::string& why) {
    if (why_->empty()) *why_ = why;
    return std::nullopt;
  }

  bool only_scalars(const Expr& e) const {
    for (const std::string& v : vars_of(e)) {
      if (!scalars_.count(v)) return false;
    }
    return true;
  }

  // The loops over rows at the top of `s`: a perfect nest from 0 to extents
  // of kernel parameters, down to the first body that is not such a loop.
  std::vector<const For*> row_nest(const Stmt& s) const {
    std::vector<const For*> nest;
    for (const For* f = s.as<For>(); f; f = f->body.as<For>()) {
      if (f->for_kind != ForKind::Serial || !equal(simplify(f->min), make_int(0)) ||
          !only_scalars(f->extent)) {
        break;
      }
      nest.push_back(f);
    }
    return nest;
  }

  // The rows: all top-level statements are nests of loops over the same rows
  // (their bodies, in one set of variables, one after another), or there is
  // no row loop.
  Stmt rows_of(const std::vector<Stmt>& parts) {
    bool all_loops = !parts.empty();
    for (const Stmt& s : parts) {
      const For* f = s.as<For>();
      all_loops = all_loops && f && f->for_kind == ForKind::Serial;
    }
    if (!all_loops) return k_.body;  // one row: the whole tensor
    std::vector<const For*> first = row_nest(parts[0]);
    if (first.empty()) {
      fail("the row loop does not run from 0 to an extent of kernel parameters");
      return Stmt();
    }
    std::vector<Stmt> bodies;
    for (const Stmt& s : parts) {
      std::vector<const For*> nest = row_nest(s);
      if (nest.size() < first.size()) {
        fail("the top-level loops run over different rows");
        return Stmt();
      }
      nest.resize(first.size());
      Stmt body = nest.back()->body;
      for (size_t i = 0; i < nest.size(); ++i) {
        if (!equal(simplify(nest[i]->extent), simplify(first[i]->extent))) {
          fail("the top-level loops run over different rows");
          return Stmt();
        }
        body = substitute(body, name_of(nest[i]->var), first[i]->var);
      }
      bodies.push_back(body);
    }
    if (first.size() == 1) {
      p_.row = name_of(first[0]->var);
      p_.rows = first[0]->extent;
      across_ = p_.row;
      return Block::make(bodies);
    }
    // Nested row loops: one row number, the loop variables computed from it.
    p_.row = names_.fresh("gpu_row");
    Expr row = Var::make(i64_t(), p_.row), rest = row, rows = make_int(1);
    for (const For* f : first) rows = rows * f->extent;
    p_.rows = simplify(rows);
    std::vector<std::pair<Expr, Expr>> lets;
    for (size_t i = first.size(); i-- > 0;) {
      lets.insert(lets.begin(), {first[i]->var, simplify(i == 0 ? rest : rest % first[i]->extent)});
      if (i > 0) rest = rest / first[i]->extent;
    }
    p_.row_lets = lets;
    for (const For* f : first) kept_.push_back(name_of(f->var));
    across_ = kept_.back();
    return Block::make(bodies);
  }

  // With nested row loops each row must write its own elements: every store
  // to kernel memory uses every row variable (a loop that accumulates into
  // memory is no loop over rows).
  void check_rows_disjoint() {
    if (kept_.empty()) return;
    for (const RowItem& it : p_.items) {
      Accesses a = accesses_of(it.stmt);
      for (const Accesses::Access& x : a.list) {
        if (!x.write || locals_.count(x.buf) || a.allocated.count(x.buf)) continue;
        for (const std::string& v : kept_) {
          if (!uses_var(x.index, v)) {
            return (void)fail("kernel buffer '" + x.buf->name +
                              "' is written at an index "
                              "that does not move with row loop '" +
                              v + "'");
          }
        }
      }
    }
  }

  // Appends the items of a row-level statement.
  void linearize(const Stmt& s) {
    if (!ok() || !s.defined()) return;
    if (const Block* b = s.as<Block>()) {
      for (const Stmt& c : b->stmts) linearize(c);
      return;
    }
    if (const Allocate* a = s.as<Allocate>()) {
      int64_t n = 0;
      if (a->scope != MemoryScope::Stack || !is_const_int(simplify(a->size), &n) || n < 1 ||
          n > kMaxLocal) {
        fail("per-row scratch '" + a->buf->name + "' is not a small constant-size array");
        return;
      }
      Buf buf = a->buf;
      Stmt body = a->body;
      if (!local_names_.insert(buf->name).second) {
        // Sibling scopes may reuse a name; hoisted into one scope they may not.
        buf = make_buf(names_.fresh(buf->name), buf->dtype);
        body = ReplaceBuf(a->buf.get(), buf).mutate(body);
        local_names_.insert(buf->name);
      }
      locals_.insert(buf.get());
      p_.locals.push_back(Allocate::make(buf, make_int(n), MemoryScope::Stack, Block::make({})));
      linearize(body);
      return;
    }
    if (const LetStmt* l = s.as<LetStmt>()) {
      // A row-level value lives across the phases of the block: one element
      // of per-row scratch, written where the let was.
      if (l->value.type().lanes != 1) {
        fail("a vector let at row level");
        return;
      }
      Buf buf = make_buf(names_.fresh(name_of(l->var)), l->value.type().dtype);
      local_names_.insert(buf->name);
      locals_.insert(buf.get());
      p_.locals.push_back(Allocate::make(buf, make_int(1), MemoryScope::Stack, Block::make({})));
      add_scalar(Store::make(buf, make_int(0), l->value));
      linearize(substitute(l->body, name_of(l->var), Load::make(buf, make_int(0))));
      return;
    }
    if (const For* f = s.as<For>()) return add_loop(f);
    add_scalar(s);
  }

  void add_scalar(const Stmt& s) {
    Accesses a = accesses_of(s);
    bool local = false, kernel = false;
    for (const Accesses::Access& x : a.list) {
      if (!x.write || a.allocated.count(x.buf)) continue;
      (locals_.count(x.buf) ? local : kernel) = true;
    }
    if (local && kernel) {
      fail("a statement outside the row's loops writes both per-row scratch and kernel memory");
      return;
    }
    RowItem it;
    it.kind = RowItem::Scalar;
    it.stmt = s;
    it.lane0 = kernel;
    p_.items.push_back(std::move(it));
  }

  void add_loop(const For* f) {
    if (f->for_kind != ForKind::Serial || !equal(simplify(f->min), make_int(0))) {
      fail("a loop over the row is not a serial loop from 0");
      return;
    }
    // A perfect nest of loops that accumulates runs as one loop over all of
    // its iterations (a reduction over several dims).
    std::vector<const For*> nest = {f};
    while (const For* inner = nest.back()->body.as<For>()) {
      bool fits = inner->for_kind == ForKind::Serial && equal(simplify(inner->min), make_int(0));
      for (const For* outer : nest) fits = fits && !uses_var(inner->extent, name_of(outer->var));
      if (!fits) break;
      nest.push_back(inner);
    }
    Expr c = Var::make(i64_t(), p_.c);
    RowItem it;
    if (nest.size() > 1 && writes_locals(nest.back()->body)) {
      Expr extent = make_int(1);
      for (const For* l : nest) extent = extent * l->extent;
      // r_last = c % E_last, r_prev = (c / E_last) % E_prev, ..., r_0 = c / (E_1 * ...).
      Stmt body = nest.back()->body;
      Expr rest = c;
      std::vector<std::pair<Expr, Expr>> coords;
      for (size_t i = nest.size(); i-- > 0;) {
        Expr coord = i == 0 ? rest : rest % nest[i]->extent;
        coords.push_back({nest[i]->var, simplify(coord)});
        if (i > 0) rest = rest / nest[i]->extent;
      }
      for (const auto& [var, value] : coords) body = LetStmt::make(var, value, body);
      it.stmt = body;
      it.extent = simplify(extent);
      it.flattened = true;
    } else {
      it.stmt = substitute(f->body, name_of(f->var), c);
      it.extent = f->extent;
    }
    match_accumulators(&it);
    if (!ok()) return;
    it.kind = it.accs.empty() ? RowItem::Pointwise : RowItem::Reduction;
    p_.items.push_back(std::move(it));
  }

  bool writes_locals(const Stmt& s) const {
    for (const Accesses::Access& x : accesses_of(s).list) {
      if (x.write && locals_.count(x.buf)) return true;
    }
    return false;
  }

  // The accumulator updates of a loop body: stores to per-row scratch, each
  // straight-line (not under a branch or an inner loop) and of the form
  // acc[k] = op(acc[k], v) or op(v, acc[k]), v not reading acc.
  void match_accumulators(RowItem* it) {
    std::set<const Load*> self_loads;
    std::vector<Stmt> work = {it->stmt};
    while (!work.empty()) {
      Stmt s = work.back();
      work.pop_back();
      if (const Block* b = s.as<Block>()) {
        for (const Stmt& c : b->stmts) work.push_back(c);
      } else if (const LetStmt* l = s.as<LetStmt>()) {
        work.push_back(l->body);
      } else if (const Allocate* a = s.as<Allocate>()) {
        work.push_back(a->body);
      } else if (const Store* st = s.as<Store>(); st && locals_.count(st->buf.get())) {
        const Binary* b = st->value.as<Binary>();
        int64_t k = 0;
        if (!b || !is_accumulator_op(b->op) || !is_const_int(st->index, &k) ||
            st->predicate.defined()) {
          fail("a loop over the row writes per-row scratch '" + st->buf->name +
               "' other than by accumulating into it");
          return;
        }
        auto self = [&](const Expr& e) {
          const Load* l = e.as<Load>();
          return l && l->buf.get() == st->buf.get() && equal(l->index, st->index) &&
                         !l->predicate.defined()
                     ? l
                     : nullptr;
        };
        const Load* load = self(b->a) ? self(b->a) : self(b->b);
        if (!load) {
          fail("a loop over the row writes per-row scratch '" + st->buf->name +
               "' other than by accumulating into it");
          return;
        }
        for (const RowItem::Accumulator& a : it->accs) {
          if (a.buf.get() == st->buf.get() && a.index == k) {
            fail("accumulator '" + st->buf->name + "' is updated twice in one loop");
            return;
          }
        }
        self_loads.insert(load);
        it->accs.push_back({st->buf, k, b->op});
      }
    }
    // The accumulators are read nowhere else in the loop, and no other
    // per-row scratch is written in it (under a branch, in an inner loop).
    std::set<const BufferNode*> accs;
    for (const RowItem::Accumulator& a : it->accs) accs.insert(a.buf.get());
    Accesses all = accesses_of(it->stmt);
    size_t updates = 0;
    for (const Accesses::Access& x : all.list) {
      if (!locals_.count(x.buf)) continue;
      if (x.write) {
        ++updates;
      } else if (accs.count(x.buf) && !self_loads.count(x.load)) {
        fail("accumulator '" + x.buf->name + "' is read inside the loop that updates it");
        return;
      }
    }
    if (updates != it->accs.size()) {
      fail("a loop over the row writes per-row scratch under a branch or in an inner loop");
    }
  }

  // Kernel memory written in the row: see the top comment.
  void check_kernel_memory() {
    struct Use {
      bool lane0_write = false, elsewhere = false;
      std::vector<Expr> loop_indices;  // in loops
    };
    std::map<const BufferNode*, Use> uses;
    std::set<const BufferNode*> written;
    for (const RowItem& it : p_.items) {
      Accesses a = accesses_of(it.stmt);
      for (const Accesses::Access& x : a.list) {
        if (x.write && !locals_.count(x.buf) && !a.allocated.count(x.buf)) written.insert(x.buf);
      }
    }
    for (const RowItem& it : p_.items) {
      Accesses a = accesses_of(it.stmt);
      for (const Accesses::Access& x : a.list) {
        if (!written.count(x.buf)) continue;
        Use& u = uses[x.buf];
        if (it.kind == RowItem::Scalar) {
          (it.lane0 && x.write ? u.lane0_write : u.elsewhere) = true;
          continue;
        }
        bool inner = false;
        for (const std::string& v : vars_of(x.index)) inner = inner || a.bound.count(v);
        if (it.flattened || inner || x.index.type().lanes != 1 || !uses_var(x.index, p_.c)) {
          return (void)fail("kernel buffer '" + buffer_name(x.buf) +
                            "' is written in the row and accessed at an index that is not "
                            "one per element of the row");
        }
        u.loop_indices.push_back(simplify(x.index));
      }
    }
    for (const auto& [buf, u] : uses) {
      if (u.lane0_write && (u.elsewhere || !u.loop_indices.empty())) {
        return (void)fail("kernel buffer '" + buffer_name(buf) +
                          "' is written outside the row's loops and read in the row");
      }
      if (u.elsewhere) {
        return (void)fail("kernel buffer '" + buffer_name(buf) +
                          "' is written in the row's loops and read outside them");
      }
      for (const Expr& i : u.loop_indices) {
        if (!equal(i, u.loop_indices[0])) {
          return (void)fail("kernel buffer '" + buffer_name(buf) +
                            "' is accessed at two different indices along the row");
        }
      }
    }
  }

  std::string buffer_name(const BufferNode* b) const { return b->name; }

  // Whether the memory the reductions read moves contiguously with the row
  // rather than along it (the last-dim strides read as 1, as the CPU
  // schedule guesses): then adjacent threads take adjacent rows.
  bool contiguous_across_rows() const {
    if (p_.row.empty()) return false;
    std::vector<std::pair<std::string, int64_t>> unit = schedule_detail::unit_stride_guesses(k_);
    bool along = false, across = false;
    for (const RowItem& it : p_.items) {
      if (it.kind == RowItem::Scalar) continue;
      Stmt s = it.stmt;
      for (const auto& [name, v] : unit) s = substitute(s, name, make_int(v));
      for (const Accesses::Access& x : accesses_of(s).list) {
        if (locals_.count(x.buf) || x.index.type().lanes != 1) continue;
        int64_t k = 0;
        Expr along_c = linear_coefficient(x.index, p_.c);
        if (along_c.defined() && is_const_int(simplify(along_c), &k) && k == 1) along = true;
        Expr across_r = linear_coefficient(x.index, across_);
        if (it.kind == RowItem::Reduction && across_r.defined() &&
            is_const_int(simplify(across_r), &k) && k == 1) {
          across = true;
        }
      }
    }
    return across && !along;
  }

  // Per-row scratch beyond this many elements per thread would spill.
  static constexpr int64_t kMaxLocal = 16;

  const Kernel& k_;
  Names& names_;
  std::set<std::string> scalars_;
  std::set<std::string> local_names_;
  std::set<const BufferNode*> locals_;
  std::vector<std::string> kept_;  // nested row loops' variables, outermost first
  std::string across_;             // the innermost row variable
  RowProgram p_;
  std::string* why_ = nullptr;
};

}  // namespace

std::optional<RowProgram> row_program(const Kernel& k, Names& names, std::string* why_not) {
  KILN_INTERNAL_CHECK(why_not, "row_program: no place for the reason");
  why_not->clear();
  if (!k.body.defined()) {
    *why_not = "an empty kernel";
    return std::nullopt;
  }
  return Builder(k, names).build(why_not);
}

}  // namespace kiln::passes::gpu_detail
