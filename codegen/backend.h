// The interface every code generator implements: loop-IR kernels in,
// callable machine code out, plus the text dumps of its stages. Compiling is
// split in two (kernels -> object bytes, object bytes -> callable module) so
// the api layer can keep the bytes in a disk cache and skip the first half.
//
// Calling convention of a compiled kernel (same for every backend's host side):
//   void kernel(void* const* buffers, const int64_t* scalars)
// `buffers` follow Kernel::buffers, `scalars` follow Kernel::scalars; a
// floating scalar travels bit-cast in its 64-bit slot (f64 as is, f32 in the
// low 32 bits).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ir/loop/loop_ir.h"

namespace kiln::codegen {

using KernelFn = void (*)(void* const* buffers, const int64_t* scalars);

struct CodegenOptions {
  int opt_level = 3;       // 0..3
  std::string cpu;         // empty: the host CPU (name and features)
  bool fast_math = false;  // reassociation etc.; off: results match the interpreter's order
};

// Text stages a backend can print, for `kiln dump --stage=...`.
enum class DumpStage { LLVM, LLVMOpt, Asm, Cuda, Ptx };

class CompiledModule {
 public:
  virtual ~CompiledModule() = default;
  // The entry of kernel `name`; kiln::InternalError when absent.
  virtual KernelFn lookup(const std::string& name) const = 0;
};

// Where the time of one compile went, in seconds (the parts a backend has;
// the rest stay 0). Filled when a caller passes one in.
struct CodegenTimes {
  double target = 0;    // target machine lookup or creation
  double emit = 0;      // loop IR -> backend IR (and its verification)
  double optimize = 0;  // the optimization pipeline
  double codegen = 0;   // backend IR -> object file
  double load = 0;      // object file -> callable entries (JIT link)
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;  // "llvm", "cuda"

  // Compiles all kernels into one relocatable object (its bytes): what a disk
  // cache stores. Throws kiln::Error when the target is unavailable,
  // kiln::InternalError on a code generation bug.
  virtual std::string compile_object(const std::vector<loop::Kernel>& kernels,
                                     const CodegenOptions& options,
                                     CodegenTimes* times = nullptr) = 0;
  // Loads an object made by compile_object (in this or an earlier process, for
  // the same target) and links the entries of `kernel_names`. Throws
  // kiln::InternalError when the bytes do not load or a kernel is missing.
  virtual std::unique_ptr<CompiledModule> load_object(std::string_view object,
                                                      const std::vector<std::string>& kernel_names,
                                                      CodegenTimes* times = nullptr) = 0;
  // Loads several such objects (each compiled on its own, e.g. one kernel
  // each on several threads) into one module and links the entries of
  // `kernel_names`, found in any of them; no two objects may define the same
  // entry. Throws like load_object.
  virtual std::unique_ptr<CompiledModule> load_objects(
      const std::vector<std::string_view>& objects, const std::vector<std::string>& kernel_names,
      CodegenTimes* times = nullptr) = 0;
  // compile_object then load_object.
  std::unique_ptr<CompiledModule> compile(const std::vector<loop::Kernel>& kernels,
                                          const CodegenOptions& options,
                                          CodegenTimes* times = nullptr) {
    std::vector<std::string> names;
    for (const loop::Kernel& k : kernels) names.push_back(k.name);
    return load_object(compile_object(kernels, options, times), names, times);
  }

  // Text of one stage (generated only when asked: assembly costs a codegen run).
  virtual std::string dump(const std::vector<loop::Kernel>& kernels, const CodegenOptions& options,
                           DumpStage stage) = 0;
};

#ifdef KILN_WITH_LLVM
std::unique_ptr<Backend> make_llvm_backend();
#endif

}  // namespace kiln::codegen
