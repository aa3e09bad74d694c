// Lowerings of the activations (ir/ops/activation.cpp) and of the pointwise
// ops fmod, xlogy, addcmul, addcdiv and lerp (ir/ops/pointwise.cpp), each an
// expression of its operands' elements at the broadcast index, so they fuse
// like any elementwise op. Operands are cast to the inferred output dtype,
// the math runs in f32 for f16/bf16 (one rounding at the end, as the
// reference rounds once), and the formulas are the reference's:
//   - loop IR float Min/Max propagate NaN, so hardswish/hardsigmoid do too;
//   - fmod is built from the floor modulo of |a| and |b| (equal to C's fmod
//     there, exactly) with a's sign put back; for integers from the floor
//     modulo, corrected where the signs differ (a zero divisor raises the
//     remainder status, as the reference raises);
//   - isinf/isfinite compare |x| with +inf; isnan uses the isnan intrinsic.
#include <limits>

#include "ir/ops/ops.h"
#include "passes/lower/lower_internal.h"

namespace kiln::passes::lower {
namespace {

using namespace kiln::loop;  // NOLINT

DType work_dtype(DType out) {
  if (out == DType::F16 || out == DType::BF16) return DType::F32;
  if (out == DType::Bool) return DType::I64;
  return out;
}

constexpr double kInf = std::numeric_limits<double>::infinity();

// out = f(operands read as `as[i]`, then in the working dtype), cast to the output dtype.
using ElementFn = std::function<Expr(const std::vector<Expr>& args, DType work)>;

Operand elementwise(NodeLowering& n, std::vector<DType> as, ElementFn f) {
  DType out = n.out_dtype(), work = work_dtype(out);
  std::vector<Operand> ins;
  for (size_t i = 0; i < as.size(); ++i) ins.push_back(n.in(i));
  return tensor_operand(
      out, n.out_dims(),
      [ins, as, f, out, work](const Index& idx) {
        std::vector<Expr> args;
        for (size_t i = 0; i < ins.size(); ++i) {
          args.push_back(cast_to(cast_to(ins[i].broadcast_at(idx), as[i]), work));
        }
        return cast_to(f(args, work), out);
      },
      n.out_type());
}

// A one-operand float op: f(x in the working dtype, attributes).
using UnaryFn = std::function<Expr(const Expr& x, const ir::Attrs& attrs)>;

PointwiseFn float_unary(UnaryFn f) {
  return [f](NodeLowering& n) {
    ir::Attrs attrs = n.attrs();
    return std::vector<Operand>{
        elementwise(n, {n.out_dtype()},
                    [f, attrs](const std::vector<Expr>& a, DType) { return f(a[0], attrs); })};
  };
}

Expr c(const Expr& like, double v) {
  return imm(like.type().dtype, v);
}

Expr elu(const Expr& x, double alpha, double scale, double input_scale) {
  Expr xin = input_scale == 1.0 ? x : x * c(x, input_scale);
  Expr neg = call("expm1", {xin}) * c(x, alpha * scale);
  Expr pos = scale == 1.0 ? x : x * c(x, scale);
  return Select::make(x <= c(x, 0), neg, pos);
}

Expr hardsigmoid6(const Expr& x) {  // min(max(x + 3, 0), 6)
  return min(max(x + c(x, 3), c(x, 0)), c(x, 6));
}

Expr softplus(const Expr& x, double beta, double threshold) {
  Expr bx = beta == 1.0 ? x : x * c(x, beta);
  Expr soft = call("log1p", {call("exp", {bx})});
  if (beta != 1.0) soft = soft / c(x, beta);
  return Select::make(bx > c(x, threshold), x, soft);
}

Expr is_inf(const Expr& x) {
  return call("abs", {x}) == c(x, kInf);
}

// A classifier (isnan, isinf, isfinite): bool output from the input in its own
// dtype (f16/bf16 widened), a constant for integers.
PointwiseFn classifier(std::function<Expr(const Expr&)> f, bool for_integers) {
  return [f, for_integers](NodeLowering& n) {
    const Operand x = n.in(0);
    DType t = x.dtype == DType::F16 || x.dtype == DType::BF16 ? DType::F32 : x.dtype;
    bool floating = is_floating(t);
    return std::vector<Operand>{tensor_operand(
        DType::Bool, n.out_dims(),
        [=](const Index& idx) {
          if (!floating) return imm_int(DType::Bool, for_integers ? 1 : 0);
          return f(cast_to(x.broadcast_at(idx), t));
        },
        n.out_type())};
  };
}

std::vector<Operand> lower_nan_to_num(NodeLowering& n) {
  DType out = n.out_dtype();
  if (!is_floating(out)) {
    return {elementwise(n, {out}, [](const std::vector<Expr>& a, DType) { return a[0]; })};
  }
  const ir::Attrs& at = n.attrs();
  double nan = at.get_float("nan");
  double hi = at.is_none("posinf") ? ir::dtype_max_finite(out) : at.get_float("posinf");
  double lo = at.is_none("neginf") ? -ir::dtype_max_finite(out) : at.get_float("neginf");
  // The replacements are rounded to the output dtype first, as the reference stores them.
  return {elementwise(n, {out}, [=](const std::vector<Expr>& a, DType work) {
    const Expr& x = a[0];
    auto value = [&](double v) { return cast_to(cast_to(imm(DType::F64, v), out), work); };
    return Select::make(
        is_nan(x), value(nan),
        Select::make(x == c(x, kInf), value(hi), Select::make(x == c(x, -kInf), value(lo), x)));
  })};
}

// --- pointwise ops of several operands ----------------------------------------------------

std::vector<Operand> lower_fmod(NodeLowering& n) {
  DType out = n.out_dtype();
  return {elementwise(n, {out, out}, [](const std::vector<Expr>& v, DType work) -> Expr {
    const Expr &a = v[0], &b = v[1];
    if (is_floating(work)) {
      Expr m = call("abs", {a}) % call("abs", {b});
      // A zero result keeps a's sign (a * 0 is -0 for negative a).
      return Select::make(m == c(m, 0), a * c(a, 0), Select::make(a < c(a, 0), c(m, 0) - m, m));
    }
    Expr zero = imm_int(work, 0);
    Expr r = a % b;
    return Select::make(r != zero && ((a < zero) != (b < zero)), r - b, r);
  })};
}

std::vector<Operand> lower_xlogy(NodeLowering& n) {
  DType out = n.out_dtype();
  return {elementwise(n, {out, out}, [](const std::vector<Expr>& v, DType) {
    const Expr &x = v[0], &y = v[1];
    return Select::make(is_nan(y), y, Select::make(x == c(x, 0), c(x, 0), x * call("log", {y})));
  })};
}

PointwiseFn addc(bool divide) {
  return [divide](NodeLowering& n) {
    DType out = n.out_dtype();
    bool floating = is_floating(out);
    double vf = floating ? n.attrs().get_float("value") : 0.0;
    int64_t vi = floating ? 0 : n.attrs().get_int("value");
    return std::vector<Operand>{
        elementwise(n, {out, out, out}, [=](const std::vector<Expr>& a, DType work) {
          Expr value = floating ? imm(work, vf) : imm_int(work, vi);
          return a[0] + (divide ? value * a[1] / a[2] : value * a[1] * a[2]);
        })};
  };
}

std::vector<Operand> lower_lerp(NodeLowering& n) {
  DType out = n.out_dtype();
  const Operand& w = n.in(2);
  bool reduced = out == DType::F16 || out == DType::BF16;
  bool wrapped = w.kind == Operand::Kind::Scalar || w.rank() == 0;
  DType weight_as = reduced && wrapped ? DType::F32 : out;
  return {elementwise(n, {out, out, weight_as}, [](const std::vector<Expr>& v, DType) {
    const Expr &a = v[0], &b = v[1], &w = v[2];
    Expr diff = b - a;
    return Select::make(call("abs", {w}) < c(w, 0.5), a + w * diff, b - diff * (c(w, 1) - w));
  })};
}

}  // namespace

void register_activation_lowerings(LoweringTable& t) {
  t["leaky_relu"].pointwise = float_unary([](const Expr& x, const ir::Attrs& a) {
    return Select::make(x > c(x, 0), x, x * c(x, a.get_float("negative_slope")));
  });
  t["elu"].pointwise = float_unary(
      [](const Expr& x, const ir::Attrs& a) { return elu(x, a.get_float("alpha"), 1.0, 1.0); });
  t["selu"].pointwise = float_unary(
      [](const Expr& x, const ir::Attrs&) { return elu(x, ir::kSeluAlpha, ir::kSeluScale, 1.0); });
  t["celu"].pointwise = float_unary([](const Expr& x, const ir::Attrs& a) {
    double alpha = a.get_float("alpha");
    return elu(x, alpha, 1.0, 1.0 / alpha);
  });
  t["softplus"].pointwise = float_unary([](const Expr& x, const ir::Attrs& a) {
    return softplus(x, a.get_float("beta"), a.get_float("threshold"));
  });
  t["hardswish"].pointwise =
      float_unary([](const Expr& x, const ir::Attrs&) { return x * hardsigmoid6(x) / c(x, 6); });
  t["hardsigmoid"].pointwise =
      float_unary([](const Expr& x, const ir::Attrs&) { return hardsigmoid6(x) / c(x, 6); });
  t["mish"].pointwise = float_unary([](const Expr& x, const ir::Attrs&) {
    return x * call("tanh", {call("log1p", {call("exp", {x})})});
  });
  t["logsigmoid"].pointwise = float_unary([](const Expr& x, const ir::Attrs&) {
    return min(x, c(x, 0)) - call("log1p", {call("exp", {c(x, 0) - call("abs", {x})})});
  });
  t["logit"].pointwise = float_unary([](const Expr& x, const ir::Attrs& a) {
    Expr z = x;
    if (!a.is_none("eps")) {
      double eps = a.get_float("eps");
      z = Select::make(x < c(x, eps), c(x, eps), Select::make(x > c(x, 1 - eps), c(x, 1 - eps), x));
    }
    return call("log", {z / (c(x, 1) - z)});
  });
  t["isnan"].pointwise = classifier(is_nan, false);
  t["isinf"].pointwise = classifier(is_inf, false);
  t["isfinite"].pointwise =
      classifier([](const Expr& x) { return !is_nan(x) && !is_inf(x); }, true);
  t["nan_to_num"].pointwise = lower_nan_to_num;

  t["fmod"].pointwise = lower_fmod;
  t["xlogy"].pointwise = lower_xlogy;
  t["addcmul"].pointwise = addc(false);
  t["addcdiv"].pointwise = addc(true);
  t["lerp"].pointwise = lower_lerp;
}

}  // namespace kiln::passes::lower
