// vectorize: turns a loop of constant extent into vector lanes (see
// schedule.h). Assumes lanes are independent except through scratch allocated
// inside the loop, which is widened to one slot per lane. Guarantees: no lane
// reads or writes memory its scalar iteration would not (guards become
// predicates on every load and store under them). Where the lanes cannot be
// formed, the rewriter records the first reason and stops building, and
// why_not_vectorize reports that reason (see schedule_internal.h).
#include <set>

#include "ir/loop/simplify.h"
#include "ir/loop/visitor.h"
#include "kiln/error.h"
#include "passes/schedule/schedule.h"
#include "passes/schedule/schedule_internal.h"
#include "runtime/fault_injection.h"

namespace kiln::passes {

using namespace kiln::loop;  // NOLINT

namespace {

bool reads_memory(const Expr& e) {
  struct Finder : IRVisitor {
    using IRVisitor::visit_node;
    bool found = false;
    void visit_node(const Load*) override { found = true; }
  } f;
  f.visit(e);
  return f.found;
}

// Once fail() has recorded a reason, mutate() returns its input and every
// visit returns `self` as soon as its children are mutated, before building
// anything: a node made of half-widened children would not validate.
class Vectorizer : public IRMutator {
 public:
  Vectorizer(std::string var, Expr ramp, int lanes)
      : var_(std::move(var)), ramp_(std::move(ramp)), lanes_(lanes) {}

  // The first reason the lanes cannot be formed; empty while they can.
  const std::string& why_not() const { return why_not_; }

  Expr mutate(const Expr& e) override { return failed() ? e : IRMutator::mutate(e); }
  Stmt mutate(const Stmt& s) override { return failed() ? s : IRMutator::mutate(s); }

 protected:
  using IRMutator::visit;

  bool vec(const Expr& e) const { return e.type().lanes > 1; }
  Expr widen(const Expr& e) const { return vec(e) ? e : Broadcast::make(e, lanes_); }
  bool failed() const { return !why_not_.empty(); }
  void fail(const std::string& what) {
    if (!failed()) why_not_ = "vectorize: loop '" + var_ + "': " + what;
  }

  Expr visit(const Var* op, const Expr& self) override {
    if (op->name == var_) return ramp_;
    if (vector_vars_.count(op->name)) return Var::make(op->type.with_lanes(lanes_), op->name);
    return self;
  }
  // Index arithmetic on lanes stays a Ramp where it can, so the backend sees
  // dense accesses: x8(a) + ramp(b, s) = ramp(a + b, s), ramp(b, s) * x8(c) =
  // ramp(b * c, s * c).
  Expr combine(BinOp op, const Expr& a, const Expr& b) const {
    if (is_floating(a.type().dtype)) return Binary::make(op, widen(a), widen(b));
    const Ramp* ra = a.as<Ramp>();
    const Ramp* rb = b.as<Ramp>();
    auto scalar = [](const Expr& e) -> Expr {
      if (e.type().lanes == 1) return e;
      if (const Broadcast* bc = e.as<Broadcast>()) return bc->value;
      return Expr();
    };
    Expr sa = scalar(a), sb = scalar(b);
    if (op == BinOp::Add || op == BinOp::Sub) {
      if (ra && rb) {
        return Ramp::make(simplify(Binary::make(op, ra->base, rb->base)),
                          simplify(Binary::make(op, ra->stride, rb->stride)), lanes_);
      }
      if (ra && sb.defined())
        return Ramp::make(simplify(Binary::make(op, ra->base, sb)), ra->stride, lanes_);
      if (op == BinOp::Add && rb && sa.defined()) {
        return Ramp::make(simplify(sa + rb->base), rb->stride, lanes_);
      }
    }
    if (op == BinOp::Mul) {
      if (ra && sb.defined())
        return Ramp::make(simplify(ra->base * sb), simplify(ra->stride * sb), lanes_);
      if (rb && sa.defined())
        return Ramp::make(simplify(sa * rb->base), simplify(sa * rb->stride), lanes_);
    }
    return Binary::make(op, widen(a), widen(b));
  }

