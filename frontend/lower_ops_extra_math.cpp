// Op table: elementwise math beyond the basics (issue 13) — the intrinsic ops
// of ir/ops/math.cpp under their PyTorch names and aliases (arcsin, fix, ...),
// compositions PyTorch itself defines from them (frac, sgn, signbit, deg2rad,
// rad2deg, sinc, float_power, logaddexp, logaddexp2, prelu), and the
// torch.special aliases of ops Kiln has (expit, gammaln, psi, erfinv, ...).
#include <cmath>
#include <numbers>

#include "frontend/lower.h"

namespace kiln::frontend {
namespace {

const unsigned TM = kTorch | kMethod;

ir::Value* num(Bound& b, double v) {
  return b.L.constant(Val::float_(v), b.call.callee);
}

ir::Value* op1(Bound& b, const std::string& op, std::vector<ir::Value*> in, ir::Attrs attrs = {}) {
  return b.L.apply1(op, std::move(in), std::move(attrs), b.call.callee);
}

DType dtype_of(ir::Value* v) {
  return v->type().dtype();
}

void require_floating(Bound& b, const std::string& what, DType t) {
  if (!is_floating(t)) {
    b.fail(what + " takes floating tensors only (as in PyTorch), got " +
           std::string(dtype_name(t)));
  }
}

// logaddexp / logaddexp2: max(a, b) + log1p(base^-|a - b|) [/ ln 2], and a
// itself where a == b is infinite (inf - inf would be NaN).
Val logaddexp(Bound& b, bool base2) {
  ir::Value* x = b.tensor("input");
  ir::Value* y = b.tensor("other");
  ir::Value* d = op1(b, "sub", {x, y});
  require_floating(b, base2 ? "logaddexp2" : "logaddexp", dtype_of(d));
  ir::Value* m = op1(b, "maximum", {x, y});
  ir::Value* e = op1(b, base2 ? "exp2" : "exp", {op1(b, "neg", {op1(b, "abs", {d})})});
  ir::Value* l = op1(b, "log1p", {e});
  if (base2) l = op1(b, "mul", {l, num(b, 1 / std::numbers::ln2)});
  ir::Value* r = op1(b, "add", {m, l});
  ir::Value* same_inf = op1(b, "logical_and", {op1(b, "eq", {x, y}), op1(b, "isinf", {x})});
  return b.L.fresh(op1(b, "where", {same_inf, op1(b, "cast", {x}, {{"dtype", dtype_of(r)}}), r}));
}

// PyTorch's prelu: x if x > 0 else weight * x, weight of one element or one per
// channel (dim 1 of the input).
Val prelu(Bound& b) {
  ir::Value* x = b.tensor("input");
  ir::Value* w = b.tensor("weight");
  const ir::Type& xt = x->type();
  const ir::Type& wt = w->type();
  int64_t rank = xt.rank();
  if (wt.rank() > 1) b.fail("weight", "weight must be 1-D or a scalar tensor");
  bool per_channel = wt.rank() == 1 && !(wt.dims()[0].is_static() && wt.dims()[0].value == 1);
  if (per_channel) {
    if (rank < 2) {
      b.fail("weight", "an input of rank " + std::to_string(rank) +
                           " has no channel dim, so weight must have one element");
    }
    const ir::Dim& c = xt.dims()[1];
    const ir::Dim& n = wt.dims()[0];
    if (c.is_static() && n.is_static() && c.value != n.value) {
      b.fail("weight", "weight has " + std::to_string(n.value) + " elements but the input has " +
                           std::to_string(c.value) + " channels (dim 1)");
    }
    std::vector<int64_t> shape(size_t(rank - 1), 1);
    shape[0] = -1;
    w = op1(b, "reshape", {w}, {{"shape", shape}});
  }
  ir::Value* neg = op1(b, "mul", {w, x});
  return b.L.fresh(op1(b, "where", {op1(b, "gt", {x, num(b, 0)}), x, neg}));
}

}  // namespace

void add_extra_math_ops(std::vector<OpEntry>& t) {
  struct Unary {
    const char* name;
    const char* op;
  };
  const Unary unary[] = {
      {"tan", "tan"},         {"asin", "asin"},     {"arcsin", "asin"},   {"acos", "acos"},
      {"arccos", "acos"},     {"atan", "atan"},     {"arctan", "atan"},   {"sinh", "sinh"},
      {"cosh", "cosh"},       {"asinh", "asinh"},   {"arcsinh", "asinh"}, {"acosh", "acosh"},
      {"arccosh", "acosh"},   {"atanh", "atanh"},   {"arctanh", "atanh"}, {"log2", "log2"},
      {"log10", "log10"},     {"exp2", "exp2"},     {"erfc", "erfc"},     {"lgamma", "lgamma"},
      {"digamma", "digamma"}, {"erfinv", "erfinv"}, {"trunc", "trunc"},   {"fix", "trunc"},
      {"sgn", "sign"}};
  for (const Unary& u : unary) {
    std::string op = u.op;
    t.push_back({u.name, TM, "input", [op](Bound& b) { return emit(b, op, {b.tensor("input")}); }});
  }
  struct Binary {
    const char* name;
    const char* op;
  };
  const Binary binary[] = {
      {"atan2", "atan2"}, {"arctan2", "atan2"}, {"copysign", "copysign"}, {"hypot", "hypot"}};
  for (const Binary& bi : binary) {
    std::string op = bi.op;
    t.push_back({bi.name, TM, "input, other", [op](Bound& b) {
                   return emit(b, op, {b.operand("input"), b.operand("other")});
                 }});
  }
  t.push_back({"frac", TM, "input", [](Bound& b) {
                 ir::Value* x = b.tensor("input");
                 require_floating(b, "frac", dtype_of(x));
                 return emit(b, "sub", {x, op1(b, "trunc", {x})});
               }});
  t.push_back({"signbit", TM, "input", [](Bound& b) {
                 ir::Value* x = b.tensor("input");
                 if (!is_floating(dtype_of(x))) return emit(b, "lt", {x, num(b, 0)});
                 // copysign sees the sign bit of -0.0 and of NaNs.
                 return emit(b, "lt", {op1(b, "copysign", {num(b, 1), x}), num(b, 0)});
               }});
  for (bool to_rad : {true, false}) {
    double k = to_rad ? std::numbers::pi / 180 : 180 / std::numbers::pi;
    t.push_back({to_rad ? "deg2rad" : "rad2deg", TM, "input", [k](Bound& b) {
                   return emit(b, "mul", {b.tensor("input"), num(b, k)});
                 }});
  }
  t.push_back({"sinc", TM | kSpecial, "input", [](Bound& b) {
                 ir::Value* x = b.tensor("input");
                 ir::Value* px = op1(b, "mul", {x, num(b, std::numbers::pi)});
                 ir::Value* r = op1(b, "div", {op1(b, "sin", {px}), px});
                 return emit(b, "where", {op1(b, "eq", {x, num(b, 0)}), num(b, 1), r});
               }});
  t.push_back({"float_power", TM, "input, exponent", [](Bound& b) {
                 auto f64 = [&](ir::Value* v) {
                   return v->type().is_tensor() ? op1(b, "cast", {v}, {{"dtype", DType::F64}}) : v;
                 };
                 return emit(b, "pow", {f64(b.operand("input")), f64(b.operand("exponent"))});
               }});
  t.push_back({"logaddexp", TM, "input, other", [](Bound& b) { return logaddexp(b, false); }});
  t.push_back({"logaddexp2", TM, "input, other", [](Bound& b) { return logaddexp(b, true); }});
  t.push_back({"prelu", kTorch | kF, "input, weight", prelu});
}

// torch.special.<name> for ops whose torch.<name> entry already exists (added
// last, so every table is complete): the same entry under the special spelling.
void add_special_aliases(std::vector<OpEntry>& t) {
  struct Alias {
    const char* special;
    const char* torch;
  };
  const Alias aliases[] = {{"expit", "sigmoid"},   {"exp2", "exp2"},
                           {"expm1", "expm1"},     {"log1p", "log1p"},
                           {"logit", "logit"},     {"xlogy", "xlogy"},
                           {"erf", "erf"},         {"erfc", "erfc"},
                           {"erfinv", "erfinv"},   {"gammaln", "lgamma"},
                           {"digamma", "digamma"}, {"psi", "digamma"},
                           {"round", "round"},     {"log_softmax", "log_softmax"},
                           {"softmax", "softmax"}, {"logsumexp", "logsumexp"}};
  for (const Alias& a : aliases) {
    for (size_t i = 0, n = t.size(); i < n; ++i) {
      if (t[i].name == a.torch && (t[i].spellings & kTorch)) {
        OpEntry e = t[i];
        e.name = a.special;
        e.spellings = kSpecial;
        t.push_back(std::move(e));
        break;
      }
    }
  }
}

}  // namespace kiln::frontend
