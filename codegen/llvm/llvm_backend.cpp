// The LLVM CPU backend: loop-IR kernels -> LLVM IR (emit_*.cpp) -> a lean
// new-PassManager pipeline (kKilnPipeline) with the TargetMachine's TTI -> object code
// (compile_object) -> ORC LLJIT (load_object, load_objects). One LLVMContext
// per compile_object and one JITDylib per loaded module, so compiles (and the
// kernels of one function, each its own object) may run on several threads
// at once; the LLJIT is
// created once per process and target machines are pooled per target (a
// machine is used by one compile at a time). Dumps print the module before and
// after the pipeline, or its assembly.
//
// Code is emitted to an object file here (not by LLJIT's own compile layer) so
// options.cpu/opt_level apply to JIT code exactly as they do to --dump=asm,
// and so the object's bytes can be cached on disk and loaded in a later
// process without running LLVM's optimizer or code generator.
#include <atomic>
#include <chrono>
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
#include "ir/loop/extra_math.h"
#include "kiln/error.h"
#include "runtime/allocator.h"
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
  add(kScratchAllocSymbol, &kiln_scratch_alloc);
  add(kScratchFreeSymbol, &kiln_scratch_free);
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
  for (const loop::ExtraMath& m : loop::extra_math()) {
    if (m.arity == 1) {
      add(m.symbol, m.f1);
    } else {
      add(m.symbol, m.f2);
    }
  }
  std::lock_guard<std::mutex> lock(extern_mutex());
  for (const auto& [name, addr] : extern_symbols()) add(name, addr);
  return map;
}

// The host's features as a target feature string, computed once.
const std::string& host_features() {
  static const std::string features = [] {
    std::string f;
    for (const auto& kv : llvm::sys::getHostCPUFeatures()) {
      if (!f.empty()) f += ",";
      f += (kv.getValue() ? "+" : "-") + kv.getKey().str();
    }
    return f;
  }();
  return features;
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
  std::string features = options.cpu.empty() ? host_features() : std::string();
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

// Target machines by (cpu, opt level, fast-math), reused across compiles:
// creating one costs about a millisecond. LLVM does not promise a machine is
// safe to share between concurrent code generations, so each is lent to one
// compile at a time and a busy pool makes another.
class TargetMachinePool {
 public:
  class Lease {
   public:
    Lease(TargetMachinePool* pool, std::string key, std::unique_ptr<llvm::TargetMachine> tm)
        : pool_(pool), key_(std::move(key)), tm_(std::move(tm)) {}
    Lease(Lease&&) = default;
    ~Lease() {
      if (tm_) pool_->give_back(key_, std::move(tm_));
    }
    llvm::TargetMachine& operator*() const { return *tm_; }
    llvm::TargetMachine* operator->() const { return tm_.get(); }

   private:
    TargetMachinePool* pool_;
    std::string key_;
    std::unique_ptr<llvm::TargetMachine> tm_;
  };

  static TargetMachinePool& global() {
    static TargetMachinePool* pool = new TargetMachinePool;  // never destroyed, like the JIT
    return *pool;
  }

  Lease lend(const CodegenOptions& options) {
    std::string key = options.cpu + "|" + std::to_string(options.opt_level) + "|" +
                      (options.fast_math ? "fast" : "strict");
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = free_.find(key);
      if (it != free_.end() && !it->second.empty()) {
        std::unique_ptr<llvm::TargetMachine> tm = std::move(it->second.back());
        it->second.pop_back();
        return Lease(this, key, std::move(tm));
      }
    }
    return Lease(this, key, make_target_machine(options));  // throws for a bad CPU
  }

 private:
  void give_back(const std::string& key, std::unique_ptr<llvm::TargetMachine> tm) {
    std::lock_guard<std::mutex> lock(mu_);
    auto& machines = free_[key];
    // A few per target cover the threads that compile at once; more are dropped.
    if (machines.size() < 8) machines.push_back(std::move(tm));
  }

  std::mutex mu_;
  std::map<std::string, std::vector<std::unique_ptr<llvm::TargetMachine>>> free_;
};

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

// The pipeline for opt levels 1..3. Kiln's schedule has already vectorized,
// unrolled and parallelized the loops, so LLVM's loop vectorizer, SLP
// vectorizer, runtime unroller and inliner heuristics (most of -O3's time)
// only re-examine finished loops: this list keeps what the emitted IR needs
// and costs about a third of -O3, with the same run time on the elementwise,
// softmax, layer-norm and reduction kernels (bench/), measured when it was
// chosen:
//   always-inline     the emitter's .body helpers into kernels and chunks
//   sroa              stack accumulators (acc_v[...]) into registers
//   early-cse         repeated loads, broadcasts and index arithmetic
//   loop-rotate       do-while form, so licm and codegen's LSR do their work
//   indvars           canonical induction variables, exact trip counts
//   loop-unroll-full  small constant loops an unscheduled kernel leaves
//                     (a direct conv's 3x3 window: 35% slower without it)
//   licm              hoists invariant loads, splats and bounds
//   gvn               loads and values redundant across blocks
//   instcombine, simplifycfg  cleanup after each of the above
// (instcombine as -O3 runs it: a textual "instcombine" also checks that one
// round reached a fixpoint and aborts the process when not.)
constexpr const char* kKilnPipeline =
    "always-inline,"
    "function(sroa,early-cse<memssa>,simplifycfg,instcombine<no-verify-fixpoint>,"
    "loop(loop-rotate,indvars,loop-unroll-full),loop-mssa(licm),gvn,"
    "instcombine<no-verify-fixpoint>,simplifycfg)";

