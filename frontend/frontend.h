// The script frontend's entry points: TorchScript-like source text -> graph IR.
//
// parse_module() reads a whole file (several defs allowed); lower_function()
// specializes one def for concrete arguments and returns its graph. Non-tensor
// arguments (int, float, bool, lists, str) are compile-time constants baked into
// the graph; the graph's inputs are the tensor parameters, in parameter order
// (a List[Tensor] parameter gives one input per item, in list order).
// All errors are kiln::Error whose message holds every diagnostic rendered as
//   file:line:col: error: message
//     source line
//         ^~~~
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ir/attributes.h"
#include "ir/graph.h"

namespace kiln::frontend {

struct Module;  // opaque AST of one file (frontend/ast.h)

enum class ParamKind { Tensor, Int, Float, Bool, Str, IntList, FloatList, TensorList, Other };

struct ParamInfo {
  std::string name;
  ParamKind kind = ParamKind::Tensor;
  std::string annotation;                  // as written, e.g. "Tensor[f32, N, 784]", "int"
  std::optional<ir::TensorType> declared;  // from a Kiln annotation (dtype, maybe symbolic dims)
  bool has_default = false;
  ir::AttrValue default_value;  // valid when has_default
};

struct FunctionInfo {
  std::string name;
  std::vector<ParamInfo> params;
  ir::SourceLoc loc;
};

// One argument for lower_function, by parameter: a tensor type (its dims may be
// symbolic when the parameter is declared so) or a constant value.
struct ArgBinding {
  std::string name;
  std::optional<ir::TensorType> tensor;  // for tensor parameters
  // For List[Tensor] parameters: one graph input per item, named NAME.0, NAME.1, ...
  std::optional<std::vector<ir::TensorType>> tensors;
  ir::AttrValue value;  // for non-tensor parameters
};

std::shared_ptr<const Module> parse_module(const std::string& source, const std::string& filename);
std::vector<FunctionInfo> functions(const Module& m);
// fn empty => the last def in the file. Missing arguments take defaults; a missing
// argument without a default or an unknown argument name is an error.
std::unique_ptr<ir::Graph> lower_function(const Module& m, const std::string& fn,
                                          const std::vector<ArgBinding>& args);
// Indented AST dump for `kiln dump --stage=ast`.
std::string dump_ast(const Module& m);

}  // namespace kiln::frontend
