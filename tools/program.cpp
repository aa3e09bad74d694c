// Loading FILE for `kiln run` / `kiln dump`: a .kir graph or a script def, and
// matching --input NAME=SPEC arguments to its parameters by name. Missing,
// unknown and repeated names are errors that name the parameter and list what
// the function takes.
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>

#include "tools/driver.h"

namespace kiln::cli {

namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  KILN_USER_CHECK(in, "cannot read '" << path << "': " << std::strerror(errno));
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool ends_with(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Text IR starts (after blank and '#' comment lines) with `graph`.
bool looks_like_ir(const std::string& text) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    size_t b = line.find_first_not_of(" \t\r");
    if (b == std::string::npos || line[b] == '#') continue;
    return line.compare(b, 5, "graph") == 0;
  }
  return false;
}

std::map<std::string, std::string> input_map(const std::vector<InputArg>& inputs) {
  std::map<std::string, std::string> m;
  for (const InputArg& in : inputs) {
    KILN_USER_CHECK(m.emplace(in.name, in.spec).second, "input '" << in.name << "' is given twice");
  }
  return m;
}

std::string ir_signature(const Function& f) {
  std::string s;
  for (const ValueInfo& v : f.inputs()) s += (s.empty() ? "" : ", ") + v.name + ": " + v.type;
  return s.empty() ? "(no inputs)" : s;
}

std::string script_signature(const ScriptFunction& f) {
  std::string s;
  for (const ScriptParam& p : f.params) {
    s += (s.empty() ? "" : ", ") + p.name + ": " +
         (p.annotation.empty() ? param_kind_name(p.kind) : p.annotation);
    if (p.has_default) s += " = " + p.default_value.str();
  }
  return s.empty() ? "(no parameters)" : s;
}

std::string input_hint(const std::string& name, const std::optional<TensorSpec>& type) {
  if (!type) return name + "=PATH.npy or " + name + "=randn:f32:2x3";
  std::string dims;
  bool is_static = true;
  for (const Dim& d : type->dims) {
    dims += (dims.empty() ? "" : "x") + d.str();
    is_static = is_static && d.is_static();
  }
  std::string gen = is_floating(type->dtype) ? "randn" : "zeros";
  return name + "=PATH.npy or " + name + "=" + gen + ":" + dtype_name(type->dtype) + ":" +
         (is_static ? dims : std::string("DIMS"));
}

ParamKind scalar_kind(ValueKind k) {
  switch (k) {
    case ValueKind::Int:
      return ParamKind::Int;
    case ValueKind::Float:
      return ParamKind::Float;
    case ValueKind::Bool:
      return ParamKind::Bool;
    default:
      return ParamKind::Other;
  }
}

Tensor scalar_tensor(const Attr& v, ValueKind kind) {
  const auto& s = v.storage();
  if (kind == ValueKind::Int)
    return Tensor::scalar(static_cast<double>(std::get<int64_t>(s)), DType::I64);
  if (kind == ValueKind::Bool) return Tensor::scalar(std::get<bool>(s) ? 1 : 0, DType::Bool);
  return Tensor::scalar(std::get<double>(s), DType::F64);
}

Bound bind_graph(const Program& p, const std::string& fn, const std::vector<InputArg>& inputs,
                 uint64_t seed, bool make_tensors) {
  const Function& f = p.graph;
  KILN_USER_CHECK(fn.empty() || fn == f.name(),
                  p.path << ": no function '" << fn << "'; the file defines graph @" << f.name());
  std::map<std::string, std::string> given = input_map(inputs);
  std::vector<ValueInfo> params = f.inputs();
  for (const auto& [name, spec] : given) {
    KILN_USER_CHECK(f.input_index(name) >= 0, "unknown input '" << name << "'; @" << f.name()
                                                                << " takes " << ir_signature(f));
  }
  Bound b{f, {}};
  std::string missing;
  for (const ValueInfo& v : params) {
    if (!given.count(v.name)) {
      std::optional<TensorSpec> t;
      if (v.kind == ValueKind::Tensor) t = v.tensor;
      missing += (missing.empty() ? "" : "; ") + std::string("'") + v.name + "' (" + v.type +
                 "): pass --input " +
                 (v.kind == ValueKind::Tensor ? input_hint(v.name, t) : v.name + "=VALUE");
    }
  }
  if (!make_tensors) return b;
  KILN_USER_CHECK(missing.empty(), "missing input " << missing);
  for (size_t i = 0; i < params.size(); ++i) {
    const ValueInfo& v = params[i];
    const std::string& spec = given.at(v.name);
    if (v.kind == ValueKind::Tensor) {
      b.tensors.push_back(tensor_from_spec(v.name, spec, v.tensor, seed + i));
    } else {
      b.tensors.push_back(scalar_tensor(parse_value(v.name, spec, scalar_kind(v.kind)), v.kind));
    }
  }
  return b;
}

bool is_tensor_spec(const ScriptParam& p, const std::string& spec) {
  if (spec == "none" || spec == "None") return false;  // None for an Optional[Tensor]
  if (p.kind == ParamKind::Tensor) return true;
  if (p.kind != ParamKind::Other) return false;
  // An Optional[Tensor] or other unknown annotation: a generator or .npy means a tensor.
  return parse_generator(spec).has_value() || ends_with(spec, ".npy");
}

