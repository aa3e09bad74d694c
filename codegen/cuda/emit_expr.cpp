// Loop-IR expressions -> CUDA C expressions, lane by lane (see
// cuda_emitter.h for the semantics each form keeps). Expressions are pure, so
// a subexpression may be bound to a const local ahead of the statement that
// uses it (a Let's value, a vector load, a broadcast value) without changing
// what is computed: the loop evaluator evaluates every operand, including
// both sides of a Select, so each binding is one it would evaluate too.
#include <charconv>
#include <cmath>
#include <limits>

#include "codegen/cuda/emitter_internal.h"
#include "ir/loop/extra_math.h"
#include "ir/loop/visitor.h"
#include "ir/loop/warp.h"
#include "kiln/element.h"
#include "kiln/error.h"

namespace kiln::codegen::cuda {

using loop::BinOp;
using loop::CmpOp;
using loop::Expr;

const char* register_type(DType t) {
  switch (t) {
    case DType::Bool:
      return "bool";
    case DType::I8:
      return "kiln_i8";
    case DType::U8:
      return "kiln_u8";
    case DType::I16:
      return "kiln_i16";
    case DType::I32:
      return "kiln_i32";
    case DType::I64:
      return "kiln_i64";
    case DType::F16:
    case DType::BF16:
    case DType::F32:
      return "float";
    case DType::F64:
      return "double";
  }
  KILN_INTERNAL_CHECK(false, "cuda emitter: bad dtype " << int(t));
}

const char* memory_type(DType t) {
  switch (t) {
    case DType::Bool:
      return "kiln_u8";
    case DType::F16:
      return "kiln_f16";
    case DType::BF16:
      return "kiln_bf16";
    default:
      return register_type(t);
  }
}

namespace {

// `r` (a float holding an f16/bf16 operation's exact-in-float result)
// rounded to the type, as loop_eval rounds after every operation.
std::string rounded(DType t, std::string r) {
  if (t == DType::F16) return "kiln_round_f16(" + unparen(r) + ")";
  if (t == DType::BF16) return "kiln_round_bf16(" + unparen(r) + ")";
  return r;
}

std::string paren_if_negative(std::string s) {
  return s[0] == '-' ? "(" + s + ")" : s;
}

// The shortest text that reads back as `v` (float or double).
std::string float_text(double v, bool is_double) {
  const std::string cast = is_double ? "(double)" : "";
  if (std::isnan(v)) return cast + "NAN";
  if (std::isinf(v)) return v > 0 ? cast + "INFINITY" : "(-" + cast + "INFINITY)";
  char buf[64];
  std::to_chars_result r = is_double ? std::to_chars(buf, buf + sizeof buf, v)
                                     : std::to_chars(buf, buf + sizeof buf, static_cast<float>(v));
  std::string s(buf, r.ptr);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  if (!is_double) s += "f";
  return paren_if_negative(s);
}

// An integer of `t` as C text of exactly the register type.
std::string int_text(DType t, int64_t v) {
  switch (t) {
    case DType::Bool:
      return v ? "true" : "false";
    case DType::I64:
      if (v == std::numeric_limits<int64_t>::min()) return "(-9223372036854775807LL - 1)";
      return paren_if_negative(std::to_string(v) + "LL");
    case DType::I32:
      if (v == std::numeric_limits<int32_t>::min()) return "(-2147483647 - 1)";
      return paren_if_negative(std::to_string(v));
    default:
      return "(" + std::string(register_type(t)) + ")" + paren_if_negative(std::to_string(v));
  }
}

// IntImm values as loop_eval holds them: wrapped to the type.
int64_t wrapped(DType t, int64_t v) {
  switch (t) {
    case DType::Bool:
      return v != 0;
    case DType::I8:
      return static_cast<int8_t>(v);
    case DType::U8:
      return static_cast<uint8_t>(v);
    case DType::I16:
      return static_cast<int16_t>(v);
    case DType::I32:
      return static_cast<int32_t>(v);
    default:
      return v;
  }
}

std::string zero_of(DType t) {
  if (t == DType::F64) return "0.0";
  if (is_floating(t)) return "0.0f";
  return int_text(t, 0);
}

// A name, a member access or a constant: cheap to repeat in every lane.
bool is_simple(const std::string& s) {
  if (s.empty() || s.find(' ') != std::string::npos) return false;
  if (s.front() != '(') return s.find('(') == std::string::npos;
  return s.rfind("(-", 0) == 0 || s.rfind("(kiln_", 0) == 0;  // (-5), (kiln_i8)5
}

bool has_load(const Expr& e) {
  struct Finder : loop::IRVisitor {
    using IRVisitor::visit_node;
    bool found = false;
    void visit_node(const loop::Load*) override { found = true; }
  } f;
  f.visit(e);
  return f.found;
}

}  // namespace

bool contains_load(const loop::Expr& e) {
  return has_load(e);
}

std::string unparen(const std::string& s) {
  if (s.size() < 2 || s.front() != '(' || s.back() != ')') return s;
  int depth = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    depth += s[i] == '(' ? 1 : s[i] == ')' ? -1 : 0;
    if (depth == 0 && i + 1 < s.size()) return s;  // "(a) + (b)": not one pair
  }
  return s.substr(1, s.size() - 2);
}

