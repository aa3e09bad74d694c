// Python numbers whose value is known only at run time: `t.item()`,
// `int(t)`, `float(t)`, `bool(t)` on a one-element tensor.
//
// Such a number stays in the graph: it is a 0-d tensor (i64 for int, f64 for
// float, bool for bool, as Python holds them) marked with the Python kind
// (Val::number). Arithmetic between such numbers follows Python (int / int is
// a float, any float makes a float); next to a real tensor the number is cast
// as PyTorch promotes a Python scalar ("wrapped number"): it never widens the
// tensor's dtype within its category (f16 * float stays f16, i32 + int stays
// i32), and a float next to an integer tensor gives the default dtype (f32).
//
// Where a compile-time value is needed (a shape, a range() bound, an `if`
// condition, a dim) the value cannot be had: the error says so and names the
// static alternative.
#include <algorithm>
#include <cstdint>

#include "frontend/lower.h"

namespace kiln::frontend {

namespace {

const char* python_name(Val::Kind k) {
  return k == Val::Kind::Int ? "int" : k == Val::Kind::Float ? "float" : "bool";
}

DType held_as(Val::Kind k) {
  return k == Val::Kind::Int ? DType::I64 : k == Val::Kind::Float ? DType::F64 : DType::Bool;
}

Val::Kind kind_of_dtype(DType d) {
  if (d == DType::Bool) return Val::Kind::Bool;
  return is_floating(d) ? Val::Kind::Float : Val::Kind::Int;
}

// The Python kind of a number operand (run-time or compile-time).
Val::Kind number_kind(const Val& v) {
  return v.is_runtime_number() ? v.number : v.kind;
}

bool is_comparison(const std::string& op) {
  return op == "==" || op == "!=" || op == "<" || op == "<=" || op == ">" || op == ">=";
}

}  // namespace

void Lowerer::runtime_value_needed(const Val& v, const Span& at, const std::string& use,
                                   const std::string& instead) {
  fail(at,
       use + " needs a value known at compile time, but this " + python_name(v.number) +
           " comes from tensor data (item(), int(), float() or bool() of a tensor) and is "
           "known only at run time",
       instead);
}

Val Lowerer::to_runtime_number(const Val& t, Val::Kind kind, const std::string& how,
                               const Span& at) {
  if (t.kind == Val::Kind::Poison) throw Abort{};
  ir::Value* v = t.value;
  if (!t.is_runtime_number()) {
    const ir::Dims& dims = v->type().dims();
    int64_t n = 1;
    for (const ir::Dim& d : dims) {
      if (!d.is_static()) {
        fail(at, how + " needs a tensor with one element, but this tensor has the shape " +
                     dims_str(dims) + ", whose size is known only at run time");
      }
      n *= d.value;
    }
    if (n != 1) {
      fail(at, how + ": only one-element tensors can be converted to Python scalars; this "
                     "tensor has the shape " + dims_str(dims),
           "index it first (t[0, 1].item()) or reduce it (t.sum().item())");
    }
    if (!dims.empty()) v = apply1("reshape", {v}, {{"shape", std::vector<int64_t>{}}}, at);
  }
  if (kind == Val::Kind::None) kind = kind_of_dtype(v->type().dtype());  // item()
  Val r = fresh(cast(v, held_as(kind), at));
  r.number = kind;
  return r;
}

ir::Value* Lowerer::number_operand(const Val& v, ir::Value* other, const Span& at) {
  if (!v.is_runtime_number()) return operand(v, at);
  if (!other || !other->type().is_tensor()) return v.value;
  DType d = other->type().dtype();
  DType to = d;  // a bool never widens the other operand
  if (v.number == Val::Kind::Int && d == DType::Bool) to = DType::I64;
  if (v.number == Val::Kind::Float && !is_floating(d)) to = default_float();
  return cast(v.value, to, at);
}

Val Lowerer::runtime_binary(const std::string& op, const Val& a, const Val& b, const Span& at) {
  bool a_plain = a.is_tensor() && !a.is_runtime_number();
  bool b_plain = b.is_tensor() && !b.is_runtime_number();
  if (a_plain || b_plain) {
    // A Python number next to a tensor: cast as a wrapped number would be.
    Val x = a_plain ? a : fresh(number_operand(a, b.value, at));
    Val y = b_plain ? b : fresh(number_operand(b, a.value, at));
    return binary(op, x, y, at);
  }
  // Both are Python numbers, at least one of them known only at run time.
  Val::Kind ka = number_kind(a), kb = number_kind(b), result;
  bool any_float = ka == Val::Kind::Float || kb == Val::Kind::Float;
  bool both_bool = ka == Val::Kind::Bool && kb == Val::Kind::Bool;
  if (op == "@") fail(at, "unsupported operand types for @: numbers");
  if (op == "&" || op == "|" || op == "^") {
    if (any_float) {
      fail(at, std::string("unsupported operand types for ") + op + ": '" + python_name(ka) +
                   "' and '" + python_name(kb) + "'");
    }
    result = both_bool ? Val::Kind::Bool : Val::Kind::Int;
  } else if (is_comparison(op)) {
    result = Val::Kind::Bool;
  } else if (op == "/") {
    result = Val::Kind::Float;
  } else {
    result = any_float ? Val::Kind::Float : Val::Kind::Int;
  }
  // The operands are computed in the dtype Python would use.
  DType work = held_as(is_comparison(op) ? (any_float ? Val::Kind::Float : Val::Kind::Int)
                                         : (op == "/" ? Val::Kind::Float : result));
  auto side = [&](const Val& v) {
    if (!v.is_tensor()) return v;  // a compile-time number: a wrapped scalar
    return fresh(cast(v.value, work, at));
  };
  Val x = side(a), y = side(b);
  Val r = binary(op, x, y, at);
  if (r.is_tensor()) {
    if (r.value->type().dtype() != held_as(result)) r = fresh(cast(r.value, held_as(result), at));
    r.number = result;
  }
  return r;
}

}  // namespace kiln::frontend

