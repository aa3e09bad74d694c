// Structural equality and hashing of loop IR. Two trees are equal when they
// have the same kinds, types, operators, constants (floats by bit pattern),
// Var names and Buf identities. The hash is consistent with equality and is
// what the kernel cache keys on.
#include <cstring>

#include "ir/loop/visitor.h"

namespace kiln::loop {

namespace {

bool eq(const Expr& a, const Expr& b);
bool eq(const Stmt& a, const Stmt& b);

bool eq_all(const std::vector<Expr>& a, const std::vector<Expr>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!eq(a[i], b[i])) return false;
  }
  return true;
}

bool eq(const Expr& a, const Expr& b) {
  if (a.same_as(b)) return true;
  if (!a.defined() || !b.defined()) return false;
  if (a->kind != b->kind || !(a.type() == b.type())) return false;
  switch (a->kind) {
    case NodeKind::IntImm: return a.as<IntImm>()->value == b.as<IntImm>()->value;
    case NodeKind::FloatImm: {
      double x = a.as<FloatImm>()->value, y = b.as<FloatImm>()->value;
      return std::memcmp(&x, &y, sizeof x) == 0;
    }
    case NodeKind::Var: return a.as<Var>()->name == b.as<Var>()->name;
    case NodeKind::Cast: return eq(a.as<Cast>()->value, b.as<Cast>()->value);
    case NodeKind::Binary: {
      auto *x = a.as<Binary>(), *y = b.as<Binary>();
      return x->op == y->op && eq(x->a, y->a) && eq(x->b, y->b);
    }
    case NodeKind::Compare: {
      auto *x = a.as<Compare>(), *y = b.as<Compare>();
      return x->op == y->op && eq(x->a, y->a) && eq(x->b, y->b);
    }
    case NodeKind::Not: return eq(a.as<Not>()->a, b.as<Not>()->a);
    case NodeKind::Select: {
      auto *x = a.as<Select>(), *y = b.as<Select>();
      return eq(x->cond, y->cond) && eq(x->true_value, y->true_value) &&
             eq(x->false_value, y->false_value);
    }
    case NodeKind::Load: {
      auto *x = a.as<Load>(), *y = b.as<Load>();
      return x->buf == y->buf && eq(x->index, y->index) && eq(x->predicate, y->predicate);
    }
    case NodeKind::Ramp: {
      auto *x = a.as<Ramp>(), *y = b.as<Ramp>();
      return eq(x->base, y->base) && eq(x->stride, y->stride);
    }
    case NodeKind::Broadcast: return eq(a.as<Broadcast>()->value, b.as<Broadcast>()->value);
    case NodeKind::Call: {
      auto *x = a.as<Call>(), *y = b.as<Call>();
      return x->name == y->name && eq_all(x->args, y->args);
    }
    case NodeKind::Let: {
      auto *x = a.as<Let>(), *y = b.as<Let>();
      return eq(x->var, y->var) && eq(x->value, y->value) && eq(x->body, y->body);
    }
    default: return false;
  }
}

bool eq(const Stmt& a, const Stmt& b) {
  if (a.same_as(b)) return true;
  if (!a.defined() || !b.defined()) return false;
  if (a->kind != b->kind) return false;
  switch (a->kind) {
    case NodeKind::For: {
      auto *x = a.as<For>(), *y = b.as<For>();
      return x->for_kind == y->for_kind && eq(x->var, y->var) && eq(x->min, y->min) &&
             eq(x->extent, y->extent) && eq(x->body, y->body);
    }
    case NodeKind::Store: {
      auto *x = a.as<Store>(), *y = b.as<Store>();
      return x->buf == y->buf && eq(x->index, y->index) && eq(x->value, y->value) &&
             eq(x->predicate, y->predicate);
    }
    case NodeKind::Block: {
      auto *x = a.as<Block>(), *y = b.as<Block>();
      if (x->stmts.size() != y->stmts.size()) return false;
      for (size_t i = 0; i < x->stmts.size(); ++i) {
        if (!eq(x->stmts[i], y->stmts[i])) return false;
      }
      return true;
    }
    case NodeKind::Allocate: {
      auto *x = a.as<Allocate>(), *y = b.as<Allocate>();
      return x->buf == y->buf && x->scope == y->scope && eq(x->size, y->size) &&
             eq(x->body, y->body);
    }
    case NodeKind::IfThenElse: {
      auto *x = a.as<IfThenElse>(), *y = b.as<IfThenElse>();
      return eq(x->cond, y->cond) && eq(x->then_case, y->then_case) &&
             eq(x->else_case, y->else_case);
    }
    case NodeKind::LetStmt: {
      auto *x = a.as<LetStmt>(), *y = b.as<LetStmt>();
      return eq(x->var, y->var) && eq(x->value, y->value) && eq(x->body, y->body);
    }
    case NodeKind::Barrier: return true;
    case NodeKind::ExternCall: {
      auto *x = a.as<ExternCall>(), *y = b.as<ExternCall>();
      return x->name == y->name && x->bufs == y->bufs && eq_all(x->args, y->args);
    }
    default: return false;
  }
}

