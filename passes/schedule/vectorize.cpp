// vectorize: turns a loop of constant extent into vector lanes (see
// schedule.h). Assumes lanes are independent except through scratch allocated
// inside the loop, which is widened to one slot per lane. Guarantees: no lane
// reads or writes memory its scalar iteration would not (guards become
// predicates on every load and store under them).
#include <set>

#include "ir/loop/simplify.h"
#include "ir/loop/visitor.h"
#include "kiln/error.h"
#include "passes/schedule/schedule.h"
#include "passes/schedule/schedule_internal.h"

namespace kiln::passes {

using namespace kiln::loop;  // NOLINT

namespace {

class Vectorizer : public IRMutator {
 public:
  Vectorizer(std::string var, Expr ramp, int lanes)
      : var_(std::move(var)), ramp_(std::move(ramp)), lanes_(lanes) {}

  using IRMutator::mutate;

 protected:
  using IRMutator::visit;

  bool vec(const Expr& e) const { return e.type().lanes > 1; }
  Expr widen(const Expr& e) const { return vec(e) ? e : Broadcast::make(e, lanes_); }
  [[noreturn]] void fail(const std::string& what) const {
    KILN_USER_ERROR("vectorize: loop '" << var_ << "': " << what);
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
    if (vec(a) || vec(b)) return combine(op->op, a, b);
    return a.same_as(op->a) && b.same_as(op->b) ? self : Binary::make(op->op, a, b);
  }
  Expr visit(const Compare* op, const Expr& self) override {
    Expr a = mutate(op->a), b = mutate(op->b);
    if (vec(a) || vec(b)) return Compare::make(op->op, widen(a), widen(b));
    return a.same_as(op->a) && b.same_as(op->b) ? self : Compare::make(op->op, a, b);
  }
  Expr visit(const Select* op, const Expr& self) override {
    Expr c = mutate(op->cond), t = mutate(op->true_value), f = mutate(op->false_value);
    if (vec(c) || vec(t) || vec(f)) return Select::make(widen(c), widen(t), widen(f));
    return Select::make(c, t, f);
  }
  Expr visit(const Cast* op, const Expr& self) override {
    Expr v = mutate(op->value);
    if (v.same_as(op->value)) return self;
    return Cast::make(op->type.with_lanes(v.type().lanes), v);
  }
  Expr visit(const Not* op, const Expr& self) override {
    Expr a = mutate(op->a);
    return a.same_as(op->a) ? self : Not::make(a);
  }
  Expr visit(const Call* op, const Expr& self) override {
    std::vector<Expr> args;
    bool any = false;
    for (const Expr& a : op->args) {
      args.push_back(mutate(a));
      any = any || vec(args.back());
    }
    if (!any) return Call::make(op->type, op->name, args);
    return Call::make(op->type.with_lanes(lanes_), op->name, args);
  }
  Expr visit(const Ramp*, const Expr&) override { fail("already holds vector lanes"); }
  Expr visit(const Broadcast*, const Expr&) override { fail("already holds vector lanes"); }
  Expr visit(const Let* op, const Expr& self) override {
    Expr value = mutate(op->value);
    const std::string& name = op->var.as<Var>()->name;
    if (!vec(value)) {
      Expr body = mutate(op->body);
      return Let::make(op->var, value, body);
    }
    vector_vars_.insert(name);
    Expr body = mutate(op->body);
    vector_vars_.erase(name);
    return Let::make(Var::make(value.type(), name), value, body);
  }
  Expr visit(const Load* op, const Expr& self) override {
    Expr index = mutate(op->index);
    if (widened_.count(op->buf.get())) {
      if (vec(index)) fail("scratch " + op->buf->name + " is indexed by the lanes");
      return Load::make(op->buf, Ramp::make(index * make_int(lanes_), make_int(1), lanes_));
    }
    if (!vec(index) && !predicate_.defined()) {
      return index.same_as(op->index) ? self : Load::make(op->buf, index);
    }
    return Load::make(op->buf, widen(index), predicate_);
  }

  Stmt visit(const Store* op, const Stmt& self) override {
    Expr index = mutate(op->index), value = mutate(op->value);
    if (widened_.count(op->buf.get())) {
      if (vec(index)) fail("scratch " + op->buf->name + " is indexed by the lanes");
      return Store::make(op->buf, Ramp::make(index * make_int(lanes_), make_int(1), lanes_),
                         widen(value), predicate_);
    }
    if (!vec(index)) {
      if (vec(value)) {
        fail("a value that differs by lane is stored to one location of " + op->buf->name);
      }
      if (!predicate_.defined()) return Store::make(op->buf, index, value);
    }
    return Store::make(op->buf, widen(index), widen(value), predicate_);
  }
  Stmt visit(const IfThenElse* op, const Stmt& self) override {
    Expr cond = mutate(op->cond);
    if (!vec(cond)) {
      Stmt t = mutate(op->then_case);
      Stmt e = op->else_case.defined() ? mutate(op->else_case) : Stmt();
      return IfThenElse::make(cond, t, e);
    }
    Expr saved = predicate_;
    predicate_ = saved.defined() ? (saved && cond) : cond;
    Stmt t = mutate(op->then_case);
    Stmt e;
    if (op->else_case.defined()) {
      predicate_ = saved.defined() ? (saved && !cond) : !cond;
      e = mutate(op->else_case);
    }
    predicate_ = saved;
    return Block::make({t, e});
  }
  Stmt visit(const For* op, const Stmt& self) override {
    Expr lo = mutate(op->min), extent = mutate(op->extent);
    if (vec(lo) || vec(extent))
      fail("the bounds of inner loop " + to_string(op->var) + " use the lanes");
    return For::make(op->var, lo, extent, op->for_kind, mutate(op->body));
  }
  Stmt visit(const LetStmt* op, const Stmt& self) override {
    Expr value = mutate(op->value);
    const std::string& name = op->var.as<Var>()->name;
    if (!vec(value)) return LetStmt::make(op->var, value, mutate(op->body));
    vector_vars_.insert(name);
    Stmt body = mutate(op->body);
    vector_vars_.erase(name);
    return LetStmt::make(Var::make(value.type(), name), value, body);
  }
  Stmt visit(const Allocate* op, const Stmt& self) override {
    widened_.insert(op->buf.get());
    Stmt body = mutate(op->body);
    widened_.erase(op->buf.get());
    return Allocate::make(op->buf, simplify(op->size * make_int(lanes_)), op->scope, body);
  }
  Stmt visit(const ExternCall*, const Stmt&) override { fail("holds an extern call"); }

 private:
  std::string var_;
  Expr ramp_;
  int lanes_;
  Expr predicate_;
  std::set<std::string> vector_vars_;
  std::set<const BufferNode*> widened_;
};

}  // namespace

Stmt vectorize(const Stmt& s, const std::string& loop_var) {
  Stmt out = schedule_detail::rewrite_loop(s, loop_var, "vectorize", [&](const For* f) -> Stmt {
    int64_t lanes = 0;
    KILN_USER_CHECK(is_const_int(f->extent, &lanes) && lanes >= 1 && lanes <= 64,
                    "vectorize: loop '" << loop_var << "' needs a constant extent in [1, 64], got "
                                        << to_string(f->extent));
    if (lanes == 1) return substitute(f->body, loop_var, f->min);
    Vectorizer v(loop_var, Ramp::make(f->min, make_int(1), int(lanes)), int(lanes));
    return v.mutate(f->body);
  });
  return simplify(out);
}

}  // namespace kiln::passes
