// CpuTarget construction (see target.h).
#include "passes/target.h"

#include <algorithm>

#include "runtime/cpu_info.h"

namespace kiln::passes {

namespace {

std::string size_str(int64_t bytes) {
  if (bytes % (1 << 20) == 0) return std::to_string(bytes >> 20) + "M";
  return std::to_string(bytes >> 10) + "K";
}

}  // namespace

std::string CpuTarget::str() const {
  std::string s = std::to_string(vector_bits) + "-bit x" + std::to_string(vector_registers);
  if (fma) s += " fma";
  if (avx512_bf16) s += " bf16";
  if (f16c) s += " f16c";
  s += " l1d " + size_str(l1d_bytes) + " l2 " + size_str(l2_bytes) + " l3 " + size_str(l3_bytes);
  s += " cores " + std::to_string(cores);
  return s;
}

CpuTarget host_target(int threads) {
  const runtime::CpuInfo& c = runtime::host_cpu_info();
  CpuTarget t;
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

CpuTarget generic_target(int threads) {
  CpuTarget t;
  t.cores = threads > 0 ? threads : runtime::host_cpu_info().cores;
  return t;
}

}  // namespace kiln::passes
