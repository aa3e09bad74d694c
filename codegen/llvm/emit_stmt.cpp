// Loop-IR statements -> LLVM IR control flow: kernel entry points, loops (a
// Parallel loop is outlined into a chunk function run by kiln_parallel_for),
// stores, scratch allocation, branches and extern calls.
//
// Each kernel (and each outlined parallel body) is a thin wrapper that unpacks
// its arguments and calls an always-inline "body" function whose buffer
// pointers are `noalias`: Kiln guarantees that the buffers of a compiled
// function never alias (inputs and outputs are distinct allocations, scratch
// is fresh), and the inliner turns the attribute into alias scopes the loop
// vectorizer can use.
#include <set>
#include <vector>

#include <llvm/IR/Intrinsics.h>

#include "codegen/llvm/emitter.h"
#include "ir/loop/analysis.h"
#include "ir/loop/prefetch.h"
#include "ir/loop/visitor.h"
#include "kiln/error.h"

namespace kiln::codegen::llvm_cpu {

using loop::Expr;
using loop::Stmt;

namespace {

// Names and buffers a statement refers to (a superset of its free ones; the
// caller intersects with what is in scope). Buffers are listed in order of
// first use, not by address, so the closure layout (and the emitted IR) is
// the same in every run.
class UseCollector : public loop::IRVisitor {
 public:
  std::set<std::string> vars;
  std::vector<const loop::BufferNode*> bufs;

 protected:
  using IRVisitor::visit_node;
  void use(const loop::BufferNode* b) {
    if (seen_.insert(b).second) bufs.push_back(b);
  }
  void visit_node(const loop::Var* op) override { vars.insert(op->name); }
  void visit_node(const loop::Load* op) override {
    use(op->buf.get());
    IRVisitor::visit_node(op);
  }
  void visit_node(const loop::Store* op) override {
    use(op->buf.get());
    IRVisitor::visit_node(op);
  }
  void visit_node(const loop::ExternCall* op) override {
    for (const loop::Buf& b : op->bufs) use(b.get());
    IRVisitor::visit_node(op);
  }

