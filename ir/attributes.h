// Node attributes: compile-time constants attached to a node (dims, flags,
// dtypes, scalar values, constant tensors).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "kiln/dtype.h"
#include "kiln/tensor.h"

namespace kiln::ir {

struct NoneAttr {
  bool operator==(const NoneAttr&) const = default;
};

using AttrValue = std::variant<NoneAttr, bool, int64_t, double, std::string,
                               std::vector<int64_t>, std::vector<double>, DType, Tensor>;

// Text form used by the printer and parser:
//   none | true | 3 | -2.5 | 1.0e-05 | inf | nan | "floor" | [1, 2] | [0.5, 1.0] | f32
//   | tensor<f32[2, 2]>[1.0, 2.0, 3.0, 4.0]
std::string attr_str(const AttrValue& v);
bool attr_equal(const AttrValue& a, const AttrValue& b);  // tensors compare by value

// An ordered list of name = value pairs (order is kept for printing).
class Attrs {
 public:
  Attrs() = default;
  Attrs(std::initializer_list<std::pair<std::string, AttrValue>> init);

  bool has(const std::string& name) const;
  const AttrValue* find(const std::string& name) const;
  void set(const std::string& name, AttrValue v);  // replaces or appends
  void erase(const std::string& name);
  const std::vector<std::pair<std::string, AttrValue>>& items() const { return items_; }
  bool empty() const { return items_.empty(); }

  // Typed getters throw kiln::Error naming the attribute when it is missing or
  // of another kind. get_float accepts an int; get_ints accepts a single int.
  bool get_bool(const std::string& name) const;
  int64_t get_int(const std::string& name) const;
  double get_float(const std::string& name) const;
  const std::string& get_string(const std::string& name) const;
  std::vector<int64_t> get_ints(const std::string& name) const;
  std::vector<double> get_floats(const std::string& name) const;
  DType get_dtype(const std::string& name) const;
  const Tensor& get_tensor(const std::string& name) const;
  bool is_none(const std::string& name) const;  // missing or none

  bool operator==(const Attrs& o) const;
  std::string str() const;  // "{dim = [1], keepdim = false}" or "" when empty

 private:
  std::vector<std::pair<std::string, AttrValue>> items_;
};

}  // namespace kiln::ir
