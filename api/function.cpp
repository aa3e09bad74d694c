// kiln::Function and the public value types: printing, verification, the
// interpreter entry point, text-IR loading and the op listing. Thin wrappers
// over ir/; what they add is the conversion to public types and error context.
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "api/convert.h"
#include "ir/graph.h"
#include "ir/interpreter.h"
#include "ir/op_registry.h"
#include "passes/lower/op_backends.h"
#include "kiln/function.h"

namespace kiln {

// --- conversions ---------------------------------------------------------------------

namespace api {

ir::Dims to_ir_dims(const std::vector<Dim>& dims) {
  ir::Dims out;
  out.reserve(dims.size());
  for (const Dim& d : dims)
    out.push_back(d.is_static() ? ir::Dim(d.value) : ir::Dim::sym(d.symbol));
  return out;
}

std::vector<Dim> from_ir_dims(const ir::Dims& dims) {
  std::vector<Dim> out;
  out.reserve(dims.size());
  for (const ir::Dim& d : dims) out.push_back(d.is_static() ? Dim(d.value) : sym(d.symbol));
  return out;
}

ir::TensorType to_ir_tensor_type(const TensorSpec& spec) {
  return ir::TensorType{spec.dtype, to_ir_dims(spec.dims), Device::cpu()};
}

TensorSpec from_ir_tensor_type(const ir::TensorType& t) {
  return TensorSpec{t.dtype, from_ir_dims(t.dims)};
}

// Attr::Storage and ir::AttrValue list the same alternatives in the same order,
// with std::monostate standing for NoneAttr.
ir::AttrValue to_ir_attr(const Attr& a) {
  return std::visit(
      [](const auto& v) -> ir::AttrValue {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, std::monostate>) {
          return ir::NoneAttr{};
        } else {
          return v;
        }
      },
      a.storage());
}

Attr from_ir_attr(const ir::AttrValue& v) {
  return std::visit(
      [](const auto& x) -> Attr {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, ir::NoneAttr>) {
          return Attr();
        } else {
          return Attr(x);
        }
      },
      v);
}

ValueKind value_kind(const ir::Type& t) {
  switch (t.kind()) {
    case ir::TypeKind::Tensor:
      return ValueKind::Tensor;
    case ir::TypeKind::Int:
      return ValueKind::Int;
    case ir::TypeKind::Float:
      return ValueKind::Float;
    case ir::TypeKind::Bool:
      return ValueKind::Bool;
    case ir::TypeKind::None:
      return ValueKind::None;
  }
  return ValueKind::None;
}

ValueInfo value_info(const ir::Value& v) {
  ValueInfo info;
  info.name = v.name();
  info.kind = value_kind(v.type());
  info.type = v.type().str();
  if (v.type().is_tensor()) {
    info.tensor = from_ir_tensor_type(v.type().tensor_type());
  } else if (!v.type().is_none()) {
    info.tensor.dtype = v.type().dtype();
  }
  return info;
}

std::string read_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  KILN_USER_CHECK(in, "cannot read '" << path << "': " << std::strerror(errno));
  std::ostringstream ss;
  ss << in.rdbuf();
  KILN_USER_CHECK(!in.bad(), "cannot read '" << path << "': read failed");
  return ss.str();
}

}  // namespace api

// --- public value types ------------------------------------------------------------------

std::string Dim::str() const {
  return is_static() ? std::to_string(value) : symbol;
}

Dim sym(std::string name) {
  KILN_USER_CHECK(!name.empty(), "kiln::sym: a symbolic dim needs a name");
  Dim d;
  d.symbol = std::move(name);
  return d;
}

std::string TensorSpec::str() const {
  return ir::TensorType{dtype, api::to_ir_dims(dims), Device::cpu()}.str();
}

std::string Attr::str() const {
  return ir::attr_str(api::to_ir_attr(*this));
}

// --- Function ---------------------------------------------------------------------------

namespace {
const ir::Graph& checked(const std::shared_ptr<const ir::Graph>& g) {
  KILN_USER_CHECK(g != nullptr, "kiln::Function: empty function (default-constructed)");
  return *g;
}
}  // namespace

Function Function::from_graph(std::shared_ptr<ir::Graph> graph) {
  KILN_INTERNAL_CHECK(graph != nullptr, "Function::from_graph(nullptr)");
  Function f;
  f.graph_ = std::move(graph);
  return f;
}

const ir::Graph& Function::graph() const {
  return checked(graph_);
}
const std::string& Function::name() const {
  return checked(graph_).name();
}
std::string Function::str() const {
  return ir::print_graph(checked(graph_));
}
void Function::verify() const {
  ir::verify(checked(graph_));
}

std::vector<ValueInfo> Function::inputs() const {
  std::vector<ValueInfo> out;
  for (const auto& v : checked(graph_).inputs()) out.push_back(api::value_info(*v));
  return out;
}

std::vector<ValueInfo> Function::outputs() const {
  std::vector<ValueInfo> out;
  for (const ir::Value* v : checked(graph_).outputs()) out.push_back(api::value_info(*v));
  return out;
}

int Function::input_index(std::string_view name) const {
  const auto& ins = checked(graph_).inputs();
  for (size_t i = 0; i < ins.size(); ++i) {
    if (ins[i]->name() == name) return static_cast<int>(i);
  }
  return -1;
}

std::vector<Tensor> Function::run_interpreter(const std::vector<Tensor>& inputs) const {
  return ir::interpret(checked(graph_), inputs);
}

Function parse_ir(std::string_view text, const std::string& filename) {
  std::unique_ptr<ir::Graph> g = ir::parse_graph(text, filename);
  ir::verify(*g);
  return Function::from_graph(std::shared_ptr<ir::Graph>(std::move(g)));
}

Function load_ir(const std::string& path) {
  return parse_ir(api::read_text_file(path), path);
}

// --- op listing --------------------------------------------------------------------------

namespace {
OpInfo op_info(const ir::OpDef& d) {
  OpInfo info{d.name, d.signature(), ir::category_name(d.category), d.doc, ir::OpRegistry::global().family(d), {}, {}};
  for (DType t : ir::probe_dtypes(d)) info.dtypes.push_back(dtype_name(t));
  info.backends = passes::op_backends(d);
  return info;
}
}  // namespace

std::vector<OpInfo> list_ops() {
  std::vector<OpInfo> out;
  for (const ir::OpDef* d : ir::OpRegistry::global().all()) out.push_back(op_info(*d));
  return out;
}

std::optional<OpInfo> find_op(std::string_view name) {
  const ir::OpDef* d = ir::OpRegistry::global().find(name);
  if (!d) return std::nullopt;
  return op_info(*d);
}

std::vector<std::string> suggest_ops(std::string_view name, size_t n) {
  return ir::OpRegistry::global().nearest(name, n);
}

const char* version() {
  return KILN_VERSION;
}

}  // namespace kiln
