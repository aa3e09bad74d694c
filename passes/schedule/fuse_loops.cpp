// Loop fusion and storage folding (see schedule.h for before/after forms).
//
// Both rest on one test: an access to a buffer is row-local in loop `r` when
// its index is r * S + base + h, where S and base do not change inside the
// loop and 0 <= h < S for every value of the loops nested in it; iteration r
// then touches only elements [base + r * S, base + (r + 1) * S). Two adjacent
// loops over the same range may run as one when every buffer one of them
// writes and the other touches is accessed row-locally, with the same S and
// base, by both: iteration r of the second then reads only what iteration r
// of the first wrote. A buffer accessed row-locally with base 0 and only
// inside one loop needs just one row at a time: S elements of scratch
// allocated inside the loop.
//
// Assumes: loops start at 0 or at a constant, index arithmetic is affine in
// loop variables wherever it matters (otherwise the test fails and nothing
// changes). Guarantees: the result computes the same values.
#include <map>
#include <optional>

#include "ir/loop/simplify.h"
#include "ir/loop/visitor.h"
#include "passes/schedule/schedule.h"
#include "passes/schedule/schedule_internal.h"

namespace kiln::passes {

using namespace kiln::loop;  // NOLINT
using schedule_detail::linear_coefficient;
using schedule_detail::uses_var;

namespace {

const std::string& name_of(const For* f) {
  return f->var.as<Var>()->name;
}

struct Access {
  const BufferNode* buf;
  Expr index;
  bool write;
};

struct LoopInfo {
  Expr min, extent;
};

// Every load and store of `s`, and the loops inside it.
struct Collector : IRVisitor {
  using IRVisitor::visit_node;
  std::vector<Access> accesses;
  std::map<std::string, LoopInfo> loops;
  std::vector<std::string> lets;  // variables bound inside (their values may vary)
  void visit_node(const LetStmt* op) override {
    lets.push_back(op->var.as<Var>()->name);
    IRVisitor::visit_node(op);
  }
  void visit_node(const Let* op) override {
    lets.push_back(op->var.as<Var>()->name);
    IRVisitor::visit_node(op);
  }
  void visit_node(const Load* op) override {
    accesses.push_back({op->buf.get(), op->index, false});
    IRVisitor::visit_node(op);
  }
  void visit_node(const Store* op) override {
    accesses.push_back({op->buf.get(), op->index, true});
    IRVisitor::visit_node(op);
  }
  void visit_node(const For* op) override {
    loops[name_of(op)] = {op->min, op->extent};
    IRVisitor::visit_node(op);
  }
};

// The additive terms of e (a + b + c -> {a, b, c}).
void terms_of(const Expr& e, std::vector<Expr>* out) {
  if (const Binary* b = e.as<Binary>(); b && b->op == BinOp::Add) {
    terms_of(b->a, out);
    terms_of(b->b, out);
    return;
  }
  out->push_back(e);
}

// A non-negative upper bound of h over `loops` (each var in [min, min + extent)),
// when h is a sum of non-negative multiples of loop vars plus a non-negative
// constant; undefined otherwise.
Expr max_of(const Expr& h, const std::map<std::string, LoopInfo>& loops) {
  std::vector<Expr> terms;
  terms_of(h, &terms);
  Expr sum = make_int(0);
  for (const Expr& t : terms) {
    int64_t c = 0;
    if (is_const_int(t, &c)) {
      if (c < 0) return Expr();
      sum = sum + t;
      continue;
    }
    bool found = false;
    for (const auto& [var, info] : loops) {
      if (!uses_var(t, var)) continue;
      if (found) return Expr();  // a product of two loop vars
      Expr coef = linear_coefficient(t, var);
      int64_t k = 0, lo = 0, rem = -1;
      if (!coef.defined() || !is_const_int(info.min, &lo) || lo < 0) return Expr();
      // t is exactly coef * var, with coef free of loop vars and not negative;
      // coefficients that are not constants are products of sizes (>= 0).
      if (!is_const_int(simplify(t - Var::make(i64_t(), var) * coef), &rem) || rem != 0) {
        return Expr();
      }
      if (is_const_int(coef, &k) && k < 0) return Expr();
      for (const auto& [u, other] : loops) {
        if (uses_var(coef, u)) return Expr();
      }
      sum = sum + coef * (info.min + info.extent - make_int(1));
      found = true;
    }
    if (!found) return Expr();
  }
  return simplify(sum);
}

// Where in loop `var` an access falls: index = var * stride + base + local.
struct RowAccess {
  Expr stride, base, local;
};

std::optional<RowAccess> row_access(const Expr& index, const std::string& var,
                                    const Collector& body) {
  const std::map<std::string, LoopInfo>& inner = body.loops;
  for (const std::string& l : body.lets) {
    if (uses_var(index, l)) return std::nullopt;
  }
  Expr stride = linear_coefficient(index, var);
  if (!stride.defined()) return std::nullopt;
  for (const auto& [v, info] : inner) {
    if (uses_var(stride, v)) return std::nullopt;
  }
  Expr rest = simplify(index - Var::make(i64_t(), var) * stride);
  std::vector<Expr> terms;
  terms_of(rest, &terms);
  Expr base = make_int(0), local = make_int(0);
  for (const Expr& t : terms) {
    bool is_local = false;
    for (const auto& [v, info] : inner) is_local = is_local || uses_var(t, v);
    if (is_local) {
      local = local + t;
    } else {
      base = base + t;
    }
  }
  RowAccess r{simplify(stride), simplify(base), simplify(local)};
  // 0 <= local < stride.
  BoundsMap bounds;
  bool constant = true;
  for (const auto& [v, info] : inner) {
    int64_t lo = 0, n = 0;
    if (is_const_int(info.min, &lo) && is_const_int(info.extent, &n) && n > 0) {
      bounds[v] = {lo, lo + n - 1};
    } else {
      constant = false;
    }
  }
  int64_t s = 0;
  if (constant && is_const_int(r.stride, &s)) {
    Interval b = bounds_of(r.local, bounds);
    if (b.lo && b.hi && *b.lo >= 0 && *b.hi < s) return r;
    return std::nullopt;
  }
  Expr hi = max_of(r.local, inner);
  if (!hi.defined()) return std::nullopt;
  int64_t slack = -1;
  if (is_const_int(simplify(r.stride - hi - make_int(1)), &slack) && slack >= 0) return r;
  return std::nullopt;
}

// Whether loops a and b (b's variable already renamed to a's) may run as one.
bool fusable(const For* a, const Stmt& b_body) {
  const std::string& var = name_of(a);
  Collector ca, cb;
  ca.visit(a->body);
  cb.visit(b_body);
  std::map<const BufferNode*, bool> written_a, written_b;
  for (const Access& x : ca.accesses) written_a[x.buf] = written_a[x.buf] || x.write;
  for (const Access& x : cb.accesses) written_b[x.buf] = written_b[x.buf] || x.write;
  std::map<const BufferNode*, RowAccess> seen;
  auto check = [&](const Access& x, const Collector& inner) {
    auto wa = written_a.find(x.buf), wb = written_b.find(x.buf);
    bool both = wa != written_a.end() && wb != written_b.end();
    bool shared_write = both && (wa->second || wb->second);
    if (!shared_write) return true;
    std::optional<RowAccess> r = row_access(x.index, var, inner);
    if (!r) return false;
    auto it = seen.find(x.buf);
    if (it == seen.end()) {
      seen.emplace(x.buf, *r);
      return true;
    }
    return equal(it->second.stride, r->stride) && equal(it->second.base, r->base);
  };
  for (const Access& x : ca.accesses) {
    if (!check(x, ca)) return false;
  }
  for (const Access& x : cb.accesses) {
    if (!check(x, cb)) return false;
  }
  return true;
}

Stmt fuse_block(const std::vector<Stmt>& stmts);

// Fuses loops inside the bodies of `s`'s loops.
class InnerFuser : public IRMutator {
 protected:
  using IRMutator::visit;
  Stmt visit(const Block* op, const Stmt& self) override {
    std::vector<Stmt> stmts;
    for (const Stmt& c : op->stmts) stmts.push_back(mutate(c));
    Stmt out = fuse_block(stmts);
    return out;
  }
};

Stmt fuse_block(const std::vector<Stmt>& stmts) {
  std::vector<Stmt> out;
  for (const Stmt& s : stmts) {
    const For* b = s.as<For>();
    const For* a = out.empty() ? nullptr : out.back().as<For>();
    if (a && b && a->for_kind == ForKind::Serial && b->for_kind == ForKind::Serial &&
        equal(simplify(a->min), simplify(b->min)) &&
        equal(simplify(a->extent), simplify(b->extent))) {
      Stmt b_body = substitute(b->body, name_of(b), a->var);
      if (fusable(a, b_body)) {
        Stmt body = InnerFuser().mutate(Block::make({a->body, b_body}));
        out.back() = For::make(a->var, a->min, a->extent, a->for_kind, body);
        continue;
      }
    }
    out.push_back(s);
  }
  return Block::make(out);
}

// Rewrites the accesses to one buffer into another at index - var * stride.
class Refold : public IRMutator {
 public:
  Refold(const BufferNode* from, Buf to, std::string var, Expr stride)
      : from_(from), to_(std::move(to)), var_(std::move(var)), stride_(std::move(stride)) {}