Bound bind_script(const Program& p, const std::string& fn, const std::vector<InputArg>& inputs,
                  uint64_t seed, bool make_tensors) {
  const ScriptFunction& sf = p.script->function(fn);
  std::map<std::string, std::string> given = input_map(inputs);
  for (const auto& [name, spec] : given) {
    bool known = false;
    for (const ScriptParam& q : sf.params) known = known || q.name == name;
    KILN_USER_CHECK(
        known, "unknown input '" << name << "'; " << sf.name << " takes " << script_signature(sf));
  }
  std::vector<Binding> bindings;
  std::map<std::string, Tensor> tensors;
  std::vector<std::string> tensor_order;
  std::string missing;
  for (size_t i = 0; i < sf.params.size(); ++i) {
    const ScriptParam& q = sf.params[i];
    auto it = given.find(q.name);
    if (it == given.end()) {
      if (q.has_default) continue;
      // A Dict parameter cannot be passed at all: the frontend says so, located.
      if (q.annotation.starts_with("Dict[") || q.annotation == "Dict") continue;
      if (q.kind == ParamKind::Tensor && q.declared && !make_tensors) {
        bindings.push_back(bind_tensor(q.name, q.declared->dtype, q.declared->dims));
        continue;
      }
      std::string ann = q.annotation.empty() ? param_kind_name(q.kind) : q.annotation;
      missing += (missing.empty() ? "" : "; ") + std::string("'") + q.name + "' (" + ann +
                 "): pass --input " +
                 (q.kind == ParamKind::Tensor       ? input_hint(q.name, q.declared)
                  : q.kind == ParamKind::TensorList ? q.name + "=[PATH.npy,randn:f32:2x3]"
                                                    : q.name + "=VALUE");
      continue;
    }
    const std::string& spec = it->second;
    if (q.kind == ParamKind::TensorList && spec.find('[') != std::string::npos) {
      // One graph input per item, named NAME.0, NAME.1, ... (as the frontend names them).
      std::vector<std::string> specs = tensor_list_specs(q.name, spec);
      std::vector<TensorSpec> types;
      for (size_t k = 0; k < specs.size(); ++k) {
        std::string item = q.name + "." + std::to_string(k);
        if (make_tensors) {
          Tensor t = tensor_from_spec(item, specs[k], std::nullopt, seed + i + (uint64_t(k) << 32));
          types.push_back(
              TensorSpec{t.dtype(), std::vector<Dim>(t.sizes().begin(), t.sizes().end())});
          tensors[item] = t;
          tensor_order.push_back(item);
        } else {
          types.push_back(type_from_spec(item, specs[k], std::nullopt));
        }
      }
      bindings.push_back(bind_tensors(q.name, std::move(types)));
      continue;
    }
    if (is_tensor_spec(q, spec)) {
      if (make_tensors) {
        Tensor t = tensor_from_spec(q.name, spec, q.declared, seed + i);
        bindings.push_back(bind_like(q.name, t));
        tensors[q.name] = t;
        tensor_order.push_back(q.name);
      } else {
        TensorSpec t = type_from_spec(q.name, spec, q.declared);
        bindings.push_back(bind_tensor(q.name, t.dtype, t.dims));
      }
    } else {
      bindings.push_back(bind_value(q.name, parse_value(q.name, spec, q.kind)));
    }
  }
  KILN_USER_CHECK(missing.empty(), "missing input " << missing);
  auto start = std::chrono::steady_clock::now();
  Bound b{p.script->lower(sf.name, bindings), {}};
  b.lower_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  if (!make_tensors) return b;
  // The graph's inputs are the tensor parameters; match them by name, falling
  // back to parameter order if the frontend renamed them.
  std::vector<ValueInfo> ins = b.fn.inputs();
  bool by_name = ins.size() == tensor_order.size();
  for (const ValueInfo& v : ins) by_name = by_name && tensors.count(v.name);
  for (size_t i = 0; i < ins.size(); ++i) {
    if (by_name) {
      b.tensors.push_back(tensors.at(ins[i].name));
    } else if (i < tensor_order.size()) {
      b.tensors.push_back(tensors.at(tensor_order[i]));
    }
  }
  return b;
}

}  // namespace

Program load_program(const std::string& path) {
  Program p;
  p.path = path;
  std::string text = read_file(path);
  bool ir = ends_with(path, ".kir") ||
            (!ends_with(path, ".kiln") && !ends_with(path, ".py") && looks_like_ir(text));
  if (ir) {
    p.graph = parse_ir(text, path);
  } else {
    p.is_script = true;
    p.script = Script::from_source(text, path);
  }
  return p;
}

Bound bind_program(const Program& p, const std::string& fn, const std::vector<InputArg>& inputs,
                   uint64_t seed, bool make_tensors) {
  return p.is_script ? bind_script(p, fn, inputs, seed, make_tensors)
                     : bind_graph(p, fn, inputs, seed, make_tensors);
}

}  // namespace kiln::cli
