// Loop-IR expressions -> LLVM IR values. Types map one to one (bool is i1 in
// registers, i8 in memory; f16/bf16 are i16 bit patterns, see llvm_internal.h).
// f16/bf16 arithmetic is done in f32 and rounded back once with the backend's
// own conversions (float_convert.cpp), as the loop-IR evaluator does: f32 has
// more than 2p+2 bits for both, so the result equals a correctly rounded
// f16/bf16 operation, and no soft-float helper is ever called.
#include <llvm/IR/Intrinsics.h>

#include "codegen/llvm/emitter.h"
#include "ir/loop/analysis.h"
#include "kiln/error.h"
#include "runtime/kernel_status.h"

namespace kiln::codegen::llvm_cpu {

using loop::BinOp;
using loop::CmpOp;
using loop::Expr;
using loop::VType;

llvm::Type* scalar_type(llvm::LLVMContext& ctx, DType t) {
  switch (t) {
    case DType::Bool:
      return llvm::Type::getInt1Ty(ctx);
    case DType::I8:
    case DType::U8:
      return llvm::Type::getInt8Ty(ctx);
    case DType::I16:
      return llvm::Type::getInt16Ty(ctx);
    case DType::I32:
      return llvm::Type::getInt32Ty(ctx);
    case DType::I64:
      return llvm::Type::getInt64Ty(ctx);
    case DType::F16:
    case DType::BF16:
      return llvm::Type::getInt16Ty(ctx);
    case DType::F32:
      return llvm::Type::getFloatTy(ctx);
    case DType::F64:
      return llvm::Type::getDoubleTy(ctx);
  }
  KILN_INTERNAL_CHECK(false, "llvm backend: bad dtype " << int(t));
}

llvm::Type* memory_type(llvm::LLVMContext& ctx, DType t) {
  return t == DType::Bool ? llvm::Type::getInt8Ty(ctx) : scalar_type(ctx, t);
}

llvm::Type* value_type(llvm::LLVMContext& ctx, VType t) {
  llvm::Type* s = scalar_type(ctx, t.dtype);
  return t.lanes > 1 ? llvm::FixedVectorType::get(s, t.lanes) : s;
}

Emitter::Emitter(llvm::Module& module, bool fast_math)
    : module_(module), ctx_(module.getContext()), b_(module.getContext()) {
  if (fast_math) {
    llvm::FastMathFlags fmf;
    // Only the flags that keep NaN/inf semantics: vector math tests for them.
    fmf.setAllowReassoc();
    fmf.setAllowContract();
    b_.setFastMathFlags(fmf);
  }
}

llvm::Value* Emitter::lookup_var(const std::string& name) {
  auto it = state_.vars.find(name);
  KILN_INTERNAL_CHECK(it != state_.vars.end(), "llvm backend: kernel " << kernel_name_
                                                                       << " uses unbound variable '"
                                                                       << name << "'");
  return it->second;
}

llvm::Value* Emitter::buffer(const loop::Buf& buf) {
  auto it = state_.bufs.find(buf.get());
  KILN_INTERNAL_CHECK(it != state_.bufs.end(), "llvm backend: kernel " << kernel_name_
                                                                       << " uses unbound buffer '"
                                                                       << buf->name << "'");
  return it->second;
}

llvm::Value* Emitter::element_ptr(const loop::Buf& buf, llvm::Value* index) {
  return b_.CreateGEP(memory_type(ctx_, buf->dtype), buffer(buf), index);
}

llvm::Value* Emitter::to_memory(llvm::Value* v, DType t) {
  if (t != DType::Bool) return v;
  return b_.CreateZExt(v, with_element(v->getType(), b_.getInt8Ty()));
}

llvm::Value* Emitter::from_memory(llvm::Value* v, DType t) {
  if (t != DType::Bool) return v;
  return b_.CreateICmpNE(v, llvm::Constant::getNullValue(v->getType()));
}

const Expr* Emitter::dense_base(const Expr& index) {
  const loop::Ramp* r = index.as<loop::Ramp>();
  int64_t stride = 0;
  if (r && loop::is_const_int(r->stride, &stride) && stride == 1) return &r->base;
  return nullptr;
}

const Expr* Emitter::strided_base(const Expr& index, int* stride) {
  const loop::Ramp* r = index.as<loop::Ramp>();
  int64_t s = 0;
  if (!r || !loop::is_const_int(r->stride, &s) || s < 2 || s > 4 || r->lanes * s > 64) {
    return nullptr;
  }
  *stride = int(s);
  return &r->base;
}

const loop::Ramp* Emitter::runtime_strided(const Expr& index) {
  const loop::Ramp* r = index.as<loop::Ramp>();
  if (!r || loop::is_const_int(r->stride) || r->stride.type().lanes != 1) return nullptr;
  return r;
}

llvm::Value* Emitter::strided_mask(llvm::Value* lane_mask, int lanes, int stride) {
  // The span is lanes * stride elements (a power-of-two vector); the ones
  // past the last wanted element are never touched.
  const int span = lanes * stride;
  if (!lane_mask) {
    std::vector<llvm::Constant*> bits;
    for (int j = 0; j < span; ++j) bits.push_back(b_.getInt1(j % stride == 0));
    return llvm::ConstantVector::get(bits);
  }
  // Lanes of `lane_mask`, or (index `lanes`) false from the second operand.
  std::vector<int> pick;
  for (int j = 0; j < span; ++j) pick.push_back(j % stride == 0 ? j / stride : lanes);
  llvm::Value* off = llvm::Constant::getNullValue(lane_mask->getType());
  return b_.CreateShuffleVector(lane_mask, off, pick);
}

llvm::Value* Emitter::all_true(int lanes) {
  return llvm::ConstantInt::getTrue(llvm::FixedVectorType::get(b_.getInt1Ty(), lanes));
}

llvm::Value* Emitter::emit(const Expr& e) {
  KILN_INTERNAL_CHECK(e.defined(), "llvm backend: undefined expression in " << kernel_name_);
  VType t = e.type();
  switch (e->kind) {
    case loop::NodeKind::IntImm: {
      int64_t v = e.as<loop::IntImm>()->value;
      if (t.dtype == DType::Bool) v = v != 0;
      return llvm::ConstantInt::get(scalar_type(ctx_, t.dtype), static_cast<uint64_t>(v), true);
    }
    case loop::NodeKind::FloatImm:
      return float_constant(ctx_, t.dtype, e.as<loop::FloatImm>()->value);
    case loop::NodeKind::Var:
      return lookup_var(e.as<loop::Var>()->name);
    case loop::NodeKind::Cast: {
      const loop::Cast* c = e.as<loop::Cast>();
      return emit_cast(emit(c->value), c->value.type(), t);
    }
    case loop::NodeKind::Binary:
      return emit_binary(e.as<loop::Binary>());
    case loop::NodeKind::Compare:
      return emit_compare(e.as<loop::Compare>());
    case loop::NodeKind::Not:
      return b_.CreateNot(emit(e.as<loop::Not>()->a));
    case loop::NodeKind::Select: {
      const loop::Select* s = e.as<loop::Select>();
      llvm::Value* c = emit(s->cond);
      llvm::Value* tv = emit(s->true_value);
      llvm::Value* fv = emit(s->false_value);
      return b_.CreateSelect(c, tv, fv);
    }
    case loop::NodeKind::Load:
      return emit_load(e.as<loop::Load>());
    case loop::NodeKind::Ramp:
      return emit_ramp(e.as<loop::Ramp>());
    case loop::NodeKind::Broadcast: {
      const loop::Broadcast* bc = e.as<loop::Broadcast>();
      return b_.CreateVectorSplat(bc->lanes, emit(bc->value));
    }
    case loop::NodeKind::Call:
      return emit_call(e.as<loop::Call>());
    case loop::NodeKind::Let: {
      const loop::Let* l = e.as<loop::Let>();
      llvm::Value* v = emit(l->value);
      llvm::Value* result = nullptr;
      with_var(l->var.as<loop::Var>()->name, v, [&] { result = emit(l->body); });
      return result;
    }
    default:
      break;
  }
  KILN_INTERNAL_CHECK(
      false, "llvm backend: cannot emit expression kind " << loop::node_kind_name(e->kind));
}

llvm::Value* Emitter::emit_cast(llvm::Value* v, VType from, VType to) {
  DType f = from.dtype, t = to.dtype;
  if (f == t) return v;
  llvm::Type* target = value_type(ctx_, to);
  if (t == DType::Bool) {
    if (is_floating(f)) {
      if (f == DType::F16 || f == DType::BF16) v = convert_float(b_, v, f, DType::F32);
      // NaN != 0 is true, as in C and the interpreter.
      return b_.CreateFCmpUNE(v, llvm::Constant::getNullValue(v->getType()));
    }
    return b_.CreateICmpNE(v, llvm::Constant::getNullValue(v->getType()));
  }
  if (f == DType::Bool) {
    if (!is_floating(t)) return b_.CreateZExt(v, target);
    return int_to_float(b_, v, f, t);
  }
  if (is_floating(f) && is_floating(t)) return convert_float(b_, v, f, t);
  if (is_floating(f)) {
    // Saturating float -> i64 (NaN -> 0), then wrap to the narrower type: the
    // interpreter's double_to_int64 + store_int, defined for every input.
    if (f == DType::F16 || f == DType::BF16) v = convert_float(b_, v, f, DType::F32);
    llvm::Type* i64 = value_type(ctx_, {DType::I64, to.lanes});
    llvm::Value* wide = b_.CreateIntrinsic(llvm::Intrinsic::fptosi_sat, {i64, v->getType()}, {v});
    return t == DType::I64 ? wide : b_.CreateTrunc(wide, target);
  }
  if (is_floating(t)) return int_to_float(b_, v, f, t);
  size_t fs = dtype_size(f), ts = dtype_size(t);
  if (ts > fs) return is_signed(f) ? b_.CreateSExt(v, target) : b_.CreateZExt(v, target);
  if (ts < fs) return b_.CreateTrunc(v, target);
  return v;  // i8 <-> u8: same bits
}

namespace {
int32_t status_bit(BinOp op) {
  return op == BinOp::Div ? runtime::kStatusIntDivByZero : runtime::kStatusIntModByZero;
}
}  // namespace

void Emitter::note_zero_divisor(llvm::Value* zero, BinOp op, const Expr& divisor) {
  if (!state_.status) return;
  // Masked-off lanes (a vector tail) read 0: they are not errors.
  llvm::Value* failed = zero;
  if (store_mask_ && store_mask_->getType() == zero->getType()) {
    failed = b_.CreateAnd(failed, store_mask_);
  }
  for (const Expr& p : loop::load_predicates(divisor)) {
    llvm::Value* live = emit(p);
    if (live->getType() == zero->getType()) failed = b_.CreateAnd(failed, live);
  }
  note_status(failed, status_bit(op));
}

llvm::Value* Emitter::emit_int_divmod(BinOp op, llvm::Value* a, llvm::Value* b, DType t,
                                      const Expr& divisor) {
  llvm::Type* ty = a->getType();
  auto k = [&](int64_t v) { return llvm::ConstantInt::get(ty, static_cast<uint64_t>(v), true); };
  int64_t c = 0;
  bool safe_const = loop::is_const_int(divisor, &c) && c != 0 && c != -1;
  if (!is_signed(t)) {
    // Division by zero gives 0 and sets the status word (compiled code must not trap).
    llvm::Value* zero = safe_const ? nullptr : b_.CreateICmpEQ(b, k(0));
    if (zero) note_zero_divisor(zero, op, divisor);
    llvm::Value* bs = zero ? b_.CreateSelect(zero, k(1), b) : b;
    if (op == BinOp::Mod) return b_.CreateURem(a, bs);
    llvm::Value* q = b_.CreateUDiv(a, bs);
    return zero ? b_.CreateSelect(zero, k(0), q) : q;
  }
  llvm::Value* zero = nullptr;
  llvm::Value* minus_one = nullptr;
  llvm::Value* bs = b;
  if (!safe_const) {
    // x / 0 -> 0 and x % 0 -> 0; x / -1 -> -x (wrapping) without the idiv trap on INT_MIN.
    zero = b_.CreateICmpEQ(b, k(0));
    note_zero_divisor(zero, op, divisor);
    minus_one = b_.CreateICmpEQ(b, k(-1));
    bs = b_.CreateSelect(b_.CreateOr(zero, minus_one), k(1), b);
  }
  llvm::Value* q = b_.CreateSDiv(a, bs);
  llvm::Value* r = b_.CreateSRem(a, bs);
  // Floor semantics: when the remainder is non-zero and its sign differs from
  // the divisor's, step the quotient down and move the remainder into range.
  llvm::Value* fix =
      b_.CreateAnd(b_.CreateICmpNE(r, k(0)), b_.CreateICmpSLT(b_.CreateXor(r, bs), k(0)));
  if (op == BinOp::Mod) return b_.CreateAdd(r, b_.CreateSelect(fix, bs, k(0)));
  q = b_.CreateSub(q, b_.CreateZExt(fix, ty));
  if (!safe_const) {
    q = b_.CreateSelect(minus_one, b_.CreateNeg(a), q);
    q = b_.CreateSelect(zero, k(0), q);
  }
  return q;
}

llvm::Value* Emitter::emit_binary(const loop::Binary* op) {
  llvm::Value* a = emit(op->a);
  llvm::Value* b = emit(op->b);
  DType t = op->a.type().dtype;
  if (is_floating(t)) {
    bool half = t == DType::F16 || t == DType::BF16;
    if (half) {
      a = convert_float(b_, a, t, DType::F32);
      b = convert_float(b_, b, t, DType::F32);
    }
    llvm::Value* r = nullptr;
    switch (op->op) {
      case BinOp::Add:
        r = b_.CreateFAdd(a, b);
        break;
      case BinOp::Sub:
        r = b_.CreateFSub(a, b);
        break;
      case BinOp::Mul:
        r = b_.CreateFMul(a, b);
        break;
      case BinOp::Div:
        r = b_.CreateFDiv(a, b);
        break;
      case BinOp::Mod: {
        // Floor modulo: fmod (exact) moved into the divisor's sign.
        llvm::Value* m = b_.CreateFRem(a, b);
        llvm::Value* zero = llvm::Constant::getNullValue(m->getType());
        llvm::Value* fix =
            b_.CreateAnd(b_.CreateFCmpONE(m, zero),
                         b_.CreateXor(b_.CreateFCmpOLT(m, zero), b_.CreateFCmpOLT(b, zero)));
        r = b_.CreateSelect(fix, b_.CreateFAdd(m, b), m);
        break;
      }
      // NaN-propagating, like torch.minimum/maximum.
      case BinOp::Min:
        r = b_.CreateBinaryIntrinsic(llvm::Intrinsic::minimum, a, b);
        break;
      case BinOp::Max:
        r = b_.CreateBinaryIntrinsic(llvm::Intrinsic::maximum, a, b);
        break;
      default:
        KILN_INTERNAL_CHECK(
            false, "llvm backend: " << loop::binop_name(op->op) << " on " << dtype_name(t));
    }
    return half ? convert_float(b_, r, DType::F32, t) : r;
  }
  bool sign = is_signed(t);
  switch (op->op) {
    case BinOp::Add:
      return b_.CreateAdd(a, b);
    case BinOp::Sub:
      return b_.CreateSub(a, b);
    case BinOp::Mul:
      return b_.CreateMul(a, b);
    case BinOp::Div:
    case BinOp::Mod:
      return emit_int_divmod(op->op, a, b, t, op->b);
    case BinOp::Min:
      return b_.CreateBinaryIntrinsic(sign ? llvm::Intrinsic::smin : llvm::Intrinsic::umin, a, b);
    case BinOp::Max:
      return b_.CreateBinaryIntrinsic(sign ? llvm::Intrinsic::smax : llvm::Intrinsic::umax, a, b);
    case BinOp::And:
    case BinOp::BitAnd:
      return b_.CreateAnd(a, b);
    case BinOp::Or:
    case BinOp::BitOr:
      return b_.CreateOr(a, b);
    case BinOp::BitXor:
      return b_.CreateXor(a, b);
  }
  KILN_INTERNAL_CHECK(false, "llvm backend: bad binary op");
}

llvm::Value* Emitter::emit_compare(const loop::Compare* op) {
  llvm::Value* a = emit(op->a);
  llvm::Value* b = emit(op->b);
  DType t = op->a.type().dtype;
  if (is_floating(t)) {
    if (t == DType::F16 || t == DType::BF16) {
      a = convert_float(b_, a, t, DType::F32);
      b = convert_float(b_, b, t, DType::F32);
    }
    switch (op->op) {
      case CmpOp::EQ:
        return b_.CreateFCmpOEQ(a, b);
      case CmpOp::NE:
        return b_.CreateFCmpUNE(a, b);
      case CmpOp::LT:
        return b_.CreateFCmpOLT(a, b);
      case CmpOp::LE:
        return b_.CreateFCmpOLE(a, b);
      case CmpOp::GT:
        return b_.CreateFCmpOGT(a, b);
      case CmpOp::GE:
        return b_.CreateFCmpOGE(a, b);
    }
  }
  bool s = is_signed(t);
  switch (op->op) {
    case CmpOp::EQ:
      return b_.CreateICmpEQ(a, b);
    case CmpOp::NE:
      return b_.CreateICmpNE(a, b);
    case CmpOp::LT:
      return s ? b_.CreateICmpSLT(a, b) : b_.CreateICmpULT(a, b);
    case CmpOp::LE:
      return s ? b_.CreateICmpSLE(a, b) : b_.CreateICmpULE(a, b);
    case CmpOp::GT:
      return s ? b_.CreateICmpSGT(a, b) : b_.CreateICmpUGT(a, b);
    case CmpOp::GE:
      return s ? b_.CreateICmpSGE(a, b) : b_.CreateICmpUGE(a, b);
  }
  KILN_INTERNAL_CHECK(false, "llvm backend: bad compare op");
}

llvm::Value* Emitter::emit_load(const loop::Load* op) {
  DType dt = op->buf->dtype;
  llvm::Type* elem = memory_type(ctx_, dt);
  llvm::Align align(dtype_size(dt));
  int lanes = op->type.lanes;
  if (lanes == 1) {
    llvm::Value* ptr = element_ptr(op->buf, emit(op->index));
    if (!op->predicate.defined()) return from_memory(b_.CreateAlignedLoad(elem, ptr, align), dt);
    // A masked-off scalar must not be read: branch around the load.
    llvm::Value* pred = emit(op->predicate);
    llvm::BasicBlock* from = b_.GetInsertBlock();
    llvm::Function* fn = from->getParent();
    auto* then_bb = llvm::BasicBlock::Create(ctx_, "pload", fn);
    auto* done_bb = llvm::BasicBlock::Create(ctx_, "pload.done", fn);
    b_.CreateCondBr(pred, then_bb, done_bb);
    b_.SetInsertPoint(then_bb);
    llvm::Value* v = b_.CreateAlignedLoad(elem, ptr, align);
    b_.CreateBr(done_bb);
    b_.SetInsertPoint(done_bb);
    llvm::PHINode* phi = b_.CreatePHI(elem, 2);
    phi->addIncoming(v, then_bb);
    phi->addIncoming(llvm::Constant::getNullValue(elem), from);
    return from_memory(phi, dt);
  }
  llvm::Type* vec = llvm::FixedVectorType::get(elem, lanes);
  llvm::Value* zero = llvm::Constant::getNullValue(vec);
  llvm::Value* mask = op->predicate.defined() ? emit(op->predicate) : nullptr;
  llvm::Value* v = nullptr;
  int stride = 0;
  if (const Expr* base = dense_base(op->index)) {
    llvm::Value* ptr = element_ptr(op->buf, emit(*base));
    v = mask ? static_cast<llvm::Value*>(b_.CreateMaskedLoad(vec, ptr, align, mask, zero))
             : b_.CreateAlignedLoad(vec, ptr, align);
  } else if (const Expr* sbase = strided_base(op->index, &stride)) {
    // Every stride-th element of one span: a masked wide load (only the
    // wanted elements are read) and a shuffle picking them.
    const int span = lanes * stride;
    llvm::Type* wide = llvm::FixedVectorType::get(elem, span);
    llvm::Value* ptr = element_ptr(op->buf, emit(*sbase));
    llvm::Value* all = b_.CreateMaskedLoad(wide, ptr, align, strided_mask(mask, lanes, stride),
                                           llvm::Constant::getNullValue(wide));
    std::vector<int> pick;
    for (int l = 0; l < lanes; ++l) pick.push_back(l * stride);
    v = b_.CreateShuffleVector(all, pick);
  } else if (const loop::Ramp* r = runtime_strided(op->index)) {
    // A stride known only at run time (an input's stride argument) is almost
    // always 1: branch to a dense load then, and gather otherwise. The branch
    // is uniform, so it predicts perfectly; LLVM may unswitch it.
    llvm::Value* is_dense = b_.CreateICmpEQ(
        emit(r->stride), llvm::ConstantInt::get(scalar_type(ctx_, r->stride.type().dtype), 1));
    llvm::Function* fn = b_.GetInsertBlock()->getParent();
    auto* dense_bb = llvm::BasicBlock::Create(ctx_, "sload.dense", fn);
    auto* gather_bb = llvm::BasicBlock::Create(ctx_, "sload.gather", fn);
    auto* done_bb = llvm::BasicBlock::Create(ctx_, "sload.done", fn);
    b_.CreateCondBr(is_dense, dense_bb, gather_bb);
    b_.SetInsertPoint(dense_bb);
    llvm::Value* ptr = element_ptr(op->buf, emit(r->base));
    llvm::Value* dense =
        mask ? static_cast<llvm::Value*>(b_.CreateMaskedLoad(vec, ptr, align, mask, zero))
             : b_.CreateAlignedLoad(vec, ptr, align);
    llvm::BasicBlock* dense_end = b_.GetInsertBlock();
    b_.CreateBr(done_bb);
    b_.SetInsertPoint(gather_bb);
    llvm::Value* ptrs = element_ptr(op->buf, emit(op->index));
    llvm::Value* gathered =
        b_.CreateMaskedGather(vec, ptrs, align, mask ? mask : all_true(lanes), zero);
    llvm::BasicBlock* gather_end = b_.GetInsertBlock();
    b_.CreateBr(done_bb);
    b_.SetInsertPoint(done_bb);
    llvm::PHINode* phi = b_.CreatePHI(vec, 2);
    phi->addIncoming(dense, dense_end);
    phi->addIncoming(gathered, gather_end);
    v = phi;
  } else {
    llvm::Value* ptrs = element_ptr(op->buf, emit(op->index));
    v = b_.CreateMaskedGather(vec, ptrs, align, mask ? mask : all_true(lanes), zero);
  }
  return from_memory(v, dt);
}

llvm::Value* Emitter::emit_ramp(const loop::Ramp* op) {
  llvm::Value* base = emit(op->base);
  llvm::Value* stride = emit(op->stride);
  DType dt = op->base.type().dtype;
  std::vector<llvm::Constant*> steps;
  if (is_floating(dt)) {
    if (dt == DType::F16 || dt == DType::BF16) {
      base = convert_float(b_, base, dt, DType::F32);
      stride = convert_float(b_, stride, dt, DType::F32);
    }
    for (int i = 0; i < op->lanes; ++i) steps.push_back(llvm::ConstantFP::get(base->getType(), i));
    llvm::Value* r = b_.CreateFAdd(
        b_.CreateVectorSplat(op->lanes, base),
        b_.CreateFMul(b_.CreateVectorSplat(op->lanes, stride), llvm::ConstantVector::get(steps)));
    return convert_float(b_, r, dt == DType::F64 ? DType::F64 : DType::F32, dt);
  }
  for (int i = 0; i < op->lanes; ++i) steps.push_back(llvm::ConstantInt::get(base->getType(), i));
  return b_.CreateAdd(
      b_.CreateVectorSplat(op->lanes, base),
      b_.CreateMul(b_.CreateVectorSplat(op->lanes, stride), llvm::ConstantVector::get(steps)));
}

llvm::Value* Emitter::emit_call(const loop::Call* op) {
  std::vector<llvm::Value*> args;
  std::vector<DType> dtypes;
  for (const Expr& a : op->args) {
    llvm::Value* v = emit(a);
    if (op->type.lanes > 1 && a.type().lanes == 1) v = b_.CreateVectorSplat(op->type.lanes, v);
    args.push_back(v);
    dtypes.push_back(a.type().dtype);
  }
  KILN_INTERNAL_CHECK(!args.empty(), "llvm backend: call " << op->name << " without arguments");
  if (op->name == "checked_index") {
    // i when 0 <= i < n, else 0 and the status bit (runtime/kernel_status.h); an
    // unsigned compare covers both bounds.
    llvm::Value* ok = b_.CreateICmpULT(args[0], args[1]);
    if (state_.status) {
      llvm::Value* failed = b_.CreateNot(ok);
      if (store_mask_ && store_mask_->getType() == failed->getType()) {
        failed = b_.CreateAnd(failed, store_mask_);
      }
      for (const Expr& p : loop::load_predicates(op->args[0])) {
        llvm::Value* live = emit(p);
        if (live->getType() == failed->getType()) failed = b_.CreateAnd(failed, live);
      }
      note_status(failed, runtime::kStatusIndexOutOfRange);
    }
    return b_.CreateSelect(ok, args[0], llvm::Constant::getNullValue(args[0]->getType()));
  }
  // A streaming-store mark the store did not take (vectorize broadcast its
  // scalar value): the value.
  if (op->name == "stream") return args[0];
  return emit_math_call(b_, op->name, args, dtypes, op->type);
}

}  // namespace kiln::codegen::llvm_cpu