 private:
  std::set<const loop::BufferNode*> seen_;
};

const std::string& var_name(const Expr& v) {
  return v.as<loop::Var>()->name;
}

}  // namespace

llvm::Function* Emitter::declare_c_function(const std::string& name, llvm::Type* ret,
                                            std::vector<llvm::Type*> params) {
  llvm::FunctionCallee c =
      module_.getOrInsertFunction(name, llvm::FunctionType::get(ret, params, false));
  auto* fn = llvm::dyn_cast<llvm::Function>(c.getCallee());
  KILN_INTERNAL_CHECK(fn != nullptr, "llvm backend: '" << name << "' declared with two signatures");
  return fn;
}

llvm::AllocaInst* Emitter::entry_alloca(llvm::Type* type, llvm::Value* count,
                                        const std::string& name) {
  llvm::IRBuilder<> eb(state_.entry, state_.entry->begin());
  llvm::AllocaInst* a = eb.CreateAlloca(type, count, name);
  a->setAlignment(llvm::Align(64));
  return a;
}

void Emitter::begin_status(llvm::Value* status) {
  state_.status = status;
  if (!status) return;
  state_.status_bits = entry_alloca(b_.getInt32Ty(), nullptr, "status.bits");
  b_.CreateStore(b_.getInt32(0), state_.status_bits);
}

void Emitter::note_status(llvm::Value* failed, int32_t bit) {
  if (!state_.status) return;
  // A local OR (promoted to registers, vectorizable) rather than an atomic per element.
  if (failed->getType()->isVectorTy()) failed = b_.CreateOrReduce(failed);
  llvm::Value* bits = b_.CreateLoad(b_.getInt32Ty(), state_.status_bits);
  bits = b_.CreateOr(bits, b_.CreateSelect(failed, b_.getInt32(bit), b_.getInt32(0)));
  b_.CreateStore(bits, state_.status_bits);
}

void Emitter::flush_status() {
  if (!state_.status) return;
  llvm::Value* bits = b_.CreateLoad(b_.getInt32Ty(), state_.status_bits);
  auto* set_bb = llvm::BasicBlock::Create(ctx_, "status.set", state_.function);
  auto* done_bb = llvm::BasicBlock::Create(ctx_, "status.done", state_.function);
  b_.CreateCondBr(b_.CreateICmpNE(bits, b_.getInt32(0)), set_bb, done_bb);
  b_.SetInsertPoint(set_bb);
  // Parallel chunks report into one word: relaxed is enough, the launcher
  // reads it after the thread pool's join.
  b_.CreateAtomicRMW(llvm::AtomicRMWInst::Or, state_.status, bits, llvm::MaybeAlign(4),
                     llvm::AtomicOrdering::Monotonic);
  b_.CreateBr(done_bb);
  b_.SetInsertPoint(done_bb);
}

void Emitter::emit_kernel(const loop::Kernel& kernel) {
  kernel_name_ = kernel.name;
  KILN_INTERNAL_CHECK(!kernel.name.empty(), "llvm backend: kernel without a name");
  KILN_INTERNAL_CHECK(module_.getFunction(kernel_symbol(kernel.name)) == nullptr,
                      "llvm backend: two kernels named '" << kernel.name << "'");
  llvm::Type* ptr = b_.getPtrTy();
  llvm::Type* i64 = b_.getInt64Ty();

  std::vector<llvm::Type*> body_params(kernel.buffers.size(), ptr);
  for (const Expr& s : kernel.scalars) {
    KILN_INTERNAL_CHECK(s.as<loop::Var>() && s.type().lanes == 1,
                        "llvm backend: kernel " << kernel.name << " scalar is not a scalar Var");
    body_params.push_back(value_type(ctx_, s.type()));
  }
  bool checks = loop::has_checked_division(kernel.body);
  if (checks) body_params.push_back(ptr);  // the status word
  auto* body =
      llvm::Function::Create(llvm::FunctionType::get(b_.getVoidTy(), body_params, false),
                             llvm::Function::InternalLinkage, kernel.name + ".body", module_);
  body->addFnAttr(llvm::Attribute::AlwaysInline);
  body->addFnAttr(llvm::Attribute::NoUnwind);
  for (size_t i = 0; i < kernel.buffers.size(); ++i) {
    body->addParamAttr(i, llvm::Attribute::NoAlias);
  }

  auto* entry =
      llvm::Function::Create(llvm::FunctionType::get(b_.getVoidTy(), {ptr, ptr}, false),
                             llvm::Function::ExternalLinkage, kernel_symbol(kernel.name), module_);
  entry->addFnAttr(llvm::Attribute::NoUnwind);
  entry->getArg(0)->setName("buffers");
  entry->getArg(1)->setName("scalars");
  b_.SetInsertPoint(llvm::BasicBlock::Create(ctx_, "entry", entry));
  std::vector<llvm::Value*> args;
  for (size_t i = 0; i < kernel.buffers.size(); ++i) {
    llvm::Value* slot = b_.CreateConstGEP1_64(ptr, entry->getArg(0), i);
    args.push_back(b_.CreateLoad(ptr, slot, kernel.buffers[i]->name));
  }
  for (size_t i = 0; i < kernel.scalars.size(); ++i) {
    llvm::Value* slot = b_.CreateConstGEP1_64(i64, entry->getArg(1), i);
    llvm::Value* raw = b_.CreateLoad(i64, slot, var_name(kernel.scalars[i]));
    DType t = kernel.scalars[i].type().dtype;
    llvm::Type* ty = scalar_type(ctx_, t);
    llvm::Value* v = raw;
    // Floating scalars travel bit-cast in the low bits of their slot.
    if (t == DType::Bool) {
      v = b_.CreateICmpNE(raw, b_.getInt64(0));
    } else if (is_floating(t)) {
      v = b_.CreateBitCast(b_.CreateTrunc(raw, b_.getIntNTy(8 * dtype_size(t))), ty);
    } else if (t != DType::I64) {
      v = b_.CreateTrunc(raw, ty);
    }
    args.push_back(v);
  }
  if (checks) {
    llvm::Value* slot = b_.CreateConstGEP1_64(ptr, entry->getArg(0), kernel.buffers.size());
    args.push_back(b_.CreateLoad(ptr, slot, "status"));
  }
  b_.CreateCall(body, args);
  b_.CreateRetVoid();

  state_ = FunctionState{};
  state_.function = body;
  state_.entry = llvm::BasicBlock::Create(ctx_, "entry", body);
  for (size_t i = 0; i < kernel.buffers.size(); ++i) {
    body->getArg(i)->setName(kernel.buffers[i]->name);
    state_.bufs[kernel.buffers[i].get()] = body->getArg(i);
  }
  for (size_t i = 0; i < kernel.scalars.size(); ++i) {
    llvm::Argument* a = body->getArg(kernel.buffers.size() + i);
    a->setName(var_name(kernel.scalars[i]));
    state_.vars[var_name(kernel.scalars[i])] = a;
  }
  b_.SetInsertPoint(state_.entry);
  begin_status(checks ? body->getArg(body->arg_size() - 1) : nullptr);
  emit(kernel.body);
  end_function();
}

void Emitter::emit(const Stmt& s) {
  if (!s.defined()) return;
  switch (s->kind) {
    case loop::NodeKind::For:
      return emit_for(s.as<loop::For>());
    case loop::NodeKind::Store:
      return emit_store(s.as<loop::Store>());
    case loop::NodeKind::Block:
      for (const Stmt& c : s.as<loop::Block>()->stmts) emit(c);
      return;
    case loop::NodeKind::Allocate:
      return emit_allocate(s.as<loop::Allocate>());
    case loop::NodeKind::IfThenElse:
      return emit_if(s.as<loop::IfThenElse>());
    case loop::NodeKind::LetStmt: {
      const loop::LetStmt* l = s.as<loop::LetStmt>();
      llvm::Value* v = emit(l->value);
      with_var(var_name(l->var), v, [&] { emit(l->body); });
      return;
    }
    case loop::NodeKind::Barrier:
      return;  // GPU phases are separate loops on the CPU
    case loop::NodeKind::ExternCall:
      return emit_extern_call(s.as<loop::ExternCall>());
    default:
      break;
  }
  KILN_INTERNAL_CHECK(false,
                      "llvm backend: cannot emit statement kind " << loop::node_kind_name(s->kind));
}

void Emitter::emit_for(const loop::For* op) {
  const std::string& name = var_name(op->var);
  switch (op->for_kind) {
    case loop::ForKind::Parallel:
      return emit_parallel(op);
    case loop::ForKind::Unrolled: {
      int64_t extent = 0;
      if (loop::is_const_int(op->extent, &extent) && extent <= 4096) {
        llvm::Value* min = emit(op->min);
        for (int64_t k = 0; k < extent; ++k) {
          with_var(name, b_.CreateAdd(min, b_.getInt64(k)), [&] { emit(op->body); });
        }
        return;
      }
      break;  // a symbolic extent cannot be unrolled: run it serially
    }
    case loop::ForKind::Vectorized:
      // vectorize() should have turned this into lanes; leave it to LLVM's vectorizer.
      return emit_serial_loop(name, emit(op->min), emit(op->extent), op->body, true);
    default:
      break;  // Serial, and GPU loops run as serial loops on the CPU
  }
  emit_serial_loop(name, emit(op->min), emit(op->extent), op->body, false);
}

void Emitter::emit_serial_loop(const std::string& var, llvm::Value* min, llvm::Value* extent,
                               const Stmt& body, bool vectorize_hint) {
  llvm::Function* fn = state_.function;
  llvm::Value* end = b_.CreateAdd(min, extent, var + ".end");
  llvm::BasicBlock* pre = b_.GetInsertBlock();
  auto* header = llvm::BasicBlock::Create(ctx_, var + ".header", fn);
  auto* loop_bb = llvm::BasicBlock::Create(ctx_, var + ".body", fn);
  auto* exit = llvm::BasicBlock::Create(ctx_, var + ".exit", fn);
  b_.CreateBr(header);
  b_.SetInsertPoint(header);
  llvm::PHINode* iv = b_.CreatePHI(b_.getInt64Ty(), 2, var);
  iv->addIncoming(min, pre);
  b_.CreateCondBr(b_.CreateICmpSLT(iv, end), loop_bb, exit);
  b_.SetInsertPoint(loop_bb);
  with_var(var, iv, [&] { emit(body); });
  // Index arithmetic does not overflow i64 (the simplifier assumes the same).
  llvm::Value* next = b_.CreateAdd(iv, b_.getInt64(1), var + ".next", false, true);
  llvm::BranchInst* back = b_.CreateBr(header);
  iv->addIncoming(next, b_.GetInsertBlock());
  if (vectorize_hint) {
    llvm::Metadata* enable[] = {llvm::MDString::get(ctx_, "llvm.loop.vectorize.enable"),
                                llvm::ConstantAsMetadata::get(llvm::ConstantInt::getTrue(ctx_))};
    llvm::Metadata* ops[] = {nullptr, llvm::MDNode::get(ctx_, enable)};
    llvm::MDNode* id = llvm::MDNode::getDistinct(ctx_, ops);
    id->replaceOperandWith(0, id);
    back->setMetadata(llvm::LLVMContext::MD_loop, id);
  }
  b_.SetInsertPoint(exit);
}

void Emitter::emit_parallel(const loop::For* op) {
  const std::string& name = var_name(op->var);
  llvm::Value* min = emit(op->min);
  llvm::Value* extent = emit(op->extent);

  // Capture what the body uses from the enclosing scope.
  UseCollector uses;
  uses.visit(op->body);
  std::vector<const loop::BufferNode*> cap_bufs;
  std::vector<std::string> cap_vars;
  std::vector<llvm::Type*> fields;
  for (const loop::BufferNode* b : uses.bufs) {
    if (state_.bufs.count(b)) {
      cap_bufs.push_back(b);
      fields.push_back(b_.getPtrTy());
    }
  }
  for (const std::string& v : uses.vars) {
    if (v != name && state_.vars.count(v)) {
      cap_vars.push_back(v);
      fields.push_back(state_.vars[v]->getType());
    }
  }
  llvm::Value* status = state_.status;
  if (status) fields.push_back(b_.getPtrTy());
  fields.push_back(b_.getInt64Ty());  // min
  llvm::StructType* closure_ty = llvm::StructType::get(ctx_, fields);
  llvm::Value* closure = entry_alloca(closure_ty, nullptr, name + ".closure");
  size_t f = 0;
  for (const loop::BufferNode* b : cap_bufs) {
    b_.CreateStore(state_.bufs[b], b_.CreateStructGEP(closure_ty, closure, f++));
  }
  for (const std::string& v : cap_vars) {
    b_.CreateStore(state_.vars[v], b_.CreateStructGEP(closure_ty, closure, f++));
  }
  if (status) b_.CreateStore(status, b_.CreateStructGEP(closure_ty, closure, f++));
  b_.CreateStore(min, b_.CreateStructGEP(closure_ty, closure, f));

  std::string base = kernel_name_ + ".par" + std::to_string(outlined_count_++);
  llvm::Type* i64 = b_.getInt64Ty();
  std::vector<llvm::Type*> body_params = {i64, i64};
  body_params.insert(body_params.end(), fields.begin(), fields.end());
  auto* body = llvm::Function::Create(llvm::FunctionType::get(b_.getVoidTy(), body_params, false),
                                      llvm::Function::InternalLinkage, base + ".body", module_);
  body->addFnAttr(llvm::Attribute::AlwaysInline);
  body->addFnAttr(llvm::Attribute::NoUnwind);
  for (size_t i = 0; i < cap_bufs.size(); ++i) body->addParamAttr(2 + i, llvm::Attribute::NoAlias);

  auto* chunk = llvm::Function::Create(
      llvm::FunctionType::get(b_.getVoidTy(), {i64, i64, b_.getPtrTy()}, false),
      llvm::Function::InternalLinkage, base, module_);
  chunk->addFnAttr(llvm::Attribute::NoUnwind);

  llvm::IRBuilderBase::InsertPoint saved_ip = b_.saveIP();
  {
    llvm::IRBuilder<> cb(llvm::BasicBlock::Create(ctx_, "entry", chunk));
    std::vector<llvm::Value*> args = {chunk->getArg(0), chunk->getArg(1)};
    for (size_t i = 0; i < fields.size(); ++i) {
      args.push_back(cb.CreateLoad(fields[i], cb.CreateStructGEP(closure_ty, chunk->getArg(2), i)));
    }
    cb.CreateCall(body, args);
    cb.CreateRetVoid();
  }

  FunctionState saved = std::move(state_);
  state_ = FunctionState{};
  state_.function = body;
  state_.entry = llvm::BasicBlock::Create(ctx_, "entry", body);
  for (size_t i = 0; i < cap_bufs.size(); ++i) state_.bufs[cap_bufs[i]] = body->getArg(2 + i);
  for (size_t i = 0; i < cap_vars.size(); ++i) {
    body->getArg(2 + cap_bufs.size() + i)->setName(cap_vars[i]);
    state_.vars[cap_vars[i]] = body->getArg(2 + cap_bufs.size() + i);
  }
  b_.SetInsertPoint(state_.entry);
  begin_status(status ? body->getArg(body->arg_size() - 2) : nullptr);
  llvm::Value* inner_min = body->getArg(body->arg_size() - 1);
  llvm::Value* begin = body->getArg(0);
  llvm::Value* end = body->getArg(1);
  emit_serial_loop(name, b_.CreateAdd(inner_min, begin), b_.CreateSub(end, begin), op->body, false);
  end_function();
  state_ = std::move(saved);
  b_.restoreIP(saved_ip);

  llvm::Function* pf = declare_c_function(kParallelForSymbol, b_.getVoidTy(),
                                          {b_.getPtrTy(), b_.getPtrTy(), i64, i64});
  b_.CreateCall(pf, {chunk, closure, extent, b_.getInt64(1)});
}

void Emitter::end_function() {
  if (state_.streamed) b_.CreateFence(llvm::AtomicOrdering::SequentiallyConsistent);
  flush_status();
  b_.CreateRetVoid();
}

// Non-temporal when `big` holds and the address is a multiple of the vector's
// size (x86's streaming stores fault otherwise), a plain store else. The
// branch is loop-invariant but for the address, which a dense row keeps.
void Emitter::emit_stream_store(llvm::Value* value, llvm::Value* ptr, llvm::Align align,
                                llvm::Value* big) {
  const llvm::DataLayout& dl = module_.getDataLayout();
  uint64_t bytes = dl.getTypeStoreSize(value->getType()).getFixedValue();
  if (bytes < 16 || bytes > 64 || (bytes & (bytes - 1)) != 0) {
    b_.CreateAlignedStore(value, ptr, align);
    return;
  }
  llvm::Value* addr = b_.CreatePtrToInt(ptr, b_.getInt64Ty());
  llvm::Value* aligned =
      b_.CreateICmpEQ(b_.CreateAnd(addr, b_.getInt64(int64_t(bytes - 1))), b_.getInt64(0));
  llvm::Value* go = b_.CreateAnd(aligned, big);
  auto* nt_bb = llvm::BasicBlock::Create(ctx_, "ntstore", state_.function);
  auto* plain_bb = llvm::BasicBlock::Create(ctx_, "store", state_.function);
  auto* done_bb = llvm::BasicBlock::Create(ctx_, "store.done", state_.function);
  b_.CreateCondBr(go, nt_bb, plain_bb);
  b_.SetInsertPoint(nt_bb);
  llvm::StoreInst* st = b_.CreateAlignedStore(value, ptr, llvm::Align(bytes));
  st->setMetadata(llvm::LLVMContext::MD_nontemporal,
                  llvm::MDNode::get(ctx_, {llvm::ConstantAsMetadata::get(b_.getInt32(1))}));
  b_.CreateBr(done_bb);
  b_.SetInsertPoint(plain_bb);
  b_.CreateAlignedStore(value, ptr, align);
  b_.CreateBr(done_bb);
  b_.SetInsertPoint(done_bb);
  state_.streamed = true;
}

void Emitter::emit_store(const loop::Store* op) {
  DType dt = op->buf->dtype;
  llvm::Align align(dtype_size(dt));
  int lanes = op->value.type().lanes;
  // The predicate first: the value's zero-divisor checks ignore masked-off lanes.
  llvm::Value* mask = op->predicate.defined() ? emit(op->predicate) : nullptr;
  store_mask_ = mask;
  // A streaming-store mark (mark_stream_stores) only matters to a dense,
  // unmasked vector store; elsewhere it is the value.
  Expr stored = op->value;
  Expr big;
  const loop::Call* c = stored.as<loop::Call>();
  if (c && c->name == "stream" && c->args.size() == 2) {
    stored = c->args[0];
    big = c->args[1];
  }
  llvm::Value* value = to_memory(emit(stored), dt);
  store_mask_ = nullptr;
  if (lanes == 1) {
    llvm::Value* ptr = element_ptr(op->buf, emit(op->index));
    if (!mask) {
      b_.CreateAlignedStore(value, ptr, align);
      return;
    }
    llvm::Value* pred = mask;
    auto* then_bb = llvm::BasicBlock::Create(ctx_, "pstore", state_.function);
    auto* done_bb = llvm::BasicBlock::Create(ctx_, "pstore.done", state_.function);
    b_.CreateCondBr(pred, then_bb, done_bb);
    b_.SetInsertPoint(then_bb);
    b_.CreateAlignedStore(value, ptr, align);
    b_.CreateBr(done_bb);
    b_.SetInsertPoint(done_bb);
    return;
  }
  if (const Expr* base = dense_base(op->index)) {
    llvm::Value* ptr = element_ptr(op->buf, emit(*base));
    if (mask) {
      b_.CreateMaskedStore(value, ptr, align, mask);
    } else if (big.defined()) {
      emit_stream_store(value, ptr, align, emit(big));
    } else {
      b_.CreateAlignedStore(value, ptr, align);
    }
    return;
  }
  int stride = 0;
  if (const Expr* sbase = strided_base(op->index, &stride)) {
    // A shuffle spreads the lanes over one span; a masked store writes only
    // every stride-th element of it.
    const int span = lanes * stride;
    std::vector<int> spread;
    for (int j = 0; j < span; ++j) spread.push_back(j % stride == 0 ? j / stride : -1);
    llvm::Value* wide = b_.CreateShuffleVector(value, spread);
    b_.CreateMaskedStore(wide, element_ptr(op->buf, emit(*sbase)), align,
                         strided_mask(mask, lanes, stride));
    return;
  }
  llvm::Value* ptrs = element_ptr(op->buf, emit(op->index));
  b_.CreateMaskedScatter(value, ptrs, align, mask ? mask : all_true(lanes));
}

void Emitter::emit_allocate(const loop::Allocate* op) {
  DType dt = op->buf->dtype;
  llvm::Type* elem = memory_type(ctx_, dt);
  int64_t count = 0;
  bool small = loop::is_const_int(op->size, &count) && count >= 0 &&
               count * static_cast<int64_t>(dtype_size(dt)) <= 64 * 1024;
  auto it = state_.bufs.find(op->buf.get());
  llvm::Value* shadowed = it == state_.bufs.end() ? nullptr : it->second;
  if (small && op->scope != loop::MemoryScope::Heap) {
    // A fixed-size array type, not `alloca T, i64 count`: sroa skips array
    // allocations, and a GEMM's accumulator tile must become registers.
    state_.bufs[op->buf.get()] =
        entry_alloca(llvm::ArrayType::get(elem, uint64_t(count)), nullptr, op->buf->name);
    emit(op->body);
  } else {
    llvm::Value* n =
        b_.CreateBinaryIntrinsic(llvm::Intrinsic::smax, emit(op->size), b_.getInt64(1));
    llvm::Value* bytes = b_.CreateMul(n, b_.getInt64(dtype_size(dt)));
    // The runtime's caching allocator (runtime/allocator.h): warm pages on
    // every call after the first, where malloc would fault fresh ones in.
    llvm::Function* malloc_fn =
        declare_c_function(kScratchAllocSymbol, b_.getPtrTy(), {b_.getInt64Ty()});
    llvm::Function* free_fn =
        declare_c_function(kScratchFreeSymbol, b_.getVoidTy(), {b_.getPtrTy()});
    llvm::Value* p = b_.CreateCall(malloc_fn, {bytes}, op->buf->name);
    state_.bufs[op->buf.get()] = p;
    emit(op->body);
    b_.CreateCall(free_fn, {p});
  }
  if (shadowed) {
    state_.bufs[op->buf.get()] = shadowed;
  } else {
    state_.bufs.erase(op->buf.get());
  }
}

void Emitter::emit_if(const loop::IfThenElse* op) {
  llvm::Value* cond = emit(op->cond);
  auto* then_bb = llvm::BasicBlock::Create(ctx_, "then", state_.function);
  auto* else_bb =
      op->else_case.defined() ? llvm::BasicBlock::Create(ctx_, "else", state_.function) : nullptr;
  auto* done_bb = llvm::BasicBlock::Create(ctx_, "endif", state_.function);
  b_.CreateCondBr(cond, then_bb, else_bb ? else_bb : done_bb);
  b_.SetInsertPoint(then_bb);
  emit(op->then_case);
  b_.CreateBr(done_bb);
  if (else_bb) {
    b_.SetInsertPoint(else_bb);
    emit(op->else_case);
    b_.CreateBr(done_bb);
  }
  b_.SetInsertPoint(done_bb);
}

void Emitter::emit_extern_call(const loop::ExternCall* op) {
  if (op->name == loop::kPrefetchCall) return emit_prefetch(op);
  std::vector<llvm::Type*> types;
  std::vector<llvm::Value*> args;
  for (const loop::Buf& b : op->bufs) {
    types.push_back(b_.getPtrTy());
    args.push_back(buffer(b));
  }
  for (const Expr& a : op->args) {
    llvm::Value* v = emit(a);
    if (a.type().dtype == DType::Bool) v = b_.CreateZExt(v, b_.getInt8Ty());
    types.push_back(v->getType());
    args.push_back(v);
  }
  b_.CreateCall(declare_c_function(op->name, b_.getVoidTy(), types), args);
}

// llvm.prefetch of one element's line (ir/loop/prefetch.h). The address may
// lie outside the buffer, so its GEP is a plain (not inbounds) one.
void Emitter::emit_prefetch(const loop::ExternCall* op) {
  KILN_INTERNAL_CHECK(op->bufs.size() == 1 && op->args.size() == 2,
                      "llvm backend: " << op->name << " takes one buffer, an index and a level");
  int64_t level = 0;
  KILN_INTERNAL_CHECK(loop::is_const_int(op->args[1], &level) && level >= 0 && level <= 2,
                      "llvm backend: " << op->name << " level must be 0, 1 or 2");
  llvm::Value* ptr = element_ptr(op->bufs[0], emit(op->args[0]));
  // locality 3 is prefetcht0 (L1), 2 prefetcht1 (L2), 1 prefetcht2.
  b_.CreateIntrinsic(llvm::Intrinsic::prefetch, {ptr->getType()},
                     {ptr, b_.getInt32(0), b_.getInt32(int32_t(3 - level)), b_.getInt32(1)});
}

void emit_kernels(llvm::Module& module, const std::vector<loop::Kernel>& kernels, bool fast_math) {
  Emitter e(module, fast_math);
  for (const loop::Kernel& k : kernels) e.emit_kernel(k);
}

}  // namespace kiln::codegen::llvm_cpu
