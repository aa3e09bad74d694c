// The llvm backend's compile step (api/backends.h): LLVM behind the caches
// (in memory, then on disk, then a build), its dump stages, and the cache
// key.
//
// The key holds everything that changes the machine code: each kernel in a
// compact binary canonical form (every node, type, float bit pattern, buffer
// identity), the codegen options, Kiln's and LLVM's versions, the target CPU
// with its features, and the identity of the Kiln build itself (its GNU
// build-id), since KILN_VERSION does not change when the code generator does
// and a disk entry outlives the process. The binary form replaces printing
// the kernels: a hit in the memory cache must cost microseconds.
#include <elf.h>
#include <link.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <unordered_map>

#include "api/backends.h"
#include "api/compile_internal.h"
#include "ir/loop/canonical.h"
#include "kiln/error.h"
#include "runtime/disk_cache.h"

#ifdef KILN_WITH_LLVM
#include <llvm/ADT/StringMap.h>
#include <llvm/ADT/StringRef.h>
#include <llvm/Config/llvm-config.h>
#include <llvm/TargetParser/Host.h>
#endif

namespace kiln::compile_detail {

namespace {

// "name,+feat1,-feat2,..." of the host (features sorted), computed once.
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

// The GNU build-id of the binary (executable or shared library) holding this
// code, as hex; when it has none, the size and modification time of its file.
// Computed once.
const std::string& build_identity() {
  static const std::string id = [] {
    struct Search {
      uintptr_t code;  // an address inside Kiln's code
      std::string id, file;
    } search{reinterpret_cast<uintptr_t>(&host_cpu_description), "", ""};
    dl_iterate_phdr(
        [](dl_phdr_info* info, size_t, void* data) -> int {
          auto* s = static_cast<Search*>(data);
          bool mine = false;
          for (int i = 0; i < info->dlpi_phnum; ++i) {
            const ElfW(Phdr)& ph = info->dlpi_phdr[i];
            uintptr_t lo = info->dlpi_addr + ph.p_vaddr;
            if (ph.p_type == PT_LOAD && s->code >= lo && s->code < lo + ph.p_memsz) mine = true;
          }
          if (!mine) return 0;
          s->file = info->dlpi_name && *info->dlpi_name ? info->dlpi_name : "/proc/self/exe";
          for (int i = 0; i < info->dlpi_phnum && s->id.empty(); ++i) {
            const ElfW(Phdr)& ph = info->dlpi_phdr[i];
            if (ph.p_type != PT_NOTE) continue;
            const char* p = reinterpret_cast<const char*>(info->dlpi_addr + ph.p_vaddr);
            const char* end = p + ph.p_memsz;
            auto align4 = [](size_t n) { return (n + 3) & ~size_t(3); };
            while (p + sizeof(ElfW(Nhdr)) <= end) {
              const auto* note = reinterpret_cast<const ElfW(Nhdr)*>(p);
              const char* name = p + sizeof(ElfW(Nhdr));
              const unsigned char* desc =
                  reinterpret_cast<const unsigned char*>(name + align4(note->n_namesz));
              if (note->n_type == NT_GNU_BUILD_ID && note->n_namesz == 4 &&
                  std::memcmp(name, "GNU", 4) == 0) {
                static const char* hex = "0123456789abcdef";
                for (size_t k = 0; k < note->n_descsz; ++k) {
                  s->id += hex[desc[k] >> 4];
                  s->id += hex[desc[k] & 15];
                }
                break;
              }
              p = reinterpret_cast<const char*>(desc) + align4(note->n_descsz);
            }
          }
          return 1;
        },
        &search);
    if (!search.id.empty()) return "build-id " + search.id;
    struct stat st;
    if (!search.file.empty() && ::stat(search.file.c_str(), &st) == 0) {
      return "binary " + std::to_string(st.st_size) + "@" + std::to_string(st.st_mtim.tv_sec) +
             "." + std::to_string(st.st_mtim.tv_nsec);
    }
    return std::string("unknown build");
  }();
  return id;
}

// The llvm backend's helpers (unused, so an error, without LLVM).
#ifdef KILN_WITH_LLVM
namespace {

// What the target of `options` is, in words: stored in each disk entry so a
// reader can tell an entry made for another compiler or CPU from its own.
std::string target_description(const codegen::CodegenOptions& options) {
  std::string d = "kiln " KILN_VERSION " (" + build_identity() + ")";
  d += "; llvm " LLVM_VERSION_STRING;
  d += "; cpu " + (options.cpu.empty() ? host_cpu_description() : options.cpu);
  d += "; O" + std::to_string(options.opt_level) + (options.fast_math ? " fast-math" : "");
  return d;
}

bool print_times() {
  static const bool on = [] {
    const char* v = std::getenv("KILN_COMPILE_TIMES");
    return v && *v && std::strcmp(v, "0") != 0;
  }();
  return on;
}

double ms(double seconds) {
  return seconds * 1e3;
}

}  // namespace
#endif

std::string canonical_kernels(const std::vector<loop::Kernel>& kernels) {
  return loop::canonical_bytes(kernels);
}

const std::string& host_cpu_name() {
  static const std::string name = [] {
#ifdef KILN_WITH_LLVM
    return llvm::sys::getHostCPUName().str();
#else
    return std::string("generic");
#endif
  }();
  return name;
}

std::string algorithms_text(const std::vector<passes::KernelGroup>& groups) {
  std::string s;
  for (size_t k = 0; k < groups.size(); ++k) {
    if (!groups[k].algorithm.name.empty()) {
      s += std::to_string(k) + ":" + groups[k].algorithm.name + ";";
    }
  }
  return s;
}

runtime::CacheKey module_key(const std::vector<loop::Kernel>& kernels,
                             const codegen::CodegenOptions& options,
                             const std::string& algorithms) {
  runtime::KeyHasher h;
  h.add("kiln-module-v2").add(KILN_VERSION).add(build_identity());
#ifdef KILN_WITH_LLVM
  h.add(LLVM_VERSION_STRING);
#endif
  h.add(options.cpu.empty() ? host_cpu_description() : options.cpu);
  h.add(uint64_t(options.opt_level)).add(uint64_t(options.fast_math));
  h.add(uint64_t(kernels.size()));
  h.add(canonical_kernels(kernels));
  // Kernels of different algorithms differ anyway; this keeps the two apart
  // even if two candidates ever lowered to the same loops.
  if (!algorithms.empty()) h.add("algorithms").add(algorithms);
  return h.key();
}

#ifdef KILN_WITH_LLVM
namespace {

// The module of impl.scheduled from the disk cache (loading its object) or
// built (then stored there). Any trouble with the disk only costs a rebuild.
std::shared_ptr<codegen::CompiledModule> build_through_disk(CompiledFunction::Impl& impl,
                                                            const runtime::CacheKey& key,
                                                            CodegenReport& report) {
  std::vector<std::string> names;
  for (const loop::Kernel& k : impl.scheduled) names.push_back(k.name);
  runtime::DiskCache& disk = runtime::DiskCache::global();
  bool use_disk = impl.options.disk_cache && disk.enabled();
  std::string description;
  if (use_disk) {
    description = target_description(impl.codegen_options);
    auto t0 = std::chrono::steady_clock::now();
    std::optional<std::string> object = disk.load(key, description);
    report.disk_read = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (object) {
      try {
        auto module = impl.codegen->load_object(*object, names, &report.times);
        report.source = "disk";
        return module;
      } catch (const Error& e) {
        // Intact bytes that still do not load: never trusted, rebuilt.
        std::fprintf(stderr, "kiln: warning: cache entry %s is corrupt (%s); rebuilding\n",
                     disk.entry_path(key).c_str(), e.what());
      }
    }
  }
  std::string object =
      impl.codegen->compile_object(impl.scheduled, impl.codegen_options, &report.times);
  std::shared_ptr<codegen::CompiledModule> module =
      impl.codegen->load_object(object, names, &report.times);
  // Stored only once it loaded: a bad object is never written for others.
  if (use_disk) disk.store(key, description, object);
  report.source = "built";
  return module;
}

}  // namespace
#endif

}  // namespace kiln::compile_detail

#ifdef KILN_WITH_LLVM
namespace kiln::api {

using compile_detail::KernelEntries;

// The llvm backend's compile step (backends.h): the module of impl.scheduled
// from the in-memory cache, the disk cache or a build.
KernelEntries compile_llvm(CompiledFunction::Impl& impl) {
  using namespace compile_detail;
  KernelEntries out;
  out.device = impl.device;
  impl.codegen = codegen::make_llvm_backend();
  impl.codegen_options.opt_level = impl.options.opt_level;
  impl.codegen_options.cpu = impl.options.cpu;
  impl.codegen_options.fast_math = impl.options.fast_math;
  if (impl.scheduled.empty()) return out;
  auto t0 = std::chrono::steady_clock::now();
  CodegenReport& report = impl.codegen_report;
  runtime::CacheKey key =
      module_key(impl.scheduled, impl.codegen_options, algorithms_text(impl.groups));
  report.key = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  auto build = [&]() -> std::shared_ptr<codegen::CompiledModule> {
    return build_through_disk(impl, key, report);
  };
  report.source = "memory";  // unless build() runs
  impl.module =
      impl.options.use_cache
          ? runtime::KernelCache::global().get_or_build_as<codegen::CompiledModule>(key, build)
          : build();
  for (const loop::Kernel& k : impl.scheduled) {
    out.kernels.push_back(runtime::host_kernel(impl.module->lookup(k.name)));
  }
  report.total = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (print_times()) {
    const codegen::CodegenTimes& t = report.times;
    std::fprintf(stderr,
                 "kiln: codegen %s: %.3f ms (key %.3f, disk read %.3f, target %.3f, emit %.3f, "
                 "optimize %.3f, codegen %.3f, load %.3f)\n",
                 report.source.c_str(), ms(report.total), ms(report.key), ms(report.disk_read),
                 ms(t.target), ms(t.emit), ms(t.optimize), ms(t.codegen), ms(t.load));
  }
  return out;
}

// The llvm backend's stages (llvm, llvm-opt, asm) of `kernels`, generated on
// demand with the function's codegen options.
std::string dump_llvm(const CompiledFunction::Impl& impl, const std::vector<loop::Kernel>& kernels,
                      const std::string& stage) {
  codegen::DumpStage ds = stage == "llvm"       ? codegen::DumpStage::LLVM
                          : stage == "llvm-opt" ? codegen::DumpStage::LLVMOpt
                                                : codegen::DumpStage::Asm;
  std::shared_ptr<codegen::Backend> backend = impl.codegen;
  if (!backend) backend = codegen::make_llvm_backend();
  codegen::CodegenOptions cg = impl.codegen_options;
  cg.opt_level = impl.options.opt_level;
  cg.cpu = impl.options.cpu;
  cg.fast_math = impl.options.fast_math;
  return backend->dump(kernels, cg, ds);
}

}  // namespace kiln::api
#endif
