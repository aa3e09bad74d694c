// Floating conversions of the LLVM backend, emitted as plain integer/f32/f64 IR
// so JIT code never needs a soft-float helper: LLVM lowers half/bfloat
// conversions on AVX2 hosts to libcalls (__truncsfbf2, __truncdfhf2, ...) that
// GCC 12's libgcc lacks. f16/bf16 values are i16 bit patterns throughout the
// backend. Every routine here is bit-exact with the runtime's conversions
// (kiln::store_double / store_int in runtime/element.cpp: round to nearest even
// on bit patterns; f64 and i64 sources round to f32 "to odd" first so the final
// rounding happens once; a NaN stored as f16/bf16 is the canonical quiet NaN)
// and works lane-wise on vectors.
// Assumes the default FP environment (no FTZ/DAZ) for the few f32/f64
// instructions used (fptrunc, fpext, exact scaling multiplies).
#include <llvm/IR/Intrinsics.h>

#include "codegen/llvm/llvm_internal.h"
#include "kiln/element.h"
#include "kiln/error.h"

namespace kiln::codegen::llvm_cpu {
namespace {

using llvm::Value;

// Builder with fast-math flags cleared for the lifetime of the guard: these
// conversions must round exactly as the runtime does even in fast-math kernels.
class ExactFp {
 public:
  explicit ExactFp(llvm::IRBuilder<>& b) : guard_(b) { b.clearFastMathFlags(); }