  Expr visit(const Binary* op, const Expr& self) override {
    Expr a = mutate(op->a), b = mutate(op->b);
    if (failed()) return self;
    if (vec(a) || vec(b)) return combine(op->op, a, b);
    return a.same_as(op->a) && b.same_as(op->b) ? self : Binary::make(op->op, a, b);
  }
  Expr visit(const Compare* op, const Expr& self) override {
    Expr a = mutate(op->a), b = mutate(op->b);
    if (failed()) return self;
    if (vec(a) || vec(b)) return Compare::make(op->op, widen(a), widen(b));
    return a.same_as(op->a) && b.same_as(op->b) ? self : Compare::make(op->op, a, b);
  }
  Expr visit(const Select* op, const Expr& self) override {
    Expr c = mutate(op->cond), t = mutate(op->true_value), f = mutate(op->false_value);
    if (failed()) return self;
    if (vec(c) || vec(t) || vec(f)) return Select::make(widen(c), widen(t), widen(f));
    return Select::make(c, t, f);
  }
  Expr visit(const Cast* op, const Expr& self) override {
    Expr v = mutate(op->value);
    if (failed() || v.same_as(op->value)) return self;
    return Cast::make(op->type.with_lanes(v.type().lanes), v);
  }
  Expr visit(const Not* op, const Expr& self) override {
    Expr a = mutate(op->a);
    return failed() || a.same_as(op->a) ? self : Not::make(a);
  }
  Expr visit(const Call* op, const Expr& self) override {
    std::vector<Expr> args;
    bool any = false;
    for (const Expr& a : op->args) {
      args.push_back(mutate(a));
      any = any || vec(args.back());
    }
    if (failed()) return self;
    if (!any) return Call::make(op->type, op->name, args);
    return Call::make(op->type.with_lanes(lanes_), op->name, args);
  }
  Expr visit(const Ramp*, const Expr& self) override {
    fail("already holds vector lanes");
    return self;
  }
  Expr visit(const Broadcast*, const Expr& self) override {
    fail("already holds vector lanes");
    return self;
  }
  Expr visit(const Let* op, const Expr& self) override {
    Expr value = mutate(op->value);
    if (failed()) return self;
    const std::string& name = op->var.as<Var>()->name;
    if (!vec(value)) {
      Expr body = mutate(op->body);
      return failed() ? self : Let::make(op->var, value, body);
    }
    vector_vars_.insert(name);
    Expr body = mutate(op->body);
    vector_vars_.erase(name);
    if (failed()) return self;
    return Let::make(Var::make(value.type(), name), value, body);
  }
  // The predicate an access runs under: its own (vectorized) and the guards
  // around it.
  Expr access_predicate(const Expr& own) {
    Expr p = own.defined() ? mutate(own) : Expr();
    if (failed() || !predicate_.defined()) return p;
    return p.defined() ? Binary::make(BinOp::And, widen(p), predicate_) : predicate_;
  }
  Expr visit(const Load* op, const Expr& self) override {
    Expr index = mutate(op->index);
    Expr pred = access_predicate(op->predicate);
    if (failed()) return self;
    if (widened_.count(op->buf.get())) {
      if (vec(index)) {
        fail("scratch " + op->buf->name + " is indexed by the lanes");
        return self;
      }
      return Load::make(op->buf, Ramp::make(index * make_int(lanes_), make_int(1), lanes_));
    }
    if (!vec(index) && !(pred.defined() && vec(pred))) {
      if (index.same_as(op->index) && pred.same_as(op->predicate)) return self;
      return Load::make(op->buf, index, pred);
    }
    return Load::make(op->buf, widen(index), pred.defined() ? widen(pred) : pred);
  }

