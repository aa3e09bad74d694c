// Target descriptions as text (see target.h). Building a target from a
// device is api/'s job (api/target.cpp).
#include "passes/target.h"

namespace kiln::passes {

namespace {

std::string size_str(int64_t bytes) {
  if (bytes % (1 << 20) == 0) return std::to_string(bytes >> 20) + "M";
  return std::to_string(bytes >> 10) + "K";
}

}  // namespace

const char* target_kind_name(TargetKind k) {
  switch (k) {
    case TargetKind::CPU:
      return "cpu";
    case TargetKind::CUDA:
      return "cuda";
  }
  return "?";
}

std::vector<TargetKind> all_target_kinds() {
  return {TargetKind::CPU, TargetKind::CUDA};
}

std::string CpuTarget::str() const {
  std::string s = std::to_string(vector_bits) + "-bit x" + std::to_string(vector_registers);
  if (fma) s += " fma";
  if (avx512_bf16) s += " bf16";
  if (f16c) s += " f16c";
  s += " l1d " + size_str(l1d_bytes) + " l2 " + size_str(l2_bytes) + " l3 " + size_str(l3_bytes);
  s += " cores " + std::to_string(cores);
  return s;
}

std::string GpuTarget::str() const {
  return "sm_" + std::to_string(compute_capability) + " " + std::to_string(sm_count) +
         " SMs warp " + std::to_string(warp_size) + " smem " + size_str(shared_memory_per_block) +
         " threads " + std::to_string(max_threads_per_block) + " regs " +
         std::to_string(registers_per_sm) + (cublaslt_missing.empty() ? " cublasLt" : "") +
         (cudnn_missing.empty() ? " cudnn" : "");
}

std::string Target::str() const {
  return kind == TargetKind::CPU ? cpu.str() : "cuda " + gpu.str();
}

}  // namespace kiln::passes
