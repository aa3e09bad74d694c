// Targets from devices (see target.h).
#include "api/target.h"

#include <algorithm>

#include "kiln/error.h"
#include "runtime/cpu_info.h"
#include "runtime/cuda/vendor_libs.h"
#include "runtime/device.h"

namespace kiln::api {

passes::CpuTarget host_cpu_target(int threads) {
  const runtime::CpuInfo& c = runtime::host_cpu_info();
  passes::CpuTarget t;
  if (c.avx512f) {
    t.vector_bits = 512, t.vector_registers = 32;
  } else if (c.avx2 || c.avx) {
    t.vector_bits = 256, t.vector_registers = 16;
  } else {
    t.vector_bits = 128, t.vector_registers = 16;
  }
  t.fma = c.fma;
  t.avx512_bf16 = c.avx512f && c.avx512_bf16;
  t.f16c = c.f16c;
  t.l1d_bytes = c.l1d_bytes;
  t.l2_bytes = c.l2_bytes;
  t.l3_bytes = c.l3_bytes;
  t.cores = threads > 0 ? std::min(threads, c.cores) : c.cores;
  return t;
}

passes::CpuTarget generic_cpu_target(int threads) {
  passes::CpuTarget t;
  t.cores = threads > 0 ? threads : runtime::host_cpu_info().cores;
  return t;
}

passes::Target host_target(int threads) {
  return passes::Target::for_cpu(host_cpu_target(threads));
}

passes::GpuTarget gpu_target(const runtime::DeviceProperties& p) {
  passes::GpuTarget t;
  t.name = p.name;
  t.compute_capability = p.compute_capability_major * 10 + p.compute_capability_minor;
  t.sm_count = p.sm_count;
  t.warp_size = p.warp_size;
  t.shared_memory_per_block = p.shared_memory_per_block;
  t.max_threads_per_block = p.max_threads_per_block;
  t.registers_per_sm = p.registers_per_sm;
  return t;
}

passes::GpuTarget gpu_target_for_arch(const std::string& arch) {
  int cc = 0;
  KILN_USER_CHECK(parse_cuda_arch(arch, &cc),
                  "compile: cuda_arch must be sm_ and the compute capability's digits (sm_90, "
                  "sm_120), got '"
                      << arch << "'");
  passes::GpuTarget t;  // an H100-like part but for the architecture
  t.name = arch;
  t.compute_capability = cc;
  return t;
}

bool parse_cuda_arch(const std::string& arch, int* compute_capability) {
  if (arch.size() < 5 || arch.size() > 6 || arch.rfind("sm_", 0) != 0) return false;
  int cc = 0;
  for (size_t i = 3; i < arch.size(); ++i) {
    if (arch[i] < '0' || arch[i] > '9') return false;
    cc = cc * 10 + (arch[i] - '0');
  }
  if (cc < 10) return false;
  *compute_capability = cc;
  return true;
}

namespace {

// A cuda device's target with the vendor libraries it may call (loaded now).
passes::GpuTarget with_vendor_libraries(passes::GpuTarget t) {
  t.cublaslt_missing = runtime::cuda::cublaslt_unavailable_reason();
  t.cudnn_missing = runtime::cuda::cudnn_unavailable_reason();
  return t;
}

}  // namespace

passes::Target target_for(const CompileOptions& o) {
  if (o.device.is_cpu()) {
    return passes::Target::for_cpu(o.cpu.empty() ? host_cpu_target(o.num_threads)
                                                 : generic_cpu_target(o.num_threads));
  }
  // Code only: the device need not exist, the architecture is named.
  if (o.device.kind == Device::Kind::CUDA && !o.load) {
    // Dumps are of generated code: the libraries are a matter of running.
    passes::GpuTarget t = gpu_target_for_arch(o.cuda_arch);
    t.cublaslt_missing = "cublasLt: not used when only code is generated (CompileOptions::load false)";
    t.cudnn_missing = "cudnn: not used when only code is generated (CompileOptions::load false)";
    return passes::Target::for_gpu(std::move(t));
  }
  const runtime::DeviceProperties& p = runtime::device_runtime(o.device).properties();
  KILN_INTERNAL_CHECK(p.gpu, "target: device " << o.device.str() << " is neither a CPU nor a GPU");
  passes::GpuTarget t = gpu_target(p);
  if (o.device.kind == Device::Kind::CUDA) {
    t = with_vendor_libraries(std::move(t));
  } else {
    t.cublaslt_missing = "cublasLt: the sim device runs no vendor library";
    t.cudnn_missing = "cudnn: the sim device runs no vendor library";
  }
  return passes::Target::for_gpu(std::move(t));
}

}  // namespace kiln::api