  Stmt visit(const Store* op, const Stmt& self) override {
    Expr index = mutate(op->index), value = mutate(op->value);
    Expr pred = access_predicate(op->predicate);
    if (failed()) return self;
    if (widened_.count(op->buf.get())) {
      if (vec(index)) {
        fail("scratch " + op->buf->name + " is indexed by the lanes");
        return self;
      }
      return Store::make(op->buf, Ramp::make(index * make_int(lanes_), make_int(1), lanes_),
                         widen(value), pred.defined() ? widen(pred) : pred);
    }
    if (!vec(index)) {
      if (vec(value)) {
        fail("a value that differs by lane is stored to one location of " + op->buf->name);
        return self;
      }
      if (!(pred.defined() && vec(pred))) return Store::make(op->buf, index, value, pred);
    }
    return Store::make(op->buf, widen(index), widen(value), pred.defined() ? widen(pred) : pred);
  }
  Stmt visit(const IfThenElse* op, const Stmt& self) override {
    Expr cond = mutate(op->cond);
    if (failed()) return self;
    if (!vec(cond)) {
      Stmt t = mutate(op->then_case);
      Stmt e = op->else_case.defined() ? mutate(op->else_case) : Stmt();
      return failed() ? self : IfThenElse::make(cond, t, e);
    }
    // The branch's stores may change what the condition reads (an argmax
    // updates the best value it compares with), so one that loads is
    // evaluated once, up front.
    const bool bind = reads_memory(cond);
    Expr c = bind ? Var::make(cond.type(), var_ + "_if" + std::to_string(guards_++)) : cond;
    Expr saved = predicate_;
    predicate_ = saved.defined() ? (saved && c) : c;
    Stmt t = mutate(op->then_case);
    Stmt e;
    if (op->else_case.defined() && !failed()) {
      predicate_ = saved.defined() ? (saved && !c) : !c;
      e = mutate(op->else_case);
    }
    predicate_ = saved;
    if (failed()) return self;
    return bind ? LetStmt::make(c, cond, Block::make({t, e})) : Block::make({t, e});
  }
  Stmt visit(const For* op, const Stmt& self) override {
    Expr lo = mutate(op->min), extent = mutate(op->extent);
    if (failed()) return self;
    if (vec(lo) || vec(extent)) {
      fail("the bounds of inner loop " + to_string(op->var) + " use the lanes");
      return self;
    }
    Stmt body = mutate(op->body);
    return failed() ? self : For::make(op->var, lo, extent, op->for_kind, body);
  }
  Stmt visit(const LetStmt* op, const Stmt& self) override {
    Expr value = mutate(op->value);
    if (failed()) return self;
    const std::string& name = op->var.as<Var>()->name;
    if (!vec(value)) {
      Stmt body = mutate(op->body);
      return failed() ? self : LetStmt::make(op->var, value, body);
    }
    vector_vars_.insert(name);
    Stmt body = mutate(op->body);
    vector_vars_.erase(name);
    if (failed()) return self;
    return LetStmt::make(Var::make(value.type(), name), value, body);
  }
  Stmt visit(const Allocate* op, const Stmt& self) override {
    widened_.insert(op->buf.get());
    Stmt body = mutate(op->body);
    widened_.erase(op->buf.get());
    if (failed()) return self;
    return Allocate::make(op->buf, simplify(op->size * make_int(lanes_)), op->scope, body);
  }
  Stmt visit(const ExternCall*, const Stmt& self) override {
    fail("holds an extern call");
    return self;
  }

 private:
  std::string var_;
  Expr ramp_;
  int lanes_;
  Expr predicate_;
  int guards_ = 0;
  std::set<std::string> vector_vars_;
  std::set<const BufferNode*> widened_;
  std::string why_not_;
};

}  // namespace

namespace schedule_detail {

Stmt vectorize_body(const Stmt& body, const std::string& var, const Expr& min, int lanes,
                    std::string* why_not) {
  // Where a bug in the lane rewriter would throw: a test arms this point to
  // prove such an error is not taken for "does not apply".
  runtime::fault_point("vectorize");
  if (lanes == 1) return substitute(body, var, min);
  Vectorizer v(var, Ramp::make(min, make_int(1), lanes), lanes);
  Stmt out = v.mutate(body);
  if (v.why_not().empty()) return out;
  *why_not = v.why_not();
  return Stmt();
}

}  // namespace schedule_detail

namespace {

Stmt vectorize_loops(const Stmt& s, const std::string& loop_var, std::string* why_not) {
  return schedule_detail::rewrite_loop(
      s, loop_var, "vectorize",
      [&](const For* f, std::string* why) -> Stmt {
        int64_t lanes = 0;
        if (!is_const_int(f->extent, &lanes) || lanes < 1 || lanes > 64) {
          *why = "vectorize: loop '" + loop_var + "' needs a constant extent in [1, 64], got " +
                 to_string(f->extent);
          return Stmt();
        }
        return schedule_detail::vectorize_body(f->body, loop_var, f->min, int(lanes), why);
      },
      why_not, /*all=*/true);
}

}  // namespace

std::optional<std::string> why_not_vectorize(const Stmt& s, const std::string& loop_var) {
  std::string why_not;
  vectorize_loops(s, loop_var, &why_not);
  return schedule_detail::reason(why_not);
}

Stmt vectorize(const Stmt& s, const std::string& loop_var) {
  std::string why_not;
  Stmt out = vectorize_loops(s, loop_var, &why_not);
  KILN_USER_CHECK(why_not.empty(), why_not);
  return simplify(out);
}

}  // namespace kiln::passes
