// NVRTC through dlopen (see nvrtc.h).
#include "codegen/cuda/nvrtc.h"

#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <sstream>

#include "codegen/cuda/prelude.h"
#include "kiln/error.h"

namespace kiln::codegen::cuda {

namespace {

// nvrtc.h's types, as the ABI has them.
using nvrtcResult = int;  // 0 is NVRTC_SUCCESS
struct NvrtcProgramTag;
using nvrtcProgram = NvrtcProgramTag*;
constexpr nvrtcResult kNvrtcSuccess = 0;
constexpr nvrtcResult kNvrtcBuiltinFailure = 7;  // NVRTC_ERROR_BUILTIN_OPERATION_FAILURE

struct Nvrtc {
  std::string library;  // the file that loaded
  const char* (*GetErrorString)(nvrtcResult) = nullptr;
  nvrtcResult (*Version)(int*, int*) = nullptr;
  nvrtcResult (*GetNumSupportedArchs)(int*) = nullptr;
  nvrtcResult (*GetSupportedArchs)(int*) = nullptr;
  nvrtcResult (*CreateProgram)(nvrtcProgram*, const char*, const char*, int, const char* const*,
                               const char* const*) = nullptr;
  nvrtcResult (*DestroyProgram)(nvrtcProgram*) = nullptr;
  nvrtcResult (*CompileProgram)(nvrtcProgram, int, const char* const*) = nullptr;
  nvrtcResult (*GetProgramLogSize)(nvrtcProgram, size_t*) = nullptr;
  nvrtcResult (*GetProgramLog)(nvrtcProgram, char*) = nullptr;
  nvrtcResult (*GetPTXSize)(nvrtcProgram, size_t*) = nullptr;
  nvrtcResult (*GetPTX)(nvrtcProgram, char*) = nullptr;
  nvrtcResult (*GetCUBINSize)(nvrtcProgram, size_t*) = nullptr;
  nvrtcResult (*GetCUBIN)(nvrtcProgram, char*) = nullptr;

  int major = 0, minor = 0;
  std::vector<int> archs;

  std::string error(nvrtcResult r) const {
    const char* s = GetErrorString ? GetErrorString(r) : nullptr;
    return s ? s : "nvrtcResult " + std::to_string(r);
  }
};

struct Loaded {
  std::unique_ptr<Nvrtc> nvrtc;
  std::string why;  // when nvrtc is null
};

template <typename Fn>
bool resolve(void* lib, const char* symbol, Fn& out, std::string* why) {
  out = reinterpret_cast<Fn>(dlsym(lib, symbol));
  if (!out) *why = std::string("it has no ") + symbol;
  return out != nullptr;
}

Loaded load() {
  Loaded l;
  std::string tried;
  for (const char* name : {"libnvrtc.so.13", "libnvrtc.so.12"}) {
    void* lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      const char* e = dlerror();
      tried += std::string(tried.empty() ? "" : "; ") + (e ? e : name);
      continue;
    }
    auto n = std::make_unique<Nvrtc>();
    n->library = name;
    std::string why;
    bool ok = resolve(lib, "nvrtcGetErrorString", n->GetErrorString, &why) &&
              resolve(lib, "nvrtcVersion", n->Version, &why) &&
              resolve(lib, "nvrtcGetNumSupportedArchs", n->GetNumSupportedArchs, &why) &&
              resolve(lib, "nvrtcGetSupportedArchs", n->GetSupportedArchs, &why) &&
              resolve(lib, "nvrtcCreateProgram", n->CreateProgram, &why) &&
              resolve(lib, "nvrtcDestroyProgram", n->DestroyProgram, &why) &&
              resolve(lib, "nvrtcCompileProgram", n->CompileProgram, &why) &&
              resolve(lib, "nvrtcGetProgramLogSize", n->GetProgramLogSize, &why) &&
              resolve(lib, "nvrtcGetProgramLog", n->GetProgramLog, &why) &&
              resolve(lib, "nvrtcGetPTXSize", n->GetPTXSize, &why) &&
              resolve(lib, "nvrtcGetPTX", n->GetPTX, &why) &&
              resolve(lib, "nvrtcGetCUBINSize", n->GetCUBINSize, &why) &&
              resolve(lib, "nvrtcGetCUBIN", n->GetCUBIN, &why);
    int count = 0;
    if (ok && n->Version(&n->major, &n->minor) != kNvrtcSuccess)
      ok = false, why = "nvrtcVersion failed";
    if (ok && n->GetNumSupportedArchs(&count) == kNvrtcSuccess && count > 0) {
      n->archs.resize(size_t(count));
      if (n->GetSupportedArchs(n->archs.data()) != kNvrtcSuccess) n->archs.clear();
    }
    if (ok && n->archs.empty()) ok = false, why = "it lists no supported architecture";
    if (!ok) {
      // A library that is not the NVRTC we know: report it, keep it loaded
      // (unloading a half-initialized CUDA library is not worth the risk).
      tried += std::string(tried.empty() ? "" : "; ") + name + " is unusable: " + why;
      continue;
    }
    std::sort(n->archs.begin(), n->archs.end());
    l.nvrtc = std::move(n);
    return l;
  }
  l.why = "NVRTC (CUDA's run-time compiler) was not found (" + tried + ")";
  return l;
}

const Loaded& loaded() {
  static const Loaded l = load();
  return l;
}

const Nvrtc& nvrtc() {
  const Loaded& l = loaded();
  KILN_USER_CHECK(l.nvrtc != nullptr, "cuda: " << l.why);
  return *l.nvrtc;
}

// "sm_90" or "compute_90" for `options` and whether it is a CUBIN.
std::string target_arch(const Nvrtc& n, const NvrtcOptions& o, bool* cubin) {
  const int cc = o.compute_capability;
  const bool known = std::find(n.archs.begin(), n.archs.end(), cc) != n.archs.end();
  if (o.cubin && known) {
    *cubin = true;
    return "sm_" + std::to_string(cc);
  }
  // PTX for the newest architecture at or below the device's: the driver
  // compiles it for the device (a newer one than this NVRTC knows).
  auto older = std::upper_bound(n.archs.begin(), n.archs.end(), cc);
  KILN_USER_CHECK(older != n.archs.begin(), "cuda: NVRTC " << n.major << "." << n.minor
                                                           << " cannot compile for sm_" << cc
                                                           << " (it supports sm_" << n.archs.front()
                                                           << " to sm_" << n.archs.back() << ")");
  *cubin = false;
  return "compute_" + std::to_string(*(older - 1));
}

int64_t number_before(const std::string& item, const std::string& unit) {
  size_t at = item.find(unit);
  if (at == std::string::npos) return -1;
  size_t end = item.find_last_of("0123456789", at);
  if (end == std::string::npos) return -1;
  size_t start = item.find_last_not_of("0123456789", end);
  start = start == std::string::npos ? 0 : start + 1;
  return std::stoll(item.substr(start, end - start + 1));
}

std::string after(const std::string& line, const std::string& marker) {
  size_t at = line.find(marker);
  return at == std::string::npos ? std::string() : line.substr(at + marker.size());
}

}  // namespace

