// What the compile_*.cpp files share: the body of a CompiledFunction, the
// translation of lowered kernels into a runtime::Executable, and the backends'
// glue (cache key, kernel entry lookup, loop-eval launchers).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "codegen/backend.h"
#include "codegen/cuda/cuda_emitter.h"
#include "codegen/cuda/nvrtc.h"
#include "ir/graph.h"
#include "ir/loop/loop_ir.h"
#include "kiln/compile.h"
#include "passes/fuse.h"
#include "passes/lower/lower_graph.h"
#include "passes/schedule/schedule.h"
#include "passes/target.h"
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
  // The kernels compiled, how many distinct codes they have (identical
  // kernels share one), how many of those were generated or read from the
  // disk cache in this compile (both 0 for a memory hit), and the threads
  // code generation could use (KILN_COMPILE_THREADS).
  int kernels = 0, distinct = 0, built = 0, from_disk = 0, threads = 0;
  // Summed over the kernels, so with several threads more than the wall time.
  codegen::CodegenTimes times;
};

// What the cuda backend made of a function (api/cuda_backend.cpp): the
// kernels as one CUDA C program and, once NVRTC compiled it, the image a
// loader hands the driver (the kernels' symbols are program.entries).
struct CudaCode {
  codegen::cuda::CudaProgram program;
  codegen::cuda::NvrtcOptions nvrtc;  // what the image is compiled with
  // Null when only code was generated (CompileOptions::load false).
  std::shared_ptr<const codegen::cuda::CudaImage> image;
};

// What one compile's autotuning did (api/autotune.h), counted over the
// groups that hold a contraction with algorithm candidates.
struct AutotuneReport {
  int contractions = 0;      // such groups
  int measured = 0;          // groups whose candidates were timed in this compile
  int from_cache = 0;        // groups whose choice came from the tuning cache
  int kept_heuristic = 0;    // groups left with the heuristic's choice (why: in the reason)
  int candidates_timed = 0;  // candidate kernels compiled, run and timed
  double seconds = 0;        // wall time spent tuning
};
}  // namespace compile_detail

struct CompiledFunction::Impl {
  std::string name;       // the graph's name
  std::string backend;    // "llvm", "loop-eval", "interp", "cuda" (api/backends.h)
  Device device;          // where its kernels run
  passes::Target target;  // what they were generated for (from the device)
  CompileOptions options;
  std::shared_ptr<const ir::Graph> graph;  // a private copy
  std::vector<ValueInfo> inputs, outputs;
  std::vector<passes::KernelGroup> groups;    // which nodes of `graph` each kernel runs, and why
  std::vector<ir::OpCategory> categories;     // of each kernel (its plan's), for profiles
  std::vector<loop::Kernel> lowered;          // as lowered (unscheduled)
  std::vector<loop::Kernel> scheduled;        // what the backend compiled
  // llvm: for each kernel, the first kernel with the same code, which it
  // launches (itself when it is the first); empty for other backends.
  std::vector<int> same_code_as;
  std::shared_ptr<codegen::Backend> codegen;  // llvm: kept for dumps
  codegen::CodegenOptions codegen_options;
  std::shared_ptr<codegen::CompiledModule> module;       // keeps the machine code alive
  std::shared_ptr<const compile_detail::CudaCode> cuda;  // cuda: the program and its image
  compile_detail::CodegenReport codegen_report;
  compile_detail::AutotuneReport autotune_report;  // all zero unless autotuning ran
  // Null for "interp", and when only code was generated (options.load false)
  // for a device this process cannot use.
  std::unique_ptr<runtime::Executable> exec;
};

namespace compile_detail {

// How each kernel is launched, one per kernel in order: host machine code
// (from a compiled module) or loop-eval, on `device`. Kernels for a GPU
// target also give their launch shape: grid and block extents as expressions
// of the kernel's scalar parameters (passes::gpu_launch_shape).
struct KernelEntries {
  Device device;
  std::vector<std::shared_ptr<const runtime::KernelFunction>> kernels;
  std::vector<passes::GpuLaunchShape> shapes;  // one per kernel for a GPU target, else empty
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

// The memory cache key of a module: the kernel_keys of its distinct kernels
// in order (distinct_kernels(...).module_key); `groups`, when given, are the
// kernels' groups (their contraction algorithms go into the keys).
runtime::CacheKey module_key(const std::vector<loop::Kernel>& kernels,
                             const codegen::CodegenOptions& options,
                             const std::vector<passes::KernelGroup>& groups = {});
// The key of one kernel's machine code (memory and disk): its code bytes
// (loop::canonical_code_bytes, names left out), the contraction algorithm it
// was lowered with (empty when none), and what module_key holds besides the
// kernels.
runtime::CacheKey kernel_key(const std::string& code, const codegen::CodegenOptions& options,
                             const std::string& algorithm);

// The distinct kernels of a function: kernels with equal kernel_keys share
// one compiled code. kernels[i] is the first kernel of distinct code i and
// keys[i] its key; code_of[k] is kernel k's distinct code. module_key covers
// the distinct keys in order (what a module of them is cached under).
struct DistinctKernels {
  std::vector<int> kernels;
  std::vector<runtime::CacheKey> keys;
  std::vector<int> code_of;
  runtime::CacheKey module_key;
};
DistinctKernels distinct_kernels(const std::vector<loop::Kernel>& kernels,
                                 const std::vector<passes::KernelGroup>& groups,
                                 const codegen::CodegenOptions& options);
// The name a distinct kernel is compiled under: its key, so its object (and
// disk entry) serves every function that has the kernel.
std::string distinct_kernel_name(const runtime::CacheKey& key);
// The threads code generation uses: KILN_COMPILE_THREADS (1 to 256), else
// the kernel pool's size (kiln::num_threads()).
int compile_threads();

// The algorithms of `groups` ("1:gemm.packed;"; empty when none), for the
// cuda backend's key.
std::string algorithms_text(const std::vector<passes::KernelGroup>& groups);

// The host CPU as LLVM names it ("znver5"), or "generic" without LLVM.
const std::string& host_cpu_name();

// The identity of this Kiln build (its GNU build-id, else its binary's size
// and time): in every disk cache key, since KILN_VERSION does not change when
// a code generator does.
const std::string& build_identity();

// Everything compile() does for `g`, uncached, except that every contraction
// runs candidate `algorithm` (LowerOptions::algorithm) instead of the
// heuristic's or the tuner's choice; the autotuner compiles its candidates
// this way. kiln::Error when the candidate does not apply.
std::shared_ptr<CompiledFunction::Impl> build_with_algorithm(const ir::Graph& g,
                                                             const CompileOptions& options,
                                                             const std::string& backend,
                                                             const std::string& algorithm);
// The kernels as bytes, equal exactly when the kernels are structurally equal
// (names, types, float bit patterns, buffer identities); what the key hashes.
std::string canonical_kernels(const std::vector<loop::Kernel>& kernels);

}  // namespace compile_detail
}  // namespace kiln
