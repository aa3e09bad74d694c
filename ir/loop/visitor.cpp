// Dispatch of IRVisitor and IRMutator, generated from nodes.def, and the
// default child-walking bodies; plus substitute().
#include "ir/loop/visitor.h"

#include "kiln/error.h"

namespace kiln::loop {

void IRVisitor::visit(const Expr& e) {
  if (!e.defined()) return;
  switch (e->kind) {
#define KILN_EXPR_NODE(Name) \
  case NodeKind::Name: return visit_node(static_cast<const Name*>(e.get()));
#include "ir/loop/nodes.def"
    default: KILN_INTERNAL_CHECK(false, "statement kind in an expression");
  }
}

void IRVisitor::visit(const Stmt& s) {
  if (!s.defined()) return;
  switch (s->kind) {
#define KILN_STMT_NODE(Name) \
  case NodeKind::Name: return visit_node(static_cast<const Name*>(s.get()));
#include "ir/loop/nodes.def"
    default: KILN_INTERNAL_CHECK(false, "expression kind in a statement");
  }
}

void IRVisitor::visit_node(const IntImm*) {}
void IRVisitor::visit_node(const FloatImm*) {}
void IRVisitor::visit_node(const Var*) {}
void IRVisitor::visit_node(const Cast* op) { visit(op->value); }
void IRVisitor::visit_node(const Binary* op) {
  visit(op->a);
  visit(op->b);
}
void IRVisitor::visit_node(const Compare* op) {
  visit(op->a);
  visit(op->b);
}
void IRVisitor::visit_node(const Not* op) { visit(op->a); }
void IRVisitor::visit_node(const Select* op) {
  visit(op->cond);
  visit(op->true_value);
  visit(op->false_value);
}
void IRVisitor::visit_node(const Load* op) {
  visit(op->index);
  visit(op->predicate);
}
void IRVisitor::visit_node(const Ramp* op) {
  visit(op->base);
  visit(op->stride);
}
void IRVisitor::visit_node(const Broadcast* op) { visit(op->value); }
void IRVisitor::visit_node(const Call* op) {
  for (const Expr& a : op->args) visit(a);
}
void IRVisitor::visit_node(const Let* op) {
  visit(op->value);
  visit(op->body);
}
void IRVisitor::visit_node(const For* op) {
  visit(op->min);
  visit(op->extent);
  visit(op->body);
}
void IRVisitor::visit_node(const Store* op) {
  visit(op->index);
  visit(op->value);
  visit(op->predicate);
}
void IRVisitor::visit_node(const Block* op) {
  for (const Stmt& s : op->stmts) visit(s);
}
void IRVisitor::visit_node(const Allocate* op) {
  visit(op->size);
  visit(op->body);
}
void IRVisitor::visit_node(const IfThenElse* op) {
  visit(op->cond);
  visit(op->then_case);
  visit(op->else_case);
}
void IRVisitor::visit_node(const LetStmt* op) {
  visit(op->value);
  visit(op->body);
}
void IRVisitor::visit_node(const Barrier*) {}
void IRVisitor::visit_node(const ExternCall* op) {
  for (const Expr& a : op->args) visit(a);
}

Expr IRMutator::mutate(const Expr& e) {
  if (!e.defined()) return e;
  switch (e->kind) {
#define KILN_EXPR_NODE(Name) \
  case NodeKind::Name: return visit(static_cast<const Name*>(e.get()), e);
#include "ir/loop/nodes.def"
    default: KILN_INTERNAL_CHECK(false, "statement kind in an expression");
  }
}

Stmt IRMutator::mutate(const Stmt& s) {
  if (!s.defined()) return s;
  switch (s->kind) {
#define KILN_STMT_NODE(Name) \
  case NodeKind::Name: return visit(static_cast<const Name*>(s.get()), s);
#include "ir/loop/nodes.def"
    default: KILN_INTERNAL_CHECK(false, "expression kind in a statement");
  }
}

Expr IRMutator::visit(const IntImm*, const Expr& self) { return self; }
Expr IRMutator::visit(const FloatImm*, const Expr& self) { return self; }
Expr IRMutator::visit(const Var*, const Expr& self) { return self; }

Expr IRMutator::visit(const Cast* op, const Expr& self) {
  Expr v = mutate(op->value);
  return v.same_as(op->value) ? self : Cast::make(op->type.with_lanes(v.type().lanes), v);
}
Expr IRMutator::visit(const Binary* op, const Expr& self) {
  Expr a = mutate(op->a), b = mutate(op->b);
  return a.same_as(op->a) && b.same_as(op->b) ? self : Binary::make(op->op, a, b);
}
Expr IRMutator::visit(const Compare* op, const Expr& self) {
  Expr a = mutate(op->a), b = mutate(op->b);
  return a.same_as(op->a) && b.same_as(op->b) ? self : Compare::make(op->op, a, b);
}
Expr IRMutator::visit(const Not* op, const Expr& self) {
  Expr a = mutate(op->a);
  return a.same_as(op->a) ? self : Not::make(a);
}
Expr IRMutator::visit(const Select* op, const Expr& self) {
  Expr c = mutate(op->cond), t = mutate(op->true_value), f = mutate(op->false_value);
  if (c.same_as(op->cond) && t.same_as(op->true_value) && f.same_as(op->false_value)) return self;
  return Select::make(c, t, f);
}
Expr IRMutator::visit(const Load* op, const Expr& self) {
  Expr i = mutate(op->index), p = mutate(op->predicate);
  return i.same_as(op->index) && p.same_as(op->predicate) ? self : Load::make(op->buf, i, p);
}
Expr IRMutator::visit(const Ramp* op, const Expr& self) {
  Expr b = mutate(op->base), s = mutate(op->stride);
  return b.same_as(op->base) && s.same_as(op->stride) ? self : Ramp::make(b, s, op->lanes);
}
Expr IRMutator::visit(const Broadcast* op, const Expr& self) {
  Expr v = mutate(op->value);
  return v.same_as(op->value) ? self : Broadcast::make(v, op->lanes);
}
Expr IRMutator::visit(const Call* op, const Expr& self) {
  std::vector<Expr> args;
  bool changed = false;
  for (const Expr& a : op->args) {
    args.push_back(mutate(a));
    changed |= !args.back().same_as(a);
  }
  if (!changed) return self;
  int lanes = 1;
  for (const Expr& a : args) lanes = std::max(lanes, a.type().lanes);
  return Call::make(op->type.with_lanes(lanes), op->name, std::move(args));
}
Expr IRMutator::visit(const Let* op, const Expr& self) {
  Expr v = mutate(op->value), b = mutate(op->body);
  return v.same_as(op->value) && b.same_as(op->body) ? self : Let::make(op->var, v, b);
}

Stmt IRMutator::visit(const For* op, const Stmt& self) {
  Expr m = mutate(op->min), e = mutate(op->extent);
  Stmt b = mutate(op->body);
  if (m.same_as(op->min) && e.same_as(op->extent) && b.same_as(op->body)) return self;
  return For::make(op->var, m, e, op->for_kind, b);
}
Stmt IRMutator::visit(const Store* op, const Stmt& self) {
  Expr i = mutate(op->index), v = mutate(op->value), p = mutate(op->predicate);
  if (i.same_as(op->index) && v.same_as(op->value) && p.same_as(op->predicate)) return self;
  return Store::make(op->buf, i, v, p);
}
Stmt IRMutator::visit(const Block* op, const Stmt& self) {
  std::vector<Stmt> stmts;
  bool changed = false;
  for (const Stmt& s : op->stmts) {
    stmts.push_back(mutate(s));
    changed |= !stmts.back().same_as(s);
  }
  return changed ? Block::make(std::move(stmts)) : self;
}
Stmt IRMutator::visit(const Allocate* op, const Stmt& self) {
  Expr s = mutate(op->size);
  Stmt b = mutate(op->body);
  if (s.same_as(op->size) && b.same_as(op->body)) return self;
  return Allocate::make(op->buf, s, op->scope, b);
}
Stmt IRMutator::visit(const IfThenElse* op, const Stmt& self) {
  Expr c = mutate(op->cond);
  Stmt t = mutate(op->then_case), e = mutate(op->else_case);
  if (c.same_as(op->cond) && t.same_as(op->then_case) && e.same_as(op->else_case)) return self;
  return IfThenElse::make(c, t, e);
}
Stmt IRMutator::visit(const LetStmt* op, const Stmt& self) {
  Expr v = mutate(op->value);
  Stmt b = mutate(op->body);
  return v.same_as(op->value) && b.same_as(op->body) ? self : LetStmt::make(op->var, v, b);
}
Stmt IRMutator::visit(const Barrier*, const Stmt& self) { return self; }
Stmt IRMutator::visit(const ExternCall* op, const Stmt& self) {
  std::vector<Expr> args;
  bool changed = false;
  for (const Expr& a : op->args) {
    args.push_back(mutate(a));
    changed |= !args.back().same_as(a);
  }
  return changed ? ExternCall::make(op->name, std::move(args), op->bufs) : self;
}

namespace {
class Substituter : public IRMutator {
 public:
  Substituter(const std::string& var, const Expr& repl) : var_(var), repl_(repl) {}

 protected:
  using IRMutator::visit;
  Expr visit(const Var* op, const Expr& self) override {
    return op->name == var_ ? repl_ : self;
  }

 private:
  const std::string& var_;
  const Expr& repl_;
};
}  // namespace

Expr substitute(const Expr& e, const std::string& var, const Expr& replacement) {
  return Substituter(var, replacement).mutate(e);
}
Stmt substitute(const Stmt& s, const std::string& var, const Expr& replacement) {
  return Substituter(var, replacement).mutate(s);
}

}  // namespace kiln::loop
