// Lane-wise intrinsics for loop::Call, emitted as straight-line LLVM IR that
// works for any lane count: polynomial approximations with explicit range
// reduction and edge-case selects (no libm calls in the f32 paths, so a vector
// of 8 floats stays 8-wide). Accuracy and the choices behind each function are
// in docs/vector-math.md; tests/unit/vector_math_test.cpp measures them.
//
//   f32: exp, log, expm1, log1p, tanh, sigmoid, erf evaluated in f32;
//        sin, cos, pow evaluated in f64 (exact argument squares and
//        reductions) and rounded once to f32; sin/cos lanes with
//        |x| >= 2^20 (rare) branch to libm's double sin/cos.
//   f64: exp, log, expm1, log1p, tanh, sigmoid by the same generic code with
//        more terms; sin, cos, erf, pow call libm per lane.
//   f16/bf16: computed in f32 and rounded once.
//   the extra intrinsics (ir/loop/extra_math.h: tan, asin, ..., lgamma,
//   digamma, erfinv, atan2, hypot): their double function per lane, f32
//   widened and rounded once; copysign is the exact llvm.copysign.
#include <cmath>

#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/MDBuilder.h>

#include "codegen/llvm/llvm_internal.h"
#include "ir/loop/extra_math.h"
#include "kiln/error.h"

namespace kiln::codegen::llvm_cpu {

namespace {

using llvm::Value;

// Coefficients of erfc(x) * exp(x^2) on x in [1, 4] as a polynomial in
// t = (x - 2.5) / 1.5, highest degree first (Chebyshev fit, |error| < 1e-11).
constexpr double kErfcxCoeffs[] = {
    -6.184192740863965e-07,  1.8114671111512803e-06,  -2.7389805740071756e-06,
    7.47894394151575e-06,    -2.3968659422623702e-05, 6.366496415861069e-05,
    -0.00016183966947411757, 0.00040856418717135154,  -0.0010058758334247247,
    0.002403782069922871,    -0.005570700586254282,   0.012489356941208767,
    -0.027005296932016098,   0.05611049425502124,     -0.11152102018260106,
    0.21080636405480982};

// f32 erf, |x| < 1: erf(x) = x + x * P(x^2), P highest degree first
// (weighted least-squares fit of erf(x)/x - 1 on Chebyshev nodes in x^2;
// the x + x * P form keeps the leading 1.128 exact).
constexpr double kErfSmallF32[] = {
    7.847259257687256e-05, -0.0008008189615793526, 0.005188099108636379, -0.026853691786527634,
    0.1128358244895935,    -0.3761262595653534,    0.12837916612625122};
// f32 erfcx(x) = erfc(x) * exp(x^2) on [1, 4] as a polynomial in
// t = (x - 2.5) * (2/3), highest degree first: least squares on Chebyshev
// nodes weighted by exp(-x^2), i.e. fitting the absolute error of the erfc
// term that erf = 1 - erfc subtracts from 1 (2.6e-9 with these f32
// coefficients, 0.05 ulp of a result in [0.84, 1]; a relative fit needed
// degree 11).
constexpr double kErfcxF32[] = {0.0027382089756429195, 0.0038451761938631535, 0.006188458297401667,
                                -0.005020515061914921, 0.011656457558274269,  -0.02744629792869091,
                                0.056057922542095184,  -0.11151327937841415,  0.21080760657787323};
// f32 exp(r) on |r| <= ln2/2 for erf's exp(-x^2), degree 5 (relative fit,
// constant and linear terms 1): 1.05e-7 relative, which the erfc term
// (<= 0.157) shrinks to 0.3 ulp of erf's result at most.
constexpr double kExpErfF32[] = {0.008312537334859371, 0.04189017415046692, 0.16667114198207855,
                                 0.499992311000824,    1.0,                 1.0};

// f32 exp(r) on |r| <= ln2/2: degree 6, highest degree first (relative
// minimax-style fit, iteratively reweighted least squares on Chebyshev nodes;
// the constant and linear terms kept at 1): 6.2e-8 max relative error in f32
// arithmetic, as good as the degree-7 Taylor it replaces (6.4e-8).
constexpr double kExpF32[] = {0.0013820272870361805, 0.00836874544620514, 0.04166828840970993,
                              0.1666652113199234,    0.4999999403953552,  1.0,
                              1.0};
// f32 expm1(r) = r + r^2 Q(r) on the same range, Q of degree 4 (same fit):
// 8.8e-8 max relative error in f32 arithmetic.
constexpr double kExpm1QF32[] = {0.0013886288506910205, 0.00836654007434845, 0.041667137295007706,
                                 0.1666654348373413, 0.4999999701976776};

class MathEmitter {
 public:
  MathEmitter(llvm::IRBuilder<>& b, DType dt, int lanes) : b_(b), f64_(dt == DType::F64) {
    llvm::Type* f = f64_ ? b.getDoubleTy() : b.getFloatTy();
    llvm::Type* i = f64_ ? b.getInt64Ty() : b.getInt32Ty();
    fty_ = lanes > 1 ? llvm::FixedVectorType::get(f, lanes) : f;
    ity_ = lanes > 1 ? llvm::FixedVectorType::get(i, lanes) : i;
    mant_ = f64_ ? 52 : 23;
    bias_ = f64_ ? 1023 : 127;
  }

