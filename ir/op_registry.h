// The op registry: every op is defined once, here and only here — signature,
// attributes, dtype promotion and shape rule (inference), fusion category and
// the reference implementation the interpreter runs. Lowerings to loop IR are
// attached by passes/ under the same name.
//
// Op definitions live in ir/ops/*.cpp, one file per family; each file has a
// register_*_ops(OpRegistry&) function called once by OpRegistry::global().
#pragma once

#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ir/attributes.h"
#include "ir/type.h"
#include "kiln/tensor.h"

namespace kiln::ir {

enum class OpCategory : uint8_t { Elementwise, Reduction, Contraction, Layout, Other };
const char* category_name(OpCategory c);

enum class OperandKind : uint8_t {
  Tensor,          // a tensor
  TensorOrScalar,  // a tensor or an int/float/bool scalar (wrapped number)
  OptionalTensor,  // a tensor or none
  Scalar,          // an int/float/bool scalar
  Optional,        // a tensor, a scalar or none (clamp's bounds)
};

struct OperandSpec {
  std::string name;
  OperandKind kind = OperandKind::Tensor;
  bool variadic = false;  // only the last operand; one or more values (cat, stack)
};

enum class AttrKind : uint8_t { Bool, Int, Float, String, Ints, Floats, DType, Tensor, Any };

struct AttrSpec {
  std::string name;
  AttrKind kind = AttrKind::Int;
  std::optional<AttrValue> default_value;  // nullopt => required
  bool optional = false;                   // may be none (e.g. clamp's min)
};

struct OpDef;

// What type inference sees. Attribute defaults are already filled in.
struct InferContext {
  const OpDef& op;
  std::span<const Type> inputs;
  const Attrs& attrs;

  // Throws kiln::Error "OP: MESSAGE".
  [[noreturn]] void fail(const std::string& message) const;
  // Tensor type of operand i, or fail naming the operand.
  const TensorType& tensor(size_t i) const;
};

// What a reference implementation sees. Scalars arrive as 0-dim tensors (int ->
// i64, float -> f64, bool -> bool); an absent optional tensor is an undefined
// Tensor. Inputs may be non-contiguous views. Outputs must have exactly
// `output_types` (static shapes, dtypes).
struct RefContext {
  const OpDef& op;
  std::span<const Type> input_types;
  std::span<const Tensor> inputs;
  const Attrs& attrs;
  std::span<const Type> output_types;
};

using InferFn = std::function<std::vector<Type>(const InferContext&)>;
using ReferenceFn = std::function<std::vector<Tensor>(const RefContext&)>;

struct OpDef {
  std::string name;
  std::vector<OperandSpec> operands;
  std::vector<AttrSpec> attrs;
  OpCategory category = OpCategory::Other;
  std::string doc;  // one line
  InferFn infer;
  ReferenceFn reference;
  // "add(a: Tensor, b: Tensor|Scalar) {alpha: float = 1.0} -> elementwise"
  std::string signature() const;
};

class OpRegistry {
 public:
  // The process-wide registry, filled on first use and read-only after.
  static const OpRegistry& global();

  // Internal error on a duplicate name. `file`, the ir/ops/<file>.cpp that
  // registers it, gives the op's family (family_for). __builtin_FILE rather
  // than std::source_location: Clang 14 (the fuzz build) lacks the latter
  // with libstdc++ 12.
  void add(OpDef def, const char* file = __builtin_FILE());
  // The family `kiln ops` groups an op under (activation, scan, indexing, ...).
  std::string family(const OpDef& op) const;
  const OpDef* find(std::string_view name) const;
  std::vector<const OpDef*> all() const;  // sorted by name
  // Up to `n` registered names closest to `name` by edit distance.
  std::vector<std::string> nearest(std::string_view name, size_t n = 3) const;

 private:
  std::vector<OpDef> ops_;
  std::vector<std::string> families_;  // one per op, in ops_ order
};

// The family for an op registered from `file` (a path ending in
// ir/ops/<stem>.cpp) in `category`: "elementwise" for unary.cpp, the stem for
// a file it does not know, the category's name for a shared helper file.
std::string family_for(std::string_view file, OpCategory category);
// dtypes the op accepts on its tensor operands, found by asking its type
// inference with probe shapes; empty when no probe was accepted.
std::vector<DType> probe_dtypes(const OpDef& op);

// Fills attribute defaults and checks attribute kinds against the op's specs;
// throws kiln::Error naming the op and the attribute.
Attrs complete_attrs(const OpDef& op, const Attrs& given);
// Checks operand count and kinds, then runs op.infer. Throws kiln::Error.
std::vector<Type> infer_types(const OpDef& op, std::span<const Type> inputs, const Attrs& attrs);

}  // namespace kiln::ir
