// default_schedule: the schedule a lowered kernel gets unless a tuned one
// replaces it (schedule.h lists the rules; docs/schedules.md shows the nests).
// A nest a transform does not fit keeps its loops; the result computes the
// same values. Transforms simplify as they go, which folds loops of extent 1
// and drops loops of extent <= 0 (a 1-D nest no longer than the vector width
// is one chunk), so the loop to parallelize is looked up in the transformed
// nest, never assumed.
#include <cctype>
#include <map>
#include <set>

#include "ir/loop/simplify.h"
#include "ir/loop/visitor.h"
#include "kiln/error.h"
#include "passes/schedule/schedule.h"
#include "passes/schedule/schedule_internal.h"

namespace kiln::passes {

using namespace kiln::loop;  // NOLINT
using schedule_detail::linear_coefficient;
using schedule_detail::uses_var;

namespace {

using BufSet = std::set<const BufferNode*>;

const std::string& name_of(const For* f) {
  return f->var.as<Var>()->name;
}

// The loop variables of a perfect nest starting at `s`, outermost first.
std::vector<std::string> nest_vars(const Stmt& s) {
  std::vector<std::string> vars;
  for (const For* f = s.as<For>(); f; f = f->body.as<For>()) vars.push_back(name_of(f));
  return vars;
}

// The loop over variable `name` in `s`, or nullptr.
const For* find_loop(const Stmt& s, const std::string& name) {
  struct Finder : IRVisitor {
    using IRVisitor::visit_node;
    const std::string& name;
    const For* found = nullptr;
    explicit Finder(const std::string& n) : name(n) {}
    void visit_node(const For* op) override {
      if (name_of(op) == name) found = op;
      if (!found) IRVisitor::visit_node(op);
    }
  } finder(name);
  finder.visit(s);
  return finder.found;
}

}  // namespace

namespace schedule_detail {

std::vector<const For*> child_loops(const Stmt& s) {
  struct Collector : IRVisitor {
    using IRVisitor::visit_node;
    std::vector<const For*> loops;
    void visit_node(const For* op) override { loops.push_back(op); }
  } c;
  c.visit(s);
  return c.loops;
}

}  // namespace schedule_detail

namespace {

using schedule_detail::child_loops;

// Buffers allocated inside `s`: scratch, not memory the kernel streams over.
BufSet scratch_of(const Stmt& s) {
  struct Collector : IRVisitor {
    using IRVisitor::visit_node;
    BufSet bufs;
    void visit_node(const Allocate* op) override {
      bufs.insert(op->buf.get());
      IRVisitor::visit_node(op);
    }
  } c;
  c.visit(s);
  return c.bufs;
}

// How the accesses of `s` to non-scratch memory move with `var`.
struct Access {
  bool contiguous = true;    // every one moves by 0 or 1 element per iteration
  bool moves = false;        // at least one moves by 1
  bool accumulates = false;  // a scratch store at an index `var` does not change
  bool calls = false;        // an intrinsic call (exp, log, ...)
};

Access access_of(const Stmt& s, const std::string& var, const BufSet& scratch) {
  struct Walker : IRVisitor {
    using IRVisitor::visit_node;
    const std::string& var;
    const BufSet& scratch;
    Access a;
    Walker(const std::string& v, const BufSet& sc) : var(v), scratch(sc) {}
    void access(const Buf& b, const Expr& index) {
      if (scratch.count(b.get())) return;
      Expr c = linear_coefficient(index, var);
      int64_t k = -1;
      if (!c.defined() || !is_const_int(c, &k) || (k != 0 && k != 1)) a.contiguous = false;
      if (k == 1) a.moves = true;
    }
    void visit_node(const Load* op) override {
      access(op->buf, op->index);
      IRVisitor::visit_node(op);
    }
    void visit_node(const Call* op) override {
      a.calls = true;
      IRVisitor::visit_node(op);
    }
    void visit_node(const Store* op) override {
      if (scratch.count(op->buf.get()) && !uses_var(op->index, var)) a.accumulates = true;
      access(op->buf, op->index);
      IRVisitor::visit_node(op);
    }
  } w(var, scratch);
  w.visit(s);
  return w.a;
}

// The outermost loop of `s`, or nullptr. Only in a pointwise nest (every loop
// writes disjoint elements per iteration) may it be the first of a sequence;
// elsewhere a loop after an accumulator's initialization is a reduction loop.
const For* first_loop(const Stmt& s, bool pointwise) {
  if (const For* f = s.as<For>()) return f;
  if (const LetStmt* l = s.as<LetStmt>()) return first_loop(l->body, pointwise);
  if (const Block* b = s.as<Block>(); b && pointwise) {
    for (const Stmt& c : b->stmts) {
      if (const For* f = first_loop(c, pointwise)) return f;
    }
  }
  return nullptr;
}

// Elements stored by one run of `s` (loop extents times stores): the work a
// parallel task gets per iteration of the loop around `s`. An inner extent
// that depends on an outer loop (a blocked sum's last, shorter block) is
// taken at that loop's first iteration, so the estimate uses no loop
// variable.
Expr work_of(const Stmt& s) {
  if (!s.defined()) return make_int(0);
  if (const For* f = s.as<For>()) {
    return f->extent * substitute(work_of(f->body), name_of(f), f->min);
  }
  if (const Block* b = s.as<Block>()) {
    Expr sum = make_int(0);
    for (const Stmt& c : b->stmts) sum = sum + work_of(c);
    return sum;
  }
  if (const LetStmt* l = s.as<LetStmt>()) return work_of(l->body);
  if (const Allocate* a = s.as<Allocate>()) return work_of(a->body);
  if (const IfThenElse* i = s.as<IfThenElse>())
    return work_of(i->then_case) + work_of(i->else_case);
  if (const Store* st = s.as<Store>()) return make_int(st->value.type().lanes);
  return make_int(0);
}

bool small_extent(const For* f, int width) {
  int64_t e = 0;
  return is_const_int(f->extent, &e) && e < width;
}

// Splits loop `var` by the vector width into an unmasked main loop and one
// masked tail, and vectorizes both; an undefined Stmt when split or vectorize
// does not apply.
Stmt vectorize_pointwise(const Stmt& s, const std::string& var, int width) {
  const std::string lanes = var + "_v";
  if (why_not_split(s, var, width, TailStrategy::PredicatedTail)) return Stmt();
  Stmt nest = split(s, var, width, var + "_o", lanes, TailStrategy::PredicatedTail);
  if (why_not_vectorize(nest, lanes)) return Stmt();
  return vectorize(nest, lanes);
}

// Vectorizes the loops of a reduction / normalization nest (see schedule.h).
class ReductionVectorizer : public IRMutator {
 public:
  ReductionVectorizer(const ScheduleTarget& t, BufSet scratch)
      : t_(t), scratch_(std::move(scratch)) {}
  std::set<std::string> split_loops;  // loops split by the vector width (now <name>_o)
  using IRMutator::mutate;

