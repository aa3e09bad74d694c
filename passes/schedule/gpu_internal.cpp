// Helpers the GPU schedules share (gpu_internal.h).
#include "passes/schedule/gpu_internal.h"

#include <limits>

#include "ir/loop/visitor.h"
#include "kiln/error.h"

namespace kiln::passes::gpu_detail {

using namespace kiln::loop;  // NOLINT

std::set<std::string> vars_of(const Expr& e) {
  struct Collector : IRVisitor {
    using IRVisitor::visit_node;
    std::set<std::string> names;
    void visit_node(const Var* op) override { names.insert(op->name); }
  } c;
  c.visit(e);
  return c.names;
}

std::set<std::string> names_in(const Stmt& s) {
  struct Collector : IRVisitor {
    using IRVisitor::visit_node;
    std::set<std::string> names;
    void visit_node(const Var* op) override { names.insert(op->name); }
    void visit_node(const Load* op) override {
      names.insert(op->buf->name);
      IRVisitor::visit_node(op);
    }
    void visit_node(const Store* op) override {
      names.insert(op->buf->name);
      IRVisitor::visit_node(op);
    }
    void visit_node(const Allocate* op) override {
      names.insert(op->buf->name);
      IRVisitor::visit_node(op);
    }
  } c;
  c.visit(s);
  return c.names;
}

bool is_mapped(const Stmt& s) {
  struct Finder : IRVisitor {
    using IRVisitor::visit_node;
    bool found = false;
    void visit_node(const For* op) override {
      if (op->for_kind == ForKind::GpuBlock || op->for_kind == ForKind::GpuThread) found = true;
      if (!found) IRVisitor::visit_node(op);
    }
  } f;
  f.visit(s);
  return f.found;
}

std::vector<Stmt> top_level(const Stmt& body) {
  if (!body.defined()) return {};
  if (const Block* b = body.as<Block>()) return b->stmts;
  return {body};
}

Names::Names(const Kernel& k) {
  used_ = names_in(k.body);
  for (const Buf& b : k.buffers) used_.insert(b->name);
  for (const Expr& s : k.scalars) {
    if (const Var* v = s.as<Var>()) used_.insert(v->name);
  }
}

std::string Names::fresh(const std::string& base) {
  std::string name = base;
  for (int i = 1; used_.count(name); ++i) name = base + std::to_string(i);
  used_.insert(name);
  return name;
}

Expr reduction_identity(BinOp op, VType t) {
  KILN_INTERNAL_CHECK(t.lanes == 1, "reduction_identity of a vector type " << t.str());
  const bool fl = is_floating(t.dtype);
  const double inf = std::numeric_limits<double>::infinity();
  auto lowest = [&]() -> Expr {
    if (fl) return FloatImm::make(t, -inf);
    switch (t.dtype) {
      case DType::Bool:
        return IntImm::make(t, 0);
      case DType::U8:
        return IntImm::make(t, 0);
      case DType::I8:
        return IntImm::make(t, std::numeric_limits<int8_t>::min());
      case DType::I16:
        return IntImm::make(t, std::numeric_limits<int16_t>::min());
      case DType::I32:
        return IntImm::make(t, std::numeric_limits<int32_t>::min());
      default:
        return IntImm::make(t, std::numeric_limits<int64_t>::min());
    }
  };
  auto highest = [&]() -> Expr {
    if (fl) return FloatImm::make(t, inf);
    switch (t.dtype) {
      case DType::Bool:
        return IntImm::make(t, 1);
      case DType::U8:
        return IntImm::make(t, std::numeric_limits<uint8_t>::max());
      case DType::I8:
        return IntImm::make(t, std::numeric_limits<int8_t>::max());
      case DType::I16:
        return IntImm::make(t, std::numeric_limits<int16_t>::max());
      case DType::I32:
        return IntImm::make(t, std::numeric_limits<int32_t>::max());
      default:
        return IntImm::make(t, std::numeric_limits<int64_t>::max());
    }
  };
  switch (op) {
    case BinOp::Add:
      return make_zero(t);
    case BinOp::Mul:
      return make_one(t);
    case BinOp::Max:
      return lowest();
    case BinOp::Min:
      return highest();
    case BinOp::And:
      return IntImm::make(t, 1);
    case BinOp::Or:
      return IntImm::make(t, 0);
    default:
      break;
  }
  KILN_INTERNAL_CHECK(false, "reduction_identity: " << binop_name(op) << " is no reduction");
}

}  // namespace kiln::passes::gpu_detail
