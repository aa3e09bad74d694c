// The llvm backend's compile step (api/backends.h): LLVM behind the caches
// (in memory, then on disk, then a build), its dump stages, and the cache
// key.
//
// The key holds everything that changes the machine code: each kernel in a
// compact binary canonical form (every node, type, float bit pattern, buffer
// identity), the codegen options, Kiln's and LLVM's versions, the target CPU
// with its features, and the identity of the Kiln build itself (the GNU
// build-ids of its libraries), since KILN_VERSION does not change when the code generator does
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
#include <atomic>
#include <exception>
#include <functional>
#include <optional>
#include <thread>
#include <unordered_map>
#include <vector>

#include "api/backends.h"
#include "api/compile_internal.h"
#include "ir/loop/canonical.h"
#include "kiln/error.h"
#include "runtime/disk_cache.h"
#include "runtime/env_number.h"
#include "runtime/thread_pool.h"

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

namespace {

// The GNU build-id note of one loaded object, as hex ("" when it has none).
std::string gnu_build_id(const dl_phdr_info* info) {
  std::string id;
  for (int i = 0; i < info->dlpi_phnum && id.empty(); ++i) {
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
          id += hex[desc[k] >> 4];
          id += hex[desc[k] & 15];
        }
        break;
      }
      p = reinterpret_cast<const char*>(desc) + align4(note->n_descsz);
    }
  }
  return id;
}

}  // namespace

