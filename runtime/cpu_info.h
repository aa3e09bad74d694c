// What the host CPU offers code generators: vector extensions (from cpuid via
// the compiler's __builtin_cpu_supports), cache sizes (from sysfs, with
// typical values where the kernel does not say) and the core count. Read once;
// thread-safe. Knows nothing of Kiln's compiler: api/target.cpp turns it
// into the compile target (passes/target.h).
#pragma once

#include <cstdint>
#include <string>

namespace kiln::runtime {

struct CpuInfo {
  bool sse2 = false, avx = false, avx2 = false, fma = false, f16c = false;
  bool avx512f = false, avx512bw = false, avx512vl = false, avx512_bf16 = false;
  bool avx512_fp16 = false, avx_vnni = false;
  int64_t l1d_bytes = 32 << 10;  // per core
  int64_t l2_bytes = 1 << 20;    // per core
  int64_t l3_bytes = 32 << 20;   // shared
  int cores = 1;                 // hardware threads the process may use
  std::string str() const;       // "avx512f avx2 fma ... l1d 48K l2 1M l3 32M cores 2"
};

const CpuInfo& host_cpu_info();

}  // namespace kiln::runtime
