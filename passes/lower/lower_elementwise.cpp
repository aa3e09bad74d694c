// Lowerings of the unary and binary arithmetic ops and the tensor factories
// (arange, full). Each output element is an expression of the operands'
// elements at the broadcast index, with the registry's semantics:
//   - operands are cast to the dtype the registry inferred (f16/bf16 add, sub,
//     mul and div read 0-dim and scalar operands at f32, like the reference);
//   - the math runs in a working dtype — f32 for f16/bf16 (one rounding at the
//     end, as the reference rounds once), i64 for bool (then != 0) — else the
//     output dtype, where integers wrap;
//   - integer div "floor" and remainder follow Python's signs; "trunc" is built
//     from floor division; division by zero gives 0 (the reference throws);
//   - maximum/minimum/relu/clamp propagate NaN (loop IR float Min/Max do).
#include <cmath>
#include <numbers>

#include "kiln/element.h"
#include "passes/lower/lower_internal.h"

namespace kiln::passes::lower {
namespace {

using namespace kiln::loop;  // NOLINT

DType work_dtype(DType out) {
  if (out == DType::F16 || out == DType::BF16) return DType::F32;
  if (out == DType::Bool) return DType::I64;
  return out;
}

// An elementwise output over `which` inputs: f(args at the broadcast index).
Operand map_inputs(NodeLowering& n, std::initializer_list<size_t> which,
                   std::function<Expr(const std::vector<Expr>&)> f) {
  std::vector<Operand> ins;
  for (size_t i : which) ins.push_back(n.in(i));
  return tensor_operand(
      n.out_dtype(), n.out_dims(),
      [ins, f](const Index& idx) {
        std::vector<Expr> args;
        for (const Operand& o : ins) {
          args.push_back(o.is_none() ? Expr() : o.broadcast_at(idx));
        }
        return f(args);
      },
      n.out_type());
}

// --- unary ---------------------------------------------------------------------------------

using UnaryExpr = std::function<Expr(const Expr& x)>;  // x in the working dtype

PointwiseFn unary(UnaryExpr float_fn, UnaryExpr int_fn) {
  return [float_fn, int_fn](NodeLowering& n) {
    DType out = n.out_dtype();
    DType work = work_dtype(out);
    return std::vector<Operand>{map_inputs(n, {0}, [=](const std::vector<Expr>& a) {
      Expr x = cast_to(cast_to(a[0], out), work);
      return cast_to(is_floating(out) ? float_fn(x) : int_fn(x), out);
    })};
  };
}

UnaryExpr intrinsic(const char* name) {
  return [name](const Expr& x) { return call(name, {x}); };
}

Expr float_const(const Expr& like, double v) {
  return imm(like.type().dtype, v);
}

Expr gelu(const Expr& x, bool tanh_form) {
  Expr half = float_const(x, 0.5), one = float_const(x, 1.0);
  if (!tanh_form) {
    return half * x * (one + call("erf", {x * float_const(x, std::numbers::sqrt2 / 2)}));
  }
  const double k = std::sqrt(2.0 / std::numbers::pi);
  Expr inner = float_const(x, k) * (x + float_const(x, 0.044715) * x * x * x);
  return half * x * (one + call("tanh", {inner}));
}

Expr sign_of(const Expr& x) {
  DType t = x.type().dtype;
  Expr zero = imm(t, 0);
  return cast_to(zero < x, t) - cast_to(x < zero, t);
}

UnaryExpr identity() {
  return [](const Expr& x) { return x; };
}

UnaryExpr no_int(const char* op) {
  return [op](const Expr&) -> Expr {
    KILN_INTERNAL_CHECK(false, op << ": integer lowering reached for a float-only op");
  };
}

void add_float_math(LoweringTable& t, const char* name, UnaryExpr f) {
  t[name].pointwise = unary(f, no_int(name));
}

// --- binary ----------------------------------------------------------------------------------

struct BinaryArgs {
  Expr a, b;  // in the working dtype
  DType out;  // the output dtype
  DType work;
  const ir::Attrs* attrs;  // the node's (the graph outlives the lowering)
  LowerContext* ctx;
};

// Called whenever a consumer reads the element, possibly after the node's own
// NodeLowering is gone, so it sees only what BinaryArgs carries.
using BinaryExpr = std::function<Expr(const BinaryArgs&)>;

// `opmath`: f16/bf16 compute reads wrapped (scalar, 0-dim) operands at f32.
PointwiseFn binary(BinaryExpr fn, bool opmath) {
  return [fn, opmath](NodeLowering& n) {
    DType out = n.out_dtype();
    DType work = work_dtype(out);
    auto as_dtype = [&](const Operand& o) {
      bool reduced = out == DType::F16 || out == DType::BF16;
      bool wrapped = o.kind == Operand::Kind::Scalar || o.rank() == 0;
      return opmath && reduced && wrapped ? DType::F32 : out;
    };
    DType as_a = as_dtype(n.in(0)), as_b = as_dtype(n.in(1));
    const ir::Attrs* attrs = &n.node.attrs();
    LowerContext* ctx = &n.ctx;
    return std::vector<Operand>{map_inputs(n, {0, 1}, [=](const std::vector<Expr>& a) {
      BinaryArgs args{cast_to(cast_to(a[0], as_a), work),
                      cast_to(cast_to(a[1], as_b), work),
                      out,
                      work,
                      attrs,
                      ctx};
      return cast_to(fn(args), out);
    })};
  };
}

Expr alpha_times(const BinaryArgs& x) {
  if (is_floating(x.out)) {
    double alpha = x.attrs->get_float("alpha");
    if (alpha == 1.0) return x.b;
    return imm(x.work, alpha) * x.b;
  }
  int64_t alpha = x.attrs->get_int("alpha");
  if (alpha == 1) return x.b;
  return imm_int(x.work, alpha) * x.b;
}

std::string rounding(const ir::Attrs& attrs) {
  if (attrs.is_none("rounding_mode")) return "";
  return attrs.get_string("rounding_mode");
}

// Python's floor division of floats, as the reference computes it: the exact
// quotient of (a - mod) / b, rounded to the nearest integer below.
Expr float_floor_divide(const Expr& a, const Expr& b) {
  DType t = a.type().dtype;
  Expr zero = imm(t, 0), one = imm(t, 1);
  Expr q = a / b;
  Expr div = (a - (a % b)) / b;
  Expr fl = call("floor", {div});
  fl = Select::make(div - fl > imm(t, 0.5), fl + one, fl);
  // A zero quotient keeps the sign of a / b (-0.0 when they differ).
  Expr negative = q < zero || (q == zero && one / q < zero);
  Expr signed_zero = Select::make(negative, imm(t, -0.0), zero);
  Expr r = Select::make(div == zero, signed_zero, fl);
  return Select::make(b == zero, q, r);
}

Expr int_trunc_divide(const Expr& a, const Expr& b) {
  DType t = a.type().dtype;
  Expr zero = imm_int(t, 0);
  Expr q = a / b, r = a % b;
  // Floor and truncation differ when the remainder is non-zero and the
  // operands' signs differ.
  Expr fix = r != zero && ((a < zero) != (b < zero));
  return Select::make(fix, q + imm_int(t, 1), q);
}

// Integer power by squaring over the exponent's bits, wrapping like the
// reference; negative exponents: 1 and -1 stay (+-1), others give 0.
Expr int_power(const Expr& base, const Expr& exp, LowerContext& ctx) {
  DType t = base.type().dtype;
  Expr one = imm_int(t, 1), zero = imm_int(t, 0);
  const int bits = static_cast<int>(dtype_size(t)) * 8 - 1;
  Expr result = one, b = base;
  // Unrolled: result *= (exp >> k & 1) ? b : 1; b *= b. Lets keep the tree linear.
  std::vector<std::pair<Expr, Expr>> lets;
  Expr e = exp;
  for (int k = 0; k < bits; ++k) {
    Expr bit = (e / imm_int(t, int64_t{1} << k)) % imm_int(t, 2);
    Expr r_var = Var::make({t, 1}, ctx.fresh("pw_r"));
    Expr b_var = Var::make({t, 1}, ctx.fresh("pw_b"));
    lets.push_back({r_var, Select::make(bit != zero, result * b, result)});
    lets.push_back({b_var, b * b});
    result = r_var;
    b = b_var;
  }
  Expr body = result;
  for (size_t i = lets.size(); i-- > 0;) body = Let::make(lets[i].first, lets[i].second, body);
  Expr minus_one = imm_int(t, -1);
  Expr odd = exp % imm_int(t, 2) != zero;
  Expr negative_exp = Select::make(
      base == one, one, Select::make(base == minus_one, Select::make(odd, minus_one, one), zero));
  return Select::make(exp < zero, negative_exp, body);
}

// x ** e for the scalar exponents ATen strength-reduces (PowKernel.cpp), in
// x's dtype; empty for other e. The interpreter computes the same steps
// (ir/ops/binary.cpp pow_special), so the results match bit for bit — they
// differ from pow: sqrt(-0.0) = -0.0, sqrt(-inf) = nan, x*x*x rounds twice.
Expr pow_special(const Expr& x, double e) {
  Expr one = float_const(x, 1.0);
  if (e == 2) return x * x;
  if (e == 3) return x * x * x;
  if (e == 0.5) return call("sqrt", {x});
  if (e == -0.5) return one / call("sqrt", {x});
  if (e == -1) return one / x;
  if (e == -2) return one / (x * x);
  return Expr();
}

// A float base to a scalar exponent. A constant one picks its form here (no
// exp/log: x.pow(2) ran ~11x the time of x * x); a run-time one selects among
// the forms, so the result is the interpreter's whatever value it has.
Expr pow_scalar(const BinaryArgs& x) {
  constexpr double kSpecial[] = {2, 3, 0.5, -0.5, -1, -2};
  Expr v = Var::make(x.a.type(), x.ctx->fresh("pw"));  // the base once (a fused producer)
  Expr e = x.b;
  while (const auto* c = e.as<loop::Cast>()) e = c->value;
  const auto* f = e.as<loop::FloatImm>();
  const auto* i = e.as<loop::IntImm>();
  if (f || i) {
    // The value the interpreter reads: the literal rounded to the output dtype.
    alignas(8) unsigned char buf[8];
    store_double(x.out, buf, f ? f->value : static_cast<double>(i->value));
    Expr special = pow_special(v, load_as_double(x.out, buf));
    if (!special.defined()) return call("pow", {x.a, x.b});
    return Let::make(v, x.a, special);
  }
  Expr body = call("pow", {v, x.b});
  for (double s : kSpecial) {
    body = Select::make(x.b == imm(x.work, s), pow_special(v, s), body);
  }
  return Let::make(v, x.a, body);
}

// --- factories ------------------------------------------------------------------------------

bool holds_int(const ir::Attrs& attrs, const std::string& name) {
  const ir::AttrValue* v = attrs.find(name);
  return v && std::holds_alternative<int64_t>(*v);
}

std::vector<Operand> lower_arange(NodeLowering& n) {
  DType out = n.out_dtype();
  const ir::Attrs& a = n.attrs();
  bool exact = holds_int(a, "start") && holds_int(a, "step");
  Expr start = exact ? make_int(a.get_int("start")) : imm(DType::F64, a.get_float("start"));
  Expr step = exact ? make_int(a.get_int("step")) : imm(DType::F64, a.get_float("step"));
  return {tensor_operand(
      out, n.out_dims(),
      [=](const Index& idx) {
        Expr i = exact ? idx[0] : cast_to(idx[0], DType::F64);
        return cast_to(start + i * step, out);
      },
      n.out_type())};
}

std::vector<Operand> lower_full(NodeLowering& n) {
  DType out = n.out_dtype();
  Expr v = holds_int(n.attrs(), "value")
               ? cast_to(make_int(n.attrs().get_int("value")), out)
               : cast_to(imm(DType::F64, n.attrs().get_float("value")), out);
  return {tensor_operand(
      out, n.out_dims(), [v](const Index&) { return v; }, n.out_type())};
}

}  // namespace

void register_elementwise_lowerings(LoweringTable& t) {
  add_float_math(t, "exp", intrinsic("exp"));
  add_float_math(t, "log", intrinsic("log"));
  add_float_math(t, "log1p", intrinsic("log1p"));
  add_float_math(t, "expm1", intrinsic("expm1"));
  add_float_math(t, "sqrt", intrinsic("sqrt"));
  add_float_math(t, "rsqrt", intrinsic("rsqrt"));
  add_float_math(t, "sin", intrinsic("sin"));
  add_float_math(t, "cos", intrinsic("cos"));
  add_float_math(t, "tanh", intrinsic("tanh"));
  add_float_math(t, "sigmoid", intrinsic("sigmoid"));
  add_float_math(t, "erf", intrinsic("erf"));
  add_float_math(t, "silu", [](const Expr& x) { return x * call("sigmoid", {x}); });
  add_float_math(t, "reciprocal", [](const Expr& x) { return float_const(x, 1.0) / x; });
  t["gelu"].pointwise = [](NodeLowering& n) {
    bool tanh_form = n.attrs().get_string("approximate") == "tanh";
    return unary([tanh_form](const Expr& x) { return gelu(x, tanh_form); }, no_int("gelu"))(n);
  };

  t["neg"].pointwise = unary([](const Expr& x) { return float_const(x, -0.0) - x; },
                             [](const Expr& x) { return imm_int(x.type().dtype, 0) - x; });
  t["abs"].pointwise = unary(intrinsic("abs"), intrinsic("abs"));
  t["relu"].pointwise = unary([](const Expr& x) { return max(x, float_const(x, 0)); },
                              [](const Expr& x) { return max(x, imm_int(x.type().dtype, 0)); });
  t["floor"].pointwise = unary(intrinsic("floor"), identity());
  t["ceil"].pointwise = unary(intrinsic("ceil"), identity());
  t["round"].pointwise = unary(intrinsic("round"), identity());
  t["sign"].pointwise = [](NodeLowering& n) {
    if (n.out_dtype() == DType::Bool) return unary(identity(), identity())(n);
    return unary(sign_of, sign_of)(n);
  };
  t["logical_not"].pointwise = [](NodeLowering& n) {
    return std::vector<Operand>{map_inputs(
        n, {0}, [](const std::vector<Expr>& a) { return a[0] == imm(a[0].type().dtype, 0); })};
  };
  t["cast"].pointwise = [](NodeLowering& n) {
    DType out = n.out_dtype();
    return std::vector<Operand>{
        map_inputs(n, {0}, [out](const std::vector<Expr>& a) { return cast_to(a[0], out); })};
  };

  t["add"].pointwise = binary([](const BinaryArgs& x) { return x.a + alpha_times(x); }, true);
  t["sub"].pointwise = binary([](const BinaryArgs& x) { return x.a - alpha_times(x); }, true);
  t["mul"].pointwise = binary([](const BinaryArgs& x) { return x.a * x.b; }, true);
  t["div"].pointwise = binary(
      [](const BinaryArgs& x) -> Expr {
        std::string mode = rounding(*x.attrs);
        if (mode.empty()) return x.a / x.b;
        if (mode == "trunc") {
          return is_floating(x.work) ? call("trunc", {x.a / x.b}) : int_trunc_divide(x.a, x.b);
        }
        return is_floating(x.work) ? float_floor_divide(x.a, x.b) : x.a / x.b;
      },
      true);
  t["pow"].pointwise = [](NodeLowering& n) {
    // The interpreter's (and PyTorch's) rule, ir/ops/binary.cpp: an integer
    // base to a negative Python-int exponent is an error, not 0 or 1. A
    // constant exponent is checked here; a run-time scalar one is not yet.
    const Operand& e = n.in(1);
    int64_t k = 0;
    if (!is_floating(n.out_dtype()) && e.kind == Operand::Kind::Scalar &&
        loop::is_const_int(e.scalar, &k)) {
      KILN_USER_CHECK(k >= 0, "pow: integers to negative integer powers are not allowed (exponent "
                                  << k << ")");
    }
    bool scalar_exponent = e.kind == Operand::Kind::Scalar && e.type.is_scalar();
    return binary(
        [scalar_exponent](const BinaryArgs& x) {
          if (!is_floating(x.work)) return int_power(x.a, x.b, *x.ctx);
          return scalar_exponent ? pow_scalar(x) : call("pow", {x.a, x.b});
        },
        false)(n);
  };
  t["remainder"].pointwise = binary([](const BinaryArgs& x) { return x.a % x.b; }, false);
  t["maximum"].pointwise = binary([](const BinaryArgs& x) { return max(x.a, x.b); }, false);
  t["minimum"].pointwise = binary([](const BinaryArgs& x) { return min(x.a, x.b); }, false);

  t["arange"].pointwise = lower_arange;
  t["full"].pointwise = lower_full;
}

}  // namespace kiln::passes::lower
