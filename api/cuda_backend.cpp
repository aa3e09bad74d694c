// The cuda backend's compile step and dump stages (api/backends.h): the
// scheduled kernels as one CUDA C program (codegen/cuda/cuda_emitter.h), and
// the program as an image (a CUBIN for the target's sm_XX, or PTX when NVRTC
// does not know it) through the in-memory cache, the disk cache, then NVRTC.
//
//   compile_cuda: emit -> [load false: stop; the image is made when a dump
//                 needs it] -> image (caches, NVRTC) -> load (the CUDA
//                 device runtime, runtime/cuda/module.h)
//
// The image's cache key holds the kernels' canonical bytes, NVRTC's version,
// every NVRTC option (the architecture among them), the contraction
// algorithms, and Kiln's build identity (which covers the emitter and the
// prelude). A disk entry also keeps NVRTC's log, so the resource report of a
// cached CUBIN is still there.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>

#include "api/backends.h"
#include "api/compile_internal.h"
#include "api/cuda_library.h"
#include "ir/loop/canonical.h"
#include "ir/loop/visitor.h"
#include "kiln/error.h"
#include "runtime/cuda/module.h"
#include "runtime/disk_cache.h"

namespace kiln::api {

using codegen::cuda::CudaImage;
using codegen::cuda::CudaProgram;
using codegen::cuda::KernelResources;
using codegen::cuda::NvrtcOptions;
using compile_detail::CudaCode;
using compile_detail::KernelEntries;

std::string cuda_unavailable() {
  return codegen::cuda::nvrtc_unavailable_reason();
}

namespace {

NvrtcOptions nvrtc_options(const CompiledFunction::Impl& impl) {
  NvrtcOptions o;
  o.compute_capability = impl.target.gpu.compute_capability;
  o.fmad = impl.options.fast_math;
  return o;
}

// ---- a disk entry: flags byte, arch, log, image (lengths as 8-byte words)

void put(std::string& out, std::string_view s) {
  uint64_t n = s.size();
  out.append(reinterpret_cast<const char*>(&n), sizeof n);
  out.append(s);
}

bool get(std::string_view& in, std::string* s) {
  uint64_t n = 0;
  if (in.size() < sizeof n) return false;
  std::memcpy(&n, in.data(), sizeof n);
  in.remove_prefix(sizeof n);
  if (in.size() < n) return false;
  s->assign(in.substr(0, n));
  in.remove_prefix(n);
  return true;
}

std::string pack(const CudaImage& image) {
  std::string out(1, image.cubin ? 'c' : 'p');
  put(out, image.arch);
  put(out, image.log);
  put(out, image.image);
  return out;
}

std::optional<CudaImage> unpack(std::string_view in) {
  CudaImage image;
  if (in.empty() || (in[0] != 'c' && in[0] != 'p')) return std::nullopt;
  image.cubin = in[0] == 'c';
  in.remove_prefix(1);
  if (!get(in, &image.arch) || !get(in, &image.log) || !get(in, &image.image) || !in.empty() ||
      image.image.empty()) {
    return std::nullopt;
  }
  if (image.cubin) image.resources = codegen::cuda::parse_ptxas_report(image.log);
  return image;
}

bool print_times() {
  const char* v = std::getenv("KILN_COMPILE_TIMES");
  return v && *v && std::strcmp(v, "0") != 0;
}

double ms(double seconds) {
  return seconds * 1e3;
}

// The image of `program` (made from `kernels`) for `o`: from memory, disk,
// or NVRTC (then stored in both). `report` says where it came from.
std::shared_ptr<const CudaImage> image_of(const CompiledFunction::Impl& impl,
                                          const std::vector<loop::Kernel>& kernels,
                                          const CudaProgram& program, const NvrtcOptions& o,
                                          compile_detail::CodegenReport* report) {
  auto t0 = std::chrono::steady_clock::now();
  const std::vector<std::string> flags = codegen::cuda::nvrtc_flags(o);
  const std::string version = codegen::cuda::nvrtc_version();
  runtime::KeyHasher h;
  h.add("kiln-cuda-image-v1").add(KILN_VERSION).add(compile_detail::build_identity());
  h.add("nvrtc " + version).add(uint64_t(flags.size()));
  for (const std::string& f : flags) h.add(f);
  h.add(uint64_t(kernels.size())).add(compile_detail::canonical_kernels(kernels));
  const std::string algorithms = compile_detail::algorithms_text(impl.groups);
  if (!algorithms.empty()) h.add("algorithms").add(algorithms);
  const runtime::CacheKey key = h.key();
  std::string description =
      "kiln " KILN_VERSION " (" + compile_detail::build_identity() + "); nvrtc " + version + ";";
  for (const std::string& f : flags) description += " " + f;
  compile_detail::CodegenReport local;
  compile_detail::CodegenReport& r = report ? *report : local;
  r.key = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  auto build = [&]() -> std::shared_ptr<CudaImage> {
    runtime::DiskCache& disk = runtime::DiskCache::global();
    const bool use_disk = impl.options.disk_cache && disk.enabled();
    if (use_disk) {
      auto d0 = std::chrono::steady_clock::now();
      std::optional<std::string> payload = disk.load(key, description);
      r.disk_read = std::chrono::duration<double>(std::chrono::steady_clock::now() - d0).count();
      if (payload) {
        if (std::optional<CudaImage> image = unpack(*payload)) {
          r.source = "disk";
          return std::make_shared<CudaImage>(std::move(*image));
        }
        std::fprintf(stderr,
                     "kiln: warning: cache entry %s is corrupt (not a CUDA image); rebuilding\n",
                     disk.entry_path(key).c_str());
      }
    }
    auto image = std::make_shared<CudaImage>(
        codegen::cuda::nvrtc_compile(program.source(), impl.name + ".cu", o));
    r.times.codegen = image->seconds;
    if (use_disk) disk.store(key, description, pack(*image));
    r.source = "built";
    return image;
  };
  r.source = "memory";  // unless build() runs
  std::shared_ptr<const CudaImage> image =
      impl.options.use_cache ? runtime::KernelCache::global().get_or_build_as<CudaImage>(key, build)
                             : build();
  r.total = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (print_times()) {
    std::fprintf(stderr, "kiln: cuda image %s: %.3f ms (key %.3f, disk read %.3f, nvrtc %.3f)\n",
                 r.source.c_str(), ms(r.total), ms(r.key), ms(r.disk_read), ms(r.times.codegen));
  }
  return image;
}

// A kernel of a function compiled for code only.
class NotLoaded final : public runtime::KernelFunction {
 public:
  explicit NotLoaded(std::string name) : name_(std::move(name)) {}
  void launch(std::span<const Tensor>, std::span<const int64_t>,
              const runtime::LaunchConfig&) const override {
    KILN_USER_ERROR("cuda: kernel " << name_
                                    << " was generated but not loaded (CompileOptions::load is "
                                       "false): it can be dumped, not run");
  }

