// Families for `kiln ops` and the dtypes an op accepts, derived from what the
// registry already holds: the file that registers an op names its family
// (ir/ops/activation.cpp -> activation), so a new family file groups its ops
// without an edit here; the dtypes come from asking the op's type inference.
#include <array>
#include <string>

#include "ir/op_registry.h"
#include "kiln/error.h"

namespace kiln::ir {

std::string family_for(std::string_view file, OpCategory category) {
  size_t slash = file.find_last_of("/\\");
  std::string_view stem = slash == std::string_view::npos ? file : file.substr(slash + 1);
  if (size_t dot = stem.rfind('.'); dot != std::string_view::npos) stem = stem.substr(0, dot);
  // Files whose stem is not the family's name; a family's helper files are
  // named <family>_<part>.cpp.
  static const std::pair<const char*, const char*> renames[] = {
      {"unary", "elementwise"},      {"binary", "elementwise"},  {"math", "elementwise"},
      {"constant", "creation"},      {"layout_index", "indexing"}, {"sort", "selection"},
      {"reduce", "reduction"},       {"norm", "normalization"},  {"matmul", "contraction"}};
  for (const auto& [from, to] : renames) {
    if (stem == from) return to;
  }
  static const char* const families[] = {"elementwise", "reduction", "contraction", "layout",
                                         "normalization", "activation", "pointwise", "conv",
                                         "pool", "scan", "selection", "indexing", "creation"};
  for (const char* f : families) {
    std::string prefix = std::string(f) + "_";
    if (stem == f || stem.starts_with(prefix)) return f;
  }
  // Shared helpers (helpers.cpp, ..._util.cpp) or a file outside ir/ops: by category.
  if (stem.empty() || stem == "helpers" || stem.ends_with("_util") ||
      stem.ends_with("_internal") || stem == "op_registry") {
    return category_name(category);
  }
  return std::string(stem);
}

namespace {

std::optional<std::vector<Type>> try_infer(const OpDef& op, const std::vector<Type>& in,
                                           const Attrs& attrs) {
  try {
    return infer_types(op, in, complete_attrs(op, attrs));
  } catch (const Error&) {
    return std::nullopt;
  }
}

bool accepts(const OpDef& op, DType d) {
  static const std::vector<std::vector<int64_t>> shapes = {{2}, {2, 2}, {2, 2, 2}, {2, 2, 2, 2}};
  // Operand dtypes: the probed one first, then the companions ops often take
  // (int64 indices, bool masks/conditions).
  static const std::array<std::pair<int, int>, 5> layouts = {
      {{0, 0}, {0, 1}, {0, 2}, {2, 0}, {1, 0}}};  // (first, rest): 0 = d, 1 = i64, 2 = bool
  auto pick = [&](int k) { return k == 0 ? d : k == 1 ? DType::I64 : DType::Bool; };
  for (int fill = 0; fill < 2; ++fill) {
    for (const std::vector<int64_t>& shape : shapes) {
      Attrs attrs;
      for (const AttrSpec& a : op.attrs) {
        if (a.default_value || a.optional) continue;
        std::vector<int64_t> iota;
        for (size_t k = 0; k < shape.size(); ++k) iota.push_back(int64_t(k));
        switch (a.kind) {
          case AttrKind::Int:
            attrs.set(a.name, int64_t(fill == 0 ? 0 : 1));
            break;
          case AttrKind::Ints:
            attrs.set(a.name, fill == 0 ? shape : iota);
            break;
          case AttrKind::Float:
            attrs.set(a.name, fill == 0 ? 1.0 : 0.5);
            break;
          case AttrKind::Floats:
            attrs.set(a.name, std::vector<double>{1.0});
            break;
          case AttrKind::Bool:
            attrs.set(a.name, fill == 1);
            break;
          case AttrKind::DType:
            attrs.set(a.name, d);
            break;
          case AttrKind::String:
          case AttrKind::Tensor:
          case AttrKind::Any:
            break;
        }
      }
      for (const auto& [first, rest] : layouts) {
        if (first != 0 && rest != 0) continue;
        std::vector<Type> in;
        Dims dims = dims_from_shape(shape);
        for (size_t k = 0; k < op.operands.size(); ++k) {
          DType t = pick(k == 0 ? first : rest);
          switch (op.operands[k].kind) {
            case OperandKind::Scalar:
              in.push_back(is_floating(t) ? Type::float_() : Type::int_());
              break;
            case OperandKind::OptionalTensor:
              in.push_back(Type::none());
              break;
            default:
              in.push_back(Type::tensor(t, dims));
          }
        }
        if (try_infer(op, in, attrs)) return true;
      }
    }
  }
  return false;
}

}  // namespace

std::vector<DType> probe_dtypes(const OpDef& op) {
  std::vector<DType> out;
  for (int k = 0; k < kNumDTypes; ++k) {
    if (accepts(op, DType(k))) out.push_back(DType(k));
  }
  return out;
}

}  // namespace kiln::ir
