// The machine kernels are lowered and scheduled for, as the passes see it: a
// kind (CPU or CUDA GPU) and the description of that kind. Built once in api/
// (api/target.h) from the device a function is compiled for and handed down;
// passes read it and never query the machine themselves. Everything here that
// changes generated code is in str(), which goes into cache keys.
//
//   CPU: vector width and register count (which size GEMM micro-kernels and
//        vector loops), the instructions that change algorithm choices (FMA,
//        bf16 dot products), cache sizes (blocking) and cores (parallel splits).
//   GPU: compute capability, SMs, warp size, shared memory and threads per
//        block, registers per SM (tile sizes, occupancy, launch bounds).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kiln::passes {

enum class TargetKind : uint8_t { CPU, CUDA };
const char* target_kind_name(TargetKind k);  // "cpu", "cuda"
// Every kind, for candidates that serve them all (plain loop nests).
std::vector<TargetKind> all_target_kinds();

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

// An NVIDIA GPU (or the simulated device that stands in for one in tests).
// Defaults describe an sm_90 part (H100/H200).
struct GpuTarget {
  std::string name = "sm_90";   // the device's name, for messages
  int compute_capability = 90;  // major * 10 + minor
  int sm_count = 132;           // streaming multiprocessors
  int warp_size = 32;
  int64_t shared_memory_per_block = 48 << 10;  // bytes without opting in to more
  int max_threads_per_block = 1024;
  int registers_per_sm = 65536;  // 32-bit registers
  // The vendor libraries the device may call instead of a generated kernel
  // (runtime/cuda/vendor_libs.h): empty when usable, else why not, as the
  // candidates "matmul.cublaslt" and "conv.cudnn" report it. api/target.cpp
  // fills them for a cuda device; the sim device has none.
  std::string cublaslt_missing = "cublasLt: not available on this target";
  std::string cudnn_missing = "cudnn: not available on this target";

  std::string str() const;  // "sm_90 132 SMs warp 32 smem 48K threads 1024 regs 65536[ cublasLt][ cudnn]"
};

struct Target {
  TargetKind kind = TargetKind::CPU;
  CpuTarget cpu;  // kind == CPU
  GpuTarget gpu;  // kind == CUDA

  static Target for_cpu(CpuTarget t) {
    Target out;
    out.cpu = t;
    return out;
  }
  static Target for_gpu(GpuTarget t) {
    Target out;
    out.kind = TargetKind::CUDA;
    out.gpu = std::move(t);
    return out;
  }
  bool is_cpu() const { return kind == TargetKind::CPU; }
  // The description of the kind's machine: CpuTarget::str() for a CPU (as
  // tuning records have always named it), "cuda " + GpuTarget::str() for a GPU.
  std::string str() const;
};

}  // namespace kiln::passes
