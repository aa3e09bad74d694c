// kiln::Script: the public face of the script frontend (frontend/frontend.h).
// Parses once, keeps the AST, and lowers a def per set of bindings. Kept in its
// own file so programs that only use the builder do not link the frontend.
#include "kiln/script.h"

#include "api/convert.h"
#include "frontend/frontend.h"

namespace kiln {

const char* param_kind_name(ParamKind k) {
  switch (k) {
    case ParamKind::Tensor:
      return "Tensor";
    case ParamKind::Int:
      return "int";
    case ParamKind::Float:
      return "float";
    case ParamKind::Bool:
      return "bool";
    case ParamKind::Str:
      return "str";
    case ParamKind::IntList:
      return "List[int]";
    case ParamKind::FloatList:
      return "List[float]";
    case ParamKind::TensorList:
      return "List[Tensor]";
    case ParamKind::Other:
      return "other";
  }
  return "?";
}

Binding bind_tensor(std::string name, DType dtype, std::vector<Dim> dims) {
  Binding b;
  b.name = std::move(name);
  b.tensor = TensorSpec{dtype, std::move(dims)};
  return b;
}

Binding bind_like(std::string name, const Tensor& example) {
  KILN_USER_CHECK(example.defined(), "bind_like: tensor for '" << name << "' is undefined");
  std::vector<Dim> dims(example.sizes().begin(), example.sizes().end());
  return bind_tensor(std::move(name), example.dtype(), std::move(dims));
}

Binding bind_tensors(std::string name, std::vector<TensorSpec> items) {
  Binding b;
  b.name = std::move(name);
  b.tensors = std::move(items);
  return b;
}

Binding bind_like(std::string name, const std::vector<Tensor>& examples) {
  std::vector<TensorSpec> items;
  for (size_t k = 0; k < examples.size(); ++k) {
    const Tensor& t = examples[k];
    KILN_USER_CHECK(t.defined(), "bind_like: tensor " << k << " of '" << name << "' is undefined");
    items.push_back(TensorSpec{t.dtype(), std::vector<Dim>(t.sizes().begin(), t.sizes().end())});
  }
  return bind_tensors(std::move(name), std::move(items));
}

Binding bind_value(std::string name, Attr value) {
  Binding b;
  b.name = std::move(name);
  b.value = std::move(value);
  return b;
}

namespace {

ParamKind public_kind(frontend::ParamKind k) {
  switch (k) {
    case frontend::ParamKind::Tensor:
      return ParamKind::Tensor;
    case frontend::ParamKind::Int:
      return ParamKind::Int;
    case frontend::ParamKind::Float:
      return ParamKind::Float;
    case frontend::ParamKind::Bool:
      return ParamKind::Bool;
    case frontend::ParamKind::Str:
      return ParamKind::Str;
    case frontend::ParamKind::IntList:
      return ParamKind::IntList;
    case frontend::ParamKind::FloatList:
      return ParamKind::FloatList;
    case frontend::ParamKind::TensorList:
      return ParamKind::TensorList;
    case frontend::ParamKind::Other:
      return ParamKind::Other;
  }
  return ParamKind::Other;
}

ScriptFunction public_function(const frontend::FunctionInfo& info) {
  ScriptFunction f;
  f.name = info.name;
  f.loc = info.loc.str();
  for (const frontend::ParamInfo& p : info.params) {
    ScriptParam sp;
    sp.name = p.name;
    sp.kind = public_kind(p.kind);
    sp.annotation = p.annotation;
    if (p.declared) sp.declared = api::from_ir_tensor_type(*p.declared);
    sp.has_default = p.has_default;
    if (p.has_default) sp.default_value = api::from_ir_attr(p.default_value);
    f.params.push_back(std::move(sp));
  }
  return f;
}

}  // namespace

Script Script::from_source(const std::string& source, const std::string& filename) {
  Script s;
  s.filename_ = filename;
  s.module_ = frontend::parse_module(source, filename);
  KILN_INTERNAL_CHECK(s.module_ != nullptr, "parse_module returned null for " << filename);
  for (const frontend::FunctionInfo& info : frontend::functions(*s.module_)) {
    s.functions_.push_back(public_function(info));
  }
  return s;
}

Script Script::from_file(const std::string& path) {
  return from_source(api::read_text_file(path), path);
}

const ScriptFunction& Script::function(const std::string& name) const {
  KILN_USER_CHECK(!functions_.empty(), filename_ << ": the script defines no function");
  if (name.empty()) return functions_.back();
  for (const ScriptFunction& f : functions_) {
    if (f.name == name) return f;
  }
  std::string names;
  for (const ScriptFunction& f : functions_) names += (names.empty() ? "" : ", ") + f.name;
  KILN_USER_ERROR(filename_ << ": no function '" << name << "'; it defines: " << names);
}

std::string Script::dump_ast() const {
  KILN_USER_CHECK(module_ != nullptr, "kiln::Script: empty script (default-constructed)");
  return frontend::dump_ast(*module_);
}

Function Script::lower(const std::string& fn, const std::vector<Binding>& bindings) const {
  KILN_USER_CHECK(module_ != nullptr, "kiln::Script: empty script (default-constructed)");
  const ScriptFunction& f = function(fn);  // checks the name, lists the defs
  std::vector<frontend::ArgBinding> args;
  args.reserve(bindings.size());
  for (const Binding& b : bindings) {
    frontend::ArgBinding a;
    a.name = b.name;
    if (b.tensor) a.tensor = api::to_ir_tensor_type(*b.tensor);
    if (b.tensors) {
      a.tensors.emplace();
      for (const TensorSpec& t : *b.tensors) a.tensors->push_back(api::to_ir_tensor_type(t));
    }
    a.value = api::to_ir_attr(b.value);
    args.push_back(std::move(a));
  }
  std::unique_ptr<ir::Graph> g = frontend::lower_function(*module_, f.name, args);
  KILN_INTERNAL_CHECK(g != nullptr, "lower_function returned null for " << f.name);
  ir::verify(*g);
  return Function::from_graph(std::shared_ptr<ir::Graph>(std::move(g)));
}

Function load_script(const std::string& path_or_source, const std::string& fn,
                     const std::vector<Binding>& bindings) {
  bool is_source = path_or_source.find('\n') != std::string::npos;
  Script s = is_source ? Script::from_source(path_or_source) : Script::from_file(path_or_source);
  return s.lower(fn, bindings);
}

}  // namespace kiln
