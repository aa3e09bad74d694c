// kiln::compile — turns a graph into a CompiledFunction you call with tensors.
//
//   kiln::Function f = ...;                       // builder, script or parse_ir
//   kiln::CompiledFunction cf = kiln::compile(f); // lower, schedule, codegen: all here
//   std::vector<kiln::Tensor> out = cf({x, w});   // no compilation happens here
//
// Compilation is explicit and complete inside compile() (graph -> loop IR ->
// schedule -> simplify -> machine code -> launch list); compile_async runs it
// on a background thread. A CompiledFunction is cheap to copy (copies share
// the compiled code) and may be called from several threads at once.
//
// This header stays free of Kiln's internal headers (see kiln/function.h).
#pragma once

#include <future>
#include <memory>
#include <string>
#include <vector>

#include "kiln/function.h"
#include "kiln/optimize.h"
#include "kiln/tensor.h"

namespace kiln {

namespace ir {
class Graph;
}  // namespace ir

struct CompileOptions {
  // The device the function's kernels run on: cpu (the default), sim:N (the
  // simulated GPU: GPU-mapped kernels run by the loop-IR evaluator, for tests
  // on machines without a GPU) or cuda:N. Code is generated for its target
  // (the host CPU, or the GPU's description). Inputs may live on any device:
  // the plan copies them where kernels read them, and outputs come back to
  // the device of the first tensor input (the host when there is none).
  Device device = Device::cpu();
  // The backend that runs the kernels; empty: the first available one for
  // `device` (see available_backends()): "llvm" (native code; the CPU's
  // default when Kiln is built with LLVM), "loop-eval" (the same loop IR run
  // by the loop-IR evaluator: the CPU's default without LLVM, and sim's),
  // "interp" (the reference interpreter; nothing is lowered), "cuda".
  std::string backend;
  int opt_level = 3;       // 0..3, passed to the code generator
  int num_threads = 0;     // 0: the thread pool's size; 1: no parallel loops
  bool schedule = true;    // false: run the lowered loops as they are (no
                           // vectorize / parallelize)
  bool fast_math = false;  // allow reassociation (results may differ from the interpreter's)
  std::string cpu;         // target CPU for llvm; empty: the host
  // false: generate code only, for dumps (`kiln dump` sets it). The device
  // need not exist or be usable: a cuda device's target comes from
  // `cuda_arch` instead of the device, and the cuda backend needs NVRTC only
  // for the stages that show its output (ptx, sass-resources). Calling the
  // result is a kiln::Error.
  bool load = true;
  // The GPU a cuda function is generated for when `load` is false ("sm_90";
  // "sm_" and the compute capability, major and minor digits).
  std::string cuda_arch = "sm_90";
  bool use_cache = true;  // reuse identical compiled functions and kernels (in memory)
  // Reuse machine code compiled by earlier processes: object files in
  // $KILN_CACHE_DIR (default $XDG_CACHE_HOME/kiln or ~/.cache/kiln). The
  // environment's KILN_CACHE=off (or 0, false) turns it off whatever this says.
  bool disk_cache = true;
  bool fuse = true;      // fuse chains of elementwise/layout ops into one kernel
  bool optimize = true;  // run the graph pipeline (fold, simplify, CSE, DCE) first
  // Printing, timing and verification of the passes compile() runs: the
  // graph pipeline (when `optimize`) and the loop pipeline of the target.
  // When anything is printed or timed, the function is compiled afresh (the
  // in-memory function cache would otherwise skip the passes).
  OptimizeOptions passes;