  Value* c(double v) { return llvm::ConstantFP::get(fty_, v); }
  Value* ci(int64_t v) { return llvm::ConstantInt::get(ity_, static_cast<uint64_t>(v), true); }
  Value* add(Value* a, Value* b) { return b_.CreateFAdd(a, b); }
  Value* sub(Value* a, Value* b) { return b_.CreateFSub(a, b); }
  Value* mul(Value* a, Value* b) { return b_.CreateFMul(a, b); }
  Value* div(Value* a, Value* b) { return b_.CreateFDiv(a, b); }
  Value* sel(Value* c, Value* a, Value* b) { return b_.CreateSelect(c, a, b); }
  Value* un(llvm::Intrinsic::ID id, Value* x) { return b_.CreateUnaryIntrinsic(id, x); }
  Value* fmla(Value* a, Value* b, Value* c) {
    return b_.CreateIntrinsic(llvm::Intrinsic::fmuladd, {fty_}, {a, b, c});
  }
  Value* isnan(Value* x) { return b_.CreateFCmpUNO(x, x); }
  Value* copysign(Value* mag, Value* sign) {
    return b_.CreateBinaryIntrinsic(llvm::Intrinsic::copysign, mag, sign);
  }
  // Horner's rule, coefficients highest degree first.
  template <typename Range>
  Value* horner(Value* x, const Range& coeffs) {
    Value* r = nullptr;
    for (double k : coeffs) r = r ? fmla(r, x, c(k)) : c(k);
    return r;
  }
  // 1/n! for n = hi..lo.
  std::vector<double> inverse_factorials(int hi, int lo) {
    std::vector<double> v;
    for (int n = hi; n >= lo; --n) v.push_back(1.0 / std::tgamma(n + 1.0));
    return v;
  }
  // 2^k for integer k (ity) in the normal exponent range.
  Value* pow2(Value* k) {
    return b_.CreateBitCast(b_.CreateShl(b_.CreateAdd(k, ci(bias_)), ci(mant_)), fty_);
  }

  // NaN-keeping clamps: a NaN lane stays NaN (the compare is false for it),
  // so the code after them propagates it without a select; x86 lowers each to
  // one vmaxps/vminps.
  Value* at_least(Value* x, double lo) { return sel(b_.CreateFCmpOLT(x, c(lo)), c(lo), x); }
  Value* at_most(Value* x, double hi) { return sel(b_.CreateFCmpOGT(x, c(hi)), c(hi), x); }