 protected:
  using IRMutator::visit;
  Expr local(const Expr& index) const {
    return simplify(index - Var::make(i64_t(), var_) * stride_);
  }
  Expr visit(const Load* op, const Expr& self) override {
    Expr e = IRMutator::visit(op, self);
    const Load* l = e.as<Load>();
    if (l->buf.get() != from_) return e;
    return Load::make(to_, local(l->index), l->predicate);
  }
  Stmt visit(const Store* op, const Stmt& self) override {
    Stmt s = IRMutator::visit(op, self);
    const Store* st = s.as<Store>();
    if (st->buf.get() != from_) return s;
    return Store::make(to_, local(st->index), st->value, st->predicate);
  }

 private:
  const BufferNode* from_;
  Buf to_;
  std::string var_;
  Expr stride_;
};

// Whether `s` touches buffer b.
bool touches(const Stmt& s, const BufferNode* b) {
  Collector c;
  c.visit(s);
  for (const Access& x : c.accesses) {
    if (x.buf == b) return true;
  }
  return false;
}

}  // namespace

Stmt fuse_loops(const Stmt& s) {
  if (const Block* b = s.as<Block>()) return simplify(fuse_block(b->stmts));
  return s;
}

Stmt fold_storage(const Stmt& s, const std::vector<Buf>& candidates, std::vector<Buf>* folded) {
  std::vector<Stmt> parts;
  if (const Block* b = s.as<Block>()) {
    parts = b->stmts;
  } else {
    parts = {s};
  }
  for (const Buf& buf : candidates) {
    int holder = -1;
    bool ok = true;
    for (size_t i = 0; i < parts.size() && ok; ++i) {
      if (!touches(parts[i], buf.get())) continue;
      if (holder >= 0) ok = false;
      holder = int(i);
    }
    if (!ok || holder < 0) continue;
    const For* f = parts[size_t(holder)].as<For>();
    if (!f || f->for_kind != ForKind::Serial) continue;
    Collector c;
    c.visit(f->body);
    std::optional<Expr> stride;
    for (const Access& x : c.accesses) {
      if (x.buf != buf.get()) continue;
      std::optional<RowAccess> r = row_access(x.index, name_of(f), c);
      int64_t base = -1;
      if (!r || !is_const_int(r->base, &base) || base != 0 ||
          (stride && !equal(*stride, r->stride))) {
        ok = false;
        break;
      }
      stride = r->stride;
    }
    if (!ok || !stride) continue;
    Buf row = make_buf(buf->name + "_row", buf->dtype);
    Stmt body = Refold(buf.get(), row, name_of(f), *stride).mutate(f->body);
    body = Allocate::make(row, *stride, MemoryScope::Stack, body);
    parts[size_t(holder)] = For::make(f->var, f->min, f->extent, f->for_kind, body);
    if (folded) folded->push_back(buf);
  }
  return simplify(Block::make(parts));
}

}  // namespace kiln::passes
