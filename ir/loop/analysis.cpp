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

}  // namespace

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
