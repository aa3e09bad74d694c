// The code-generation step of compile(): the LLVM backend (through the
// in-memory kernel cache) or loop-eval launchers, and the cache key.
//
// The key holds everything that changes the machine code: each kernel's
// canonical printed form plus its structural hash, the codegen options,
// Kiln's and LLVM's versions, and the target CPU name with its features.
#include <algorithm>

#include "api/compile_internal.h"
#include "ir/loop/loop_eval.h"
#include "ir/loop/visitor.h"
#include "kiln/error.h"

#ifdef KILN_WITH_LLVM
#include <llvm/ADT/StringMap.h>
#include <llvm/ADT/StringRef.h>
#include <llvm/Config/llvm-config.h>
#include <llvm/TargetParser/Host.h>
#endif

namespace kiln::compile_detail {

namespace {

// "name+feat1,-feat2,..." of the host, computed once (the host does not change).
const std::string& host_cpu_description() {
  static const std::string desc = [] {
#ifdef KILN_WITH_LLVM
    std::string s = llvm::sys::getHostCPUName().str();
    std::vector<std::string> feats;
    for (const auto& f : llvm::sys::getHostCPUFeatures()) {
      feats.push_back((f.getValue() ? "+" : "-") + f.getKey().str());
    }
    std::sort(feats.begin(), feats.end());  // StringMap order is not stable
    for (const std::string& f : feats) s += "," + f;
    return s;
#else
    return std::string("generic");
#endif
  }();
  return desc;
}

}  // namespace

runtime::CacheKey module_key(const std::vector<loop::Kernel>& kernels,
                             const codegen::CodegenOptions& options) {
  runtime::KeyHasher h;
  h.add("kiln-module-v1").add(KILN_VERSION);
#ifdef KILN_WITH_LLVM
  h.add(LLVM_VERSION_STRING);
#endif
  h.add(options.cpu.empty() ? host_cpu_description() : options.cpu);
  h.add(uint64_t(options.opt_level)).add(uint64_t(options.fast_math));
  h.add(uint64_t(kernels.size()));
  for (const loop::Kernel& k : kernels) {
    // The printed kernel is canonical (names, types, every node); the
    // structural hash also distinguishes float bit patterns the printer rounds.
    h.add(loop::to_string(k)).add(loop::structural_hash(k.body));
  }
  return h.key();
}

KernelEntries compile_kernels(CompiledFunction::Impl& impl) {
  KernelEntries out;
  if (impl.backend == "loop-eval") {
    for (const loop::Kernel& k : impl.scheduled) {
      out.launchers.push_back(
          [k](std::span<const Tensor> buffers, std::span<const int64_t> scalars) {
            loop::eval_kernel(k, buffers, scalars);
          });
    }
    return out;
  }
#ifdef KILN_WITH_LLVM
  if (impl.backend == "llvm") {
    impl.codegen = codegen::make_llvm_backend();
    impl.codegen_options.opt_level = impl.options.opt_level;
    impl.codegen_options.cpu = impl.options.cpu;
    impl.codegen_options.fast_math = impl.options.fast_math;
    auto build = [&]() -> std::shared_ptr<codegen::CompiledModule> {
      return std::shared_ptr<codegen::CompiledModule>(
          impl.codegen->compile(impl.scheduled, impl.codegen_options));
    };
    if (impl.scheduled.empty()) return out;
    if (impl.options.use_cache) {
      runtime::CacheKey key = module_key(impl.scheduled, impl.codegen_options);
      impl.module =
          runtime::KernelCache::global().get_or_build_as<codegen::CompiledModule>(key, build);
    } else {
      impl.module = build();
    }
    for (const loop::Kernel& k : impl.scheduled) out.entries.push_back(impl.module->lookup(k.name));
    return out;
  }
#endif
  KILN_USER_ERROR("compile: unknown backend '" << impl.backend << "'");
}

}  // namespace kiln::compile_detail