 private:
  llvm::IRBuilderBase::FastMathFlagGuard guard_;
};

// Splat-aware integer constant of type `t`.
Value* k(llvm::Type* t, uint64_t v) {
  return llvm::ConstantInt::get(t, v);
}

Value* bits_to_f32(llvm::IRBuilder<>& b, Value* bits) {
  return b.CreateBitCast(bits, with_element(bits->getType(), b.getFloatTy()));
}

// bf16 (i16 bits) -> f32: exact, the upper half of the f32 pattern.
Value* bf16_to_f32(llvm::IRBuilder<>& b, Value* h) {
  llvm::Type* i32 = with_element(h->getType(), b.getInt32Ty());
  return bits_to_f32(b, b.CreateShl(b.CreateZExt(h, i32), 16));
}

// f32 -> bf16 bits: kiln::float_to_bf16 for numbers; NaN becomes the
// canonical quiet NaN 0x7fc0, as every runtime conversion into bf16 gives
// (store_double rounds through double_to_float_odd) and so the loop-IR
// evaluator, which stores through store_double.
Value* f32_to_bf16(llvm::IRBuilder<>& b, Value* f) {
  llvm::Type* i32 = with_element(f->getType(), b.getInt32Ty());
  Value* u = b.CreateBitCast(f, i32);
  Value* hi = b.CreateLShr(u, 16);
  Value* is_nan = b.CreateICmpUGT(b.CreateAnd(u, k(i32, 0x7fffffff)), k(i32, 0x7f800000));
  Value* quiet = k(i32, 0x7fc0);
  // Ties to even; a carry out of the mantissa correctly bumps the exponent (to inf).
  Value* rounded =
      b.CreateLShr(b.CreateAdd(u, b.CreateAdd(b.CreateAnd(hi, k(i32, 1)), k(i32, 0x7fff))), 16);
  Value* r = b.CreateSelect(is_nan, quiet, rounded);
  return b.CreateTrunc(r, with_element(f->getType(), b.getInt16Ty()));
}

// f16 (i16 bits) -> f32: kiln::half_to_float. The magnitude bits moved into
// f32 position are the value times 2^-112 (subnormal halves land on normal or
// subnormal floats, exactly), so one exact multiply by 2^112 rebiases them;
// inf/NaN keep their payload.
Value* f16_to_f32(llvm::IRBuilder<>& b, Value* h) {
  llvm::Type* i32 = with_element(h->getType(), b.getInt32Ty());
  Value* x = b.CreateZExt(h, i32);
  Value* mag = b.CreateShl(b.CreateAnd(x, k(i32, 0x7fff)), 13);
  Value* scaled = b.CreateFMul(bits_to_f32(b, mag),
                               llvm::ConstantFP::get(with_element(i32, b.getFloatTy()), 0x1p112));
  Value* finite_bits = b.CreateBitCast(scaled, i32);
  Value* is_special = b.CreateICmpEQ(b.CreateAnd(x, k(i32, 0x7c00)), k(i32, 0x7c00));
  Value* special_bits = b.CreateOr(mag, k(i32, 0x7f800000));
  Value* sign = b.CreateShl(b.CreateAnd(x, k(i32, 0x8000)), 16);
  return bits_to_f32(b, b.CreateOr(sign, b.CreateSelect(is_special, special_bits, finite_bits)));
}

// f32 -> f16 bits: kiln::float_to_half (ties to even, overflow to inf, half
// subnormals rounded on the integer mantissa); NaN becomes the canonical
// 0x7e00, as in f32_to_bf16.
Value* f32_to_f16(llvm::IRBuilder<>& b, Value* f) {
  llvm::Type* i32 = with_element(f->getType(), b.getInt32Ty());
  Value* x = b.CreateBitCast(f, i32);
  Value* sign = b.CreateAnd(b.CreateLShr(x, 16), k(i32, 0x8000));
  Value* ax = b.CreateAnd(x, k(i32, 0x7fffffff));
  // Normal range: rebias the exponent (127 -> 15) and round the 13 dropped bits.
  Value* odd = b.CreateAnd(b.CreateLShr(ax, 13), k(i32, 1));
  Value* normal = b.CreateLShr(b.CreateAdd(ax, b.CreateAdd(odd, k(i32, 0xC8000000u + 0xfffu))), 13);
  // Below 2^-14: shift the full mantissa right by 126 - exp (14..24; clamped to
  // 31, which still rounds every input below 2^-25 to zero) and round to even.
  Value* exp = b.CreateLShr(ax, 23);
  Value* mant = b.CreateOr(b.CreateAnd(ax, k(i32, 0x7fffff)), k(i32, 0x800000));
  Value* shift = b.CreateBinaryIntrinsic(
      llvm::Intrinsic::umin,
      b.CreateBinaryIntrinsic(llvm::Intrinsic::smax, b.CreateSub(k(i32, 126), exp), k(i32, 1)),
      k(i32, 31));  // kept in 1..31 so no lane shifts out of range, even unselected ones
  Value* half_ulp_minus_1 =
      b.CreateSub(b.CreateShl(k(i32, 1), b.CreateSub(shift, k(i32, 1))), k(i32, 1));
  Value* sub_odd = b.CreateAnd(b.CreateLShr(mant, shift), k(i32, 1));
  Value* subnormal = b.CreateLShr(b.CreateAdd(mant, b.CreateAdd(half_ulp_minus_1, sub_odd)), shift);
  Value* r = b.CreateSelect(b.CreateICmpULT(ax, k(i32, 0x38800000)), subnormal, normal);
  // 65520 (halfway between 65504 and 2^16) and above: inf.
  r = b.CreateSelect(b.CreateICmpUGE(ax, k(i32, 0x477ff000)), k(i32, 0x7c00), r);
  r = b.CreateOr(sign, r);
  r = b.CreateSelect(b.CreateICmpUGT(ax, k(i32, 0x7f800000)), k(i32, 0x7e00), r);
  return b.CreateTrunc(r, with_element(f->getType(), b.getInt16Ty()));
}

// f64 -> f32 rounded to odd (kiln's double_to_float_odd): the nearest-even
// result, stepped toward zero when it rounded away, with the lowest mantissa
// bit set when inexact. Overflow comes out as +-FLT_MAX (inf stepped down);
// NaN as the positive quiet NaN, as the runtime does.
Value* f64_to_f32_odd(llvm::IRBuilder<>& b, Value* d) {
  llvm::Type* f32 = with_element(d->getType(), b.getFloatTy());
  llvm::Type* i32 = with_element(d->getType(), b.getInt32Ty());
  Value* f = b.CreateFPTrunc(d, f32);
  Value* back = b.CreateFPExt(f, d->getType());
  Value* inexact = b.CreateFCmpONE(back, d);
  Value* away = b.CreateFCmpOGT(b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, back),
                                b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, d));
  Value* fb = b.CreateBitCast(f, i32);
  Value* odd = b.CreateOr(b.CreateSub(fb, b.CreateZExt(away, i32)), k(i32, 1));
  Value* r = b.CreateSelect(inexact, odd, fb);
  r = b.CreateSelect(b.CreateFCmpUNO(d, d), k(i32, 0x7fc00000), r);
  return bits_to_f32(b, r);
}

// i64 -> f32 rounded to odd (kiln's int_to_float_odd): keep the top 24
// significant bits of |v|, OR the rest into the lowest kept bit, scale back by
// an exact power of two.
Value* i64_to_f32_odd(llvm::IRBuilder<>& b, Value* v) {
  llvm::Type* i64 = v->getType();
  llvm::Type* i32 = with_element(i64, b.getInt32Ty());
  Value* neg = b.CreateICmpSLT(v, k(i64, 0));
  Value* mag = b.CreateSelect(neg, b.CreateSub(k(i64, 0), v), v);  // INT64_MIN: 2^63 unsigned
  Value* lz = b.CreateBinaryIntrinsic(llvm::Intrinsic::ctlz, mag, b.getFalse());
  Value* shift = b.CreateBinaryIntrinsic(llvm::Intrinsic::smax, b.CreateSub(k(i64, 40), lz),
                                         k(i64, 0));  // 0..40
  Value* kept = b.CreateLShr(mag, shift);
  Value* sticky = b.CreateICmpNE(b.CreateShl(kept, shift), mag);
  kept = b.CreateOr(kept, b.CreateZExt(sticky, i64));
  // kept < 2^24: exact through a signed i32 conversion (no u64 -> f32 lowering).
  Value* f = b.CreateSIToFP(b.CreateTrunc(kept, i32), with_element(i64, b.getFloatTy()));
  Value* scale =
      bits_to_f32(b, b.CreateShl(b.CreateAdd(b.CreateTrunc(shift, i32), k(i32, 127)), 23));
  f = b.CreateFMul(f, scale);
  return b.CreateSelect(neg, b.CreateFNeg(f), f);
}