// --------------------------------------------------------------------------- helpers

const KernelEmitter::BufInfo& KernelEmitter::buffer(const loop::Buf& b) const {
  auto it = bufs_.find(b.get());
  KILN_INTERNAL_CHECK(it != bufs_.end(),
                      "cuda emitter: kernel " << k_.name << " uses unbound buffer " << b->name);
  return it->second;
}

std::string KernelEmitter::bind(const std::string& ctype, const std::string& text,
                                const std::string& hint) {
  if (is_simple(text)) return text;
  std::string name = names_.fresh(hint);
  line("const " + ctype + " " + name + " = " + unparen(text) + ";");
  return name;
}

std::string KernelEmitter::bind_vector(DType t, const Value& v, const std::string& hint) {
  std::string name = names_.fresh(hint);
  std::string init;
  for (size_t k = 0; k < v.lanes.size(); ++k) init += (k ? ", " : "") + unparen(v.lanes[k]);
  line("const kiln_vec<" + std::string(register_type(t)) + ", " + std::to_string(v.lanes.size()) +
       "> " + name + " = {{" + init + "}};");
  return name;
}

std::string KernelEmitter::read(const BufInfo& b, const std::string& index) {
  std::string element = b.name + "[" + unparen(index) + "]";
  switch (b.dtype) {
    case DType::F16:
      return "kiln_f16_to_f32(" + element + ")";
    case DType::BF16:
      return "kiln_bf16_to_f32(" + element + ")";
    case DType::Bool:
      return "(" + element + " != 0)";
    default:
      return element;
  }
}

std::string KernelEmitter::to_memory(DType t, const std::string& v) {
  switch (t) {
    case DType::F16:
      return "kiln_f32_to_f16(" + v + ")";
    case DType::BF16:
      return "kiln_f32_to_bf16(" + v + ")";
    case DType::Bool:
      return "(kiln_u8)" + v;
    default:
      return v;
  }
}

std::optional<std::string> KernelEmitter::dense_base(const BufInfo& b, const Expr& index) {
  const loop::Ramp* r = index.as<loop::Ramp>();
  int64_t stride = 0;
  if (!b.vector_access || !r || !loop::is_const_int(r->stride, &stride) || stride != 1) {
    return std::nullopt;
  }
  return plain(emit(r->base), 0);
}

// --------------------------------------------------------------------------- expressions

std::string KernelEmitter::scalar(const Expr& e) {
  KILN_INTERNAL_CHECK(e.type().lanes == 1,
                      "cuda emitter: a vector where " << k_.name << " needs a scalar");
  return emit(e).lanes[0];
}

Value KernelEmitter::literal(const Expr& e) {
  DType t = e.type().dtype;
  Value v;
  if (const loop::IntImm* i = e.as<loop::IntImm>()) {
    int64_t x = wrapped(t, i->value);
    v.lanes = {int_text(t, x)};
    if (t != DType::Bool && x >= std::numeric_limits<int32_t>::min() + 1 &&
        x <= std::numeric_limits<int32_t>::max()) {
      v.bare = {paren_if_negative(std::to_string(x))};
    }
    return v;
  }
  double x = e.as<loop::FloatImm>()->value;
  switch (t) {
    case DType::F32:
      x = static_cast<float>(x);
      break;
    case DType::F16:
      x = half_to_float(float_to_half(static_cast<float>(x)));
      break;
    case DType::BF16:
      x = bf16_to_float(float_to_bf16(static_cast<float>(x)));
      break;
    default:
      break;
  }
  v.lanes = {float_text(x, t == DType::F64)};
  v.data = true;
  return v;
}

