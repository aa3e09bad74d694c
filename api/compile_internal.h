// What the compile_*.cpp files share: the body of a CompiledFunction, the
// translation of lowered kernels into a runtime::Executable, and the backends'
// glue (cache key, kernel entry lookup, loop-eval launchers).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "codegen/backend.h"
#include "ir/graph.h"
#include "ir/loop/loop_ir.h"
#include "kiln/compile.h"
#include "passes/fuse.h"
#include "passes/lower/lower_graph.h"
#include "runtime/executable.h"
#include "runtime/kernel_cache.h"

namespace kiln {

namespace compile_detail {
// Where one compile's machine code came from and what it cost (seconds);
// KILN_COMPILE_TIMES=1 prints it on stderr after each compile.
struct CodegenReport {
  std::string source;    // "memory", "disk", "built"; empty without native code
  double key = 0;        // computing the cache key
  double disk_read = 0;  // reading and checking the disk entry
  double total = 0;      // the whole codegen step (key to entries)
  codegen::CodegenTimes times;
};
}  // namespace compile_detail

struct CompiledFunction::Impl {
  std::string name;     // the graph's name
  std::string backend;  // "llvm", "loop-eval", "interp"
  CompileOptions options;
  std::shared_ptr<const ir::Graph> graph;  // a private copy
  std::vector<ValueInfo> inputs, outputs;
  std::vector<passes::KernelGroup> groups;    // which nodes of `graph` each kernel runs, and why
  std::vector<loop::Kernel> lowered;          // as lowered (unscheduled)
  std::vector<loop::Kernel> scheduled;        // what the backend compiled
  std::shared_ptr<codegen::Backend> codegen;  // llvm: kept for dumps
  codegen::CodegenOptions codegen_options;
  std::shared_ptr<codegen::CompiledModule> module;  // keeps the machine code alive
  compile_detail::CodegenReport codegen_report;
  std::unique_ptr<runtime::Executable> exec;  // null for "interp"
};

namespace compile_detail {

// How each kernel is launched: native entries (from a compiled module) or
// loop-eval launchers, one per kernel in order.
struct KernelEntries {
  std::vector<runtime::KernelEntry> entries;
  std::vector<runtime::KernelLauncher> launchers;
};

// Builds the launch list: graph inputs become input slots (with their specs
// and symbols), each plan's buffers become slots and arguments, its scalar
// params become recipes. Throws kiln::Error when a kernel needs something the
// executable cannot provide (a shape expression it cannot evaluate, a scalar
// produced inside the graph).
std::unique_ptr<runtime::Executable> build_executable(const ir::Graph& g,
                                                      const std::vector<passes::KernelPlan>& plans,
                                                      const KernelEntries& kernels);

// A loop-IR shape expression of symbolic dims as a runtime::SizeExpr.
runtime::SizeExpr to_size_expr(const loop::Expr& e, const runtime::Executable& exec,
                               const std::string& context);

// The backend part of compile(): fills impl.module / impl.codegen and returns
// how to launch each of impl.scheduled.
KernelEntries compile_kernels(CompiledFunction::Impl& impl);

// The cache key of a module (memory and disk): the kernels' canonical form,
// the codegen options, Kiln's and LLVM's versions and the target CPU with its
// features.
runtime::CacheKey module_key(const std::vector<loop::Kernel>& kernels,
                             const codegen::CodegenOptions& options);
// The kernels as bytes, equal exactly when the kernels are structurally equal
// (names, types, float bit patterns, buffer identities); what the key hashes.
std::string canonical_kernels(const std::vector<loop::Kernel>& kernels);

}  // namespace compile_detail
}  // namespace kiln
