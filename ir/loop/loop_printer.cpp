// Text form of loop IR for dumps (`kiln dump --stage=loops`) and tests.
#include <cmath>
#include <cstdio>
#include <sstream>

#include "ir/loop/visitor.h"

namespace kiln::loop {

namespace {

class Printer : public IRVisitor {
 public:
  explicit Printer(std::ostream& os) : os_(os) {}
  using IRVisitor::visit;

  void print_stmt(const Stmt& s) { visit(s); }

 protected:
  void indent() {
    for (int i = 0; i < depth_; ++i) os_ << "  ";
  }

  void visit_node(const IntImm* op) override {
    if (op->type.dtype == DType::Bool) {
      os_ << (op->value ? "true" : "false");
    } else {
      os_ << op->value;
      if (op->type.dtype != DType::I64) os_ << "_" << dtype_name(op->type.dtype);
    }
  }
  void visit_node(const FloatImm* op) override {
    char buf[40];
    std::snprintf(buf, sizeof buf, "%.9g", op->value);
    std::string s = buf;
    if (std::isfinite(op->value) && s.find_first_of(".e") == std::string::npos) s += ".0";
    os_ << s;
    if (op->type.dtype == DType::F32) os_ << "f";
    else if (op->type.dtype != DType::F64) os_ << "_" << dtype_name(op->type.dtype);
  }
  void visit_node(const Var* op) override { os_ << op->name; }
  void visit_node(const Cast* op) override {
    os_ << op->type.str() << "(";
    visit(op->value);
    os_ << ")";
  }
  void visit_node(const Binary* op) override {
    if (op->op == BinOp::Min || op->op == BinOp::Max) {
      os_ << binop_name(op->op) << "(";
      visit(op->a);
      os_ << ", ";
      visit(op->b);
      os_ << ")";
      return;
    }
    os_ << "(";
    visit(op->a);
    os_ << " " << binop_name(op->op) << " ";
    visit(op->b);
    os_ << ")";
  }
  void visit_node(const Compare* op) override {
    os_ << "(";
    visit(op->a);
    os_ << " " << cmpop_name(op->op) << " ";
    visit(op->b);
    os_ << ")";
  }
  void visit_node(const Not* op) override {
    os_ << "!";
    visit(op->a);
  }
  void visit_node(const Select* op) override {
    os_ << "select(";
    visit(op->cond);
    os_ << ", ";
    visit(op->true_value);
    os_ << ", ";
    visit(op->false_value);
    os_ << ")";
  }
  void visit_node(const Load* op) override {
    os_ << op->buf->name << "[";
    visit(op->index);
    if (op->predicate.defined()) {
      os_ << " if ";
      visit(op->predicate);
    }
    os_ << "]";
  }
  void visit_node(const Ramp* op) override {
    os_ << "ramp(";
    visit(op->base);
    os_ << ", ";
    visit(op->stride);
    os_ << ", " << op->lanes << ")";
  }
  void visit_node(const Broadcast* op) override {
    os_ << "x" << op->lanes << "(";
    visit(op->value);
    os_ << ")";
  }
  void visit_node(const Call* op) override {
    os_ << op->name << "(";
    for (size_t i = 0; i < op->args.size(); ++i) {
      if (i) os_ << ", ";
      visit(op->args[i]);
    }
    os_ << ")";
  }
  void visit_node(const Let* op) override {
    os_ << "(let " << op->var.as<Var>()->name << " = ";
    visit(op->value);
    os_ << " in ";
    visit(op->body);
    os_ << ")";
  }

  void visit_node(const For* op) override {
    indent();
    os_ << "for (" << op->var.as<Var>()->name << ", ";
    visit(op->min);
    os_ << ", ";
    visit(op->extent);
    os_ << ")";
    if (op->for_kind != ForKind::Serial) os_ << " " << for_kind_name(op->for_kind);
    os_ << " {\n";
    body(op->body);
    indent();
    os_ << "}\n";
  }
  void visit_node(const Store* op) override {
    indent();
    os_ << op->buf->name << "[";
    visit(op->index);
    if (op->predicate.defined()) {
      os_ << " if ";
      visit(op->predicate);
    }
    os_ << "] = ";
    visit(op->value);
    os_ << "\n";
  }
  void visit_node(const Block* op) override {
    for (const Stmt& s : op->stmts) visit(s);
  }
  void visit_node(const Allocate* op) override {
    indent();
    os_ << "allocate " << op->buf->name << "[" << dtype_name(op->buf->dtype) << " * ";
    visit(op->size);
    os_ << "] in " << memory_scope_name(op->scope) << "\n";
    visit(op->body);
  }
  void visit_node(const IfThenElse* op) override {
    indent();
    os_ << "if (";
    visit(op->cond);
    os_ << ") {\n";
    body(op->then_case);
    if (op->else_case.defined()) {
      indent();
      os_ << "} else {\n";
      body(op->else_case);
    }
    indent();
    os_ << "}\n";
  }
  void visit_node(const LetStmt* op) override {
    indent();
    os_ << "let " << op->var.as<Var>()->name << " = ";
    visit(op->value);
    os_ << "\n";
    visit(op->body);
  }
  void visit_node(const Barrier*) override {
    indent();
    os_ << "barrier()\n";
  }
  void visit_node(const ExternCall* op) override {
    indent();
    os_ << "call " << op->name << "(";
    bool first = true;
    for (const Buf& b : op->bufs) {
      os_ << (first ? "" : ", ") << b->name;
      first = false;
    }
    for (const Expr& a : op->args) {
      os_ << (first ? "" : ", ");
      first = false;
      visit(a);
    }
    os_ << ")\n";
  }

 private:
  void body(const Stmt& s) {
    ++depth_;
    visit(s);
    --depth_;
  }
  std::ostream& os_;
  int depth_ = 0;
};

}  // namespace

std::string to_string(const Expr& e) {
  std::ostringstream os;
  Printer(os).visit(e);
  return os.str();
}

std::string to_string(const Stmt& s) {
  std::ostringstream os;
  Printer(os).print_stmt(s);
  return os.str();
}

std::string to_string(const Kernel& k) {
  std::ostringstream os;
  os << "kernel " << k.name << "(";
  bool first = true;
  for (const Buf& b : k.buffers) {
    os << (first ? "" : ", ") << b->name << ": " << dtype_name(b->dtype) << "*";
    first = false;
  }
  for (const Expr& s : k.scalars) {
    os << (first ? "" : ", ") << to_string(s) << ": " << s.type().str();
    first = false;
  }
  os << ") {\n";
  {
    std::ostringstream body;
    Printer p(body);
    p.print_stmt(k.body);
    std::istringstream lines(body.str());
    for (std::string line; std::getline(lines, line);) os << "  " << line << "\n";
  }
  os << "}\n";
  return os.str();
}

}  // namespace kiln::loop