  // Measured autotuning of contraction algorithms (docs/autotune.md): for each
  // matmul/bmm/linear/conv2d, every applicable candidate is compiled, run on
  // seeded random inputs of the node's shapes, checked against the reference
  // and timed; the fastest correct one replaces the heuristic's choice, and
  // the choice is kept in the tuning cache ($KILN_CACHE_DIR/tuning) so later
  // compiles reuse it without timing. KILN_AUTOTUNE=1 in the environment
  // turns it on whatever this says.
  bool autotune = false;
  // Seconds of tuning per contraction node (compiles and runs); candidates
  // left when it is spent are not timed (explain says which).
  double autotune_budget_s = 1.0;
  // The sizes of each graph input, in inputs() order (empty for a scalar):
  // what symbolic dims (N) are bound to when tuning. Without them a node with
  // symbolic dims keeps the heuristic's choice ("not tuned: symbolic dims").
  // The compiled function still serves every size; the choice is the one
  // measured at these sizes.
  std::vector<std::vector<int64_t>> example_shapes;
};

// A backend compile() knows: where it runs and whether this build can use it.
struct BackendInfo {
  std::string name;                  // "llvm", "loop-eval", "interp", "cuda"
  std::string description;           // one line
  std::vector<std::string> devices;  // the device kinds it runs on: "cpu", "sim", "cuda"
  bool available = false;
  std::string why_unavailable;  // "not built: ..." (empty when available)
};
// Every backend, available or not, in the order a device's default is picked.
std::vector<BackendInfo> available_backends();
// The backend compile() uses on `device` when CompileOptions::backend is
// empty; empty when none is available there.
std::string default_backend(Device device = Device::cpu());

// A device kernels can run on, and whether this process can use it.
struct DeviceInfo {
  Device device;
  std::string name;  // "sim (simulated GPU)", "NVIDIA H200"; empty when unavailable
  bool available = false;
  // What is missing: "the NVIDIA driver library libcuda.so.1 was not found (...)".
  std::string why_unavailable;
};
// The host, every sim device and every CUDA device (cuda:0 when the driver
// sees none, with the reason).
std::vector<DeviceInfo> devices();

// Stages CompiledFunction::dump() prints; the one table of stage names.
struct DumpStageInfo {
  std::string name;         // "loops", "loops-scheduled", "plan", "llvm", "llvm-opt", "asm"
  std::string description;  // one line
};
const std::vector<DumpStageInfo>& dump_stages();

struct CallStats {
  int64_t launches = 0;        // kernels run
  int64_t skipped = 0;         // kernels skipped (all they write is empty)
  int64_t reused_buffers = 0;  // buffers that took the memory of a dead intermediate
  int64_t allocated_buffers = 0;
  int64_t allocated_bytes = 0;  // outputs + intermediates after buffer reuse
  // The most bytes of intermediates (values kernels pass to later kernels)
  // alive at once; what fusion saves shows here. On a device the copies of
  // the inputs there count too: they are memory the plan allocates.
  int64_t peak_intermediate_bytes = 0;
  // Copies between devices (inputs in, data between kernels on different
  // devices, outputs back to the first input's device) and their bytes.
  int64_t copies = 0;
  int64_t copied_bytes = 0;
};

// The machine's measured peaks the profiler compares kernels with (measured
// once: a STREAM-triad-like loop and an f32 FMA loop on every pool thread;
// cached in $KILN_CACHE_DIR/machine, see docs/profiling.md).
struct MachinePeaks {
  double bandwidth_gbs = 0;  // memory bandwidth, GB/s (10^9 bytes)
  double fma_gflops = 0;     // f32 FMA throughput, GFLOP/s (an FMA is 2 flops)
  int threads = 0;           // threads both were measured on
  std::string isa;           // vector unit of the FMA loop: "avx512f", "avx2+fma", ...
  std::string source;        // "measured" or "cache"
};
// This machine's peaks; the first use in a process reads the cache or
// measures (about a quarter of a second).
const MachinePeaks& machine_peaks();

// One kernel of a profiled call.
struct KernelProfile {
  std::string name;       // as explain() names it: "mlp_0_matmul_add_relu"
  std::string category;   // elementwise, reduction, contraction, layout, other
  std::string algorithm;  // a contraction's algorithm ("gemm.packed"); else empty
  std::string device;     // where it ran: "cpu", "sim:0", "cuda:0"
  bool skipped = false;   // everything it writes was empty: not run
  double seconds = 0;     // wall time of the launch (a device launch is synchronized)
  double share = 0;       // seconds / the call's seconds
  double begin_s = 0;     // start, seconds after the call began
  // Bytes of its buffers (read + written), each counted once: the traffic a
  // kernel cannot avoid; cache misses and re-reads are not counted.
  int64_t bytes_read = 0, bytes_written = 0;
  // Floating-point (or integer) operations: 2*M*N*K for matmul, bmm, linear
  // and conv2d (exact); an estimate otherwise (one per element of each
  // elementwise op, one per input element of a reduction, ...).
  double flops = 0;
  bool flops_estimated = false;
  double gb_per_s = 0, gflop_per_s = 0;  // achieved (0 when skipped or untimed)
  // gb_per_s / the machine's bandwidth, gflop_per_s / its FMA peak; -1 when
  // the kernel ran on a device (the peaks are the host's).
  double bandwidth_fraction = -1, fma_fraction = -1;
};

// A span of work on one thread during a profiled call: a chunk of a parallel
// loop (thread 0 is the calling thread, 1.. the pool's workers).
struct ThreadSpan {
  int thread = 0;
  int kernel = 0;  // index into CallProfile::kernels
  double begin_s = 0, seconds = 0;
  int64_t begin = 0, end = 0;  // the loop iterations
};

// What CompiledFunction::profile measured of one call.
struct CallProfile {
  std::string function;  // "@mlp"
  std::string backend;
  double seconds = 0;  // the whole call: input checks, allocation, kernels, copies
  std::vector<KernelProfile> kernels;  // in launch order
  std::vector<ThreadSpan> spans;       // chunks of parallel loops, by start time
  int threads = 1;                     // the pool's size
  MachinePeaks peaks;

