// The machine a kernel is lowered and scheduled for, as the passes see it:
// vector width and register count (which size GEMM micro-kernels and vector
// loops), the instructions that change algorithm choices (FMA, bf16 dot
// products), cache sizes (blocking) and cores (parallel splits). Built from
// the host (host_target) or, when compiling for another CPU, a conservative
// generic x86-64-v3 description. Everything here that changes generated code
// is in str(), which goes into cache keys.
#pragma once

#include <cstdint>
#include <string>

namespace kiln::passes {

struct CpuTarget {
  int vector_bits = 256;      // widest vector registers code may use (512 with AVX-512F)
  int vector_registers = 16;  // architectural vector registers (32 with AVX-512F)
  bool fma = true;            // fused multiply-add instructions
  bool avx512_bf16 = false;   // bf16 dot products (vdpbf16ps)
  bool f16c = true;           // f16 <-> f32 conversions
  int64_t l1d_bytes = 32 << 10;
  int64_t l2_bytes = 1 << 20;
  int64_t l3_bytes = 32 << 20;
  int cores = 1;  // threads parallel loops may use

  // Lanes of one vector register for elements of `bytes` bytes (f32: 4).
  int lanes(int bytes) const { return vector_bits / 8 / bytes; }
  std::string str() const;  // "512-bit x32 fma bf16 f16c l1d 48K l2 1M l3 32M cores 2"
};

// The host, from runtime::host_cpu_info(); `threads` caps cores (0: all).
CpuTarget host_target(int threads = 0);
// A generic AVX2+FMA machine (x86-64-v3) with typical caches: the target when
// code is compiled for a CPU other than the host.
CpuTarget generic_target(int threads = 0);

}  // namespace kiln::passes
