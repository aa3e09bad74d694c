// The interface every code generator implements: loop-IR kernels in,
// callable machine code out, plus the text dumps of its stages.
//
// Calling convention of a compiled kernel (same for every backend's host side):
//   void kernel(void* const* buffers, const int64_t* scalars)
// `buffers` follow Kernel::buffers, `scalars` follow Kernel::scalars; a
// floating scalar travels bit-cast in its 64-bit slot (f64 as is, f32 in the
// low 32 bits).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ir/loop/loop_ir.h"

namespace kiln::codegen {

using KernelFn = void (*)(void* const* buffers, const int64_t* scalars);

struct CodegenOptions {
  int opt_level = 3;        // 0..3
  std::string cpu;          // empty: the host CPU (name and features)
  bool fast_math = false;   // reassociation etc.; off: results match the interpreter's order
};

// Text stages a backend can print, for `kiln dump --stage=...`.
enum class DumpStage { LLVM, LLVMOpt, Asm, Cuda, Ptx };

class CompiledModule {
 public:
  virtual ~CompiledModule() = default;
  // The entry of kernel `name`; kiln::InternalError when absent.
  virtual KernelFn lookup(const std::string& name) const = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;  // "llvm", "cuda"
  // Compiles all kernels into one module. Throws kiln::Error when the target is
  // unavailable, kiln::InternalError on a code generation bug.
  virtual std::unique_ptr<CompiledModule> compile(const std::vector<loop::Kernel>& kernels,
                                                  const CodegenOptions& options) = 0;
  // Text of one stage (generated only when asked: assembly costs a codegen run).
  virtual std::string dump(const std::vector<loop::Kernel>& kernels, const CodegenOptions& options,
                           DumpStage stage) = 0;
};

#ifdef KILN_WITH_LLVM
std::unique_ptr<Backend> make_llvm_backend();
#endif

}  // namespace kiln::codegen
