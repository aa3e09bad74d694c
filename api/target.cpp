// Targets from devices (see target.h).
#include "api/target.h"

#include <algorithm>

#include "runtime/cpu_info.h"

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

passes::Target target_for(const CompileOptions& o) {
  return passes::Target::for_cpu(o.cpu.empty() ? host_cpu_target(o.num_threads)
                                               : generic_cpu_target(o.num_threads));
}

}  // namespace kiln::api