  // Cody-Waite range reduction for exp: x = n ln2 + r with n = round(x / ln2)
  // and |r| <= ln2/2 (plus rounding). n comes from adding 1.5 * 2^mant, which
  // leaves n in the low bits of the sum (`nbits`): no float-to-int conversion,
  // and 2^n is one shift and one add of those bits. Needs |x / ln2| < 2^(mant-1).
  struct ExpReduced {
    Value* nbits;  // the integer bits of n + 1.5 * 2^mant (only the low bits matter)
    Value* r;
  };
  ExpReduced reduce_exp(Value* x) {
    double ln2_hi = f64_ ? 6.93147180369123816490e-01 : 0.693359375;
    double ln2_lo = f64_ ? 1.90821492927058770002e-10 : -2.12194440e-4;
    double magic = 1.5 * std::ldexp(1.0, mant_);
    Value* t = fmla(x, c(1.4426950408889634), c(magic));
    Value* n = sub(t, c(magic));
    Value* r = fmla(n, c(-ln2_lo), fmla(n, c(-ln2_hi), x));
    return {b_.CreateBitCast(t, ity_), r};
  }
  // 2^n from reduce_exp's bits: shifting by mant drops the magic constant's
  // bits; n + bias must be in [1, 2 * bias + 1] (2 * bias + 1 gives +inf).
  Value* pow2_bits(Value* nbits) {
    return b_.CreateBitCast(b_.CreateAdd(b_.CreateShl(nbits, ci(mant_)), ci(int64_t(bias_) << mant_)),
                            fty_);
  }
  // exp(r) on |r| <= ln2/2: kExpF32 (degree 6) / degree-13 Taylor for f64.
  Value* exp_poly(Value* r) {
    return f64_ ? horner(r, inverse_factorials(13, 0)) : horner(r, kExpF32);
  }
  // expm1(r) = r + r^2 Q(r) on the same range, without cancellation.
  Value* expm1_poly(Value* r) {
    Value* q = f64_ ? horner(r, inverse_factorials(13, 2)) : horner(r, kExpm1QF32);
    return fmla(mul(r, r), q, r);
  }

  Value* exp(Value* x) {
    // Clamp so 2^n stays representable in two factors; beyond it the result is
    // inf or 0 anyway. NaN passes through the clamps and the arithmetic.
    // The floor sits where the first factor's exponent field is 0 (n1 =
    // -bias), so lanes at it (-inf, masked softmax rows) multiply by +0 and
    // never underflow: an underflowing multiply takes a microcode assist on
    // Intel cores, ~8x the cost of the whole exp.
    Value* xc = at_most(at_least(x, f64_ ? -1418.0 : -175.5), f64_ ? 710.0 : 89.0);
    ExpReduced red = reduce_exp(xc);
    Value* p = exp_poly(red.r);
    // n in two halves so subnormal results (n < 1 - bias) scale exactly.
    double magic = 1.5 * std::ldexp(1.0, mant_);
    Value* ni = b_.CreateSub(red.nbits, b_.CreateBitCast(c(magic), ity_));
    Value* n1 = b_.CreateAShr(ni, ci(1));
    Value* n2 = b_.CreateSub(ni, n1);
    return mul(mul(p, pow2(n1)), pow2(n2));
  }