Value KernelEmitter::emit(const Expr& e) {
  KILN_INTERNAL_CHECK(e.defined(), "cuda emitter: undefined expression in " << k_.name);
  const int n = e.type().lanes;
  switch (e->kind) {
    case loop::NodeKind::IntImm:
    case loop::NodeKind::FloatImm:
      return literal(e);
    case loop::NodeKind::Var: {
      const std::string& name = e.as<loop::Var>()->name;
      auto it = vars_.find(name);
      KILN_INTERNAL_CHECK(it != vars_.end(),
                          "cuda emitter: kernel " << k_.name << " uses unbound variable " << name);
      Value v;
      v.data = it->second.data || is_floating(e.type().dtype);
      if (it->second.lanes == 1) {
        v.lanes = {it->second.name};
      } else {
        for (int k = 0; k < n; ++k)
          v.lanes.push_back(it->second.name + ".v[" + std::to_string(k) + "]");
      }
      return v;
    }
    case loop::NodeKind::Cast:
      return cast(e.as<loop::Cast>());
    case loop::NodeKind::Binary:
      return binary(e.as<loop::Binary>());
    case loop::NodeKind::Compare:
      return compare(e.as<loop::Compare>());
    case loop::NodeKind::Not: {
      Value a = emit(e.as<loop::Not>()->a);
      for (std::string& l : a.lanes) l = "(!" + l + ")";
      a.bare.clear();
      return a;
    }
    case loop::NodeKind::Select: {
      const loop::Select* s = e.as<loop::Select>();
      Value c = emit(s->cond), t = emit(s->true_value), f = emit(s->false_value);
      Value r;
      r.data = t.data || f.data;
      for (int k = 0; k < n; ++k) {
        r.lanes.push_back("(" + c.lane(k) + " ? " + typed(t, k) + " : " + typed(f, k) + ")");
      }
      return r;
    }
    case loop::NodeKind::Load:
      return load(e.as<loop::Load>());
    case loop::NodeKind::Ramp:
      return ramp(e.as<loop::Ramp>());
    case loop::NodeKind::Broadcast: {
      const loop::Broadcast* b = e.as<loop::Broadcast>();
      Value v = emit(b->value);
      std::string x = bind(register_type(b->value.type().dtype), v.lanes[0], "bc");
      Value r;
      r.data = v.data;
      r.lanes.assign(size_t(n), x);
      return r;
    }
    case loop::NodeKind::Call:
      return call(e.as<loop::Call>());
    case loop::NodeKind::Let: {
      const loop::Let* l = e.as<loop::Let>();
      const std::string& name = l->var.as<loop::Var>()->name;
      Value v = emit(l->value);
      VarInfo info;
      info.lanes = l->value.type().lanes;
      info.data = v.data;
      DType t = l->value.type().dtype;
      if (info.lanes == 1) {
        info.name = names_.fresh(name);
        line("const " + std::string(register_type(t)) + " " + info.name + " = " +
             unparen(v.lanes[0]) + ";");
      } else {
        info.name = bind_vector(t, v, name);
      }
      Value result;
      with_var(name, info, [&] { result = emit(l->body); });
      return result;
    }
    case loop::NodeKind::For:
    case loop::NodeKind::Store:
    case loop::NodeKind::Block:
    case loop::NodeKind::Allocate:
    case loop::NodeKind::IfThenElse:
    case loop::NodeKind::LetStmt:
    case loop::NodeKind::Barrier:
    case loop::NodeKind::ExternCall:
      break;
  }
  KILN_INTERNAL_CHECK(false,
                      "cuda emitter: not an expression kind " << loop::node_kind_name(e->kind));
}

