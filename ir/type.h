// Types of graph IR values: tensors with static or symbolic dims, and the
// compile-time scalar kinds that ops take as operands (int, float, bool, none).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kiln/dtype.h"
#include "kiln/tensor.h"

namespace kiln::ir {

// One tensor dimension: a known size, or a symbol (`N`) fixed only at run time.
struct Dim {
  int64_t value = 0;
  std::string symbol;  // non-empty => symbolic

  Dim() = default;
  Dim(int64_t v) : value(v) {}  // NOLINT: implicit so {2, 3} reads as dims
  static Dim sym(std::string name) {
    Dim d;
    d.symbol = std::move(name);
    return d;
  }
  bool is_static() const { return symbol.empty(); }
  bool operator==(const Dim& o) const { return value == o.value && symbol == o.symbol; }
  std::string str() const { return is_static() ? std::to_string(value) : symbol; }
};
using Dims = std::vector<Dim>;

Dims dims_from_shape(const Shape& shape);
bool dims_are_static(const Dims& dims);
Shape static_shape(const Dims& dims);  // internal error if any dim is symbolic
std::string dims_str(const Dims& dims);  // "[N, 784]"

struct TensorType {
  DType dtype = DType::F32;
  Dims dims;
  Device device;

  int64_t rank() const { return static_cast<int64_t>(dims.size()); }
  bool operator==(const TensorType&) const = default;
  std::string str() const;  // "f32[N, 784]", "i64[]" for 0-dim
};

enum class TypeKind : uint8_t { Tensor, Int, Float, Bool, None };

// A value's type. Scalars are Python-number-like operands ("wrapped numbers" in
// PyTorch's promotion rules): they rank below every tensor when promoting.
class Type {
 public:
  Type() = default;
  static Type tensor(DType dtype, Dims dims, Device device = Device::cpu());
  static Type tensor(TensorType t);
  static Type int_() { return Type(TypeKind::Int); }
  static Type float_() { return Type(TypeKind::Float); }
  static Type bool_() { return Type(TypeKind::Bool); }
  static Type none() { return Type(TypeKind::None); }

  TypeKind kind() const { return kind_; }
  bool is_tensor() const { return kind_ == TypeKind::Tensor; }
  bool is_scalar() const {
    return kind_ == TypeKind::Int || kind_ == TypeKind::Float || kind_ == TypeKind::Bool;
  }
  bool is_none() const { return kind_ == TypeKind::None; }
  const TensorType& tensor_type() const;  // internal error unless is_tensor()
  // dtype of a tensor; for a scalar the dtype its run-time value is held in
  // (int -> i64, float -> f64, bool -> bool).
  DType dtype() const;
  const Dims& dims() const { return tensor_type().dims; }
  int64_t rank() const { return tensor_type().rank(); }

  bool operator==(const Type&) const = default;
  std::string str() const;  // tensor spelling, or "int", "float", "bool", "none"

 private:
  explicit Type(TypeKind k) : kind_(k) {}
  TypeKind kind_ = TypeKind::None;
  TensorType tensor_;
};

}  // namespace kiln::ir
