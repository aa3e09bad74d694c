// The backend registry as one table, backend selection for a device, and the
// public lists (kiln::available_backends, kiln::devices). See backends.h.
#include "api/backends.h"

#include <algorithm>

#include "kiln/error.h"
#include "runtime/cuda_driver.h"
#include "runtime/device.h"
#include "runtime/sim_device.h"

namespace kiln {

namespace api {

namespace {

std::string kind_name(Device::Kind k) {
  Device d;
  d.kind = k;
  std::string s = d.str();  // "cpu", "cuda:0", "sim:0"
  return s.substr(0, s.find(':'));
}

std::string joined(const std::vector<std::string>& v, const char* sep = ", ") {
  std::string s;
  for (const std::string& x : v) s += (s.empty() ? "" : sep) + x;
  return s;
}

std::vector<Backend> make_registry() {
  using passes::TargetKind;
  std::vector<Backend> r;

  Backend llvm;
  llvm.name = "llvm";
  llvm.description = "native code for the host CPU through LLVM (ORC JIT)";
  llvm.targets = {TargetKind::CPU};
  llvm.devices = {Device::Kind::CPU};
  llvm.stages = {
      {"llvm", "LLVM IR before optimization"},
      {"llvm-opt", "LLVM IR after the optimization pipeline"},
      {"asm", "target assembly"},
  };
#ifdef KILN_WITH_LLVM
  llvm.unavailable = [] { return std::string(); };
  llvm.compile = compile_llvm;
  llvm.dump = dump_llvm;
#else
  llvm.unavailable = [] {
    return std::string("not built: this Kiln was built without LLVM (KILN_WITH_LLVM=OFF)");
  };
#endif
  r.push_back(std::move(llvm));

  Backend eval;
  eval.name = "loop-eval";
  eval.description =
      "the loop-IR evaluator: CPU kernels on the host, GPU-mapped kernels on a sim device";
  eval.targets = {TargetKind::CPU, TargetKind::CUDA};
  eval.devices = {Device::Kind::CPU, Device::Kind::Sim};
  eval.unavailable = [] { return std::string(); };
  eval.compile = compile_loop_eval;
  r.push_back(std::move(eval));

  Backend interp;
  interp.name = "interp";
  interp.description = "the reference interpreter (nothing is lowered or compiled)";
  interp.devices = {Device::Kind::CPU};
  interp.unavailable = [] { return std::string(); };
  r.push_back(std::move(interp));

  Backend cuda;
  cuda.name = "cuda";
  cuda.description = "CUDA C compiled by NVRTC, launched through the CUDA driver";
  cuda.targets = {TargetKind::CUDA};
  cuda.devices = {Device::Kind::CUDA};
  cuda.unavailable = cuda_unavailable;
  // The CUDA C emitter is always built; NVRTC is needed for images only.
  cuda.cannot_generate = [] { return std::string(); };
  cuda.compile = compile_cuda;
  cuda.dump = dump_cuda;
  cuda.stages = {
      {"cuda", "the CUDA C program NVRTC compiles (all kernels, after Kiln's prelude)"},
      {"ptx", "PTX from NVRTC for the GPU's architecture"},
      {"sass-resources", "registers, spills, local and shared memory per kernel (ptxas)"},
  };
  r.push_back(std::move(cuda));
  return r;
}

// Why `b` cannot run on `d` in this process (or, with `load` false, cannot
// generate code for it), or empty.
std::string backend_problem(const Backend& b, Device d, bool load) {
  if (!b.runs_on(d)) {
    std::vector<std::string> kinds;
    for (Device::Kind k : b.devices) kinds.push_back(kind_name(k));
    return "backend '" + b.name + "' does not run on " + d.str() + " (it runs on " + joined(kinds) +
           ")";
  }
  std::string why = load ? b.unavailable() : b.generation_problem();
  return why.empty() ? why : "backend '" + b.name + "' is unavailable: " + why;
}

}  // namespace

bool Backend::runs_on(Device d) const {
  return std::find(devices.begin(), devices.end(), d.kind) != devices.end();
}

bool Backend::serves(passes::TargetKind k) const {
  return std::find(targets.begin(), targets.end(), k) != targets.end();
}

std::string Backend::generation_problem() const {
  return cannot_generate ? cannot_generate() : unavailable();
}

const std::vector<Backend>& backend_registry() {
  static const std::vector<Backend> registry = make_registry();
  return registry;
}

const Backend* find_backend(const std::string& name) {
  for (const Backend& b : backend_registry()) {
    if (b.name == name) return &b;
  }
  return nullptr;
}

const Backend& select_backend(const CompileOptions& o) {
  const Device d = o.device;
  // Generating code only, the device need not be usable.
  const std::string device_problem = o.load ? runtime::device_unavailable_reason(d) : "";
  if (!o.backend.empty()) {
    const Backend* b = find_backend(o.backend);
    if (!b) {
      std::vector<std::string> names;
      for (const Backend& x : backend_registry()) names.push_back(x.name);
      KILN_USER_ERROR("compile: unknown backend '" << o.backend << "' (backends: " << joined(names)
                                                   << ")");
    }
    std::string why = backend_problem(*b, d, o.load);
    KILN_USER_CHECK(why.empty(), "compile: " << why);
    KILN_USER_CHECK(device_problem.empty(),
                    "compile: device " << d.str() << " is unavailable: " << device_problem);
    return *b;
  }
  // The first backend that runs on the device and is built; the interpreter
  // only when asked for by name.
  const Backend* chosen = nullptr;
  std::vector<std::string> missing;
  for (const Backend& b : backend_registry()) {
    if (b.name == "interp" || !b.runs_on(d)) continue;
    std::string why = o.load ? b.unavailable() : b.generation_problem();
    if (why.empty()) {
      chosen = &b;
      break;
    }
    missing.push_back(b.name + ": " + why);
  }
  std::string msg;
  if (!device_problem.empty()) msg = "device " + d.str() + " is unavailable: " + device_problem;
  if (!chosen) {
    msg += std::string(msg.empty() ? "" : "; and ") + "no backend that runs on " +
           kind_name(d.kind) + " devices is available (" + joined(missing, "; ") + ")";
  }
  KILN_USER_CHECK(msg.empty(), "compile: " << msg);
  return *chosen;
}

}  // namespace api

// ------------------------------------------------------------------------------- public

std::vector<BackendInfo> available_backends() {
  std::vector<BackendInfo> out;
  for (const api::Backend& b : api::backend_registry()) {
    BackendInfo i;
    i.name = b.name;
    i.description = b.description;
    for (Device::Kind k : b.devices) i.devices.push_back(api::kind_name(k));
    i.why_unavailable = b.unavailable();
    i.available = i.why_unavailable.empty();
    out.push_back(std::move(i));
  }
  return out;
}

std::string default_backend(Device device) {
  CompileOptions o;
  o.device = device;
  for (const api::Backend& b : api::backend_registry()) {
    if (b.name != "interp" && b.runs_on(device) && b.unavailable().empty()) return b.name;
  }
  return std::string();
}

std::vector<DeviceInfo> devices() {
  std::vector<DeviceInfo> out;
  auto add = [&](Device d) {
    DeviceInfo i;
    i.device = d;
    i.why_unavailable = runtime::device_unavailable_reason(d);
    i.available = i.why_unavailable.empty();
    i.name = i.available ? runtime::device_runtime(d).properties().name : std::string();
    out.push_back(std::move(i));
  };
  add(Device::cpu());
  for (int s = 0; s < runtime::kNumSimDevices; ++s) add(Device::sim(s));
  const int cuda = runtime::cuda::device_count();
  for (int c = 0; c < std::max(cuda, 1); ++c) add(Device::cuda(c));
  return out;
}

}  // namespace kiln