namespace kiln::frontend {

void add_scalar_ops(std::vector<OpEntry>& t) {
  // aten::slice(self, dim=0, start=None, end=None, step=1), as TorchScript
  // prints `x[a:b:c]`; the bounds clamp like Python's.
  t.push_back(
      {"slice", kMethod, "input, dim=0, start=None, end=None, step=1", [](Bound& b) {
         ir::Value* x = b.tensor("input");
         int64_t r = x->type().rank(), dim = b.int_("dim"), step = b.int_("step");
         if (dim < -r || dim >= r) {
           b.fail("dim", "dimension " + std::to_string(dim) + " is out of range for a tensor of rank " +
                             std::to_string(r));
         }
         if (dim < 0) dim += r;
         if (step <= 0) b.fail("step", "slice step must be positive");
         std::optional<int64_t> start, end;
         if (!b.is_none("start")) start = b.int_("start");
         if (!b.is_none("end")) end = b.int_("end");
         const ir::Dim& d = x->type().dims()[size_t(dim)];
         int64_t lo = start.value_or(0), hi = end.value_or(INT64_MAX);
         if (d.is_static()) {
           int64_t n = d.value;
           if (lo < 0) lo += n;
           if (hi < 0) hi += n;
           lo = std::clamp<int64_t>(lo, 0, n);
           hi = std::clamp<int64_t>(hi, lo, n);
         } else if (lo < 0 || hi < 0) {
           b.fail(lo < 0 ? "start" : "end",
                  "a negative bound needs a static size, but size " + std::to_string(dim) +
                      " is the symbolic size '" + d.symbol + "'");
         }
         ir::Attrs attrs{{"dim", dim}, {"start", lo}, {"end", hi}, {"step", step}};
         return b.L.view_of(b.L.apply1("slice", {x}, attrs, b.call.callee), b.val("input"));
       }});
  t.push_back({"item", kMethod, "input", [](Bound& b) {
                 return b.L.to_runtime_number(b.val("input"), Val::Kind::None, "Tensor.item()",
                                              b.call.callee);
               }});
}

}  // namespace kiln::frontend

// --- aten spellings found in TorchScript code -------------------------------------------

namespace kiln::frontend {

Val Lowerer::aten_attribute(const std::string& path, const std::string& name, const Span& at) {
  if (path == "torch.ops") {
    if (name == "aten") return Val::named(Val::Kind::Module, "torch.ops.aten");
    fail(at, "'torch.ops." + name + "' is not supported: only the aten namespace (torch.ops.aten.X) "
             "is, as the torch.X functions and Tensor.X methods");
  }
  if (find_op(kTorch, name) || find_op(kMethod, name)) return Val::named(Val::Kind::Builtin, "aten." + name);
  fail(at, "'torch.ops.aten." + name + "' has no Kiln binding",
       "aten ops resolve to the torch." + name + " function or the Tensor." + name +
           " method, and Kiln has neither; see `kiln ops` for what it has");
}

}  // namespace kiln::frontend