// What identifies the code generator: the GNU build-ids of the binary holding
// this code and of every loaded Kiln library (libkiln*.so: the passes and the
// code generator live in their own libraries, so libkiln.so alone can stay
// byte-identical while the generated code changes, and the disk cache then
// served kernels of the previous build). An object without a build-id counts
// by the size and modification time of its file. Sorted, so the load order
// does not matter. Computed once.
const std::string& build_identity() {
  static const std::string id = [] {
    struct Search {
      uintptr_t code;  // an address inside Kiln's code
      std::vector<std::string> parts;
    } search{reinterpret_cast<uintptr_t>(&host_cpu_description), {}};
    dl_iterate_phdr(
        [](dl_phdr_info* info, size_t, void* data) -> int {
          auto* s = static_cast<Search*>(data);
          bool mine = false;
          for (int i = 0; i < info->dlpi_phnum; ++i) {
            const ElfW(Phdr)& ph = info->dlpi_phdr[i];
            uintptr_t lo = info->dlpi_addr + ph.p_vaddr;
            if (ph.p_type == PT_LOAD && s->code >= lo && s->code < lo + ph.p_memsz) mine = true;
          }
          const std::string file =
              info->dlpi_name && *info->dlpi_name ? info->dlpi_name : "/proc/self/exe";
          const std::string base = file.substr(file.rfind('/') + 1);
          if (!mine && base.rfind("libkiln", 0) != 0) return 0;
          std::string id = gnu_build_id(info);
          if (id.empty()) {
            struct stat st;
            if (::stat(file.c_str(), &st) != 0) return 0;
            id = "binary " + std::to_string(st.st_size) + "@" + std::to_string(st.st_mtim.tv_sec) +
                 "." + std::to_string(st.st_mtim.tv_nsec);
          }
          s->parts.push_back(id);
          return 0;
        },
        &search);
    if (search.parts.empty()) return std::string("unknown build");
    std::sort(search.parts.begin(), search.parts.end());
    std::string all = "build-id";
    for (const std::string& p : search.parts) all += " " + p;
    return all;
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

namespace {

struct KeyHash {
  size_t operator()(const runtime::CacheKey& k) const { return size_t(k.lo ^ (k.hi * 31)); }
};

// What every key of machine code holds besides the code: Kiln's build, LLVM's
// version, the target CPU with its features and the codegen options.
void add_target(runtime::KeyHasher& h, const codegen::CodegenOptions& options) {
  h.add(KILN_VERSION).add(build_identity());
#ifdef KILN_WITH_LLVM
  h.add(LLVM_VERSION_STRING);
#endif
  h.add(options.cpu.empty() ? host_cpu_description() : options.cpu);
  h.add(uint64_t(options.opt_level)).add(uint64_t(options.fast_math));
}

}  // namespace

runtime::CacheKey module_key(const std::vector<loop::Kernel>& kernels,
                             const codegen::CodegenOptions& options,
                             const std::vector<passes::KernelGroup>& groups) {
  return distinct_kernels(kernels, groups, options).module_key;
}

runtime::CacheKey kernel_key(const std::string& code, const codegen::CodegenOptions& options,
                             const std::string& algorithm) {
  runtime::KeyHasher h;
  h.add("kiln-kernel-v1");
  add_target(h, options);
  h.add(code);
  // Kernels of different algorithms differ anyway; this keeps the two apart
  // even if two candidates ever lowered to the same loops.
  h.add(algorithm);
  return h.key();
}

DistinctKernels distinct_kernels(const std::vector<loop::Kernel>& kernels,
                                 const std::vector<passes::KernelGroup>& groups,
                                 const codegen::CodegenOptions& options) {
  DistinctKernels d;
  std::unordered_map<runtime::CacheKey, int, KeyHash> first;
  runtime::KeyHasher module;
  module.add("kiln-module-v3");
  for (size_t k = 0; k < kernels.size(); ++k) {
    const std::string algorithm =
        groups.size() == kernels.size() ? groups[k].algorithm.name : std::string();
    runtime::CacheKey key = kernel_key(loop::canonical_code_bytes(kernels[k]), options, algorithm);
    auto [it, fresh] = first.emplace(key, int(d.keys.size()));
    if (fresh) {
      d.kernels.push_back(int(k));
      d.keys.push_back(key);
      module.add(key.hi).add(key.lo);
    }
    d.code_of.push_back(it->second);
  }
  d.module_key = module.key();
  return d;
}

std::string distinct_kernel_name(const runtime::CacheKey& key) {
  return "k" + key.str();
}

int compile_threads() {
  uint64_t fallback = uint64_t(std::max(1, num_threads()));
  return int(runtime::env_uint("KILN_COMPILE_THREADS", fallback, 1, 256));
}

#ifdef KILN_WITH_LLVM
namespace {

// Runs task(i) for i in [0, n) on up to `threads` threads (the caller's
// among them), each taking the next index; the first failure by index is
// rethrown once all are done, so errors do not depend on timing. Threads of
// its own, not the kernel pool: the pool runs one job at a time, and a
// long code generation there would hold up other threads' kernels.
void for_each_parallel(size_t n, int threads, const std::function<void(size_t)>& task) {
  std::vector<std::exception_ptr> errors(n);
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i = next++; i < n; i = next++) {
      try {
        task(i);
      } catch (...) {
        errors[i] = std::current_exception();
      }
    }
  };
  std::vector<std::thread> helpers;
  for (size_t t = 1; t < std::min(n, size_t(std::max(1, threads))); ++t) helpers.emplace_back(work);
  work();
  for (std::thread& t : helpers) t.join();
  for (const std::exception_ptr& e : errors) {
    if (e) std::rethrow_exception(e);
  }
}

void add_times(codegen::CodegenTimes& into, const codegen::CodegenTimes& t) {
  into.target += t.target;
  into.emit += t.emit;
  into.optimize += t.optimize;
  into.codegen += t.codegen;
  into.load += t.load;
}

// The module of impl.scheduled's distinct kernels: each kernel's object from
// the disk cache or built (on several threads, one object per kernel, under a
// name of its key so the object serves any function), then all loaded as one
// module and the built ones stored. Any trouble with the disk only costs a
// rebuild.
std::shared_ptr<codegen::CompiledModule> build_distinct(CompiledFunction::Impl& impl,
                                                        const DistinctKernels& d,
                                                        CodegenReport& report) {
  const size_t n = d.kernels.size();
  std::vector<std::string> names;
  for (const runtime::CacheKey& key : d.keys) names.push_back(distinct_kernel_name(key));
  runtime::DiskCache& disk = runtime::DiskCache::global();
  const bool use_disk = impl.options.disk_cache && disk.enabled();
  const std::string description = use_disk ? target_description(impl.codegen_options) : "";
  std::vector<std::string> objects(n);
  std::vector<char> from_disk(n, 0);
  if (use_disk) {
    auto t0 = std::chrono::steady_clock::now();
    for (size_t i = 0; i < n; ++i) {
      std::optional<std::string> object = disk.load(d.keys[i], description);
      if (object) {
        objects[i] = std::move(*object);
        from_disk[i] = 1;
      }
    }
    report.disk_read = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  // Builds the objects of the kernels not read from the disk.
  auto build = [&](std::vector<char>& built) {
    std::vector<size_t> todo;
    for (size_t i = 0; i < n; ++i) {
      if (!from_disk[i] && !built[i]) todo.push_back(i);
    }
    std::vector<codegen::CodegenTimes> times(todo.size());
    for_each_parallel(todo.size(), report.threads, [&](size_t j) {
      size_t i = todo[j];
      loop::Kernel k = impl.scheduled[size_t(d.kernels[i])];
      k.name = names[i];
      objects[i] = impl.codegen->compile_object({k}, impl.codegen_options, &times[j]);
    });
    for (size_t j = 0; j < todo.size(); ++j) {
      add_times(report.times, times[j]);
      built[todo[j]] = 1;
    }
  };
  std::vector<char> built(n, 0);
  build(built);
  auto load = [&] {
    std::vector<std::string_view> views(objects.begin(), objects.end());
    return impl.codegen->load_objects(views, names, &report.times);
  };
  std::shared_ptr<codegen::CompiledModule> module;
  try {
    module = load();
  } catch (const Error& e) {
    if (std::find(from_disk.begin(), from_disk.end(), 1) == from_disk.end()) throw;
    // Intact bytes that still do not load: never trusted, rebuilt.
    for (size_t i = 0; i < n; ++i) {
      if (!from_disk[i]) continue;
      std::fprintf(stderr, "kiln: warning: cache entry %s is corrupt (%s); rebuilding\n",
                   disk.entry_path(d.keys[i]).c_str(), e.what());
      from_disk[i] = 0;
    }
    build(built);
    module = load();
  }
  // Stored only once they loaded: a bad object is never written for others.
  report.built = report.from_disk = 0;
  for (size_t i = 0; i < n; ++i) {
    if (built[i] && use_disk) disk.store(d.keys[i], description, objects[i]);
    (built[i] ? report.built : report.from_disk) += 1;
  }
  report.source = report.built ? "built" : "disk";
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
  // Identical kernels (N layers of one shape, the steps of an unrolled loop)
  // are generated once: the module holds each distinct kernel's code once,
  // and every copy launches it. Its key is the distinct kernels' keys.
  DistinctKernels d = distinct_kernels(impl.scheduled, impl.groups, impl.codegen_options);
  impl.same_code_as.clear();
  for (int c : d.code_of) impl.same_code_as.push_back(d.kernels[size_t(c)]);
  report.kernels = int(impl.scheduled.size());
  report.distinct = int(d.kernels.size());
  report.threads = compile_threads();
  report.key = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  auto build = [&]() -> std::shared_ptr<codegen::CompiledModule> {
    return build_distinct(impl, d, report);
  };
  report.source = "memory";  // unless build() runs
  impl.module = impl.options.use_cache
                    ? runtime::KernelCache::global().get_or_build_as<codegen::CompiledModule>(
                          d.module_key, build)
                    : build();
  std::vector<std::shared_ptr<const runtime::KernelFunction>> entries;
  for (const runtime::CacheKey& key : d.keys) {
    entries.push_back(runtime::host_kernel(impl.module->lookup(distinct_kernel_name(key))));
  }
  for (int c : d.code_of) out.kernels.push_back(entries[size_t(c)]);
  report.total = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (print_times()) {
    const codegen::CodegenTimes& t = report.times;
    std::fprintf(stderr,
                 "kiln: codegen %s: %.3f ms (key %.3f, disk read %.3f, target %.3f, emit %.3f, "
                 "optimize %.3f, codegen %.3f, load %.3f; %d kernels, %d distinct, %d built, %d "
                 "from disk, %d threads)\n",
                 report.source.c_str(), ms(report.total), ms(report.key), ms(report.disk_read),
                 ms(t.target), ms(t.emit), ms(t.optimize), ms(t.codegen), ms(t.load),
                 report.kernels, report.distinct, report.built, report.from_disk,
                 report.threads);
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
