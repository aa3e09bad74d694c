// The registry container, attribute completion and the generic operand checks
// that run before each op's own inference.
#include "ir/op_registry.h"

#include <algorithm>
#include <mutex>

#include "ir/ops/ops.h"
#include "kiln/error.h"

namespace kiln::ir {

const char* category_name(OpCategory c) {
  switch (c) {
    case OpCategory::Elementwise: return "elementwise";
    case OpCategory::Reduction: return "reduction";
    case OpCategory::Contraction: return "contraction";
    case OpCategory::Layout: return "layout";
    case OpCategory::Other: return "other";
  }
  return "?";
}

namespace {

const char* operand_kind_str(OperandKind k) {
  switch (k) {
    case OperandKind::Tensor: return "Tensor";
    case OperandKind::TensorOrScalar: return "Tensor|Scalar";
    case OperandKind::OptionalTensor: return "Tensor?";
    case OperandKind::Scalar: return "Scalar";
    case OperandKind::Optional: return "Tensor|Scalar?";
  }
  return "?";
}

const char* attr_kind_str(AttrKind k) {
  switch (k) {
    case AttrKind::Bool: return "bool";
    case AttrKind::Int: return "int";
    case AttrKind::Float: return "float";
    case AttrKind::String: return "str";
    case AttrKind::Ints: return "int[]";
    case AttrKind::Floats: return "float[]";
    case AttrKind::DType: return "dtype";
    case AttrKind::Tensor: return "tensor";
    case AttrKind::Any: return "any";
  }
  return "?";
}

bool attr_fits(AttrKind k, const AttrValue& v) {
  switch (k) {
    case AttrKind::Bool: return std::holds_alternative<bool>(v);
    case AttrKind::Int: return std::holds_alternative<int64_t>(v);
    case AttrKind::Float:
      return std::holds_alternative<double>(v) || std::holds_alternative<int64_t>(v);
    case AttrKind::String: return std::holds_alternative<std::string>(v);
    case AttrKind::Ints:
      return std::holds_alternative<std::vector<int64_t>>(v) || std::holds_alternative<int64_t>(v);
    case AttrKind::Floats:
      return std::holds_alternative<std::vector<double>>(v) ||
             std::holds_alternative<std::vector<int64_t>>(v);
    case AttrKind::DType: return std::holds_alternative<DType>(v);
    case AttrKind::Tensor: return std::holds_alternative<Tensor>(v);
    case AttrKind::Any: return true;
  }
  return false;
}

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t sub = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

}  // namespace

std::string OpDef::signature() const {
  std::string s = name + "(";
  for (size_t i = 0; i < operands.size(); ++i) {
    if (i) s += ", ";
    s += operands[i].name + ": " + operand_kind_str(operands[i].kind);
    if (operands[i].variadic) s += "...";
  }
  s += ")";
  if (!attrs.empty()) {
    s += " {";
    for (size_t i = 0; i < attrs.size(); ++i) {
      if (i) s += ", ";
      s += attrs[i].name + ": " + attr_kind_str(attrs[i].kind);
      if (attrs[i].optional) s += "?";
      if (attrs[i].default_value) s += " = " + attr_str(*attrs[i].default_value);
    }
    s += "}";
  }
  s += std::string(" -> ") + category_name(category);
  return s;
}

void InferContext::fail(const std::string& message) const {
  throw Error(op.name + ": " + message);
}

const TensorType& InferContext::tensor(size_t i) const {
  if (i >= inputs.size() || !inputs[i].is_tensor()) {
    std::string what = i < op.operands.size() ? op.operands[i].name : std::to_string(i);
    fail("operand '" + what + "' must be a tensor, got " +
         (i < inputs.size() ? inputs[i].str() : std::string("nothing")));
  }
  return inputs[i].tensor_type();
}

const OpRegistry& OpRegistry::global() {
  static const OpRegistry* registry = [] {
    auto* r = new OpRegistry();
    register_constant_ops(*r);
    register_unary_ops(*r);
    register_binary_ops(*r);
    register_reduction_ops(*r);
    register_normalization_ops(*r);
    register_contraction_ops(*r);
    register_conv_ops(*r);
    register_layout_ops(*r);
    register_activation_ops(*r);
    register_pointwise_ops(*r);
    register_indexing_ops(*r);
    register_layout_stride_ops(*r);
    register_math_ops(*r);
    register_scan_ops(*r);
    register_selection_ops(*r);
    return r;
  }();
  return *registry;
}

void OpRegistry::add(OpDef def, const char* file) {
  KILN_INTERNAL_CHECK(find(def.name) == nullptr, "op '" << def.name << "' registered twice");
  families_.push_back(family_for(file, def.category));
  KILN_INTERNAL_CHECK(def.infer && def.reference,
                      "op '" << def.name << "' lacks inference or reference implementation");
  ops_.push_back(std::move(def));
}

std::string OpRegistry::family(const OpDef& op) const {
  for (size_t k = 0; k < ops_.size(); ++k) {
    if (&ops_[k] == &op) return families_[k];
  }
  return category_name(op.category);
}

const OpDef* OpRegistry::find(std::string_view name) const {
  for (const OpDef& d : ops_) {
    if (d.name == name) return &d;
  }
  return nullptr;
}

std::vector<const OpDef*> OpRegistry::all() const {
  std::vector<const OpDef*> out;
  for (const OpDef& d : ops_) out.push_back(&d);
  std::sort(out.begin(), out.end(), [](auto* a, auto* b) { return a->name < b->name; });
  return out;
}

std::vector<std::string> OpRegistry::nearest(std::string_view name, size_t n) const {
  std::vector<std::pair<size_t, std::string>> scored;
  for (const OpDef& d : ops_) scored.emplace_back(edit_distance(name, d.name), d.name);
  std::sort(scored.begin(), scored.end());
  std::vector<std::string> out;
  size_t limit = std::max<size_t>(2, name.size() / 3);
  for (auto& [dist, nm] : scored) {
    if (out.size() >= n || dist > limit) break;
    out.push_back(nm);
  }
  return out;
}

Attrs complete_attrs(const OpDef& op, const Attrs& given) {
  for (const auto& [name, value] : given.items()) {
    auto it = std::find_if(op.attrs.begin(), op.attrs.end(),
                           [&n = name](const AttrSpec& s) { return s.name == n; });
    KILN_USER_CHECK(it != op.attrs.end(), op.name << ": unknown attribute '" << name << "'");
    bool none_ok = it->optional && std::holds_alternative<NoneAttr>(value);
    KILN_USER_CHECK(none_ok || attr_fits(it->kind, value),
                    op.name << ": attribute '" << name << "' must be " << attr_kind_str(it->kind)
                            << ", got " << attr_str(value));
  }
  Attrs out;
  for (const AttrSpec& spec : op.attrs) {
    if (const AttrValue* v = given.find(spec.name)) {
      out.set(spec.name, *v);
    } else if (spec.default_value) {
      out.set(spec.name, *spec.default_value);
    } else {
      KILN_USER_ERROR(op.name << ": missing required attribute '" << spec.name << "'");
    }
  }
  return out;
}

std::vector<Type> infer_types(const OpDef& op, std::span<const Type> inputs, const Attrs& attrs) {
  size_t fixed = op.operands.size();
  bool variadic = fixed > 0 && op.operands.back().variadic;
  if (variadic) {
    KILN_USER_CHECK(inputs.size() >= fixed, op.name << ": expects at least " << fixed
                                                     << " operand(s), got " << inputs.size());
  } else {
    KILN_USER_CHECK(inputs.size() == fixed, op.name << ": expects " << fixed
                                                     << " operand(s), got " << inputs.size());
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    const OperandSpec& spec = op.operands[std::min(i, fixed - 1)];
    const Type& t = inputs[i];
    bool ok = false;
    switch (spec.kind) {
      case OperandKind::Tensor: ok = t.is_tensor(); break;
      case OperandKind::TensorOrScalar: ok = t.is_tensor() || t.is_scalar(); break;
      case OperandKind::OptionalTensor: ok = t.is_tensor() || t.is_none(); break;
      case OperandKind::Scalar: ok = t.is_scalar(); break;
      case OperandKind::Optional: ok = true; break;
    }
    KILN_USER_CHECK(ok, op.name << ": operand '" << spec.name << "' must be "
                                << operand_kind_str(spec.kind) << ", got " << t.str());
  }
  InferContext ctx{op, inputs, attrs};
  return op.infer(ctx);
}

}  // namespace kiln::ir