 protected:
  using IRMutator::visit;
  Stmt visit(const For* op, const Stmt& self) override {
    const std::string& var = name_of(op);
    std::vector<const For*> inner = child_loops(op->body);
    if (inner.empty()) return innermost(op, self);
    // A reduction over an outer dim: the inner loops stride through memory,
    // the kept loop around them walks it contiguously.
    // Blocked sums (cascade_sum.h) nest the strided loop in block loops, so
    // any innermost loop that strides counts.
    const bool inner_strided = innermost_strides(op->body);
    Access a = access_of(op->body, var, scratch_);
    if (inner_strided && a.contiguous && a.moves && !small_extent(op, t_.vector_width)) {
      // Not vectorizable across lanes (e.g. an extern call): try the loops inside.
      if (Stmt v = vectorize_pointwise(self, var, t_.vector_width); v.defined()) {
        split_loops.insert(var);
        return v;
      }
    }
    return IRMutator::visit(op, self);
  }

  // Whether an innermost loop in `s` reads or writes memory non-contiguously.
  bool innermost_strides(const Stmt& s) const {
    for (const For* f : child_loops(s)) {
      if (child_loops(f->body).empty() ? !access_of(f->body, name_of(f), scratch_).contiguous
                                       : innermost_strides(f->body)) {
        return true;
      }
    }
    return false;
  }