std::string nvrtc_unavailable_reason() {
  return loaded().why;
}

std::string nvrtc_version() {
  const Nvrtc& n = nvrtc();
  return std::to_string(n.major) + "." + std::to_string(n.minor);
}

std::vector<int> nvrtc_supported_archs() {
  return nvrtc().archs;
}

std::vector<std::string> nvrtc_flags(const NvrtcOptions& options) {
  const Nvrtc& n = nvrtc();
  bool cubin = false;
  std::string arch = target_arch(n, options, &cubin);
  std::vector<std::string> flags = {"--gpu-architecture=" + arch, "-default-device", "--std=c++17",
                                    options.fmad ? "--fmad=true" : "--fmad=false"};
  if (cubin) flags.push_back("--ptxas-options=-v");
  return flags;
}

std::string numbered_source(const std::string& source) {
  std::ostringstream os;
  std::istringstream in(source);
  int n = 0;
  char buf[16];
  for (std::string line; std::getline(in, line);) {
    std::snprintf(buf, sizeof buf, "%5d  ", ++n);
    os << buf << line << "\n";
  }
  return os.str();
}

CudaImage nvrtc_compile(const std::string& source, const std::string& name,
                        const NvrtcOptions& options) {
  const Nvrtc& n = nvrtc();
  CudaImage out;
  std::vector<std::string> flags = nvrtc_flags(options);
  out.arch = after(flags[0], "=");
  out.cubin = out.arch.rfind("sm_", 0) == 0;
  std::vector<const char*> argv;
  for (const std::string& f : flags) argv.push_back(f.c_str());

  auto t0 = std::chrono::steady_clock::now();
  const char* header_text = prelude_text().c_str();
  const char* header_name = kPreludeHeader;
  nvrtcProgram prog = nullptr;
  nvrtcResult r =
      n.CreateProgram(&prog, source.c_str(), name.c_str(), 1, &header_text, &header_name);
  KILN_INTERNAL_CHECK(r == kNvrtcSuccess, "cuda: nvrtcCreateProgram failed: " << n.error(r));
  struct Destroy {
    const Nvrtc& n;
    nvrtcProgram& p;
    ~Destroy() { n.DestroyProgram(&p); }
  } destroy{n, prog};

  nvrtcResult compiled = n.CompileProgram(prog, int(argv.size()), argv.data());
  size_t log_size = 0;
  if (n.GetProgramLogSize(prog, &log_size) == kNvrtcSuccess && log_size > 1) {
    out.log.resize(log_size);
    if (n.GetProgramLog(prog, out.log.data()) != kNvrtcSuccess) out.log.clear();
    while (!out.log.empty() && out.log.back() == '\0') out.log.pop_back();
  }
  std::string flag_text;
  for (const std::string& f : flags) flag_text += " " + f;
  KILN_USER_CHECK(compiled != kNvrtcBuiltinFailure,
                  "cuda: NVRTC (" << n.library << ") could not run: " << n.error(compiled)
                                  << " (is libnvrtc-builtins beside it?)\n"
                                  << out.log);
  if (compiled != kNvrtcSuccess) {
    throw InternalError("cuda: NVRTC " + std::to_string(n.major) + "." + std::to_string(n.minor) +
                        " rejected " + name + " (" + n.error(compiled) + ";" + flag_text +
                        "): the CUDA emitter made invalid code\n" + out.log + "\n" + name + ":\n" +
                        numbered_source(source));
  }

  size_t size = 0;
  if (out.cubin) {
    r = n.GetCUBINSize(prog, &size);
    KILN_INTERNAL_CHECK(r == kNvrtcSuccess && size > 0, "cuda: no CUBIN: " << n.error(r));
    out.image.resize(size);
    r = n.GetCUBIN(prog, out.image.data());
    KILN_INTERNAL_CHECK(r == kNvrtcSuccess, "cuda: nvrtcGetCUBIN failed: " << n.error(r));
    out.resources = parse_ptxas_report(out.log);
  } else {
    r = n.GetPTXSize(prog, &size);
    KILN_INTERNAL_CHECK(r == kNvrtcSuccess && size > 0, "cuda: no PTX: " << n.error(r));
    out.image.resize(size);
    r = n.GetPTX(prog, out.image.data());
    KILN_INTERNAL_CHECK(r == kNvrtcSuccess, "cuda: nvrtcGetPTX failed: " << n.error(r));
    // The size NVRTC reports counts the terminating NUL.
    while (!out.image.empty() && out.image.back() == '\0') out.image.pop_back();
  }
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

std::vector<KernelResources> parse_ptxas_report(const std::string& log) {
  //   ptxas info    : Compiling entry function 'k' for 'sm_90'
  //   ptxas info    : Function properties for k
  //   ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
  //   ptxas info    : Used 32 registers, used 1 barriers, 1024 bytes smem, 380 bytes cmem[0]
  // Device functions that were not inlined get "Function properties" of
  // their own (no "Compiling entry function"); they are not kernels.
  std::vector<KernelResources> out;
  auto entry = [&](const std::string& symbol) -> KernelResources* {
    for (KernelResources& k : out) {
      if (k.symbol == symbol) return &k;
    }
    return nullptr;
  };
  KernelResources* compiling = nullptr;   // the entry "Used ..." lines belong to
  KernelResources* properties = nullptr;  // the entry the next stack-frame line belongs to
  std::istringstream in(log);
  for (std::string line; std::getline(in, line);) {
    if (std::string s = after(line, "Compiling entry function '"); !s.empty()) {
      std::string symbol = s.substr(0, s.find('\''));
      if (!entry(symbol)) out.push_back(KernelResources{symbol});
      compiling = entry(symbol);
      continue;
    }
    if (std::string s = after(line, "Function properties for "); !s.empty()) {
      while (!s.empty() && (s.back() == '\r' || s.back() == ' ' || s.back() == ':')) s.pop_back();
      properties = entry(s);
      continue;
    }
    std::vector<std::string> items;
    std::istringstream parts(line);
    for (std::string item; std::getline(parts, item, ',');) items.push_back(item);
    if (line.find("bytes stack frame") != std::string::npos) {
      for (const std::string& item : items) {
        if (!properties) break;
        if (item.find("stack frame") != std::string::npos) {
          properties->stack_frame = number_before(item, "bytes");
        } else if (item.find("spill stores") != std::string::npos) {
          properties->spill_stores = number_before(item, "bytes");
        } else if (item.find("spill loads") != std::string::npos) {
          properties->spill_loads = number_before(item, "bytes");
        }
      }
      properties = nullptr;
      continue;
    }
    if (line.find(": Used ") != std::string::npos && compiling) {
      for (const std::string& item : items) {
        if (item.find("registers") != std::string::npos) {
          compiling->registers = int(number_before(item, "registers"));
        } else if (item.find("barriers") != std::string::npos) {
          compiling->barriers = int(number_before(item, "barriers"));
        } else if (item.find("bytes smem") != std::string::npos) {
          compiling->shared = number_before(item, "bytes");
        } else if (item.find("bytes cmem[0]") != std::string::npos) {
          compiling->constant = number_before(item, "bytes");
        } else if (item.find("bytes lmem") != std::string::npos) {
          compiling->stack_frame = std::max(compiling->stack_frame, number_before(item, "bytes"));
        }
      }
    }
  }
  return out;
}

}  // namespace kiln::codegen::cuda
