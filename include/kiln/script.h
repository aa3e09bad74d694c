// Scripts: TorchScript-like source files (.kiln / .py) turned into Functions
// by the script frontend.
//
//   kiln::Script s = kiln::Script::from_file("examples/mlp.kiln");
//   kiln::Function f = s.lower("mlp", {kiln::bind_tensor("x", kiln::DType::F32, {8, 784}),
//                                      kiln::bind_value("eps", 1e-5)});
//   // or in one call:
//   kiln::Function g = kiln::load_script("examples/mlp.kiln", "mlp", {...});
//
// A function is specialized when it is lowered: tensor parameters get a type
// (dtype and dims, which may be symbolic when the script declares them so) and
// non-tensor parameters (int, float, bool, str, lists) become constants baked
// into the graph. The Function's inputs are the tensor parameters, in order; a
// List[Tensor] parameter gives one input per item (named xs.0, xs.1, ...), so
// the tensors of the list are passed in its place, in list order:
//
//   // def f(xs: List[Tensor], w: Tensor)
//   kiln::Function f = s.lower("f", {kiln::bind_like("xs", {a, b}), kiln::bind_like("w", w)});
//   std::vector<kiln::Tensor> out = kiln::compile(f)({a, b, w});
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kiln/function.h"

namespace kiln {

namespace frontend {
struct Module;
}  // namespace frontend

enum class ParamKind : uint8_t {
  Tensor,
  Int,
  Float,
  Bool,
  Str,
  IntList,
  FloatList,
  TensorList,  // List[Tensor]
  Other
};
const char* param_kind_name(ParamKind k);  // "Tensor", "int", "float", ...

struct ScriptParam {
  std::string name;
  ParamKind kind = ParamKind::Tensor;
  std::string annotation;              // as written: "Tensor", "int", "Tensor[f32, N, 784]"
  std::optional<TensorSpec> declared;  // from a Kiln tensor annotation
  bool has_default = false;
  Attr default_value;  // valid when has_default
};

struct ScriptFunction {
  std::string name;
  std::vector<ScriptParam> params;
  std::string loc;  // "file:line:col" of the def
};

// One argument for lowering, by parameter name: a tensor type or a value.
struct Binding {
  std::string name;
  std::optional<TensorSpec> tensor;                // set for tensor parameters
  std::optional<std::vector<TensorSpec>> tensors;  // set for List[Tensor] parameters
  Attr value;                                      // for non-tensor parameters
};
Binding bind_tensor(std::string name, DType dtype, std::vector<Dim> dims);
Binding bind_like(std::string name, const Tensor& example);  // dtype and static shape of `example`
// A List[Tensor] parameter: one type per item, or the types of `examples`.
Binding bind_tensors(std::string name, std::vector<TensorSpec> items);
Binding bind_like(std::string name, const std::vector<Tensor>& examples);
Binding bind_value(std::string name, Attr value);

class Script {
 public:
  // Parse errors throw kiln::Error holding every diagnostic (file:line:col).
  static Script from_file(const std::string& path);
  static Script from_source(const std::string& source, const std::string& filename = "<script>");

  const std::string& filename() const { return filename_; }
  const std::vector<ScriptFunction>& functions() const { return functions_; }
  // `name` empty => the last def in the file. Unknown names are an error that
  // lists the defs.
  const ScriptFunction& function(const std::string& name = "") const;
  // Indented AST (what `kiln dump --stage=ast` prints).
  std::string dump_ast() const;
  // Specializes def `fn` ("" => the last) for `bindings` and verifies it.
  // Parameters not bound take their defaults; a missing one without a default,
  // or an unknown name, is an error naming the parameter.
  Function lower(const std::string& fn, const std::vector<Binding>& bindings) const;

 private:
  std::shared_ptr<const frontend::Module> module_;
  std::string filename_;
  std::vector<ScriptFunction> functions_;
};

// One-call form. `path_or_source` is taken as script source when it contains a
// newline, else as a file path.
Function load_script(const std::string& path_or_source, const std::string& fn = "",
                     const std::vector<Binding>& bindings = {});

}  // namespace kiln