  // The per-kernel table `kiln run --profile` prints.
  std::string table() const;
  // A Chrome / Perfetto trace-event JSON document of the call: a complete
  // ("X") event per kernel on the calling thread, one per parallel chunk on
  // the thread that ran it, and thread and process name metadata.
  std::string trace_json() const;
};

class CompiledFunction {
 public:
  CompiledFunction() = default;  // empty: calling it throws kiln::Error

  bool valid() const { return impl_ != nullptr; }
  const std::string& name() const;
  const std::string& backend() const;
  std::vector<ValueInfo> inputs() const;
  std::vector<ValueInfo> outputs() const;
  int num_kernels() const;

  // Runs the function. `inputs` follow inputs() order; a scalar input is a
  // 0-dim tensor. Checks count, dtypes, ranks and static dims, binds symbolic
  // dims (kiln::Error naming the input otherwise). Inputs may be
  // non-contiguous views (read in place). Outputs are packed tensors from the
  // caching allocator; an output that is an input is returned as is.
  std::vector<Tensor> operator()(const std::vector<Tensor>& inputs) const;
  std::vector<Tensor> run(const std::vector<Tensor>& inputs, CallStats* stats = nullptr) const;
  // Runs the function once like run(), timing each kernel (and each chunk of
  // its parallel loops) into `profile`; measures the machine's peaks on first
  // use (machine_peaks()). A plain call pays nothing for this.
  std::vector<Tensor> profile(const std::vector<Tensor>& inputs, CallProfile* profile) const;

  // Why the function has the kernels it has: a first line `kernels: N`, then
  // for each kernel its name, category, the source ops in it (with their
  // file:line:col when the graph came from a script) and why the kernel
  // boundary is where it is.
  std::string explain() const;

  // Text of one stage (see dump_stages()); kiln::Error naming the valid
  // stages for an unknown one, or when the backend has no such stage.
  std::string dump(const std::string& stage) const;

  // The compiled state (api/compile_internal.h), for Kiln's own code.
  struct Impl;
  static CompiledFunction from_impl(std::shared_ptr<const Impl> impl);

 private:
  std::shared_ptr<const Impl> impl_;
};

// Compiles a verified graph (the graph is copied; it may die afterwards).
// Throws kiln::Error for an unknown backend or option, or an op the compiled
// path cannot lower (naming the op).
CompiledFunction compile(const ir::Graph& g, const CompileOptions& options = {});
CompiledFunction compile(const Function& f, const CompileOptions& options = {});

// compile() on a background std::thread; the future rethrows its errors.
std::future<CompiledFunction> compile_async(const Function& f, const CompileOptions& options = {});
std::future<CompiledFunction> compile_async(const ir::Graph& g, const CompileOptions& options = {});

}  // namespace kiln
