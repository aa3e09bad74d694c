// Every program Kiln's own checks compile: the examples with the demo's
// inputs (scripts/demo, tests/golden/kernel_goldens.py), the examples again
// with their declared (symbolic) types where they declare them, and the cases
// of the conformance corpus ($KILN_SHARED_DIR/conformance), lowered to
// functions. A test uses them to check a property of every kernel the
// compiler produces.
//
// The corpus manifest is read with the conformance runner's JSON reader; the
// including test must compile tests/conformance/json.cpp into itself (unit
// tests link only the kiln libraries).
#pragma once

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "kiln/kiln.h"
#include "tests/conformance/json.h"

namespace kiln::test {

struct Program {
  std::string name;  // "example:mlp", "example:layer_norm (declared types)", "case:ew_..."
  Function fn;
};

struct Programs {
  std::vector<Program> programs;
  std::vector<std::string> skipped;  // "name: why" for programs that did not lower
  bool corpus_found = false;
};

inline std::string shared_dir() {
  if (const char* env = std::getenv("KILN_SHARED_DIR"); env && *env) return env;
  return std::string(KILN_SOURCE_DIR) + "/../shared";
}

namespace programs_detail {

inline std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// "randn:f32:2x16x64" -> f32, {2, 16, 64}; "heads=4" style values are ints.
inline Binding binding_from_spec(const std::string& name, const std::string& spec) {
  size_t c1 = spec.find(':');
  if (c1 == std::string::npos) return bind_value(name, int64_t(std::stoll(spec)));
  size_t c2 = spec.find(':', c1 + 1);
  std::string dt = spec.substr(c1 + 1, c2 - c1 - 1);
  std::vector<Dim> dims;
  std::stringstream ss(spec.substr(c2 + 1));
  for (std::string d; std::getline(ss, d, 'x');) dims.emplace_back(int64_t(std::stoll(d)));
  DType dtype = dt == "f32" ? DType::F32 : dt == "f64" ? DType::F64 : DType::I64;
  return bind_tensor(name, dtype, dims);
}

struct ExampleSpec {
  const char* name;
  const char* file;
  const char* fn;
  std::vector<std::pair<const char*, const char*>> inputs;
};

inline std::vector<ExampleSpec> example_specs() {
  std::vector<std::pair<const char*, const char*>> transformer = {
      {"x", "randn:f32:2x16x64"}, {"ln1_w", "ones:f32:64"},
      {"ln1_b", "zeros:f32:64"},  {"w_qkv", "randn:f32:192x64"},
      {"b_qkv", "zeros:f32:192"}, {"w_o", "randn:f32:64x64"},
      {"b_o", "zeros:f32:64"},    {"ln2_w", "ones:f32:64"},
      {"ln2_b", "zeros:f32:64"},  {"w_up", "randn:f32:256x64"},
      {"b_up", "zeros:f32:256"},  {"w_down", "randn:f32:64x256"},
      {"b_down", "zeros:f32:64"}, {"heads", "4"}};
  return {
      {"elementwise_chain",
       "elementwise_chain.kiln",
       "",
       {{"x", "randn:f32:1024"}, {"y", "randn:f32:1024"}}},
      {"layer_norm",
       "layer_norm.kiln",
       "",
       {{"x", "randn:f32:8x256"}, {"w", "ones:f32:256"}, {"b", "zeros:f32:256"}}},
      {"mlp",
       "mlp.kiln",
       "",
       {{"x", "randn:f32:32x256"},
        {"w1", "randn:f32:256x1024"},
        {"b1", "zeros:f32:1024"},
        {"w2", "randn:f32:1024x256"},
        {"b2", "zeros:f32:256"}}},
      {"conv_block",
       "conv_block.kiln",
       "",
       {{"x", "randn:f32:2x3x32x32"}, {"w", "randn:f32:16x3x3x3"}, {"bn", "ones:f32:4x16"}}},
      {"softmax", "softmax.kiln", "", {{"x", "randn:f32:64x1000"}}},
      {"log_softmax", "softmax.kiln", "log_softmax", {{"x", "randn:f32:64x1000"}}},
      {"transformer", "transformer.kiln", "", transformer},
  };
}

inline void add_examples(Programs& out) {
  for (const ExampleSpec& e : example_specs()) {
    std::string path = std::string(KILN_SOURCE_DIR) + "/examples/" + e.file;
    Script script = Script::from_file(path);
    std::vector<Binding> concrete, declared;
    bool any_declared = false;
    for (const ScriptParam& p : script.function(e.fn).params) {
      for (const auto& [name, spec] : e.inputs) {
        if (p.name != name) continue;
        concrete.push_back(binding_from_spec(name, spec));
        if (p.kind == ParamKind::Tensor && p.declared) {
          declared.push_back(bind_tensor(name, p.declared->dtype, p.declared->dims));
          for (const Dim& d : p.declared->dims) any_declared |= !d.is_static();
        } else {
          declared.push_back(concrete.back());
        }
      }
    }
    out.programs.push_back({std::string("example:") + e.name, script.lower(e.fn, concrete)});
    if (any_declared) {
      out.programs.push_back(
          {std::string("example:") + e.name + " (declared types)", script.lower(e.fn, declared)});
    }
  }
}

inline void add_corpus(Programs& out) {
  std::string root = shared_dir() + "/conformance";
  if (!std::filesystem::exists(root + "/corpus.json")) return;
  out.corpus_found = true;
  Json corpus = Json::parse(read_text(root + "/corpus.json"));
  for (const Json& c : corpus.at("cases").as_array()) {
    std::string id = c.at("id").as_string();
    std::vector<Binding> bindings;
    std::string unsupported;
    for (const Json& in : c.at("inputs").as_array()) {
      std::string name = in.at("name").as_string(), kind = in.at("kind").as_string();
      if (kind == "tensor") {
        bindings.push_back(bind_like(name, read_npy(root + "/" + in.at("file").as_string())));
      } else if (kind == "int") {
        bindings.push_back(bind_value(name, in.at("value").as_int()));
      } else if (kind == "float") {
        bindings.push_back(bind_value(name, in.at("value").as_double()));
      } else if (kind == "bool") {
        bindings.push_back(bind_value(name, in.at("value").as_bool()));
      } else if (kind == "str") {
        bindings.push_back(bind_value(name, in.at("value").as_string()));
      } else if (kind == "int_list") {
        std::vector<int64_t> v;
        for (const Json& x : in.at("value").as_array()) v.push_back(x.as_int());
        bindings.push_back(bind_value(name, v));
      } else {
        unsupported = "input kind " + kind;
      }
    }
    if (!unsupported.empty()) {
      out.skipped.push_back("case:" + id + ": " + unsupported);
      continue;
    }
    try {
      Script script =
          Script::from_source(read_text(root + "/" + c.at("file").as_string()), id + ".py");
      out.programs.push_back({"case:" + id, script.lower(c.at("entry").as_string(), bindings)});
    } catch (const InternalError&) {
      throw;
    } catch (const Error& e) {  // a case the frontend does not support (yet)
      out.skipped.push_back("case:" + id + ": " + e.what());
    }
  }
}

}  // namespace programs_detail

inline Programs all_programs() {
  Programs out;
  programs_detail::add_examples(out);
  programs_detail::add_corpus(out);
  return out;
}

}  // namespace kiln::test
