// The LLVM CPU backend: loop-IR kernels -> LLVM IR (emit_*.cpp) -> the new
// PassManager's O0..O3 pipeline with the host TargetMachine's TTI -> object
// code -> ORC LLJIT. One LLVMContext, TargetMachine and JITDylib per compile()
// call, so compile() may run on several threads at once; the LLJIT itself is
// created once per process. Dumps print the module before and after the
// pipeline, or its assembly.
//
// Code is emitted to an object file here (not by LLJIT's own compile layer) so
// options.cpu/opt_level apply to JIT code exactly as they do to --dump=asm.
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>

#include <llvm/Analysis/CGSCCPassManager.h>
#include <llvm/Analysis/LoopAnalysisManager.h>
#include <llvm/ExecutionEngine/Orc/Core.h>
#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Verifier.h>
#include <llvm/MC/MCSubtargetInfo.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/TargetParser/Host.h>

#include "codegen/backend.h"
#include "codegen/llvm/llvm_backend.h"
#include "codegen/llvm/llvm_internal.h"
#include "kiln/error.h"
#include "runtime/thread_pool.h"

namespace kiln::codegen {

namespace llvm_cpu {
namespace {

std::mutex& extern_mutex() {
  static std::mutex m;
  return m;
}
std::map<std::string, void*>& extern_symbols() {
  static std::map<std::string, void*> m;
  return m;
}

void init_native_target() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    llvm::InitializeNativeTargetAsmParser();
  });
}

std::string error_text(llvm::Error e) {
  return llvm::toString(std::move(e));
}

struct Jit {
  std::unique_ptr<llvm::orc::LLJIT> lljit;
  std::mutex mutex;  // guards JITDylib creation and removal
  uint64_t next_module = 0;
};

// Created on first use and never destroyed: kernels may still run while static
// destructors do, and tearing down ORC at exit buys nothing.
Jit& jit() {
  static Jit* instance = [] {
    init_native_target();
    auto built = llvm::orc::LLJITBuilder().create();
    KILN_USER_CHECK(built,
                    "llvm backend: cannot create the JIT: " << error_text(built.takeError()));
    auto* j = new Jit;
    j->lljit = std::move(*built);
    return j;
  }();
  return *instance;
}

// The process symbols JIT code calls, added explicitly: test executables link
// the runtime statically and do not export it.
llvm::orc::SymbolMap runtime_symbols(llvm::orc::LLJIT& lj) {
  llvm::orc::SymbolMap map;
  auto add = [&](const std::string& name, auto* fn) {
    map[lj.mangleAndIntern(name)] = llvm::orc::ExecutorSymbolDef(
        llvm::orc::ExecutorAddr::fromPtr(reinterpret_cast<void*>(fn)),
        llvm::JITSymbolFlags::Exported | llvm::JITSymbolFlags::Callable);
  };
  add(kParallelForSymbol, &kiln_parallel_for);
  add("malloc", &::malloc);
  add("free", &::free);
  add("memcpy", &::memcpy);
  add("memmove", &::memmove);
  add("memset", &::memset);
  using D1 = double (*)(double);
  using D2 = double (*)(double, double);
  add("sin", static_cast<D1>(&::sin));
  add("cos", static_cast<D1>(&::cos));
  add("erf", static_cast<D1>(&::erf));
  add("pow", static_cast<D2>(&::pow));
  add("fmod", static_cast<D2>(&::fmod));
  add("fmodf", static_cast<float (*)(float, float)>(&::fmodf));
  std::lock_guard<std::mutex> lock(extern_mutex());
  for (const auto& [name, addr] : extern_symbols()) add(name, addr);
  return map;
}

