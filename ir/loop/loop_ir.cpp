// Validating constructors of loop-IR nodes and the arithmetic shorthands.
// Every invariant a later pass relies on is checked here, once.
#include "ir/loop/loop_ir.h"

#include <cmath>

#include "kiln/error.h"

namespace kiln::loop {

std::string VType::str() const {
  std::string s = dtype_name(dtype);
  return lanes > 1 ? s + "x" + std::to_string(lanes) : s;
}

const char* node_kind_name(NodeKind k) {
  switch (k) {
#define KILN_EXPR_NODE(Name) \
  case NodeKind::Name: return #Name;
#define KILN_STMT_NODE(Name) \
  case NodeKind::Name: return #Name;
#include "ir/loop/nodes.def"
  }
  return "?";
}

const char* binop_name(BinOp op) {
  switch (op) {
    case BinOp::Add: return "+";
    case BinOp::Sub: return "-";
    case BinOp::Mul: return "*";
    case BinOp::Div: return "/";
    case BinOp::Mod: return "%";
    case BinOp::Min: return "min";
    case BinOp::Max: return "max";
    case BinOp::And: return "&&";
    case BinOp::Or: return "||";
    case BinOp::BitAnd: return "&";
    case BinOp::BitOr: return "|";
    case BinOp::BitXor: return "^";
  }
  return "?";
}

const char* cmpop_name(CmpOp op) {
  switch (op) {
    case CmpOp::EQ: return "==";
    case CmpOp::NE: return "!=";
    case CmpOp::LT: return "<";
    case CmpOp::LE: return "<=";
    case CmpOp::GT: return ">";
    case CmpOp::GE: return ">=";
  }
  return "?";
}

const char* for_kind_name(ForKind k) {
  switch (k) {
    case ForKind::Serial: return "serial";
    case ForKind::Parallel: return "parallel";
    case ForKind::Vectorized: return "vectorized";
    case ForKind::Unrolled: return "unrolled";
    case ForKind::GpuBlock: return "gpu_block";
    case ForKind::GpuThread: return "gpu_thread";
  }
  return "?";
}

const char* memory_scope_name(MemoryScope s) {
  switch (s) {
    case MemoryScope::Stack: return "stack";
    case MemoryScope::Heap: return "heap";
    case MemoryScope::GpuShared: return "gpu_shared";
    case MemoryScope::GpuLocal: return "gpu_local";
  }
  return "?";
}

Buf make_buf(std::string name, DType dtype) {
  return std::make_shared<const BufferNode>(BufferNode{std::move(name), dtype});
}

#define CHECK_DEFINED(e, what) KILN_INTERNAL_CHECK((e).defined(), what " is undefined")

Expr IntImm::make(VType t, int64_t v) {
  KILN_INTERNAL_CHECK(t.lanes == 1 && (is_integral(t.dtype) || t.dtype == DType::Bool),
                      "IntImm of type " << t.str());
  return new IntImm(t, v);
}

Expr FloatImm::make(VType t, double v) {
  KILN_INTERNAL_CHECK(t.lanes == 1 && is_floating(t.dtype), "FloatImm of type " << t.str());
  return new FloatImm(t, v);
}

Expr Var::make(VType t, std::string name) {
  KILN_INTERNAL_CHECK(!name.empty(), "Var without a name");
  return new Var(t, std::move(name));
}

Expr Cast::make(VType t, Expr value) {
  CHECK_DEFINED(value, "Cast value");
  KILN_INTERNAL_CHECK(t.lanes == value.type().lanes,
                      "Cast changes lanes: " << value.type().str() << " to " << t.str());
  return new Cast(t, std::move(value));
}

Expr Binary::make(BinOp op, Expr a, Expr b) {
  CHECK_DEFINED(a, "Binary lhs");
  CHECK_DEFINED(b, "Binary rhs");
  KILN_INTERNAL_CHECK(a.type() == b.type(), "Binary " << binop_name(op) << " of mismatched types "
                                                      << a.type().str() << " and " << b.type().str());
  if (op == BinOp::And || op == BinOp::Or) {
    KILN_INTERNAL_CHECK(a.type().dtype == DType::Bool, "logical op on " << a.type().str());
  }
  if (op == BinOp::BitAnd || op == BinOp::BitOr || op == BinOp::BitXor) {
    KILN_INTERNAL_CHECK(!is_floating(a.type().dtype), "bitwise op on " << a.type().str());
  }
  return new Binary(op, std::move(a), std::move(b));
}

Expr Compare::make(CmpOp op, Expr a, Expr b) {
  CHECK_DEFINED(a, "Compare lhs");
  CHECK_DEFINED(b, "Compare rhs");
  KILN_INTERNAL_CHECK(a.type() == b.type(), "Compare of mismatched types " << a.type().str()
                                                                          << " and " << b.type().str());
  return new Compare(op, std::move(a), std::move(b));
}

Expr Not::make(Expr a) {
  CHECK_DEFINED(a, "Not operand");
  KILN_INTERNAL_CHECK(a.type().dtype == DType::Bool, "Not of " << a.type().str());
  return new Not(std::move(a));
}

Expr Select::make(Expr cond, Expr t, Expr f) {
  CHECK_DEFINED(cond, "Select cond");
  CHECK_DEFINED(t, "Select true value");
  CHECK_DEFINED(f, "Select false value");
  KILN_INTERNAL_CHECK(cond.type().dtype == DType::Bool, "Select cond of type " << cond.type().str());
  KILN_INTERNAL_CHECK(t.type() == f.type(), "Select branches differ: " << t.type().str() << " vs "
                                                                       << f.type().str());
  KILN_INTERNAL_CHECK(cond.type().lanes == 1 || cond.type().lanes == t.type().lanes,
                      "Select cond lanes " << cond.type().lanes << " vs " << t.type().lanes);
  return new Select(std::move(cond), std::move(t), std::move(f));
}

Expr Load::make(Buf buf, Expr index, Expr predicate) {
  KILN_INTERNAL_CHECK(buf != nullptr, "Load from a null buffer");
  CHECK_DEFINED(index, "Load index");
  KILN_INTERNAL_CHECK(index.type().dtype == DType::I64, "Load index of type " << index.type().str());
  int lanes = index.type().lanes;
  if (predicate.defined()) {
    KILN_INTERNAL_CHECK(predicate.type() == bool_t(lanes),
                        "Load predicate " << predicate.type().str() << " for " << lanes << " lanes");
  }
  VType type{buf->dtype, lanes};  // before `buf` is moved from
  return new Load(type, std::move(buf), std::move(index), std::move(predicate));
}

Expr Ramp::make(Expr base, Expr stride, int lanes) {
  CHECK_DEFINED(base, "Ramp base");
  CHECK_DEFINED(stride, "Ramp stride");
  KILN_INTERNAL_CHECK(lanes > 1, "Ramp of " << lanes << " lanes");
  KILN_INTERNAL_CHECK(base.type().lanes == 1 && base.type() == stride.type(),
                      "Ramp base/stride must be equal scalar types");
  return new Ramp(std::move(base), std::move(stride), lanes);
}

Expr Broadcast::make(Expr value, int lanes) {
  CHECK_DEFINED(value, "Broadcast value");
  KILN_INTERNAL_CHECK(lanes > 1, "Broadcast to " << lanes << " lanes");
  KILN_INTERNAL_CHECK(value.type().lanes == 1, "Broadcast of a vector");
  return new Broadcast(std::move(value), lanes);
}

Expr Call::make(VType t, std::string name, std::vector<Expr> args) {
  for (const Expr& a : args) {
    CHECK_DEFINED(a, "Call argument");
    KILN_INTERNAL_CHECK(a.type().lanes == 1 || a.type().lanes == t.lanes,
                        "Call " << name << " argument lanes " << a.type().lanes << " vs " << t.lanes);
  }
  return new Call(t, std::move(name), std::move(args));
}

Expr Let::make(Expr var, Expr value, Expr body) {
  KILN_INTERNAL_CHECK(var.as<Var>() != nullptr, "Let binds a non-Var");
  CHECK_DEFINED(value, "Let value");
  CHECK_DEFINED(body, "Let body");
  KILN_INTERNAL_CHECK(var.type() == value.type(), "Let type mismatch");
  return new Let(std::move(var), std::move(value), std::move(body));
}

Stmt For::make(Expr var, Expr min, Expr extent, ForKind kind, Stmt body) {
  KILN_INTERNAL_CHECK(var.as<Var>() != nullptr && var.type() == i64_t(), "For var must be an i64 Var");
  CHECK_DEFINED(min, "For min");
  CHECK_DEFINED(extent, "For extent");
  CHECK_DEFINED(body, "For body");
  KILN_INTERNAL_CHECK(min.type() == i64_t() && extent.type() == i64_t(),
                      "For bounds must be scalar i64");
  if (kind == ForKind::Vectorized) {
    KILN_INTERNAL_CHECK(is_const_int(extent), "vectorized loop needs a constant extent");
  }
  return new For(std::move(var), std::move(min), std::move(extent), kind, std::move(body));
}

Stmt Store::make(Buf buf, Expr index, Expr value, Expr predicate) {
  KILN_INTERNAL_CHECK(buf != nullptr, "Store to a null buffer");
  CHECK_DEFINED(index, "Store index");
  CHECK_DEFINED(value, "Store value");
  KILN_INTERNAL_CHECK(index.type().dtype == DType::I64, "Store index of type " << index.type().str());
  KILN_INTERNAL_CHECK(value.type() == (VType{buf->dtype, index.type().lanes}),
                      "Store of " << value.type().str() << " into " << buf->name << " ("
                                  << dtype_name(buf->dtype) << ") at " << index.type().lanes
                                  << " lanes");
  if (predicate.defined()) {
    KILN_INTERNAL_CHECK(predicate.type() == bool_t(index.type().lanes), "Store predicate lanes");
  }
  return new Store(std::move(buf), std::move(index), std::move(value), std::move(predicate));
}

Stmt Block::make(std::vector<Stmt> stmts) {
  std::vector<Stmt> flat;
  for (Stmt& s : stmts) {
    if (!s.defined()) continue;
    if (const Block* b = s.as<Block>()) {
      flat.insert(flat.end(), b->stmts.begin(), b->stmts.end());
    } else {
      flat.push_back(std::move(s));
    }
  }
  if (flat.size() == 1) return flat[0];
  return new Block(std::move(flat));
}

Stmt Allocate::make(Buf buf, Expr size, MemoryScope scope, Stmt body) {
  KILN_INTERNAL_CHECK(buf != nullptr, "Allocate of a null buffer");
  KILN_INTERNAL_CHECK(size.defined() && size.type() == i64_t(), "Allocate size must be i64");
  CHECK_DEFINED(body, "Allocate body");
  if (scope == MemoryScope::GpuLocal) {
    // Per-thread storage across phases becomes registers or a fixed local
    // array: its size must be known when the kernel is compiled.
    int64_t n = 0;
    KILN_INTERNAL_CHECK(is_const_int(size, &n) && n > 0,
                        "gpu_local buffer " << buf->name << " needs a constant positive size");
  }
  return new Allocate(std::move(buf), std::move(size), scope, std::move(body));
}

Stmt IfThenElse::make(Expr cond, Stmt then_case, Stmt else_case) {
  KILN_INTERNAL_CHECK(cond.defined() && cond.type() == bool_t(), "If cond must be a scalar bool");
  CHECK_DEFINED(then_case, "If then-case");
  return new IfThenElse(std::move(cond), std::move(then_case), std::move(else_case));
}

Stmt LetStmt::make(Expr var, Expr value, Stmt body) {
  KILN_INTERNAL_CHECK(var.as<Var>() != nullptr, "LetStmt binds a non-Var");
  CHECK_DEFINED(value, "LetStmt value");
  CHECK_DEFINED(body, "LetStmt body");
  KILN_INTERNAL_CHECK(var.type() == value.type(), "LetStmt type mismatch");
  return new LetStmt(std::move(var), std::move(value), std::move(body));
}

Stmt Barrier::make() { return new Barrier(); }

Stmt ExternCall::make(std::string name, std::vector<Expr> args, std::vector<Buf> bufs) {
  for (const Expr& a : args) CHECK_DEFINED(a, "ExternCall argument");
  for (const Buf& b : bufs) KILN_INTERNAL_CHECK(b != nullptr, "ExternCall null buffer");
  return new ExternCall(std::move(name), std::move(args), std::move(bufs));
}

// ---------------------------------------------------------------------- shorthands

Expr make_int(int64_t v) { return IntImm::make(i64_t(), v); }

Expr make_const(VType t, double v) {
  Expr scalar = is_floating(t.dtype) ? FloatImm::make(t.element(), v)
                                     : IntImm::make(t.element(), static_cast<int64_t>(v));
  return t.lanes > 1 ? Broadcast::make(scalar, t.lanes) : scalar;
}
Expr make_zero(VType t) { return make_const(t, 0); }
Expr make_one(VType t) { return make_const(t, 1); }

bool is_const_int(const Expr& e, int64_t* value) {
  if (const IntImm* i = e.as<IntImm>()) {
    if (value) *value = i->value;
    return true;
  }
  return false;
}

bool is_const(const Expr& e) {
  if (e.as<IntImm>() || e.as<FloatImm>()) return true;
  if (const Broadcast* b = e.as<Broadcast>()) return is_const(b->value);
  return false;
}

Expr operator+(Expr a, Expr b) { return Binary::make(BinOp::Add, std::move(a), std::move(b)); }
Expr operator-(Expr a, Expr b) { return Binary::make(BinOp::Sub, std::move(a), std::move(b)); }
Expr operator*(Expr a, Expr b) { return Binary::make(BinOp::Mul, std::move(a), std::move(b)); }
Expr operator/(Expr a, Expr b) { return Binary::make(BinOp::Div, std::move(a), std::move(b)); }
Expr operator%(Expr a, Expr b) { return Binary::make(BinOp::Mod, std::move(a), std::move(b)); }
Expr operator+(Expr a, int64_t b) {
  VType t = a.type();
  return std::move(a) + make_const(t, double(b));
}
Expr operator*(Expr a, int64_t b) {
  VType t = a.type();
  return std::move(a) * make_const(t, double(b));
}
Expr min(Expr a, Expr b) { return Binary::make(BinOp::Min, std::move(a), std::move(b)); }
Expr max(Expr a, Expr b) { return Binary::make(BinOp::Max, std::move(a), std::move(b)); }
Expr operator<(Expr a, Expr b) { return Compare::make(CmpOp::LT, std::move(a), std::move(b)); }
Expr operator<=(Expr a, Expr b) { return Compare::make(CmpOp::LE, std::move(a), std::move(b)); }
Expr operator>(Expr a, Expr b) { return Compare::make(CmpOp::GT, std::move(a), std::move(b)); }
Expr operator>=(Expr a, Expr b) { return Compare::make(CmpOp::GE, std::move(a), std::move(b)); }
Expr operator==(Expr a, Expr b) { return Compare::make(CmpOp::EQ, std::move(a), std::move(b)); }
Expr operator!=(Expr a, Expr b) { return Compare::make(CmpOp::NE, std::move(a), std::move(b)); }
Expr operator&&(Expr a, Expr b) { return Binary::make(BinOp::And, std::move(a), std::move(b)); }
Expr operator||(Expr a, Expr b) { return Binary::make(BinOp::Or, std::move(a), std::move(b)); }
Expr operator!(Expr a) { return Not::make(std::move(a)); }

}  // namespace kiln::loop
