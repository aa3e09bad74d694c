// Small analyses over loop IR (see analysis.h).
#include "ir/loop/analysis.h"

#include "ir/loop/simplify.h"
#include "ir/loop/visitor.h"

namespace kiln::loop {

namespace {

class VarFinder : public IRVisitor {
 public:
  explicit VarFinder(const std::string& name) : name_(name) {}
  bool found = false;

 protected:
  using IRVisitor::visit_node;
  void visit_node(const Var* op) override { found = found || op->name == name_; }
  void visit_node(const For* op) override {
    found = found || op->var.as<Var>()->name == name_;
    IRVisitor::visit_node(op);
  }

 private:
  const std::string& name_;
};

class CheckedDivisionFinder : public IRVisitor {
 public:
  bool found = false;

 protected:
  using IRVisitor::visit_node;
  void visit_node(const Binary* op) override {
    found = found || divisor_needs_check(op);
    if (!found) IRVisitor::visit_node(op);
  }
  void visit_node(const Call* op) override {
    found = found || op->name == "checked_index";
    if (!found) IRVisitor::visit_node(op);
  }
};

class LoadPredicates : public IRVisitor {
 public:
  explicit LoadPredicates(int lanes) : lanes_(lanes) {}
  std::vector<Expr> found;

 protected:
  using IRVisitor::visit_node;
  void visit_node(const Load* op) override {
    if (op->predicate.defined() && op->predicate.type().lanes == lanes_) {
      bool seen = false;
      for (const Expr& p : found) seen = seen || p.same_as(op->predicate);
      if (!seen) found.push_back(op->predicate);
    }
    IRVisitor::visit_node(op);
  }

 private:
  int lanes_;
};

}  // namespace

std::vector<Expr> load_predicates(const Expr& e) {
  LoadPredicates f(e.type().lanes);
  f.visit(e);
  return f.found;
}

bool divisor_needs_check(const Binary* op) {
  if (op->op != BinOp::Div && op->op != BinOp::Mod) return false;
  if (!is_integral(op->type.dtype) || op->type.dtype == DType::Bool) return false;
  const Expr* divisor = &op->b;
  if (const Broadcast* b = divisor->as<Broadcast>()) divisor = &b->value;
  int64_t c = 0;
  return !(is_const_int(*divisor, &c) && c != 0);
}

bool has_checked_division(const Stmt& s) {
  CheckedDivisionFinder f;
  f.visit(s);
  return f.found;
}

bool uses_var(const Expr& e, const std::string& var) {
  VarFinder f(var);
  f.visit(e);
  return f.found;
}

bool uses_var(const Stmt& s, const std::string& var) {
  VarFinder f(var);
  f.visit(s);
  return f.found;
}

Expr linear_coefficient(const Expr& e, const std::string& var) {
  if (!uses_var(e, var)) return make_zero(e.type());
  if (const Var* v = e.as<Var>()) return v->name == var ? make_one(e.type()) : Expr();
  const Binary* b = e.as<Binary>();
  if (!b || e.type().lanes != 1 || !is_integral(e.type().dtype)) return Expr();
  Expr ca = linear_coefficient(b->a, var), cb = linear_coefficient(b->b, var);
  if (!ca.defined() || !cb.defined()) return Expr();
  switch (b->op) {
    case BinOp::Add:
      return simplify(ca + cb);
    case BinOp::Sub:
      return simplify(ca - cb);
    case BinOp::Mul:
      // Linear only when one side does not use the variable.
      if (!uses_var(b->a, var)) return simplify(b->a * cb);
      if (!uses_var(b->b, var)) return simplify(ca * b->b);
      return Expr();
    default:
      return Expr();
  }
}

}  // namespace kiln::loop