std::unique_ptr<llvm::TargetMachine> make_target_machine(const CodegenOptions& options) {
  init_native_target();
  KILN_USER_CHECK(options.opt_level >= 0 && options.opt_level <= 3,
                  "llvm backend: opt level must be 0..3, got " << options.opt_level);
  std::string triple = llvm::sys::getProcessTriple();
  std::string err;
  const llvm::Target* target = llvm::TargetRegistry::lookupTarget(triple, err);
  KILN_USER_CHECK(target, "llvm backend: no LLVM target for " << triple << ": " << err);
  std::string cpu = options.cpu.empty() ? llvm::sys::getHostCPUName().str() : options.cpu;
  // Checked on a CPU-less subtarget first: LLVM only warns about unknown CPUs.
  std::unique_ptr<llvm::MCSubtargetInfo> probe(target->createMCSubtargetInfo(triple, "", ""));
  KILN_USER_CHECK(probe && probe->isCPUStringValid(cpu),
                  "llvm backend: unknown CPU '" << cpu << "' for " << triple);
  std::string features;
  if (options.cpu.empty()) {
    for (const auto& f : llvm::sys::getHostCPUFeatures()) {
      if (!features.empty()) features += ",";
      features += (f.getValue() ? "+" : "-") + f.getKey().str();
    }
  }
  llvm::TargetOptions to;
  to.AllowFPOpFusion = options.fast_math ? llvm::FPOpFusion::Fast : llvm::FPOpFusion::Standard;
  static constexpr llvm::CodeGenOptLevel kLevels[] = {
      llvm::CodeGenOptLevel::None, llvm::CodeGenOptLevel::Less, llvm::CodeGenOptLevel::Default,
      llvm::CodeGenOptLevel::Aggressive};
  std::unique_ptr<llvm::TargetMachine> tm(target->createTargetMachine(
      triple, cpu, features, to, llvm::Reloc::PIC_, std::nullopt, kLevels[options.opt_level]));
  KILN_USER_CHECK(tm,
                  "llvm backend: cannot create a target machine for " << triple << " cpu " << cpu);
  return tm;
}

std::unique_ptr<llvm::Module> build_module(llvm::LLVMContext& ctx, llvm::TargetMachine& tm,
                                           const std::vector<loop::Kernel>& kernels,
                                           const CodegenOptions& options) {
  auto module = std::make_unique<llvm::Module>("kiln", ctx);
  module->setDataLayout(tm.createDataLayout());
  module->setTargetTriple(tm.getTargetTriple().str());
  emit_kernels(*module, kernels, options.fast_math);
  std::string problems;
  llvm::raw_string_ostream os(problems);
  if (llvm::verifyModule(*module, &os)) {
    std::string text;
    llvm::raw_string_ostream ts(text);
    module->print(ts, nullptr);
    KILN_INTERNAL_CHECK(false, "llvm backend emitted invalid IR: " << problems << "\n"
                                                                   << text.substr(0, 8000));
  }
  return module;
}

void optimize(llvm::Module& module, llvm::TargetMachine& tm, int level) {
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PipelineTuningOptions pto;
  pto.LoopVectorization = level >= 2;
  pto.SLPVectorization = level >= 2;
  pto.LoopUnrolling = level >= 2;
  llvm::PassBuilder pb(&tm, pto);  // registers the target's TTI
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  static const llvm::OptimizationLevel kLevels[] = {
      llvm::OptimizationLevel::O0, llvm::OptimizationLevel::O1, llvm::OptimizationLevel::O2,
      llvm::OptimizationLevel::O3};
  llvm::ModulePassManager mpm = level == 0 ? pb.buildO0DefaultPipeline(llvm::OptimizationLevel::O0)
                                           : pb.buildPerModuleDefaultPipeline(kLevels[level]);
  mpm.run(module, mam);
}

void emit_code(llvm::Module& module, llvm::TargetMachine& tm, llvm::CodeGenFileType type,
               llvm::SmallVectorImpl<char>& out) {
  llvm::raw_svector_ostream os(out);
  llvm::legacy::PassManager pm;
  KILN_INTERNAL_CHECK(!tm.addPassesToEmitFile(pm, os, nullptr, type),
                      "llvm backend: the target cannot emit this file type");
  pm.run(module);
}

class LlvmModule : public CompiledModule {
 public:
  LlvmModule(llvm::orc::JITDylib* jd, std::map<std::string, KernelFn> entries)
      : jd_(jd), entries_(std::move(entries)) {}
  ~LlvmModule() override {
    Jit& j = jit();
    std::lock_guard<std::mutex> lock(j.mutex);
    llvm::consumeError(j.lljit->getExecutionSession().removeJITDylib(*jd_));
  }
  KernelFn lookup(const std::string& name) const override {
    auto it = entries_.find(name);
    KILN_INTERNAL_CHECK(it != entries_.end(), "llvm backend: no kernel '" << name << "' in module");
    return it->second;
  }

