// DType names, sizes and PyTorch's promote_types table, computed from rules
// rather than spelled out as a 10x10 table (tests check it against the table),
// and device names.
#include "kiln/dtype.h"

#include "kiln/error.h"

namespace kiln {

size_t dtype_size(DType t) {
  switch (t) {
    case DType::Bool:
    case DType::I8:
    case DType::U8: return 1;
    case DType::I16:
    case DType::F16:
    case DType::BF16: return 2;
    case DType::I32:
    case DType::F32: return 4;
    case DType::I64:
    case DType::F64: return 8;
  }
  KILN_INTERNAL_CHECK(false, "bad dtype " << int(t));
}

const char* dtype_name(DType t) {
  switch (t) {
    case DType::Bool: return "bool";
    case DType::I8: return "i8";
    case DType::U8: return "u8";
    case DType::I16: return "i16";
    case DType::I32: return "i32";
    case DType::I64: return "i64";
    case DType::F16: return "f16";
    case DType::BF16: return "bf16";
    case DType::F32: return "f32";
    case DType::F64: return "f64";
  }
  return "?";
}

std::optional<DType> parse_dtype(std::string_view s) {
  struct Alias {
    const char* name;
    DType type;
  };
  static constexpr Alias kAliases[] = {
      {"bool", DType::Bool},     {"i8", DType::I8},         {"int8", DType::I8},
      {"u8", DType::U8},         {"uint8", DType::U8},      {"i16", DType::I16},
      {"int16", DType::I16},     {"short", DType::I16},     {"i32", DType::I32},
      {"int32", DType::I32},     {"int", DType::I32},       {"i64", DType::I64},
      {"int64", DType::I64},     {"long", DType::I64},      {"f16", DType::F16},
      {"float16", DType::F16},   {"half", DType::F16},      {"bf16", DType::BF16},
      {"bfloat16", DType::BF16}, {"f32", DType::F32},       {"float32", DType::F32},
      {"float", DType::F32},     {"f64", DType::F64},       {"float64", DType::F64},
      {"double", DType::F64},
  };
  for (const Alias& a : kAliases) {
    if (s == a.name) return a.type;
  }
  return std::nullopt;
}

DType promote_types(DType a, DType b) {
  if (a == b) return a;
  if (a == DType::Bool) return b;
  if (b == DType::Bool) return a;
  if (is_floating(a) || is_floating(b)) {
    if (!is_floating(b)) return a;
    if (!is_floating(a)) return b;
    // Both floating: f16 and bf16 meet at f32; otherwise the wider wins.
    if ((a == DType::F16 && b == DType::BF16) || (a == DType::BF16 && b == DType::F16))
      return DType::F32;
    return dtype_size(a) >= dtype_size(b) ? a : b;
  }
  // Both integral. u8 with a signed type needs the next wider signed type
  // unless the signed one is already wider.
  if (a == DType::U8 || b == DType::U8) {
    DType s = a == DType::U8 ? b : a;
    return s == DType::I8 ? DType::I16 : s;
  }
  return dtype_size(a) >= dtype_size(b) ? a : b;
}

std::string Device::str() const {
  switch (kind) {
    case Kind::CPU:
      return index == 0 ? "cpu" : "cpu:" + std::to_string(index);
    case Kind::CUDA:
      return "cuda:" + std::to_string(index);
    case Kind::Sim:
      return "sim:" + std::to_string(index);
  }
  return "?";
}

std::optional<Device> Device::parse(std::string_view s) {
  if (s == "cpu") return cpu();
  size_t colon = s.find(':');
  std::string_view kind = s.substr(0, colon);
  std::optional<Kind> k;
  if (kind == "cuda") k = Kind::CUDA;
  if (kind == "sim") k = Kind::Sim;
  if (!k) return std::nullopt;
  if (colon == std::string_view::npos) return Device{*k, 0};
  std::string_view digits = s.substr(colon + 1);
  // Nine digits keep the index inside an int; no device count comes close.
  if (digits.empty() || digits.size() > 9) return std::nullopt;
  int index = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') return std::nullopt;
    index = index * 10 + (c - '0');
  }
  return Device{*k, index};
}

}  // namespace kiln