// FNV-1a style mixing; stable across runs (no pointer values), so hashes can
// key an on-disk cache. Bufs hash by name and dtype.
struct Hasher : IRVisitor {
  uint64_t h = 1469598103934665603ull;
  void mix(uint64_t v) {
    for (int i = 0; i < 8; ++i) {
      h ^= (v >> (8 * i)) & 0xff;
      h *= 1099511628211ull;
    }
  }
  void mix(const std::string& s) {
    mix(s.size());
    for (char c : s) mix(uint64_t(uint8_t(c)));
  }
  void mix_type(VType t) { mix(uint64_t(t.dtype) << 32 | uint64_t(t.lanes)); }
  void mix_buf(const Buf& b) {
    mix(b->name);
    mix(uint64_t(b->dtype));
  }
  using IRVisitor::visit;
  void expr(const Expr& e) {
    if (!e.defined()) {
      mix(0xdeadull);
      return;
    }
    mix(uint64_t(e->kind));
    mix_type(e.type());
    visit(e);
  }
  void stmt(const Stmt& s) {
    if (!s.defined()) {
      mix(0xbeefull);
      return;
    }
    mix(uint64_t(s->kind));
    visit(s);
  }

 protected:
  void visit_node(const IntImm* op) override { mix(uint64_t(op->value)); }
  void visit_node(const FloatImm* op) override {
    uint64_t bits;
    std::memcpy(&bits, &op->value, sizeof bits);
    mix(bits);
  }
  void visit_node(const Var* op) override { mix(op->name); }
  void visit_node(const Cast* op) override { expr(op->value); }
  void visit_node(const Binary* op) override {
    mix(uint64_t(op->op));
    expr(op->a);
    expr(op->b);
  }
  void visit_node(const Compare* op) override {
    mix(uint64_t(op->op));
    expr(op->a);
    expr(op->b);
  }
  void visit_node(const Not* op) override { expr(op->a); }
  void visit_node(const Select* op) override {
    expr(op->cond);
    expr(op->true_value);
    expr(op->false_value);
  }
  void visit_node(const Load* op) override {
    mix_buf(op->buf);
    expr(op->index);
    expr(op->predicate);
  }
  void visit_node(const Ramp* op) override {
    expr(op->base);
    expr(op->stride);
  }
  void visit_node(const Broadcast* op) override { expr(op->value); }
  void visit_node(const Call* op) override {
    mix(op->name);
    for (const Expr& a : op->args) expr(a);
  }
  void visit_node(const Let* op) override {
    expr(op->var);
    expr(op->value);
    expr(op->body);
  }
  void visit_node(const For* op) override {
    mix(uint64_t(op->for_kind));
    expr(op->var);
    expr(op->min);
    expr(op->extent);
    stmt(op->body);
  }
  void visit_node(const Store* op) override {
    mix_buf(op->buf);
    expr(op->index);
    expr(op->value);
    expr(op->predicate);
  }
  void visit_node(const Block* op) override {
    mix(op->stmts.size());
    for (const Stmt& s : op->stmts) stmt(s);
  }
  void visit_node(const Allocate* op) override {
    mix_buf(op->buf);
    mix(uint64_t(op->scope));
    expr(op->size);
    stmt(op->body);
  }
  void visit_node(const IfThenElse* op) override {
    expr(op->cond);
    stmt(op->then_case);
    stmt(op->else_case);
  }
  void visit_node(const LetStmt* op) override {
    expr(op->var);
    expr(op->value);
    stmt(op->body);
  }
  void visit_node(const Barrier*) override {}
  void visit_node(const ExternCall* op) override {
    mix(op->name);
    for (const Buf& b : op->bufs) mix_buf(b);
    for (const Expr& a : op->args) expr(a);
  }
};

}  // namespace

bool equal(const Expr& a, const Expr& b) { return eq(a, b); }
bool equal(const Stmt& a, const Stmt& b) { return eq(a, b); }

uint64_t structural_hash(const Expr& e) {
  Hasher h;
  h.expr(e);
  return h.h;
}

uint64_t structural_hash(const Stmt& s) {
  Hasher h;
  h.stmt(s);
  return h.h;
}

}  // namespace kiln::loop
