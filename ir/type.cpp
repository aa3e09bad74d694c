// Printing and small helpers for graph IR types.
#include "ir/type.h"

#include "kiln/error.h"

namespace kiln::ir {

Dims dims_from_shape(const Shape& shape) {
  Dims d;
  d.reserve(shape.size());
  for (int64_t s : shape) d.emplace_back(s);
  return d;
}

bool dims_are_static(const Dims& dims) {
  for (const Dim& d : dims) {
    if (!d.is_static()) return false;
  }
  return true;
}

Shape static_shape(const Dims& dims) {
  Shape s;
  s.reserve(dims.size());
  for (const Dim& d : dims) {
    KILN_INTERNAL_CHECK(d.is_static(), "symbolic dim " << d.symbol << " where a static shape is needed");
    s.push_back(d.value);
  }
  return s;
}

std::string dims_str(const Dims& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i) s += ", ";
    s += dims[i].str();
  }
  return s + "]";
}

std::string TensorType::str() const {
  std::string s = std::string(dtype_name(dtype)) + dims_str(dims);
  if (!device.is_cpu()) s += "@" + device.str();
  return s;
}

Type Type::tensor(DType dtype, Dims dims, Device device) {
  return tensor(TensorType{dtype, std::move(dims), device});
}

Type Type::tensor(TensorType t) {
  // Every pass and runtime buffer relies on these limits: a deeper type
  // overflows recursive passes, a larger one overflows byte offsets.
  // Symbolic dims are checked when their sizes are bound.
  check_rank(static_cast<int64_t>(t.dims.size()));
  int64_t bytes = static_cast<int64_t>(dtype_size(t.dtype));
  bool overflow = false;
  for (const Dim& d : t.dims) {
    if (d.is_static() && d.value >= 0) overflow |= __builtin_mul_overflow(bytes, d.value, &bytes);
  }
  if (overflow) {  // rare: build the shape only to word the error
    Shape static_sizes;
    for (const Dim& d : t.dims) {
      if (d.is_static() && d.value >= 0) static_sizes.push_back(d.value);
    }
    shape_nbytes(static_sizes, t.dtype);
  }
  Type ty(TypeKind::Tensor);
  ty.tensor_ = std::move(t);
  return ty;
}

const TensorType& Type::tensor_type() const {
  KILN_INTERNAL_CHECK(kind_ == TypeKind::Tensor, "tensor_type() of a " << str() << " value");
  return tensor_;
}

DType Type::dtype() const {
  switch (kind_) {
    case TypeKind::Tensor: return tensor_.dtype;
    case TypeKind::Int: return DType::I64;
    case TypeKind::Float: return DType::F64;
    case TypeKind::Bool: return DType::Bool;
    case TypeKind::None: break;
  }
  KILN_INTERNAL_CHECK(false, "dtype() of a none value");
}

std::string Type::str() const {
  switch (kind_) {
    case TypeKind::Tensor: return tensor_.str();
    case TypeKind::Int: return "int";
    case TypeKind::Float: return "float";
    case TypeKind::Bool: return "bool";
    case TypeKind::None: return "none";
  }
  return "?";
}

}  // namespace kiln::ir