 private:
  std::string name_;
};

// Loads `code.image` on impl.device (runtime/cuda/module.h: once per device
// and image while anything holds it) and gives each emitted kernel its
// launcher, in the empty slots of `out.kernels` (the others call libraries).
void load_module(const CompiledFunction::Impl& impl, const CudaCode& code, KernelEntries& out) {
  std::string_view image = code.image->image;
  // NVRTC's PTX ends in a NUL; the loader adds its own.
  if (!code.image->cubin && !image.empty() && image.back() == '\0') image.remove_suffix(1);
  std::shared_ptr<const runtime::cuda::Module> module =
      runtime::cuda::Module::load(impl.device, image);
  size_t slot = 0;
  for (const codegen::cuda::EmittedKernel& e : code.program.entries) {
    while (out.kernels[slot]) ++slot;
    out.kernels[slot] = module->kernel(e.symbol);
  }
}

// The kernels to emit as CUDA C: all but the library calls.
std::vector<loop::Kernel> generated_kernels(const std::vector<loop::Kernel>& kernels) {
  std::vector<loop::Kernel> out;
  for (const loop::Kernel& k : kernels) {
    if (!library_call(k)) out.push_back(k);
  }
  return out;
}

// A comment line per library kernel, for the `cuda` dump.
std::string library_comments(const std::vector<loop::Kernel>& kernels) {
  std::string s;
  for (const loop::Kernel& k : kernels) {
    if (const loop::ExternCall* c = library_call(k)) {
      s += "// " + k.name + ": a call of " + library_call_text(*c) + ", not generated\n";
    }
  }
  return s;
}

std::string bytes(int64_t n) {
  return std::to_string(n) + " B";
}

std::string resources_text(const CudaCode& code, const CudaImage& image) {
  const size_t n = code.program.entries.size();
  std::string s = "sass resources: " + image.arch + ", NVRTC " + codegen::cuda::nvrtc_version() +
                  " (ptxas -v), " + std::to_string(n) + (n == 1 ? " kernel\n" : " kernels\n");
  if (!image.cubin) {
    return s + "  (none: NVRTC made PTX for " + image.arch +
           ", which the driver compiles when it loads it)\n";
  }
  for (const codegen::cuda::EmittedKernel& e : code.program.entries) {
    const KernelResources* r = nullptr;
    for (const KernelResources& k : image.resources) {
      if (k.symbol == e.symbol) r = &k;
    }
    s += "kernel " + e.symbol + ": ";
    if (!r) {
      s += "(no report)\n";
      continue;
    }
    s += "registers " + std::to_string(r->registers) + ", spill stores " + bytes(r->spill_stores) +
         ", spill loads " + bytes(r->spill_loads) + ", local " + bytes(r->stack_frame) +
         ", shared " + bytes(r->shared) + ", barriers " + std::to_string(r->barriers) + ", block " +
         (e.block > 0 ? std::to_string(e.block) : std::string("?")) + "\n";
  }
  return s;
}

}  // namespace

KernelEntries compile_cuda(CompiledFunction::Impl& impl) {
  KILN_INTERNAL_CHECK(impl.target.kind == passes::TargetKind::CUDA,
                      "cuda backend: " << passes::target_kind_name(impl.target.kind) << " code");
  KernelEntries out;
  out.device = impl.device;
  auto code = std::make_shared<CudaCode>();
  auto t0 = std::chrono::steady_clock::now();
  // Library calls (cuBLASLt, cuDNN) are launched as such, not emitted.
  const std::vector<loop::Kernel> generated = generated_kernels(impl.scheduled);
  code->program = codegen::cuda::emit_cuda(generated);
  impl.codegen_report.times.emit =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  code->nvrtc = nvrtc_options(impl);
  for (size_t i = 0, e = 0; i < impl.scheduled.size(); ++i) {
    passes::GpuLaunchShape shape = passes::gpu_launch_shape(impl.scheduled[i]);
    if (library_call(impl.scheduled[i])) {
      out.shapes.push_back(std::move(shape));
      continue;
    }
    const codegen::cuda::EmittedKernel& entry = code->program.entries[e++];
    int64_t block = 0;
    // __launch_bounds__ must be the block the plan launches with.
    KILN_INTERNAL_CHECK(
        entry.block == 0 || (loop::is_const_int(shape.block, &block) && block == entry.block),
        "cuda backend: kernel " << impl.scheduled[i].name << " is emitted for " << entry.block
                                << " threads, launched with " << loop::to_string(shape.block));
    out.shapes.push_back(std::move(shape));
  }
  if (!impl.options.load) {
    for (const loop::Kernel& k : impl.scheduled)
      out.kernels.push_back(std::make_shared<NotLoaded>(k.name));
    impl.cuda = code;
    return out;
  }
  if (!generated.empty()) {
    code->image = image_of(impl, generated, code->program, code->nvrtc, &impl.codegen_report);
  }
  impl.cuda = code;
  for (const loop::Kernel& k : impl.scheduled) {
    out.kernels.push_back(library_call(k) ? library_kernel(k, impl.device) : nullptr);
  }
  if (!generated.empty()) load_module(impl, *code, out);
  return out;
}

std::string dump_cuda(const CompiledFunction::Impl& impl, const std::vector<loop::Kernel>& all,
                      const std::string& stage) {
  const std::vector<loop::Kernel> kernels = generated_kernels(all);
  // The function's own program when these are its kernels, else made now
  // (a function on another backend, e.g. loop-eval on sim).
  std::shared_ptr<const CudaCode> code = impl.cuda;
  if (!code || code->program.entries.size() != kernels.size() ||
      compile_detail::canonical_kernels(kernels) !=
          compile_detail::canonical_kernels(generated_kernels(impl.scheduled))) {
    auto made = std::make_shared<CudaCode>();
    made->program = codegen::cuda::emit_cuda(kernels);
    made->nvrtc = nvrtc_options(impl);
    code = made;
  }
  if (stage == "cuda") return library_comments(all) + code->program.source();
  if (kernels.empty()) return stage == "ptx" ? "// no kernels\n" : "sass resources: no kernels\n";
  KILN_USER_CHECK(cuda_unavailable().empty(),
                  "dump: stage '" << stage << "' needs NVRTC: " << cuda_unavailable());
  if (stage == "ptx") {
    NvrtcOptions o = code->nvrtc;
    o.cubin = false;
    return image_of(impl, kernels, code->program, o, nullptr)->image;
  }
  KILN_INTERNAL_CHECK(stage == "sass-resources", "cuda backend: no stage '" << stage << "'");
  std::shared_ptr<const CudaImage> image =
      code->image ? code->image : image_of(impl, kernels, code->program, code->nvrtc, nullptr);
  return resources_text(*code, *image);
}

}  // namespace kiln::api