Value KernelEmitter::binary(const loop::Binary* op) {
  Value a = emit(op->a), b = emit(op->b);
  const DType t = op->a.type().dtype;
  const int n = op->type.lanes;
  Value r;
  r.data = a.data || b.data;
  const std::string T = register_type(t);
  const bool narrow = t == DType::I8 || t == DType::U8 || t == DType::I16;
  for (int k = 0; k < n; ++k) {
    const std::string x = typed(a, k), y = typed(b, k);
    // Plain C operands: one constant may go untyped, next to a typed partner.
    const std::string px = a.has_bare() && !b.has_bare() ? a.bare_lane(k) : x;
    const std::string py = b.has_bare() && !a.has_bare() ? b.bare_lane(k) : y;
    auto infix = [&](const char* o) { return "(" + px + " " + o + " " + py + ")"; };
    auto fn = [&](const char* f) { return std::string(f) + "(" + x + ", " + y + ")"; };
    std::string s;
    if (is_floating(t)) {
      switch (op->op) {
        case BinOp::Add:
          s = rounded(t, "(" + x + " + " + y + ")");
          break;
        case BinOp::Sub:
          s = rounded(t, "(" + x + " - " + y + ")");
          break;
        case BinOp::Mul:
          s = rounded(t, "(" + x + " * " + y + ")");
          break;
        case BinOp::Div:
          s = rounded(t, "(" + x + " / " + y + ")");
          break;
        case BinOp::Mod:
          s = rounded(t, fn("kiln_mod"));
          break;
        case BinOp::Min:  // one of the operands, already of the type
          s = fn("kiln_min");
          break;
        case BinOp::Max:
          s = fn("kiln_max");
          break;
        case BinOp::And:
        case BinOp::Or:
        case BinOp::BitAnd:
        case BinOp::BitOr:
        case BinOp::BitXor:
          KILN_INTERNAL_CHECK(false, "cuda emitter: " << loop::binop_name(op->op) << " on floats");
      }
    } else if (t == DType::Bool) {
      // loop_eval computes on 0/1 and converts back with x != 0.
      switch (op->op) {
        case BinOp::And:
        case BinOp::BitAnd:
        case BinOp::Mul:
        case BinOp::Min:
        case BinOp::Div:  // a / 1 == a, a / 0 == 0
          s = "(" + x + " && " + y + ")";
          break;
        case BinOp::Or:
        case BinOp::BitOr:
        case BinOp::Add:
        case BinOp::Max:
          s = "(" + x + " || " + y + ")";
          break;
        case BinOp::BitXor:
        case BinOp::Sub:
          s = "(" + x + " != " + y + ")";
          break;
        case BinOp::Mod:  // a % 1 == a % 0 == 0
          s = "false";
          break;
      }
    } else {
      switch (op->op) {
        case BinOp::Add:
        case BinOp::Sub:
        case BinOp::Mul: {
          const char* o = op->op == BinOp::Add ? "+" : op->op == BinOp::Sub ? "-" : "*";
          if (narrow) {  // computed in int, which cannot overflow; the cast wraps
            s = "(" + T + ")" + infix(o);
          } else if (r.data) {
            s = fn(op->op == BinOp::Add   ? "kiln_add_wrap"
                   : op->op == BinOp::Sub ? "kiln_sub_wrap"
                                          : "kiln_mul_wrap");
          } else {
            s = infix(o);
          }
          break;
        }
        case BinOp::Div:
          s = fn("kiln_div");
          break;
        case BinOp::Mod:
          s = fn("kiln_mod");
          break;
        case BinOp::Min:
          s = fn("kiln_min");
          break;
        case BinOp::Max:
          s = fn("kiln_max");
          break;
        case BinOp::BitAnd:
        case BinOp::BitOr:
        case BinOp::BitXor: {
          const char* o = op->op == BinOp::BitAnd ? "&" : op->op == BinOp::BitOr ? "|" : "^";
          s = narrow ? "(" + T + ")" + infix(o) : infix(o);
          break;
        }
        case BinOp::And:
        case BinOp::Or:
          KILN_INTERNAL_CHECK(
              false, "cuda emitter: " << loop::binop_name(op->op) << " on " << dtype_name(t));
      }
    }
    r.lanes.push_back(std::move(s));
  }
  return r;
}

Value KernelEmitter::compare(const loop::Compare* op) {
  Value a = emit(op->a), b = emit(op->b);
  const char* o = "==";
  switch (op->op) {
    case CmpOp::EQ:
      o = "==";
      break;
    case CmpOp::NE:  // true for NaN, as in loop_eval
      o = "!=";
      break;
    case CmpOp::LT:
      o = "<";
      break;
    case CmpOp::LE:
      o = "<=";
      break;
    case CmpOp::GT:
      o = ">";
      break;
    case CmpOp::GE:
      o = ">=";
      break;
  }
  Value r;
  r.data = a.data || b.data;
  for (int k = 0; k < op->type.lanes; ++k) {
    const std::string px = a.has_bare() && !b.has_bare() ? a.bare_lane(k) : typed(a, k);
    const std::string py = b.has_bare() && !a.has_bare() ? b.bare_lane(k) : typed(b, k);
    r.lanes.push_back("(" + px + " " + o + " " + py + ")");
  }
  return r;
}