  Stmt innermost(const For* op, const Stmt& self) {
    const std::string& var = name_of(op);
    Access a = access_of(op->body, var, scratch_);
    if (!a.contiguous || small_extent(op, t_.vector_width) || t_.vector_width <= 1) return self;
    // A loop the transform does not apply to (e.g. an argmax's branch) stays scalar.
    if (a.accumulates) {
      // A body with a transcendental call is long enough to hide the add's
      // latency with two accumulators; more only spill its constants.
      int k = std::max(1, a.calls ? std::min(2, t_.accumulators) : t_.accumulators);
      if (why_not_vectorize_reduction(self, var, t_.vector_width, k)) return self;
      return vectorize_reduction(self, var, t_.vector_width, k);
    }
    if (!a.moves) return self;
    Stmt v = vectorize_pointwise(self, var, t_.vector_width);
    if (!v.defined()) return self;
    split_loops.insert(var);
    return v;
  }

 private:
  const ScheduleTarget& t_;
  BufSet scratch_;
};

// Marks `outer` parallel, first blocking it so one task gets at least
// target.parallel_grain elements when one iteration does `work`.
Stmt parallelize_blocked(const Stmt& s, const std::string& outer, const Expr& work,
                         const ScheduleTarget& t) {
  int64_t w = 0;
  if (!work.defined() || (is_const_int(work, &w) && w >= t.parallel_grain)) {
    return parallelize(s, outer);
  }
  Expr rows = simplify(max(make_int(t.parallel_grain) / max(work, make_int(1)), make_int(1)));
  int64_t r = 0;
  if (is_const_int(rows, &r) && r == 1) return parallelize(s, outer);
  // A run-time block size is computed once, before the loop.
  Expr size = is_const(rows) ? rows : Var::make(i64_t(), outer + "_block");
  Stmt blocked = split(s, outer, size, outer + "_b", outer + "_i", TailStrategy::ShortenLast);
  // One block in all (a static extent within the grain): nothing to share out.
  if (find_loop(blocked, outer + "_b")) blocked = parallelize(blocked, outer + "_b");
  return is_const(rows) ? blocked : LetStmt::make(size, rows, blocked);
}

// Whether `s` holds a loop that is not serial: its lowering scheduled it.
bool has_scheduled_loop(const Stmt& s) {
  struct Finder : IRVisitor {
    using IRVisitor::visit_node;
    bool found = false;
    void visit_node(const For* op) override {
      if (op->for_kind != ForKind::Serial) found = true;
      if (!found) IRVisitor::visit_node(op);
    }
  } f;
  f.visit(s);
  return f.found;
}

Stmt schedule_nest(const Stmt& nest, ir::OpCategory category, const ScheduleTarget& t) {
  if (has_scheduled_loop(nest)) return nest;
  std::vector<std::string> vars = nest_vars(nest);
  Stmt s = nest;
  const bool pointwise =
      category == ir::OpCategory::Elementwise || category == ir::OpCategory::Layout;
  const bool reduction = category == ir::OpCategory::Reduction;
  if (vars.empty()) {
    // No loop around the whole nest (e.g. a full reduction): vectorize what is inside.
    if (!reduction) return nest;
    ReductionVectorizer rv(t, scratch_of(nest));
    return simplify(rv.mutate(s));
  }
  std::string outer = vars.front();
  Expr work;  // per iteration of `outer`; undefined: unknown, no blocking
  if (pointwise || reduction) work = simplify(work_of(find_loop(nest, outer)->body));
  if (pointwise && t.vector_width > 1) {
    const std::string& inner = vars.back();
    // Not vectorizable (e.g. a scalar store of lane values): keep the scalar nest.
    if (Stmt v = vectorize_pointwise(s, inner, t.vector_width); v.defined()) {
      s = v;
      if (vars.size() == 1) {
        outer = inner + "_o";
        work = make_int(t.vector_width);
      }
    }
  } else if (reduction) {
    ReductionVectorizer rv(t, scratch_of(nest));
    s = simplify(rv.mutate(s));
    if (rv.split_loops.count(outer)) {
      outer += "_o";
      work = simplify(work * make_int(t.vector_width));
    }
  }
  if (t.parallel) {
    // The intended loop may have been folded away by the split (one chunk) or
    // by an extent-1 outer dim: then the outermost loop left runs parallel (any
    // loop of a pointwise nest writes disjoint elements per iteration), and a
    // nest with no loop left runs serially.
    if (!find_loop(s, outer)) {
      const For* left = first_loop(s, pointwise);
      outer = left ? name_of(left) : std::string();
      work = left && (pointwise || reduction) ? simplify(work_of(left->body)) : Expr();
    }
    if (!outer.empty()) s = parallelize_blocked(s, outer, work, t);
  }
  return s;
}

}  // namespace

namespace schedule_detail {

// The stride parameters worth specializing to 1: for each buffer with stride
// parameters named `<buffer>_s<dim>` (lower_graph's names), the one of its
// last dim. A name that merely looks like one costs a second version, never a
// wrong result: the general version runs whenever the guess does not hold.
std::vector<std::pair<std::string, int64_t>> unit_stride_guesses(const Kernel& k) {
  std::map<std::string, std::pair<int, std::string>> last;  // buffer -> (dim, param)
  std::set<std::string> buffers;
  for (const Buf& b : k.buffers) buffers.insert(b->name);
  for (const Expr& e : k.scalars) {
    const Var* v = e.as<Var>();
    if (!v || v->type != i64_t()) continue;
    size_t at = v->name.rfind("_s");
    if (at == std::string::npos || at + 2 >= v->name.size()) continue;
    std::string digits = v->name.substr(at + 2);
    bool numeric = digits.size() < 4;
    for (char c : digits) numeric = numeric && std::isdigit(static_cast<unsigned char>(c));
    std::string buf = v->name.substr(0, at);
    if (!numeric || !buffers.count(buf)) continue;
    int dim = std::stoi(digits);
    auto it = last.find(buf);
    if (it == last.end() || it->second.first < dim) last[buf] = {dim, v->name};
  }
  std::vector<std::pair<std::string, int64_t>> out;
  for (const auto& [buf, p] : last) out.push_back({p.second, 1});
  return out;
}

}  // namespace schedule_detail

Kernel default_schedule(const Kernel& k, ir::OpCategory category, const ScheduleTarget& target) {
  Kernel out = k;
  if (!k.body.defined()) return out;
  std::vector<Stmt> parts;
  if (const Block* b = k.body.as<Block>()) {
    parts = b->stmts;
  } else {
    parts = {k.body};
  }
  std::vector<std::pair<std::string, int64_t>> guesses;
  if (target.vector_width > 1 && target.version_unit_strides) {
    guesses = schedule_detail::unit_stride_guesses(k);
  }
  for (size_t i = 0; i < parts.size(); ++i) {
    Stmt& p = parts[i];
    std::vector<Stmt> later(parts.begin() + long(i) + 1, parts.end());
    p = mark_stream_stores(p, k.buffers, later, target.stream_store_bytes);
    std::vector<std::pair<std::string, int64_t>> used;
    for (const auto& g : guesses) {
      if (uses_var(p, g.first)) used.push_back(g);
    }
    // A nest its lowering scheduled versions its own operand reads (a packed
    // GEMM versions only its packing, not the micro-kernel).
    if (has_scheduled_loop(p)) continue;
    auto nest = [&](const Stmt& n) {
      return prefetch_next_rows(schedule_nest(n, category, target), k.buffers,
                                target.prefetch_rows_level);
    };
    if (used.empty() || child_loops(p).empty()) {
      p = nest(p);
      continue;
    }
    Stmt versions = specialize(p, used);
    const IfThenElse* v = versions.as<IfThenElse>();
    p = IfThenElse::make(v->cond, nest(v->then_case), nest(v->else_case));
  }
  out.body = simplify(Block::make(parts));
  return out;
}

}  // namespace kiln::passes