// A signaling NaN made quiet, as the runtime's f16/bf16 -> double -> float
// round trip does; only an f32 result can tell (every other consumer of a
// widened value quiets NaNs itself).
Value* quiet_f32(llvm::IRBuilder<>& b, Value* f) {
  llvm::Type* i32 = with_element(f->getType(), b.getInt32Ty());
  Value* u = b.CreateBitCast(f, i32);
  return bits_to_f32(b, b.CreateSelect(b.CreateFCmpUNO(f, f), b.CreateOr(u, k(i32, 0x400000)), u));
}

Value* f32_to(llvm::IRBuilder<>& b, Value* f, DType to) {
  switch (to) {
    case DType::F16:
      return f32_to_f16(b, f);
    case DType::BF16:
      return f32_to_bf16(b, f);
    case DType::F32:
      return f;
    case DType::F64:
      return b.CreateFPExt(f, with_element(f->getType(), b.getDoubleTy()));
    default:
      break;
  }
  KILN_INTERNAL_CHECK(false, "llvm backend: float conversion to " << dtype_name(to));
}

}  // namespace

llvm::Type* with_element(llvm::Type* t, llvm::Type* elem) {
  if (auto* v = llvm::dyn_cast<llvm::FixedVectorType>(t)) {
    return llvm::FixedVectorType::get(elem, v->getNumElements());
  }
  return elem;
}

Value* convert_float(llvm::IRBuilder<>& b, Value* v, DType from, DType to) {
  KILN_INTERNAL_CHECK(is_floating(from) && is_floating(to), "llvm backend: convert_float "
                                                                << dtype_name(from) << " -> "
                                                                << dtype_name(to));
  if (from == to) return v;
  ExactFp exact(b);
  switch (from) {
    case DType::F16:
    case DType::BF16: {
      Value* f = from == DType::F16 ? f16_to_f32(b, v) : bf16_to_f32(b, v);
      return to == DType::F32 ? quiet_f32(b, f) : f32_to(b, f, to);
    }
    case DType::F32:
      return f32_to(b, v, to);
    case DType::F64:
      if (to == DType::F32) return b.CreateFPTrunc(v, with_element(v->getType(), b.getFloatTy()));
      return f32_to(b, f64_to_f32_odd(b, v), to);
    default:
      break;
  }
  KILN_INTERNAL_CHECK(false, "llvm backend: float conversion from " << dtype_name(from));
}

Value* int_to_float(llvm::IRBuilder<>& b, Value* v, DType from, DType to) {
  KILN_INTERNAL_CHECK(!is_floating(from) && is_floating(to), "llvm backend: int_to_float "
                                                                 << dtype_name(from) << " -> "
                                                                 << dtype_name(to));
  ExactFp exact(b);
  bool sign = is_signed(from);
  if (to == DType::F32 || to == DType::F64) {
    // One correctly rounded conversion, like static_cast in kiln::store_int.
    llvm::Type* t = with_element(v->getType(), to == DType::F32 ? b.getFloatTy() : b.getDoubleTy());
    return sign ? b.CreateSIToFP(v, t) : b.CreateUIToFP(v, t);
  }
  if (from == DType::I64) return f32_to(b, i64_to_f32_odd(b, v), to);
  // Narrower integers are exact in f64; round once from there.
  llvm::Type* f64 = with_element(v->getType(), b.getDoubleTy());
  Value* d = sign ? b.CreateSIToFP(v, f64) : b.CreateUIToFP(v, f64);
  return f32_to(b, f64_to_f32_odd(b, d), to);
}

Value* float_constant(llvm::LLVMContext& ctx, DType t, double value) {
  switch (t) {
    // Rounded through float like the loop-IR evaluator's FloatImm.
    case DType::F16:
      return llvm::ConstantInt::get(llvm::Type::getInt16Ty(ctx),
                                    float_to_half(static_cast<float>(value)));
    case DType::BF16:
      return llvm::ConstantInt::get(llvm::Type::getInt16Ty(ctx),
                                    float_to_bf16(static_cast<float>(value)));
    case DType::F32:
      return llvm::ConstantFP::get(llvm::Type::getFloatTy(ctx), static_cast<float>(value));
    case DType::F64:
      return llvm::ConstantFP::get(llvm::Type::getDoubleTy(ctx), value);
    default:
      break;
  }
  KILN_INTERNAL_CHECK(false, "llvm backend: float constant of " << dtype_name(t));
}

}  // namespace kiln::codegen::llvm_cpu
