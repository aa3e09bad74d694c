// Op table, part 1: elementwise math, activations, comparisons, where/clamp/
// masked_fill and reductions — PyTorch spellings mapped onto registry ops.
// Signatures follow TorchScript's schemas (positional order, keyword names,
// defaults); overloads (torch.max(x) / max(x, dim) / max(a, b)) are told apart
// by the arguments' kinds.
#include <cmath>

#include "frontend/lower.h"
#include "frontend/scalar_ops.h"

namespace kiln::frontend {

ir::Attrs reduce_attrs(const std::vector<int64_t>& dims, bool keepdim) {
  return {{"dim", dims}, {"keepdim", keepdim}};
}

namespace {

const unsigned TM = kTorch | kMethod;
const unsigned TMF = kTorch | kMethod | kF;

// A scalar Val as an attribute (int stays int, so integer ops stay exact).
ir::AttrValue num_attr(const Val& v) {
  if (v.kind == Val::Kind::Float) return v.f;
  return v.i;
}

std::vector<int64_t> dims_or_all(Bound& b, const std::string& name) {
  if (b.is_none(name)) return {};
  return b.ints(name);
}

Val reduce(Bound& b, const std::string& op, bool with_dtype) {
  ir::Attrs attrs = reduce_attrs(dims_or_all(b, "dim"), b.bool_("keepdim"));
  if (with_dtype) {
    if (auto d = b.dtype("dtype")) attrs.set("dtype", *d);
  }
  return emit(b, op, {b.tensor("input")}, attrs);
}

// max/min: full reduction, reduction with indices, or elementwise with a tensor.
Val max_min(Bound& b, bool is_max) {
  const Val& d = b.val("dim");
  if (d.is_tensor()) {
    if (b.given("keepdim") && b.call.keywords.empty() && b.call.positional.size() > 2) {
      b.fail("keepdim", "too many arguments for the elementwise form");
    }
    return emit(b, is_max ? "maximum" : "minimum", {b.tensor("input"), d.value});
  }
  if (d.kind == Val::Kind::None) {
    if (b.bool_("keepdim")) b.fail("keepdim", "keepdim needs a dim");
    return emit(b, is_max ? "amax" : "amin", {b.tensor("input")}, reduce_attrs({}, false));
  }
  std::vector<ir::Value*> outs =
      b.L.apply(is_max ? "max" : "min", {b.tensor("input")},
                {{"dim", b.int_("dim")}, {"keepdim", b.bool_("keepdim")}}, b.call.callee);
  return Val::tuple({b.L.fresh(outs.at(0)), b.L.fresh(outs.at(1))});
}

Val var_std(Bound& b, const std::string& op) {
  // var(x, unbiased) is an overload: a bool in the dim slot is `unbiased`.
  const Val& d = b.val("dim");
  bool unbiased = b.bool_("unbiased");
  std::vector<int64_t> dims;
  if (d.kind == Val::Kind::Bool) {
    unbiased = d.i != 0;
  } else {
    dims = dims_or_all(b, "dim");
  }
  int64_t correction = unbiased ? 1 : 0;
  if (!b.is_none("correction")) correction = b.int_("correction");
  return emit(b, op, {b.tensor("input")},
              {{"dim", dims}, {"correction", correction}, {"keepdim", b.bool_("keepdim")}});
}

Val logsumexp(Bound& b) {
  ir::Value* x = b.tensor("input");
  std::vector<int64_t> dims = b.ints("dim");
  bool keep = b.bool_("keepdim");
  Lowerer& L = b.L;
  const Span& at = b.call.callee;
  ir::Value* m = L.apply1("amax", {x}, reduce_attrs(dims, true), at);
  // A slice of all -inf would give inf - inf = nan; shift by 0 there instead.
  ir::Value* inf = L.constant(Val::float_(INFINITY), at);
  ir::Value* is_inf = L.apply1("eq", {L.apply1("abs", {m}, {}, at), inf}, {}, at);
  m = L.apply1("where", {is_inf, L.constant(Val::float_(0), at), m}, {}, at);
  ir::Value* s = L.apply1("sum", {L.apply1("exp", {L.apply1("sub", {x, m}, {}, at)}, {}, at)},
                          reduce_attrs(dims, keep), at);
  ir::Value* shift = keep ? m : L.apply1("squeeze", {m}, {{"dim", dims}}, at);
  return L.fresh(L.apply1("add", {L.apply1("log", {s}, {}, at), shift}, {}, at));
}

// Activations and pointwise ops of the registry's activation/pointwise
// families (ir/ops/activation.cpp, ir/ops/pointwise.cpp).
void add_activation_ops(std::vector<OpEntry>& t) {
  auto unary = [&](const char* name, unsigned sp, const char* sig, const char* op,
                   std::vector<const char*> float_attrs) {
    std::string o = op;
    t.push_back({name, sp, sig, [o, float_attrs](Bound& b) {
                   ir::Attrs attrs;
                   for (const char* a : float_attrs) attrs.set(a, b.float_(a));
                   return emit(b, o, {b.tensor("input")}, attrs);
                 }});
  };
  unary("leaky_relu", kF, "input, negative_slope=0.01, inplace=False", "leaky_relu",
        {"negative_slope"});
  unary("elu", kF, "input, alpha=1.0, inplace=False", "elu", {"alpha"});
  unary("selu", kF | kTorch, "input, inplace=False", "selu", {});
  unary("celu", kF | kTorch, "input, alpha=1.0, inplace=False", "celu", {"alpha"});
  unary("softplus", kF, "input, beta=1.0, threshold=20.0", "softplus", {"beta", "threshold"});
  unary("hardswish", kF, "input, inplace=False", "hardswish", {});
  unary("hardsigmoid", kF, "input, inplace=False", "hardsigmoid", {});
  unary("mish", kF, "input, inplace=False", "mish", {});
  unary("logsigmoid", kF, "input", "logsigmoid", {});
  for (const char* name : {"isnan", "isinf", "isfinite"}) unary(name, TM, "input", name, {});
  t.push_back({"logit", TM, "input, eps=None", [](Bound& b) {
                 ir::Attrs attrs;
                 if (!b.is_none("eps")) attrs.set("eps", b.float_("eps"));
                 return emit(b, "logit", {b.tensor("input")}, attrs);
               }});
  t.push_back({"nan_to_num", TM, "input, nan=0.0, posinf=None, neginf=None", [](Bound& b) {
                 ir::Attrs attrs{{"nan", b.float_("nan")}};
                 for (const char* a : {"posinf", "neginf"}) {
                   if (!b.is_none(a)) attrs.set(a, b.float_(a));
                 }
                 return emit(b, "nan_to_num", {b.tensor("input")}, attrs);
               }});
  for (const char* name : {"fmod", "xlogy"}) {
    std::string op = name;
    t.push_back({name, TM, "input, other", [op](Bound& b) {
                   return emit(b, op, {b.operand("input"), b.operand("other")});
                 }});
  }
  for (const char* name : {"addcmul", "addcdiv"}) {
    std::string op = name;
    t.push_back(
        {name, TM, "input, tensor1, tensor2, *, value=1", [op](Bound& b) {
           ir::Attrs attrs;
           const Val& v = b.val("value");
           if (!v.is_number()) b.fail("value", "value must be a number");
           attrs.set("value", num_attr(v));
           return emit(b, op, {b.tensor("input"), b.tensor("tensor1"), b.tensor("tensor2")}, attrs);
         }});
  }
  t.push_back({"lerp", TM, "input, end, weight", [](Bound& b) {
                 return emit(b, "lerp", {b.tensor("input"), b.tensor("end"), b.operand("weight")});
               }});
}

}  // namespace

void add_math_ops(std::vector<OpEntry>& t) {
  // --- unary elementwise -------------------------------------------------------------
  struct Unary {
    const char* name;
    const char* op;
    unsigned sp;
  };
  const Unary unary[] = {{"abs", "abs", TM},
                         {"absolute", "abs", TM},
                         {"neg", "neg", TM},
                         {"negative", "neg", TM},
                         {"exp", "exp", TM},
                         {"log", "log", TM},
                         {"log1p", "log1p", TM},
                         {"expm1", "expm1", TM},
                         {"sqrt", "sqrt", TM},
                         {"rsqrt", "rsqrt", TM},
                         {"sin", "sin", TM},
                         {"cos", "cos", TM},
                         {"tanh", "tanh", TMF},
                         {"sigmoid", "sigmoid", TMF},
                         {"erf", "erf", TM},
                         {"floor", "floor", TM},
                         {"ceil", "ceil", TM},
                         {"sign", "sign", TM},
                         {"reciprocal", "reciprocal", TM},
                         {"logical_not", "logical_not", TM},
                         {"bitwise_not", "bitwise_not", TM}};
  for (const Unary& u : unary) {
    std::string op = u.op;
    t.push_back(
        {u.name, u.sp, "input", [op](Bound& b) { return emit(b, op, {b.tensor("input")}); }});
  }
  t.push_back({"round", TM, "input, *, decimals=0", [](Bound& b) {
                 if (b.int_("decimals") != 0)
                   b.fail("decimals", "decimals != 0 is not supported yet");
                 return emit(b, "round", {b.tensor("input")});
               }});
  t.push_back({"relu", TM, "input", [](Bound& b) { return emit(b, "relu", {b.tensor("input")}); }});
  t.push_back({"relu", kF, "input, inplace=False",
               [](Bound& b) { return emit(b, "relu", {b.tensor("input")}); }});
  t.push_back({"silu", kF, "input, inplace=False",
               [](Bound& b) { return emit(b, "silu", {b.tensor("input")}); }});
  t.push_back({"gelu", kF | kTorch, "input, approximate='none'", [](Bound& b) {
                 std::string a = b.str("approximate");
                 if (a != "none" && a != "tanh") {
                   b.fail("approximate", "approximate must be 'none' or 'tanh', got '" + a + "'");
                 }
                 return emit(b, "gelu", {b.tensor("input")}, {{"approximate", a}});
               }});
  t.push_back({"relu6", kF, "input, inplace=False", [](Bound& b) {
                 const Span& at = b.call.callee;
                 return emit(b, "clamp",
                             {b.tensor("input"), b.L.constant(Val::float_(0), at),
                              b.L.constant(Val::float_(6), at)});
               }});
  t.push_back(
      {"hardtanh", kF, "input, min_val=-1.0, max_val=1.0, inplace=False", [](Bound& b) {
         return emit(b, "clamp", {b.tensor("input"), b.operand("min_val"), b.operand("max_val")});
       }});
  add_activation_ops(t);
  t.push_back({"square", TM, "input", [](Bound& b) {
                 return emit(b, "mul", {b.tensor("input"), b.tensor("input")});
               }});

  // --- binary elementwise ---------------------------------------------------------------
  for (const char* name : {"add", "sub", "subtract"}) {
    std::string op = std::string(name) == "add" ? "add" : "sub";
    t.push_back({name, TM, "input, other, *, alpha=1", [op](Bound& b) {
                   ir::Attrs attrs;
                   const Val& alpha = b.val("alpha");
                   if (!alpha.is_number()) b.fail("alpha", "alpha must be a number");
                   if (alpha.num() != 1) attrs.set("alpha", num_attr(alpha));
                   return emit(b, op, {b.operand("input"), b.operand("other")}, attrs);
                 }});
  }
  struct Binary {
    const char* name;
    const char* op;
  };
  const Binary binary[] = {{"mul", "mul"},
                           {"multiply", "mul"},
                           {"true_divide", "div"},
                           {"remainder", "remainder"},
                           {"maximum", "maximum"},
                           {"minimum", "minimum"},
                           {"eq", "eq"},
                           {"ne", "ne"},
                           {"not_equal", "ne"},
                           {"lt", "lt"},
                           {"less", "lt"},
                           {"le", "le"},
                           {"less_equal", "le"},
                           {"gt", "gt"},
                           {"greater", "gt"},
                           {"ge", "ge"},
                           {"greater_equal", "ge"},
                           {"logical_and", "logical_and"},
                           {"logical_or", "logical_or"},
                           {"logical_xor", "logical_xor"},
                           {"bitwise_and", "bitwise_and"},
                           {"bitwise_or", "bitwise_or"},
                           {"bitwise_xor", "bitwise_xor"}};
  for (const Binary& bi : binary) {
    std::string op = bi.op;
    t.push_back({bi.name, TM, "input, other", [op](Bound& b) {
                   return emit(b, op, {b.operand("input"), b.operand("other")});
                 }});
  }
  t.push_back({"pow", TM, "input, exponent", [](Bound& b) {
                 const Val& base = b.val("input");
                 if (base.is_tensor()) {
                   check_int_tensor_pow(b.L, base.value, b.val("exponent"), b.span("exponent"));
                 }
                 return emit(b, "pow", {b.operand("input"), b.operand("exponent")});
               }});
  for (const char* name : {"div", "divide"}) {
    t.push_back({name, TM, "input, other, *, rounding_mode=None", [](Bound& b) {
                   ir::Attrs attrs;
                   if (!b.is_none("rounding_mode")) {
                     std::string m = b.str("rounding_mode");
                     if (m != "trunc" && m != "floor") {
                       b.fail("rounding_mode",
                              "rounding_mode must be 'trunc', 'floor' or None, got '" + m + "'");
                     }
                     attrs.set("rounding_mode", m);
                   }
                   return emit(b, "div", {b.operand("input"), b.operand("other")}, attrs);
                 }});
  }
  t.push_back({"floor_divide", TM, "input, other", [](Bound& b) {
                 return emit(b, "div", {b.operand("input"), b.operand("other")},
                             {{"rounding_mode", std::string("floor")}});
               }});
  t.push_back(
      {"where", kTorch, "condition, input, other", [](Bound& b) {
         return emit(b, "where", {b.tensor("condition"), b.operand("input"), b.operand("other")});
       }});
  t.push_back(
      {"where", kMethod, "input, condition, other", [](Bound& b) {
         return emit(b, "where", {b.tensor("condition"), b.operand("input"), b.operand("other")});
       }});
  for (const char* name : {"clamp", "clip"}) {
    t.push_back({name, TM, "input, min=None, max=None", [](Bound& b) {
                   if (b.is_none("min") && b.is_none("max"))
                     b.fail("at least one of 'min' or 'max' must not be None");
                   auto bound = [&](const char* n) {
                     return b.is_none(n) ? b.L.constant(Val::none(), b.call.callee) : b.operand(n);
                   };
                   return emit(b, "clamp", {b.tensor("input"), bound("min"), bound("max")});
                 }});
  }
  t.push_back({"clamp_min", TM, "input, min", [](Bound& b) {
                 return emit(b, "clamp",
                             {b.tensor("input"), b.operand("min"),
                              b.L.constant(Val::none(), b.call.callee)});
               }});
  t.push_back({"clamp_max", TM, "input, max", [](Bound& b) {
                 return emit(b, "clamp",
                             {b.tensor("input"), b.L.constant(Val::none(), b.call.callee),
                              b.operand("max")});
               }});
  t.push_back(
      {"masked_fill", TM, "input, mask, value", [](Bound& b) {
         return emit(b, "masked_fill", {b.tensor("input"), b.tensor("mask"), b.operand("value")});
       }});

  // --- reductions -------------------------------------------------------------------------
  for (const char* name : {"sum", "mean", "prod"}) {
    std::string op = name;
    t.push_back({name, TM, "input, dim=None, keepdim=False, *, dtype=None",
                 [op](Bound& b) { return reduce(b, op, true); }});
  }
  for (const char* name : {"amax", "amin"}) {
    std::string op = name;
    t.push_back({name, TM, "input, dim=[], keepdim=False",
                 [op](Bound& b) { return reduce(b, op, false); }});
  }
  for (const char* name : {"any", "all"}) {
    std::string op = name;
    t.push_back({name, TM, "input, dim=None, keepdim=False",
                 [op](Bound& b) { return reduce(b, op, false); }});
  }
  t.push_back(
      {"max", TM, "input, dim=None, keepdim=False", [](Bound& b) { return max_min(b, true); }});
  t.push_back(
      {"min", TM, "input, dim=None, keepdim=False", [](Bound& b) { return max_min(b, false); }});
  for (const char* name : {"argmax", "argmin"}) {
    std::string op = name;
    t.push_back({name, TM, "input, dim=None, keepdim=False", [op](Bound& b) {
                   ir::Attrs attrs;
                   if (b.is_none("dim")) {
                     attrs.set("dim", ir::NoneAttr{});
                   } else {
                     attrs.set("dim", b.int_("dim"));
                   }
                   attrs.set("keepdim", b.bool_("keepdim"));
                   return emit(b, op, {b.tensor("input")}, attrs);
                 }});
  }
  for (const char* name : {"var", "std"}) {
    std::string op = name;
    t.push_back({name, TM, "input, dim=None, unbiased=True, keepdim=False, *, correction=None",
                 [op](Bound& b) { return var_std(b, op); }});
  }
  t.push_back({"logsumexp", TM, "input, dim, keepdim=False", logsumexp});

  // --- math module: compile-time functions of numbers ----------------------------------------
  struct MathFn {
    const char* name;
    double (*fn)(double);
  };
  const MathFn math_fns[] = {{"sqrt", [](double v) { return std::sqrt(v); }},
                             {"exp", [](double v) { return std::exp(v); }},
                             {"log", [](double v) { return std::log(v); }},
                             {"tanh", [](double v) { return std::tanh(v); }},
                             {"erf", [](double v) { return std::erf(v); }},
                             {"fabs", [](double v) { return std::fabs(v); }}};
  for (const MathFn& m : math_fns) {
    auto fn = m.fn;
    t.push_back({m.name, kMath, "x", [fn](Bound& b) { return Val::float_(fn(b.float_("x"))); }});
  }
  for (const char* name : {"floor", "ceil"}) {
    bool up = std::string(name) == "ceil";
    t.push_back({name, kMath, "x", [up](Bound& b) {
                   const Val& x = b.val("x");
                   if (x.kind == Val::Kind::Int || x.kind == Val::Kind::Bool) return Val::int_(x.i);
                   double v = b.float_("x");
                   return Val::int_(float_to_int(b.L, up ? std::ceil(v) : std::floor(v),
                                                 up ? "math.ceil" : "math.floor", b.span("x")));
                 }});
  }
}

}  // namespace kiln::frontend