  Value* log(Value* x) {
    double min_normal = f64_ ? 2.2250738585072014e-308 : 1.17549435e-38;
    Value* tiny = b_.CreateFCmpOLT(x, c(min_normal));
    Value* xs = sel(tiny, mul(x, c(std::ldexp(1.0, mant_))), x);
    Value* eadj = sel(tiny, c(-mant_), c(0));
    Value* bits = b_.CreateBitCast(xs, ity_);
    Value* e = b_.CreateSub(b_.CreateLShr(bits, ci(mant_)), ci(bias_));
    Value* mbits =
        b_.CreateOr(b_.CreateAnd(bits, ci((int64_t(1) << mant_) - 1)), ci(int64_t(bias_) << mant_));
    Value* m = b_.CreateBitCast(mbits, fty_);  // [1, 2)
    Value* big = b_.CreateFCmpOGT(m, c(M_SQRT2));
    m = sel(big, mul(m, c(0.5)), m);  // [sqrt(1/2), sqrt(2)]
    e = b_.CreateAdd(e, b_.CreateZExt(big, ity_));
    Value* ef = add(b_.CreateSIToFP(e, fty_), eadj);
    // log(m) = 2 atanh(s), s = (m - 1) / (m + 1), |s| <= 0.1716.
    Value* f = sub(m, c(1));
    Value* s = div(f, add(f, c(2)));
    Value* z = mul(s, s);
    std::vector<double> coeffs;
    for (int k = f64_ ? 11 : 5; k >= 0; --k) coeffs.push_back(2.0 / (2 * k + 1));
    Value* logm = mul(s, horner(z, coeffs));
    double ln2_hi = f64_ ? 6.93147180369123816490e-01 : 0.693359375;
    double ln2_lo = f64_ ? 1.90821492927058770002e-10 : -2.12194440e-4;
    Value* r = add(mul(ef, c(ln2_hi)), add(logm, mul(ef, c(ln2_lo))));
    r = sel(b_.CreateFCmpOEQ(x, c(INFINITY)), x, r);
    r = sel(b_.CreateFCmpOLT(x, c(0)), c(NAN), r);
    r = sel(b_.CreateFCmpOEQ(x, c(0)), c(-INFINITY), r);
    return sel(isnan(x), x, r);
  }

  Value* expm1(Value* x) {
    // Taylor near 0 keeps relative accuracy; elsewhere exp(x) - 1 has no cancellation.
    Value* p = horner(x, inverse_factorials(f64_ ? 17 : 9, 2));
    Value* small = fmla(mul(x, x), p, x);
    Value* near = b_.CreateFCmpOLT(un(llvm::Intrinsic::fabs, x), c(0.5));
    Value* r = sel(near, small, sub(exp(x), c(1)));
    return sel(b_.CreateFCmpOEQ(x, c(0)), x, r);  // expm1(-0) = -0 (x^2 p + x gives +0)
  }

  Value* log1p(Value* x) {
    // log(u) * x / (u - 1) with u = 1 + x cancels u's rounding error.
    Value* u = add(x, c(1));
    Value* um1 = sub(u, c(1));
    Value* r = mul(log(u), div(x, um1));
    r = sel(b_.CreateFCmpOEQ(u, c(1)), x, r);
    return sel(b_.CreateFCmpOEQ(x, c(INFINITY)), x, r);
  }

  // tanh|x| = expm1(2|x|) / (expm1(2|x|) + 2), with expm1(y) = 2^n expm1(r)
  // + (2^n - 1) from one range reduction (2^n - 1 is exact while it fits the
  // mantissa; beyond, the quotient rounds to 1 anyway). Near 0 (n = 0) it is
  // expm1(r) itself, so no cancellation and no separate small-x path.
  // |x| is clamped to 9.5 (f64: 20), where the quotient already rounds to 1.
  Value* tanh(Value* x) {
    Value* a = at_most(un(llvm::Intrinsic::fabs, x), f64_ ? 20.0 : 9.5);
    ExpReduced red = reduce_exp(add(a, a));
    Value* s = pow2_bits(red.nbits);
    Value* em = fmla(s, expm1_poly(red.r), sub(s, c(1)));
    return copysign(div(em, add(em, c(2))), x);
  }

  // 1 / (1 + exp(-x)) with a one-factor 2^n: -x is clamped to [-87, 89]
  // (f64: [-708, 710]), so n runs from 1 - bias (exp(-x) is then below half
  // an ulp of 1: the result is 1) to bias + 1, whose 2^n is +inf (result 0).
  // Results below the smallest normal (x < -87.3) may flush to 0.
  Value* sigmoid(Value* x) {
    Value* w = at_most(at_least(b_.CreateFNeg(x), f64_ ? -708.0 : -87.0), f64_ ? 710.0 : 89.0);
    ExpReduced red = reduce_exp(w);
    Value* e = mul(exp_poly(red.r), pow2_bits(red.nbits));
    return div(c(1), add(c(1), e));
  }

