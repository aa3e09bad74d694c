// Internals of the LLVM CPU backend shared between its files: the loop-IR ->
// LLVM IR emitter entry point, the vector-math emitters and the float
// conversion helpers both use. Assumes LLVM 19 with opaque pointers.
#pragma once

#include <string>
#include <vector>

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Module.h>

#include "ir/loop/loop_ir.h"

namespace kiln::codegen::llvm_cpu {

// LLVM type of one element of `t` in registers (bool is i1) and in memory
// (bool is i8). f16 and bf16 are i16 bit patterns in both: LLVM's own
// half/bfloat lowering calls soft-float helpers (__truncsfbf2, __truncdfhf2,
// ...) that GCC's libgcc may lack, so the backend never uses those types and
// converts with its own IR (float_convert.cpp).
llvm::Type* scalar_type(llvm::LLVMContext& ctx, DType t);
llvm::Type* memory_type(llvm::LLVMContext& ctx, DType t);
// `scalar_type` widened to `lanes` (a fixed vector when lanes > 1).
llvm::Type* value_type(llvm::LLVMContext& ctx, loop::VType t);
// `t` with its element type replaced by `elem` (vector shape kept).
llvm::Type* with_element(llvm::Type* t, llvm::Type* elem);

// Converts floating `v` of dtype `from` to floating `to` (same lane count),
// bit-exact with kiln::store_double(to, load_as_double(from)): round to nearest
// even on bit patterns, f64 -> f16/bf16 rounded once (via f32 rounded to odd),
// NaN kept quiet. Pure IR: no libcalls, vectors lane-wise, fast-math ignored.
llvm::Value* convert_float(llvm::IRBuilder<>& b, llvm::Value* v, DType from, DType to);
// Integer (or bool) `v` of dtype `from` to floating `to`, bit-exact with
// kiln::store_int (i64 -> f16/bf16 rounds once via f32 rounded to odd).
llvm::Value* int_to_float(llvm::IRBuilder<>& b, llvm::Value* v, DType from, DType to);
// A scalar constant of floating dtype `t` (f16/bf16 as i16 bits), rounded
// through float like the loop-IR evaluator's FloatImm.
llvm::Value* float_constant(llvm::LLVMContext& ctx, DType t, double value);

// Emits lane-wise intrinsic `name` (see loop::Call) with result type `type`.
// Arguments are already broadcast to the result's lane count.
llvm::Value* emit_math_call(llvm::IRBuilder<>& b, const std::string& name,
                            const std::vector<llvm::Value*>& args,
                            const std::vector<DType>& arg_dtypes, loop::VType type);

// Emits every kernel of `kernels` into `module` as
//   void kernel.<name>(void* const* buffers, const int64_t* scalars)
// (external linkage, nounwind). Throws kiln::InternalError on malformed IR.
void emit_kernels(llvm::Module& module, const std::vector<loop::Kernel>& kernels, bool fast_math);

// The symbol of kernel `name` in the module. The prefix keeps kernels apart
// from the C functions JIT code calls (a kernel may well be called "fmod").
inline std::string kernel_symbol(const std::string& name) {
  return "kernel." + name;
}

// Names of the C helpers JIT code may call; the backend registers their
// addresses with the JIT (see llvm_backend.cpp).
inline constexpr const char* kParallelForSymbol = "kiln_parallel_for";
// Heap scratch (runtime/allocator.h).
inline constexpr const char* kScratchAllocSymbol = "kiln_scratch_alloc";
inline constexpr const char* kScratchFreeSymbol = "kiln_scratch_free";

}  // namespace kiln::codegen::llvm_cpu