void optimize(llvm::Module& module, llvm::TargetMachine& tm, int level) {
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PassBuilder pb(&tm);  // registers the target's TTI
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::ModulePassManager mpm;
  if (level == 0) {
    mpm = pb.buildO0DefaultPipeline(llvm::OptimizationLevel::O0);
  } else {
    llvm::Error parsed = pb.parsePassPipeline(mpm, kKilnPipeline);
    KILN_INTERNAL_CHECK(!parsed,
                        "llvm backend: bad pass pipeline: " << error_text(std::move(parsed)));
  }
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

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Adds the time since t0 to `field` when the caller asked for times.
void charge(CodegenTimes* times, double CodegenTimes::*field,
            std::chrono::steady_clock::time_point t0) {
  if (times) times->*field += seconds_since(t0);
}

class LlvmBackend : public Backend {
 public:
  std::string name() const override { return "llvm"; }

  std::string compile_object(const std::vector<loop::Kernel>& kernels,
                             const CodegenOptions& options, CodegenTimes* times) override {
    using Clock = std::chrono::steady_clock;
    Clock::time_point t0 = Clock::now();
    TargetMachinePool::Lease tm = TargetMachinePool::global().lend(options);
    charge(times, &CodegenTimes::target, t0);
    llvm::SmallVector<char, 0> object;
    {
      llvm::LLVMContext ctx;
      t0 = Clock::now();
      auto module = build_module(ctx, *tm, kernels, options);
      charge(times, &CodegenTimes::emit, t0);
      t0 = Clock::now();
      optimize(*module, *tm, options.opt_level);
      charge(times, &CodegenTimes::optimize, t0);
      t0 = Clock::now();
      emit_code(*module, *tm, llvm::CodeGenFileType::ObjectFile, object);
      charge(times, &CodegenTimes::codegen, t0);
    }
    return std::string(object.data(), object.size());
  }

  std::unique_ptr<CompiledModule> load_object(std::string_view object,
                                              const std::vector<std::string>& kernel_names,
                                              CodegenTimes* times) override {
    return load_objects({object}, kernel_names, times);
  }

  // Every object goes into one JITDylib (so one module, removed at once).
  std::unique_ptr<CompiledModule> load_objects(const std::vector<std::string_view>& objects,
                                               const std::vector<std::string>& kernel_names,
                                               CodegenTimes* times) override {
    auto t0 = std::chrono::steady_clock::now();
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
      for (size_t i = 0; i < objects.size(); ++i) {
        std::string_view object = objects[i];
        llvm::Error added = lj.addObjectFile(
            *jd, llvm::MemoryBuffer::getMemBufferCopy(
                     llvm::StringRef(object.data(), object.size()),
                     objects.size() == 1 ? jd_name : jd_name + "." + std::to_string(i)));
        if (added) {
          std::string msg = error_text(std::move(added));
          llvm::consumeError(lj.getExecutionSession().removeJITDylib(*jd));
          KILN_INTERNAL_CHECK(false, "llvm backend: cannot load the object: " << msg);
        }
      }
    }
    // Look every entry up now: linking happens here, so missing symbols are
    // reported by compile(), not by the first call.
    std::map<std::string, KernelFn> entries;
    for (const std::string& name : kernel_names) {
      auto addr = lj.lookup(*jd, kernel_symbol(name));
      if (!addr) {
        std::string msg = error_text(addr.takeError());
        std::lock_guard<std::mutex> lock(j.mutex);
        llvm::consumeError(lj.getExecutionSession().removeJITDylib(*jd));
        KILN_INTERNAL_CHECK(false, "llvm backend: cannot link kernel " << name << ": " << msg);
      }
      entries[name] = addr->toPtr<KernelFn>();
    }
    charge(times, &CodegenTimes::load, t0);
    return std::make_unique<LlvmModule>(jd, std::move(entries));
  }

  std::string dump(const std::vector<loop::Kernel>& kernels, const CodegenOptions& options,
                   DumpStage stage) override {
    KILN_USER_CHECK(
        stage == DumpStage::LLVM || stage == DumpStage::LLVMOpt || stage == DumpStage::Asm,
        "llvm backend: cannot dump stage " << (stage == DumpStage::Cuda ? "cuda" : "ptx")
                                           << " (a CUDA stage; use the cuda backend)");
    TargetMachinePool::Lease tm = TargetMachinePool::global().lend(options);
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