Value KernelEmitter::cast(const loop::Cast* op) {
  Value v = emit(op->value);
  const DType from = op->value.type().dtype, to = op->type.dtype;
  if (from == to) return v;
  const std::string T = register_type(to);
  Value r;
  r.data = v.data || is_floating(from);
  for (int k = 0; k < op->type.lanes; ++k) {
    const std::string x = typed(v, k);
    std::string s;
    if (to == DType::Bool) {
      s = "(" + x + " != 0)";  // NaN != 0 is true
    } else if (from == DType::Bool) {
      s = is_floating(to)
              ? "(" + x + " ? " + float_text(1, to == DType::F64) + " : " + zero_of(to) + ")"
              : "(" + T + ")" + x;
    } else if (is_floating(from) && is_floating(to)) {
      if (to == DType::F64) {
        s = "(double)" + x;
      } else if (from == DType::F64) {
        s = to == DType::F32   ? "(float)" + x
            : to == DType::F16 ? "kiln_round_f16_f64(" + x + ")"
                               : "kiln_round_bf16_f64(" + x + ")";
      } else {
        s = to == DType::F32 ? x : rounded(to, x);  // f16/bf16 values are floats already
      }
    } else if (is_floating(from)) {
      s = std::string(from == DType::F64 ? "kiln_f64_to_i64_sat(" : "kiln_f32_to_i64_sat(") + x +
          ")";
      if (to != DType::I64) s = "(" + T + ")" + s;
    } else if (is_floating(to)) {
      if (to == DType::F32 || to == DType::F64) {
        s = "(" + T + ")" + x;
      } else {
        // One rounding from the integer (via float rounded to odd).
        std::string wide = from == DType::I64 ? x : "(kiln_i64)" + x;
        s = std::string(to == DType::F16 ? "kiln_round_f16_i64(" : "kiln_round_bf16_i64(") + wide +
            ")";
      }
    } else {
      s = "(" + T + ")" + x;  // ints: C's conversions wrap and extend as loop_eval does
    }
    r.lanes.push_back(std::move(s));
  }
  return r;
}

Value KernelEmitter::load(const loop::Load* op) {
  const BufInfo& b = buffer(op->buf);
  const int n = op->type.lanes;
  Value r;
  r.data = true;
  if (!op->predicate.defined() && n > 1) {
    if (std::optional<std::string> base = dense_base(b, op->index)) {
      const std::string vec =
          "kiln_vec<" + std::string(memory_type(b.dtype)) + ", " + std::to_string(n) + ">";
      std::string name = names_.fresh(b.name + "_v");
      line("const " + vec + " " + name + " = kiln_vload<" + memory_type(b.dtype) + ", " +
           std::to_string(n) + ">(" + b.name + " + " + *base + ");");
      BufInfo lanes = b;
      lanes.name = name + ".v";
      for (int k = 0; k < n; ++k) r.lanes.push_back(read(lanes, std::to_string(k)));
      return r;
    }
  }
  Value idx = emit(op->index);
  Value pred;
  if (op->predicate.defined()) pred = emit(op->predicate);
  for (int k = 0; k < n; ++k) {
    std::string x = read(b, plain(idx, k));
    if (op->predicate.defined()) {
      // A masked lane reads 0 and touches no memory: ?: evaluates one side.
      x = "(" + pred.lane(k) + " ? " + x + " : " + zero_of(b.dtype) + ")";
    }
    r.lanes.push_back(std::move(x));
  }
  return r;
}

