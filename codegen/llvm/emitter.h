// The loop-IR -> LLVM IR emitter: one Emitter per module. Expressions are in
// emit_expr.cpp, statements (loops, parallel outlining, allocation) in
// emit_stmt.cpp. Assumes the IR passed loop::*::make() validation; anything
// else it cannot emit is a kiln::InternalError naming the node.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "codegen/llvm/llvm_internal.h"

namespace kiln::codegen::llvm_cpu {

class Emitter {
 public:
  Emitter(llvm::Module& module, bool fast_math);
  void emit_kernel(const loop::Kernel& kernel);

 private:
  // Per-function state, saved and restored around an outlined parallel body.
  struct FunctionState {
    llvm::Function* function = nullptr;
    llvm::BasicBlock* entry = nullptr;  // allocas go here
    std::map<std::string, llvm::Value*> vars;
    std::map<const loop::BufferNode*, llvm::Value*> bufs;
    // The kernel's status word (runtime/kernel_status.h) when it has checked
    // divisions, and this function's bits, ORed into it once at its end.
    llvm::Value* status = nullptr;
    llvm::AllocaInst* status_bits = nullptr;
    // Some store of this function may be non-temporal: it ends with a fence,
    // so the weakly ordered stores are visible before the pool's join.
    bool streamed = false;
  };

  // --- expressions (emit_expr.cpp)
  llvm::Value* emit(const loop::Expr& e);
  llvm::Value* emit_cast(llvm::Value* v, loop::VType from, loop::VType to);
  llvm::Value* emit_binary(const loop::Binary* op);
  llvm::Value* emit_int_divmod(loop::BinOp op, llvm::Value* a, llvm::Value* b, DType t,
                               const loop::Expr& divisor);
  // Reports the lanes of `zero` that are live (see runtime/kernel_status.h).
  void note_zero_divisor(llvm::Value* zero, loop::BinOp op, const loop::Expr& divisor);
  llvm::Value* emit_compare(const loop::Compare* op);
  llvm::Value* emit_load(const loop::Load* op);
  llvm::Value* emit_ramp(const loop::Ramp* op);
  llvm::Value* emit_call(const loop::Call* op);
  // Pointer to element `index` (scalar) or a vector of pointers (vector index).
  llvm::Value* element_ptr(const loop::Buf& buf, llvm::Value* index);
  llvm::Value* buffer(const loop::Buf& buf);
  llvm::Value* lookup_var(const std::string& name);
  llvm::Value* to_memory(llvm::Value* v, DType t);    // bool i1 -> i8
  llvm::Value* from_memory(llvm::Value* v, DType t);  // bool i8 -> i1
  // A Ramp index with constant stride 1: its scalar base, else nullptr.
  const loop::Expr* dense_base(const loop::Expr& index);
  // A Ramp index with a small constant stride (2..4, at most 64 elements
  // spanned): its scalar base and the stride, else nullptr. Such accesses are
  // one wide masked load or store plus a shuffle instead of a gather/scatter.
  const loop::Expr* strided_base(const loop::Expr& index, int* stride);
  // A Ramp index whose stride is not a constant: the ramp, else nullptr.
  // Loads through it test the stride for 1 at run time (dense load, else a
  // gather).
  const loop::Ramp* runtime_strided(const loop::Expr& index);
  // The mask of the wide access behind a strided one: element j of the span
  // is wanted when j % stride == 0 and the access's lane j / stride is on.
  llvm::Value* strided_mask(llvm::Value* lane_mask, int lanes, int stride);
  llvm::Value* all_true(int lanes);

  // --- statements (emit_stmt.cpp)
  void emit(const loop::Stmt& s);
  void emit_for(const loop::For* op);
  void emit_serial_loop(const std::string& var, llvm::Value* min, llvm::Value* extent,
                        const loop::Stmt& body, bool vectorize_hint);
  void emit_parallel(const loop::For* op);
  // A dense store of a `stream(value, big)` value (mark_stream_stores).
  void emit_stream_store(llvm::Value* value, llvm::Value* ptr, llvm::Align align, llvm::Value* big);
  void end_function();  // the fence streamed stores need, the status bits, ret
  void emit_store(const loop::Store* op);
  void emit_allocate(const loop::Allocate* op);
  void emit_if(const loop::IfThenElse* op);
  void emit_extern_call(const loop::ExternCall* op);
  void emit_prefetch(const loop::ExternCall* op);
  llvm::AllocaInst* entry_alloca(llvm::Type* type, llvm::Value* count, const std::string& name);
  // The status word: begin_status at a function's entry (status may be
  // null: no checks), note_status where a check fails in some lane of
  // `failed` (i1 or a vector of i1), flush_status before the function returns.
  void begin_status(llvm::Value* status);
  void note_status(llvm::Value* failed, int32_t bit);
  void flush_status();
  // Binds `name` to `value` while `fn` runs.
  template <typename Fn>
  void with_var(const std::string& name, llvm::Value* value, Fn&& fn) {
    auto it = state_.vars.find(name);
    llvm::Value* saved = it == state_.vars.end() ? nullptr : it->second;
    state_.vars[name] = value;
    fn();
    if (saved) {
      state_.vars[name] = saved;
    } else {
      state_.vars.erase(name);
    }
  }
  llvm::Function* declare_c_function(const std::string& name, llvm::Type* ret,
                                     std::vector<llvm::Type*> params);

  llvm::Module& module_;
  llvm::LLVMContext& ctx_;
  llvm::IRBuilder<> b_;
  FunctionState state_;
  int outlined_count_ = 0;
  // The predicate of the store whose value is being emitted, if any.
  llvm::Value* store_mask_ = nullptr;
  std::string kernel_name_;
};

}  // namespace kiln::codegen::llvm_cpu
