// The backend registry: every backend Kiln knows, the kinds of code it runs
// (passes::TargetKind) and the devices it runs them on, why it is unavailable
// when it is (not built, a library not found), how it turns scheduled kernels
// into launchable ones, and the dump stages it prints. compile() picks a
// backend here and calls it; nothing else names backends (the list is one
// table in backends.cpp, read top to bottom).
//
//   llvm       cpu code on the host (native, through LLVM ORC)
//   loop-eval  cpu code on the host, or GPU-mapped code on a sim device,
//              run by the loop-IR evaluator
//   interp     the reference interpreter on the host (nothing is lowered)
//   cuda       GPU code on a cuda device (CUDA C through NVRTC; loading and
//              launching come with the CUDA device runtime)
//
// docs/backends.md says what a new backend implements and registers.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "api/compile_internal.h"
#include "kiln/compile.h"
#include "passes/target.h"

namespace kiln::api {

struct Backend {
  std::string name;
  std::string description;  // one line, for `kiln backends`
  // The kinds of code it runs; empty for the interpreter (which lowers nothing).
  std::vector<passes::TargetKind> targets;
  std::vector<Device::Kind> devices;  // where its kernels run
  // Why this build cannot use it ("not built: ...", "library not found:
  // ..."); empty when it can. Device availability is separate
  // (runtime::device_unavailable_reason).
  std::function<std::string()> unavailable;
  // Why this build cannot even generate its code, for a compile that only
  // generates it (CompileOptions::load false, e.g. for a dump): empty when
  // it can. Unset: unavailable().
  std::function<std::string()> cannot_generate;
  // Scheduled kernels (impl.scheduled, for impl.target on impl.device) to
  // launchable kernels; fills impl's backend state (module, reports).
  std::function<compile_detail::KernelEntries(CompiledFunction::Impl& impl)> compile;
  // The dump stages it prints besides compile()'s own, and the text of one of
  // them for `kernels` (generated on demand: assembly costs a codegen run).
  std::vector<DumpStageInfo> stages;
  std::function<std::string(const CompiledFunction::Impl& impl,
                            const std::vector<loop::Kernel>& kernels, const std::string& stage)>
      dump;

  bool runs_on(Device d) const;
  bool serves(passes::TargetKind k) const;
  // cannot_generate(), or unavailable() when it is unset.
  std::string generation_problem() const;
};

// Every backend, in the order the table lists them (preference order for a
// device's default).
const std::vector<Backend>& backend_registry();
// The backend named `name`, or nullptr.
const Backend* find_backend(const std::string& name);

// The backend `options` ask for (by name, or the first available one that
// runs on options.device), checked to run on that device, with the device
// and the backend available: kiln::Error naming what is missing otherwise
// ("device cuda:0 is unavailable: ...; no backend that runs on cuda is built").
// With options.load false only code is generated: the device need not be
// usable, and a backend only needs what generation needs.
const Backend& select_backend(const CompileOptions& options);

// Per-backend compile steps (their own files).
compile_detail::KernelEntries compile_loop_eval(
    CompiledFunction::Impl& impl);  // loop_eval_backend.cpp
#ifdef KILN_WITH_LLVM
compile_detail::KernelEntries compile_llvm(CompiledFunction::Impl& impl);  // compile_backend.cpp
std::string dump_llvm(const CompiledFunction::Impl& impl, const std::vector<loop::Kernel>& kernels,
                      const std::string& stage);
#endif
compile_detail::KernelEntries compile_cuda(CompiledFunction::Impl& impl);  // cuda_backend.cpp
std::string dump_cuda(const CompiledFunction::Impl& impl, const std::vector<loop::Kernel>& kernels,
                      const std::string& stage);
std::string cuda_unavailable();  // NVRTC's absence, or empty

}  // namespace kiln::api