Value KernelEmitter::ramp(const loop::Ramp* op) {
  const DType t = op->base.type().dtype;
  Value base = emit(op->base), stride = emit(op->stride);
  const std::string T = register_type(t);
  Value r;
  r.data = base.data || stride.data;
  int64_t step = 0, first = 0;
  const bool const_step = loop::is_const_int(op->stride, &step);
  if (const_step && loop::is_const_int(op->base, &first) && !is_floating(t)) {
    // Constant lanes (a local array's 0, 1, 2, 3): literals, as loop_eval wraps them.
    for (int k = 0; k < op->lanes; ++k) {
      Value c = literal(
          loop::IntImm::make({t, 1}, int64_t(uint64_t(first) + uint64_t(k) * uint64_t(step))));
      r.lanes.push_back(c.lanes[0]);
      if (c.has_bare()) r.bare.push_back(c.bare[0]);
    }
    if (r.bare.size() != r.lanes.size()) r.bare.clear();
    return r;
  }
  const std::string b = bind(T, base.lanes[0], "base");
  const std::string s = bind(T, stride.lanes[0], "stride");
  for (int k = 0; k < op->lanes; ++k) {
    std::string lane;
    if (is_floating(t)) {
      // As loop_eval: base + k * stride in double, rounded to the type once.
      std::string d = "((double)" + b + " + " + std::to_string(k) + ".0 * (double)" + s + ")";
      lane = t == DType::F64 ? d : t == DType::F32 ? "(float)" + d : rounded(t, "(float)" + d);
    } else if (k == 0) {
      lane = b;
    } else if (r.data && (t == DType::I32 || t == DType::I64)) {
      lane = "kiln_add_wrap(" + b + ", kiln_mul_wrap(" + int_text(t, k) + ", " + s + "))";
    } else {
      std::string off = const_step && std::abs(step) < (int64_t{1} << 30)
                            ? paren_if_negative(std::to_string(step * k))
                        : k == 1 ? s
                                 : std::to_string(k) + " * " + s;
      lane = "(" + b + " + " + off + ")";
      if (t != DType::I32 && t != DType::I64) lane = "(" + T + ")" + lane;
    }
    r.lanes.push_back(std::move(lane));
  }
  return r;
}

Value KernelEmitter::call(const loop::Call* op) {
  const int n = op->type.lanes;
  KILN_INTERNAL_CHECK(!op->args.empty(), "cuda emitter: call " << op->name << " without arguments");
  if (std::optional<BinOp> w = loop::warp_reduce_op(op->name)) return warp_reduce(op, *w);
  const DType at = op->args[0].type().dtype;
  std::vector<Value> args;
  for (const Expr& a : op->args) {
    Value v = emit(a);
    if (a.type().lanes == 1 && n > 1) {  // a scalar argument of a vector call: every lane
      v.lanes = {bind(register_type(a.type().dtype), v.lanes[0], "arg")};
    }
    if (a.type().dtype != at) {  // loop_eval computes every argument in the first's type
      for (std::string& l : v.lanes) l = "(" + std::string(register_type(at)) + ")" + l;
    }
    args.push_back(std::move(v));
  }
  const std::string& name = op->name;
  static const std::map<std::string, size_t> kFloatMath = {
      {"exp", 1},   {"log", 1},  {"log1p", 1}, {"expm1", 1},   {"sqrt", 1}, {"rsqrt", 1},
      {"sin", 1},   {"cos", 1},  {"tanh", 1},  {"sigmoid", 1}, {"erf", 1},  {"pow", 2},
      {"floor", 1}, {"ceil", 1}, {"round", 1}, {"trunc", 1},   {"abs", 1},  {"fma", 3}};
  const loop::ExtraMath* extra = loop::find_extra_math(name);
  Value r;
  r.data = true;
  for (int k = 0; k < n; ++k) {
    const std::string x = typed(args[0], k);
    std::string s;
    if (name == "checked_index") {
      // In range or 0; the CUDA backend has no status word yet (see docs/backends.md).
      const std::string nn = typed(args[1], k);
      s = "((" + x + " >= 0 && " + x + " < " + nn + ") ? " + x + " : 0)";
    } else if (name == "isnan") {
      s = is_floating(at) ? "kiln_isnan(" + x + ")" : "false";
    } else if (!is_floating(at)) {
      if (name == "abs") {
        s = "kiln_abs(" + x + ")";
      } else if (name == "floor" || name == "ceil" || name == "round" || name == "trunc") {
        s = x;  // integers are whole already
      } else {
        KILN_INTERNAL_CHECK(false, "cuda emitter: " << name << " of " << dtype_name(at));
      }
    } else {
      auto it = kFloatMath.find(name);
      const bool known = extra ? size_t(extra->arity) == args.size()
                               : it != kFloatMath.end() && it->second == args.size();
      KILN_INTERNAL_CHECK(known, "cuda emitter: unknown call " << name << " with " << args.size()
                                                               << " arguments in " << k_.name);
      s = "kiln_" + name + "(";
      for (size_t i = 0; i < args.size(); ++i) s += (i ? ", " : "") + typed(args[i], k);
      s = rounded(op->type.dtype, s + ")");
    }
    r.lanes.push_back(std::move(s));
  }
  return r;
}

}  // namespace kiln::codegen::cuda
