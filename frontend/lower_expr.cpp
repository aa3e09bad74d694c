// Lowering of expressions: literals, names, attributes, Python operators on
// tensors (-> registry ops) and on compile-time scalars (evaluated here with
// Python's semantics), comparisons, `and`/`or`/`not`, conditional expressions.
#include <cmath>

#include "frontend/lower.h"
#include "frontend/pytorch_names.h"
#include "frontend/scalar_ops.h"

namespace kiln::frontend {

DType default_float() {
  return DType::F32;
}

namespace {

bool is_intlike(const Val& v) {
  return v.kind == Val::Kind::Int || v.kind == Val::Kind::Bool;
}

const char* tensor_op_for(const std::string& op) {
  if (op == "+") return "add";
  if (op == "-") return "sub";
  if (op == "*") return "mul";
  if (op == "/") return "div";
  if (op == "//") return "div";
  if (op == "%") return "remainder";
  if (op == "**") return "pow";
  if (op == "@") return "matmul";
  if (op == "==") return "eq";
  if (op == "!=") return "ne";
  if (op == "<") return "lt";
  if (op == "<=") return "le";
  if (op == ">") return "gt";
  if (op == ">=") return "ge";
  return nullptr;
}

}  // namespace

std::optional<DType> torch_dtype(const std::string& name) {
  static const std::pair<const char*, DType> table[] = {
      {"float32", DType::F32},   {"float", DType::F32},   {"float64", DType::F64},
      {"double", DType::F64},    {"float16", DType::F16}, {"half", DType::F16},
      {"bfloat16", DType::BF16}, {"int8", DType::I8},     {"uint8", DType::U8},
      {"int16", DType::I16},     {"short", DType::I16},   {"int32", DType::I32},
      {"int", DType::I32},       {"int64", DType::I64},   {"long", DType::I64},
      {"bool", DType::Bool}};
  for (const auto& [n, d] : table) {
    if (name == n) return d;
  }
  return std::nullopt;
}

Val Lowerer::binary(const std::string& op, const Val& a, const Val& b, const Span& at) {
  if (a.kind == Val::Kind::Poison || b.kind == Val::Kind::Poison) throw Abort{};
  if (!a.is_tensor() && !b.is_tensor()) return scalar_binary(*this, op, a, b, at);
  for (const Val* v : {&a, &b}) {
    if (!v->is_tensor() && !v->is_number()) {
      if (v->kind == Val::Kind::SymDim) constant(*v, at);  // reports the symbolic size
      fail(at, "unsupported operand types for " + op + ": '" + kind_name(a) + "' and '" +
                   kind_name(b) + "'");
    }
  }
  if (a.is_runtime_number() || b.is_runtime_number()) return runtime_binary(op, a, b, at);
  if (op == "**" && a.is_tensor()) check_int_tensor_pow(*this, a.value, b, at);
  ir::Value* x = operand(a, at);
  ir::Value* y = operand(b, at);
  if (op == "&" || op == "|" || op == "^") {
    // Bool operands are logical ops; integers are bitwise (PyTorch spells both
    // as & | ^ and dispatches on dtype).
    bool all_bool = x->type().dtype() == DType::Bool && y->type().dtype() == DType::Bool;
    std::string name = op == "&" ? "and" : op == "|" ? "or" : "xor";
    return fresh(apply1((all_bool ? "logical_" : "bitwise_") + name, {x, y}, {}, at));
  }
  const char* name = tensor_op_for(op);
  if (!name) fail(at, "operator '" + op + "' is not supported on tensors yet");
  ir::Attrs attrs;
  if (op == "//") attrs.set("rounding_mode", std::string("floor"));
  return fresh(apply1(name, {x, y}, attrs, at));
}

Val Lowerer::compare(const std::string& op, const Val& a, const Val& b, const Span& at) {
  if (a.kind == Val::Kind::Poison || b.kind == Val::Kind::Poison) throw Abort{};
  if ((op == "is" || op == "is not") && (a.kind == Val::Kind::None || b.kind == Val::Kind::None)) {
    // `mask is None` folds at compile time: a tensor is never None, and an
    // Optional[Tensor] parameter is either bound to a tensor or to None.
    bool same = a.kind == b.kind;
    return Val::bool_(op == "is" ? same : !same);
  }
  if (a.is_tensor() || b.is_tensor()) {
    if (op == "is" || op == "is not") {
      fail(at, "'" + op + "' between tensors is not supported; only 'is None' and 'is not None'");
    }
    if (op == "in" || op == "not in") {
      fail(at, "'" + op + "' on a tensor is not supported");
    }
    return binary(op, a, b, at);
  }
  if (op == "is" || op == "is not") {
    bool same = a.kind == b.kind && (a.kind != Val::Kind::None ? a.i == b.i : true);
    if (a.kind != Val::Kind::None && b.kind != Val::Kind::None) {
      fail(at, "'" + op + "' is only supported with None");
    }
    return Val::bool_(op == "is" ? same : !same);
  }
  if (op == "in" || op == "not in") {
    if (!b.is_seq()) fail(at, "'in' needs a tuple or list on the right, got " + kind_name(b));
    bool found = false;
    for (const Val& item : b.items) {
      Val eq = compare("==", a, item, at);
      if (eq.is_tensor()) {
        fail(at, "'" + op + "' over tensors or run-time numbers is not supported");
      }
      found = found || eq.i;
    }
    return Val::bool_(op == "in" ? found : !found);
  }
  if (a.kind == Val::Kind::Str && b.kind == Val::Kind::Str) {
    int c = a.s.compare(b.s);
    bool r = op == "=="   ? c == 0
             : op == "!=" ? c != 0
             : op == "<"  ? c < 0
             : op == "<=" ? c <= 0
             : op == ">"  ? c > 0
                          : c >= 0;
    return Val::bool_(r);
  }
  if (a.kind == Val::Kind::DType && b.kind == Val::Kind::DType && (op == "==" || op == "!=")) {
    return Val::bool_((a.dtype == b.dtype) == (op == "=="));
  }
  if (a.kind == Val::Kind::None || b.kind == Val::Kind::None) {
    if (op == "==" || op == "!=") return Val::bool_((a.kind == b.kind) == (op == "=="));
  }
  if (a.is_seq() && b.is_seq() && (op == "==" || op == "!=")) {
    bool eq = a.items.size() == b.items.size();
    for (size_t k = 0; eq && k < a.items.size(); ++k) {
      Val r = compare("==", a.items[k], b.items[k], at);
      if (r.is_tensor()) {
        fail(at, "comparing sequences that hold tensors or run-time numbers is not supported");
      }
      eq = r.i;
    }
    return Val::bool_(eq == (op == "=="));
  }
  if (!a.is_number() || !b.is_number()) {
    if (a.kind == Val::Kind::SymDim || b.kind == Val::Kind::SymDim) {
      fail(at, "comparing the symbolic size '" + (a.kind == Val::Kind::SymDim ? a.s : b.s) +
                   "' is not supported yet (its value is only known at run time)");
    }
    fail(at, "cannot compare '" + kind_name(a) + "' and '" + kind_name(b) + "' with " + op);
  }
  double x = a.num(), y = b.num();
  if (is_intlike(a) && is_intlike(b)) {
    int64_t p = a.i, q = b.i;
    bool r = op == "=="   ? p == q
             : op == "!=" ? p != q
             : op == "<"  ? p < q
             : op == "<=" ? p <= q
             : op == ">"  ? p > q
                          : p >= q;
    return Val::bool_(r);
  }
  bool r = op == "=="   ? x == y
           : op == "!=" ? x != y
           : op == "<"  ? x < y
           : op == "<=" ? x <= y
           : op == ">"  ? x > y
                        : x >= y;
  return Val::bool_(r);
}

Val Lowerer::unary(const std::string& op, const Val& a, const Span& at) {
  if (a.kind == Val::Kind::Poison) throw Abort{};
  if (a.is_runtime_number() && (op == "not" || op == "-" || op == "+")) {
    // Python's operators on a number known only at run time (-True is -1).
    Val::Kind k = a.number == Val::Kind::Bool && op != "not" ? Val::Kind::Int : a.number;
    Val x = a.number == k ? a : fresh(cast(a.value, DType::I64, at));
    if (op == "+") return x;
    Val r = fresh(op == "not" ? apply1("logical_not", {cast(x.value, DType::Bool, at)}, {}, at)
                              : apply1("neg", {x.value}, {}, at));
    r.number = op == "not" ? Val::Kind::Bool : k;
    return r;
  }
  if (op == "not") {
    if (a.is_tensor()) {
      fail(at,
           "'not' on a tensor depends on its data and is not supported; use "
           "torch.logical_not or '~'");
    }
    return Val::bool_(!truth(a, at));
  }
  if (a.is_tensor()) {
    if (op == "+") return a;
    if (op == "-") return fresh(apply1("neg", {a.value}, {}, at));
    if (op == "~") {
      bool b = a.type().dtype() == DType::Bool;
      return fresh(apply1(b ? "logical_not" : "bitwise_not", {a.value}, {}, at));
    }
  }
  if (std::optional<Val> r = scalar_unary(*this, op, a, at)) return *r;
  fail(at, "bad operand type for unary " + op + ": '" + kind_name(a) + "'");
}

bool Lowerer::truth(const Val& v, const Span& at) {
  switch (v.kind) {
    case Val::Kind::Poison:
      throw Abort{};
    case Val::Kind::Tensor:
      if (v.is_runtime_number()) {
        runtime_value_needed(v, at, "a Python condition (if, while, and/or, assert, x if c else y)",
                             "use torch.where(cond, a, b) to choose between values at run time");
      }
      fail(at, "data-dependent control flow on a tensor value is not supported yet",
           "the condition is only known at run time; use torch.where to select values");
    case Val::Kind::SymDim:
      fail(at, "a condition on the symbolic size '" + v.s + "' is not supported yet");
    case Val::Kind::None:
      return false;
    case Val::Kind::Int:
    case Val::Kind::Bool:
      return v.i != 0;
    case Val::Kind::Float:
      return v.f != 0;
    case Val::Kind::Str:
      return !v.s.empty();
    case Val::Kind::Tuple:
    case Val::Kind::List:
      return !v.items.empty();
    default:
      return true;
  }
}

Val Lowerer::eval(const Expr& e) {
  Nesting nest(*this, e.span);
  switch (e.kind) {
    case ExprKind::Name:
      return lookup(e.name, e.span);
    case ExprKind::Int:
      return Val::int_(e.ival);
    case ExprKind::Float:
      return Val::float_(e.fval);
    case ExprKind::Str:
      return Val::str(e.name);
    case ExprKind::Bool:
      return Val::bool_(e.ival != 0);
    case ExprKind::None:
      return Val::none();
    case ExprKind::Ellipsis:
      fail(e.span, "'...' is only supported inside an index");
    case ExprKind::Tuple:
    case ExprKind::List: {
      std::vector<Val> items;
      for (const ExprPtr& item : e.items) {
        if (item->kind == ExprKind::Starred) {
          Val inner = eval(*item->items[0]);
          if (!inner.is_seq()) fail(item->span, "can only unpack a tuple or list with '*'");
          check_sequence_length(__int128(items.size()) + __int128(inner.items.size()), e.span);
          items.insert(items.end(), inner.items.begin(), inner.items.end());
        } else {
          items.push_back(eval(*item));
          note_nested(items.back());
        }
      }
      if (e.kind == ExprKind::Tuple) return Val::tuple(std::move(items));
      return with_identity(Val::tuple(std::move(items), Val::Kind::List));
    }
    case ExprKind::Attribute:
      if (std::optional<Val> m = list_method_of(e)) return *m;
      return attribute(eval(*e.items[0]), e.name, e);
    case ExprKind::Call:
      return call(e);
    case ExprKind::Subscript:
      return subscript(eval(*e.items[0]), *e.items[1], e.span);
    case ExprKind::BinOp: {
      // Int-literal arithmetic is exact in 128 bits: -2**63 fits although 2**63 does not.
      if (std::optional<int64_t> v = fold_int_literals(e)) return Val::int_(*v);
      Val a = eval(*e.items[0]);
      Val b = eval(*e.items[1]);
      Span at = e.span;
      // Carets go under the operator, tildes span the whole expression.
      if (e.op_span.line == e.span.line) {
        at = {e.span.line, e.op_span.col, e.span.end_line, e.span.end_col, e.span.col};
      }
      return binary(e.op, a, b, at);
    }
    case ExprKind::UnaryOp:
      if (std::optional<int64_t> v = fold_int_literals(e)) return Val::int_(*v);
      return unary(e.op, eval(*e.items[0]), e.span);
    case ExprKind::Compare: {
      Val left = eval(*e.items[0]);
      if (e.ops.size() == 1) return compare(e.ops[0], left, eval(*e.items[1]), e.span);
      for (size_t k = 0; k < e.ops.size(); ++k) {
        Val right = eval(*e.items[k + 1]);
        Val r = compare(e.ops[k], left, right, e.span);
        if (r.is_tensor()) {
          fail(e.span, "chained comparisons on tensors are not supported; combine them with '&'");
        }
        if (!r.i) return Val::bool_(false);
        left = right;
      }
      return Val::bool_(true);
    }
    case ExprKind::BoolOp: {
      // Python's short circuit: the value of the first operand that decides.
      Val v;
      for (const ExprPtr& item : e.items) {
        v = eval(*item);
        if (v.is_tensor()) {
          fail(item->span, "'" + e.op +
                               "' on a tensor depends on its data and is not "
                               "supported; use '" +
                               (e.op == "and" ? "&" : "|") + "' for elementwise logic");
        }
        bool t = truth(v, item->span);
        if (e.op == "and" ? !t : t) return v;
      }
      return v;
    }
    case ExprKind::IfExp: {
      Val c = eval(*e.items[1]);
      return truth(c, e.items[1]->span) ? eval(*e.items[0]) : eval(*e.items[2]);
    }
    case ExprKind::Slice:
      fail(e.span, "a slice is only allowed inside an index");
    case ExprKind::Starred:
      fail(e.span, "'*' is only allowed in calls and tuple displays");
    case ExprKind::Dict:
      fail(e.span, "dict literals are not supported yet");
    case ExprKind::Unsupported:
      fail(e.span, e.name + " are not supported yet");
  }
  fail(e.span, "unsupported expression");
}

Val Lowerer::attribute(const Val& base, const std::string& name, const Expr& e) {
  const Span& at = e.op_span.line ? e.op_span : e.span;
  switch (base.kind) {
    case Val::Kind::Poison:
      throw Abort{};
    case Val::Kind::Module: {
      std::string path = base.s;
      if (path == "torch.finfo" || path == "torch.iinfo") return type_info_attr(base, name, at);
      if (path == "torch.jit" &&
          (name == "annotate" || name == "is_scripting" || name == "is_tracing")) {
        return Val::named(Val::Kind::Builtin, path + "." + name);
      }
      if (path == "torch" && (name == "finfo" || name == "iinfo")) {
        return Val::named(Val::Kind::Builtin, path + "." + name);
      }
      if (path == "torch" && name == "nn") return Val::named(Val::Kind::Module, "torch.nn");
      if (path == "torch.nn" && name == "functional") return Val::named(Val::Kind::Module, "F");
      if (path == "torch" && name == "jit") return Val::named(Val::Kind::Module, "torch.jit");
      if (path == "torch" && name == "special")
        return Val::named(Val::Kind::Module, "torch.special");
      if (path == "torch" && name == "linalg") return Val::named(Val::Kind::Module, "torch.linalg");
      // torch.linalg.X is the op table's torch entry "linalg.X".
      if (path == "torch.linalg" && find_op(kTorch, "linalg." + name))
        return Val::named(Val::Kind::Builtin, "torch.linalg." + name);
      if (path == "torch" && name == "ops") return Val::named(Val::Kind::Module, "torch.ops");
      if (path == "torch.ops" || path == "torch.ops.aten") return aten_attribute(path, name, at);
      if (path == "torch" && name == "Tensor") return Val::named(Val::Kind::Type, "Tensor");
      if (path == "math") {
        if (name == "pi") return Val::float_(M_PI);
        if (name == "e") return Val::float_(M_E);
        if (name == "inf") return Val::float_(INFINITY);
        if (name == "nan") return Val::float_(NAN);
      }
      if (path == "torch") {
        if (name == "inf") return Val::float_(INFINITY);
        if (name == "nan") return Val::float_(NAN);
        if (name == "pi") return Val::float_(M_PI);
        if (std::optional<DType> d = torch_dtype(name)) return Val::dtype_(*d);
      }
      unsigned sp = path == "torch"           ? kTorch
                    : path == "F"             ? kF
                    : path == "math"          ? kMath
                    : path == "torch.special" ? kSpecial
                                              : 0u;
      if (sp && find_op(sp, name)) return Val::named(Val::Kind::Builtin, path + "." + name);
      std::string note;
      std::string msg =
          missing_name_message(path, name, sp ? op_names(sp) : std::vector<std::string>{}, note);
      fail(at, msg, note);
    }
    case Val::Kind::Tensor: {
      if (base.is_runtime_number()) {
        fail(at, "'" + kind_name(Val::tuple({}, base.number)) + "' object has no attribute '" + name + "'",
             "this is a Python number (from item(), int(), float() or bool()), not a tensor");
      }
      ir::Value* t = base.value;
      if (name == "shape") {
        std::vector<Val> dims;
        for (int64_t d = 0; d < t->type().rank(); ++d) dims.push_back(size_val(t, d));
        return Val::tuple(std::move(dims));
      }
      if (name == "dtype") return Val::dtype_(t->type().dtype());
      if (name == "ndim") return Val::int_(t->type().rank());
      if (name == "T" || name == "mT") {
        int64_t r = t->type().rank();
        if (name == "mT") {
          if (r < 2)
            fail(at, "tensor.mT needs a tensor of rank >= 2, got rank " + std::to_string(r));
          return view_of(
              apply1("transpose", {t}, {{"dim0", int64_t(-2)}, {"dim1", int64_t(-1)}}, at), base);
        }
        std::vector<int64_t> dims;
        for (int64_t d = r - 1; d >= 0; --d) dims.push_back(d);
        return view_of(apply1("permute", {t}, {{"dims", dims}}, at), base);
      }
      if (name == "device" || name == "requires_grad" || name == "grad" || name == "data") {
        fail(at, "tensor attribute '" + name + "' is not supported yet");
      }
      if (find_op(kMethod, name) || (name.size() > 1 && name.back() == '_' &&
                                     find_op(kMethod, name.substr(0, name.size() - 1)))) {
        Val m = Val::named(Val::Kind::Method, name);
        m.items.push_back(base);
        m.receiver = e.items[0].get();
        return m;
      }
      std::string note;
      std::string msg = missing_name_message("Tensor", name, op_names(kMethod), note);
      fail(at, msg, note);
    }
    case Val::Kind::List:
      if (name == "append" || name == "extend" || name == "insert" || name == "pop") {
        Val m = Val::named(Val::Kind::Method, name);
        m.items.push_back(base);
        return m;
      }
      break;
    case Val::Kind::Builtin:
      // torch.ops.aten.add.Tensor: the overload name picks nothing here (the
      // binding dispatches on the arguments, as torch.add does).
      if (base.s.starts_with("aten.")) return base;
      break;
    case Val::Kind::Tuple:
      // torch.max(x, 1).values / .indices (a named tuple in PyTorch)
      if (base.items.size() == 2 && (name == "values" || name == "indices")) {
        return base.items[name == "values" ? 0 : 1];
      }
      break;
    default:
      break;
  }
  fail(at, "'" + kind_name(base) + "' has no attribute '" + name + "'");
}

}  // namespace kiln::frontend
