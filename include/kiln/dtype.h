// Element types and the device a tensor lives on.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace kiln {

// Order matters only for printing; promotion uses promote_types().
enum class DType : uint8_t { Bool, I8, U8, I16, I32, I64, F16, BF16, F32, F64 };
inline constexpr int kNumDTypes = 10;

size_t dtype_size(DType t);
// Short IR spelling: bool, i8, u8, i16, i32, i64, f16, bf16, f32, f64.
const char* dtype_name(DType t);
// Accepts the short spelling and PyTorch's (float32, int64, half, long, ...).
std::optional<DType> parse_dtype(std::string_view s);

inline bool is_floating(DType t) {
  return t == DType::F16 || t == DType::BF16 || t == DType::F32 || t == DType::F64;
}
inline bool is_integral(DType t) {  // bool excluded
  return t == DType::I8 || t == DType::U8 || t == DType::I16 || t == DType::I32 || t == DType::I64;
}
inline bool is_signed(DType t) {
  return t != DType::U8 && t != DType::Bool;
}

// PyTorch's torch.promote_types: the smallest type both convert to safely
// (u8 + i8 -> i16, i64 + f16 -> f16, f16 + bf16 -> f32).
DType promote_types(DType a, DType b);

// Where a tensor's memory lives. `sim` is Kiln's simulated GPU: memory of its
// own that kernels reach but a host Tensor does not read, so the device path
// (copies, launches, allocator) is exercised without a GPU.
struct Device {
  enum class Kind : uint8_t { CPU, CUDA, Sim };
  Kind kind = Kind::CPU;
  int index = 0;

  static Device cpu() { return {}; }
  static Device cuda(int i = 0) { return {Kind::CUDA, i}; }
  static Device sim(int i = 0) { return {Kind::Sim, i}; }
  bool is_cpu() const { return kind == Kind::CPU; }
  bool operator==(const Device&) const = default;
  std::string str() const;  // "cpu", "cuda:0", "sim:1"
  // "cpu", "cuda", "cuda:N", "sim", "sim:N" (no index means 0); nullopt for
  // anything else. Says nothing of whether the device exists: see
  // runtime/device.h.
  static std::optional<Device> parse(std::string_view s);
};

}  // namespace kiln