  // --- the f64 cores used for f32 sin/cos/erf/pow

  // sin or cos of |x| < kTrigFastLimit (trig_f32 sends other lanes to libm).
  Value* sin_cos(Value* x, bool want_sin) {
    Value* k = un(llvm::Intrinsic::roundeven, mul(x, c(M_2_PI)));
    // Three-part Cody-Waite pi/2 (33 + 33 + 53 bits): k * part is exact for |k| < 2^20.
    Value* r = sub(x, mul(k, c(1.57079632673412561417e+00)));
    r = sub(r, mul(k, c(6.07710050630396597660e-11)));
    r = sub(r, mul(k, c(2.02226624879595063154e-21)));
    Value* z = mul(r, r);
    Value* s =
        fmla(mul(r, z),
             horner(z, std::vector<double>{1.0 / 6227020800.0, -1.0 / 39916800.0, 1.0 / 362880.0,
                                           -1.0 / 5040.0, 1.0 / 120.0, -1.0 / 6.0}),
             r);
    Value* co =
        horner(z, std::vector<double>{-1.0 / 87178291200.0, 1.0 / 479001600.0, -1.0 / 3628800.0,
                                      1.0 / 40320.0, -1.0 / 720.0, 1.0 / 24.0, -0.5, 1.0});
    // Quadrant k mod 4 (|k| < 2^20, so it fits an integer).
    Value* qi = b_.CreateFPToSI(k, ity_);
    Value* odd = b_.CreateICmpNE(b_.CreateAnd(qi, ci(1)), ci(0));
    Value* base = want_sin ? sel(odd, co, s) : sel(odd, s, co);
    Value* neg_bits = want_sin ? qi : b_.CreateAdd(qi, ci(1));
    Value* neg = b_.CreateICmpNE(b_.CreateAnd(neg_bits, ci(2)), ci(0));
    return sel(neg, b_.CreateFNeg(base), base);
  }

  Value* erf(Value* x) {
    Value* a = un(llvm::Intrinsic::fabs, x);
    Value* a2 = mul(a, a);
    // |x| < 1: Maclaurin series 2/sqrt(pi) sum (-1)^n x^(2n+1) / (n! (2n+1)).
    std::vector<double> series;
    for (int n = 14; n >= 0; --n) {
      series.push_back((n % 2 ? -1.0 : 1.0) * M_2_SQRTPI / (std::tgamma(n + 1.0) * (2 * n + 1)));
    }
    Value* small = mul(x, horner(a2, series));
    // 1 <= |x| < 4: 1 - exp(-x^2) * erfcx(|x|). Lanes past 4 (selected below)
    // compute at 4, so exp(-x^2) never underflows (see exp).
    Value* a4 = b_.CreateBinaryIntrinsic(llvm::Intrinsic::minnum, a, c(4));
    Value* t = div(sub(a4, c(2.5)), c(1.5));
    Value* erfc = mul(exp(b_.CreateFNeg(mul(a4, a4))), horner(t, kErfcxCoeffs));
    Value* mid = copysign(sub(c(1), erfc), x);
    Value* r = sel(b_.CreateFCmpOLT(a, c(4)), mid, copysign(c(1), x));
    r = sel(b_.CreateFCmpOLT(a, c(1)), small, r);
    return sel(isnan(x), x, r);
  }