 private:
  llvm::orc::JITDylib* jd_;
  std::map<std::string, KernelFn> entries_;
};

class LlvmBackend : public Backend {
 public:
  std::string name() const override { return "llvm"; }

  std::unique_ptr<CompiledModule> compile(const std::vector<loop::Kernel>& kernels,
                                          const CodegenOptions& options) override {
    auto tm = make_target_machine(options);
    llvm::SmallVector<char, 0> object;
    {
      llvm::LLVMContext ctx;
      auto module = build_module(ctx, *tm, kernels, options);
      optimize(*module, *tm, options.opt_level);
      emit_code(*module, *tm, llvm::CodeGenFileType::ObjectFile, object);
    }
    Jit& j = jit();
    llvm::orc::LLJIT& lj = *j.lljit;
    llvm::orc::JITDylib* jd = nullptr;
    {
      std::lock_guard<std::mutex> lock(j.mutex);
      std::string jd_name = "kiln_module_" + std::to_string(j.next_module++);
      auto created = lj.createJITDylib(jd_name);
      KILN_INTERNAL_CHECK(created, "llvm backend: " << error_text(created.takeError()));
      jd = &*created;
      KILN_INTERNAL_CHECK(!jd->define(llvm::orc::absoluteSymbols(runtime_symbols(lj))),
                          "llvm backend: cannot define runtime symbols");
      auto gen = llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(
          lj.getDataLayout().getGlobalPrefix());
      if (gen)
        jd->addGenerator(std::move(*gen));
      else
        llvm::consumeError(gen.takeError());
      llvm::Error added =
          lj.addObjectFile(*jd, llvm::MemoryBuffer::getMemBufferCopy(
                                    llvm::StringRef(object.data(), object.size()), jd_name));
      KILN_INTERNAL_CHECK(!added, "llvm backend: " << error_text(std::move(added)));
    }
    // Look every entry up now: linking happens here, so missing symbols are
    // reported by compile(), not by the first call.
    std::map<std::string, KernelFn> entries;
    for (const loop::Kernel& k : kernels) {
      auto addr = lj.lookup(*jd, kernel_symbol(k.name));
      if (!addr) {
        std::string msg = error_text(addr.takeError());
        std::lock_guard<std::mutex> lock(j.mutex);
        llvm::consumeError(lj.getExecutionSession().removeJITDylib(*jd));
        KILN_INTERNAL_CHECK(false, "llvm backend: cannot link kernel " << k.name << ": " << msg);
      }
      entries[k.name] = addr->toPtr<KernelFn>();
    }
    return std::make_unique<LlvmModule>(jd, std::move(entries));
  }

  std::string dump(const std::vector<loop::Kernel>& kernels, const CodegenOptions& options,
                   DumpStage stage) override {
    KILN_USER_CHECK(
        stage == DumpStage::LLVM || stage == DumpStage::LLVMOpt || stage == DumpStage::Asm,
        "llvm backend: cannot dump stage " << (stage == DumpStage::Cuda ? "cuda" : "ptx")
                                           << " (a CUDA stage; use the cuda backend)");
    auto tm = make_target_machine(options);
    llvm::LLVMContext ctx;
    auto module = build_module(ctx, *tm, kernels, options);
    if (stage != DumpStage::LLVM) optimize(*module, *tm, options.opt_level);
    if (stage == DumpStage::Asm) {
      llvm::SmallVector<char, 0> text;
      emit_code(*module, *tm, llvm::CodeGenFileType::AssemblyFile, text);
      return std::string(text.data(), text.size());
    }
    std::string out;
    llvm::raw_string_ostream os(out);
    module->print(os, nullptr);
    return out;
  }
};

}  // namespace
}  // namespace llvm_cpu

void register_extern_symbol(const std::string& name, void* address) {
  std::lock_guard<std::mutex> lock(llvm_cpu::extern_mutex());
  llvm_cpu::extern_symbols()[name] = address;
}

std::unique_ptr<Backend> make_llvm_backend() {
  return std::make_unique<llvm_cpu::LlvmBackend>();
}

}  // namespace kiln::codegen