  // erf evaluated in f32 throughout (16 lanes stay 16 lanes): |x| < 1 a
  // fitted odd polynomial, else 1 - exp(-x^2) erfcx(|x|) with a fitted erfcx;
  // both are computed for every lane and one select picks. The erfc term is
  // at most erfc(1) = 0.157 on the second path, so its relative errors shrink
  // 6x (more further out) in the result: x^2 is not split into hi + lo (its
  // rounding costs 0.16 ulp at most), exp(-x^2) uses a degree-5 fit and only
  // one 2^n factor (n in [-24, 0]: no clamps, no underflow). |x| is clamped
  // to 4 by a NaN-keeping clamp: there the erfc term is 1.5e-8, below half an
  // ulp of 1, so the formula itself rounds to +-1 (no select for the tail),
  // and a NaN lane flows through the arithmetic (no NaN select). Measured
  // accuracy: docs/vector-math.md.
  Value* erf_f32(Value* x) {
    Value* a = un(llvm::Intrinsic::fabs, x);
    Value* small = fmla(x, horner(mul(x, x), kErfSmallF32), x);
    Value* a4 = at_most(a, 4);
    // exp(-x^2) reduced as -x^2 = n ln2 - s, s = x^2 + n ln2 (Cody-Waite as in
    // reduce_exp), exp(-s) = kExpErfF32 with its odd terms negated: no
    // negation of x^2 (x86 spends a vxorps on one).
    Value* x2 = mul(a4, a4);
    double magic = 1.5 * std::ldexp(1.0, mant_);
    Value* nm = fmla(x2, c(-1.4426950408889634), c(magic));
    Value* n = sub(nm, c(magic));
    Value* s = fmla(n, c(-2.12194440e-4), fmla(n, c(0.693359375), x2));
    std::vector<double> expneg(std::begin(kExpErfF32), std::end(kExpErfF32));
    for (size_t k = 0; k < expneg.size(); ++k) {
      if ((expneg.size() - 1 - k) % 2) expneg[k] = -expneg[k];  // odd degree
    }
    Value* e = mul(horner(s, expneg), pow2_bits(b_.CreateBitCast(nm, ity_)));
    Value* t = fmla(a4, c(float(2.0 / 3.0)), c(float(-2.5 * 2.0 / 3.0)));
    Value* mid = copysign(fmla(b_.CreateFNeg(e), horner(t, kErfcxF32), c(1)), x);
    return sel(b_.CreateFCmpOLT(a, c(1)), small, mid);
  }

  // C pow semantics on top of exp(y * log|x|).
  Value* pow(Value* x, Value* y) {
    Value* r = exp(mul(y, log(un(llvm::Intrinsic::fabs, x))));
    Value* y_int = b_.CreateFCmpOEQ(un(llvm::Intrinsic::floor, y), y);
    Value* half = mul(y, c(0.5));
    Value* y_odd = b_.CreateAnd(y_int, b_.CreateFCmpUNE(un(llvm::Intrinsic::floor, half), half));
    Value* x_neg = b_.CreateICmpSLT(b_.CreateBitCast(x, ity_), ci(0));  // includes -0
    r = sel(b_.CreateAnd(x_neg, y_odd), b_.CreateFNeg(r), r);
    Value* neg_finite = b_.CreateAnd(b_.CreateFCmpOLT(x, c(0)), b_.CreateFCmpOGT(x, c(-INFINITY)));
    r = sel(b_.CreateAnd(neg_finite, b_.CreateNot(y_int)), c(NAN), r);
    Value* minus_one_inf = b_.CreateAnd(
        b_.CreateFCmpOEQ(x, c(-1)), b_.CreateFCmpOEQ(un(llvm::Intrinsic::fabs, y), c(INFINITY)));
    r = sel(minus_one_inf, c(1), r);
    r = sel(b_.CreateFCmpOEQ(x, c(1)), c(1), r);
    return sel(b_.CreateFCmpOEQ(y, c(0)), c(1), r);
  }

 private:
  llvm::IRBuilder<>& b_;
  bool f64_;
  llvm::Type* fty_;
  llvm::Type* ity_;
  int mant_, bias_;
};

// Calls libm `name` (double -> double, or (double, double) -> double) per lane.
Value* libm_per_lane(llvm::IRBuilder<>& b, const char* name, const std::vector<Value*>& args) {
  llvm::Module* m = b.GetInsertBlock()->getModule();
  std::vector<llvm::Type*> params(args.size(), b.getDoubleTy());
  llvm::FunctionCallee fn =
      m->getOrInsertFunction(name, llvm::FunctionType::get(b.getDoubleTy(), params, false));
  if (auto* f = llvm::dyn_cast<llvm::Function>(fn.getCallee())) {
    f->addFnAttr(llvm::Attribute::NoUnwind);
  }
  auto* vt = llvm::dyn_cast<llvm::FixedVectorType>(args[0]->getType());
  if (!vt) return b.CreateCall(fn, args);
  Value* r = llvm::PoisonValue::get(vt);
  for (unsigned i = 0; i < vt->getNumElements(); ++i) {
    std::vector<Value*> lane;
    for (Value* a : args) lane.push_back(b.CreateExtractElement(a, i));
    r = b.CreateInsertElement(r, b.CreateCall(fn, lane), i);
  }
  return r;
}

// Beyond 2^20 the Cody-Waite reduction in sin_cos loses exactness (k * part
// rounds); sin(1e20) came out as 6e26.
constexpr double kTrigFastLimit = 1048576.0;

// f32 sin/cos of `xd` (the f32 lanes widened to f64), rounded once by the
// caller. Lanes with |x| >= kTrigFastLimit, inf or NaN are rare, so they take
// a branch that calls libm's double sin/cos per lane (exact reduction);
// the common case stays straight-line vector code.
Value* trig_f32(llvm::IRBuilder<>& b, bool want_sin, Value* xd, int lanes) {
  MathEmitter md(b, DType::F64, lanes);
  Value* big = b.CreateFCmpUGE(md.un(llvm::Intrinsic::fabs, xd), md.c(kTrigFastLimit));
  Value* fast = md.sin_cos(md.sel(big, md.c(0), xd), want_sin);
  Value* any_big = lanes > 1 ? b.CreateOrReduce(big) : big;
  llvm::BasicBlock* from = b.GetInsertBlock();
  llvm::Function* fn = from->getParent();
  auto* slow_bb = llvm::BasicBlock::Create(b.getContext(), "trig.large", fn);
  auto* done_bb = llvm::BasicBlock::Create(b.getContext(), "trig.done", fn);
  b.CreateCondBr(any_big, slow_bb, done_bb,
                 llvm::MDBuilder(b.getContext()).createBranchWeights(1, 1 << 20));
  b.SetInsertPoint(slow_bb);
  Value* exact = libm_per_lane(b, want_sin ? "sin" : "cos", {xd});
  Value* mixed = b.CreateSelect(big, exact, fast);
  b.CreateBr(done_bb);
  llvm::BasicBlock* slow_end = b.GetInsertBlock();
  b.SetInsertPoint(done_bb);
  llvm::PHINode* phi = b.CreatePHI(xd->getType(), 2);
  phi->addIncoming(fast, from);
  phi->addIncoming(mixed, slow_end);
  return phi;
}

size_t arity(const std::string& name) {
  if (const loop::ExtraMath* m = loop::find_extra_math(name)) return size_t(m->arity);
  if (name == "pow") return 2;
  if (name == "fma") return 3;
  return 1;
}

}  // namespace

Value* emit_math_call(llvm::IRBuilder<>& b, const std::string& name,
                      const std::vector<Value*>& args, const std::vector<DType>& arg_dtypes,
                      loop::VType type) {
  KILN_INTERNAL_CHECK(args.size() == arity(name) && arg_dtypes.size() == args.size(),
                      "llvm backend: call " << name << " with " << args.size() << " arguments");
  DType dt = arg_dtypes[0];
  Value* x = args[0];
  if (name == "isnan") {
    if (!is_floating(dt)) return llvm::Constant::getNullValue(value_type(b.getContext(), type));
    if (dt == DType::F16 || dt == DType::BF16) x = convert_float(b, x, dt, DType::F32);
    return b.CreateFCmpUNO(x, x);
  }
  if (!is_floating(dt)) {
    if (name == "abs") {
      if (!is_signed(dt)) return x;
      return b.CreateBinaryIntrinsic(llvm::Intrinsic::abs, x, b.getFalse());
    }
    if (name == "floor" || name == "ceil" || name == "round" || name == "trunc") return x;
    KILN_INTERNAL_CHECK(false, "llvm backend: " << name << " of integer type " << dtype_name(dt));
  }
  for (DType d : arg_dtypes) {
    KILN_INTERNAL_CHECK(d == dt, "llvm backend: " << name << " of mixed argument types");
  }
  if (dt == DType::F16 || dt == DType::BF16) {
    std::vector<Value*> wide;
    for (Value* a : args) wide.push_back(convert_float(b, a, dt, DType::F32));
    Value* r = emit_math_call(b, name, wide, std::vector<DType>(args.size(), DType::F32),
                              {DType::F32, type.lanes});
    return convert_float(b, r, DType::F32, dt);
  }
  bool f64 = dt == DType::F64;
  // The functions below are exact sequences (range reductions, the rounding
  // constant in reduce_exp): emitted without fast-math flags even under
  // CodegenOptions::fast_math, so reassociation cannot undo them.
  llvm::IRBuilderBase::FastMathFlagGuard keep_flags(b);
  b.clearFastMathFlags();
  MathEmitter m(b, dt, type.lanes);
  using llvm::Intrinsic::ID;
  auto intrinsic = [&](ID id) { return b.CreateUnaryIntrinsic(id, x); };
  if (name == "exp") return m.exp(x);
  if (name == "log") return m.log(x);
  if (name == "expm1") return m.expm1(x);
  if (name == "log1p") return m.log1p(x);
  if (name == "tanh") return m.tanh(x);
  if (name == "sigmoid") return m.sigmoid(x);
  if (name == "sqrt") return intrinsic(llvm::Intrinsic::sqrt);
  if (name == "rsqrt") return m.div(m.c(1), intrinsic(llvm::Intrinsic::sqrt));
  if (name == "floor") return intrinsic(llvm::Intrinsic::floor);
  if (name == "ceil") return intrinsic(llvm::Intrinsic::ceil);
  if (name == "round") return intrinsic(llvm::Intrinsic::roundeven);
  if (name == "trunc") return intrinsic(llvm::Intrinsic::trunc);
  if (name == "abs") return intrinsic(llvm::Intrinsic::fabs);
  if (name == "fma") return b.CreateIntrinsic(llvm::Intrinsic::fma, {x->getType()}, args);
  if (name == "erf" && !f64) return m.erf_f32(x);
  if (name == "copysign") return b.CreateBinaryIntrinsic(llvm::Intrinsic::copysign, x, args[1]);
  if (const loop::ExtraMath* em = loop::find_extra_math(name)) {
    // The extra intrinsics (tan, atan2, lgamma, ...): the double function of
    // ir/loop/extra_math.cpp per lane; f32 lanes widened and rounded once.
    if (f64) return libm_per_lane(b, em->symbol, args);
    llvm::Type* wide_ty = value_type(b.getContext(), {DType::F64, type.lanes});
    std::vector<Value*> wide;
    for (Value* a : args) wide.push_back(b.CreateFPExt(a, wide_ty));
    return b.CreateFPTrunc(libm_per_lane(b, em->symbol, wide), x->getType());
  }
  bool is_trig = name == "sin" || name == "cos";
  if (is_trig || name == "erf" || name == "pow") {
    if (f64) return libm_per_lane(b, name.c_str(), args);
    // f32: evaluate in f64 and round once.
    MathEmitter md(b, DType::F64, type.lanes);
    llvm::Type* wide_ty = value_type(b.getContext(), {DType::F64, type.lanes});
    Value* xd = b.CreateFPExt(x, wide_ty);
    Value* r = nullptr;
    if (is_trig) {
      r = trig_f32(b, name == "sin", xd, type.lanes);
    } else if (name == "erf") {
      r = md.erf(xd);
    } else {
      r = md.pow(xd, b.CreateFPExt(args[1], wide_ty));
    }
    return b.CreateFPTrunc(r, x->getType());
  }
  KILN_INTERNAL_CHECK(false, "llvm backend: unknown intrinsic '" << name << "'");
}

}  // namespace kiln::codegen::llvm_cpu
