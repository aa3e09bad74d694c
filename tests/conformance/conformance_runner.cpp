// Conformance runner: runs every case of the TorchScript conformance corpus
// ($KILN_SHARED_DIR/conformance/corpus.json) through the script frontend and
// a backend (the reference interpreter by default; `--backend llvm` or
// `--backend loop-eval` compile each case with kiln::compile), and compares the outputs with
// PyTorch's under the corpus rules (README "Tolerance classes" and "Runner contract").
//
// Each case is classified pass / mismatch (ran, wrong shape, dtype or values) /
// error (accepted, failed at run time) / unsupported (rejected by the
// frontend). Prints one line per case, a summary per category, and finally
// "N passed, N failed"; exits 1 when any case did not pass. The corpus sits
// beside the clone, not in it: without $KILN_SHARED_DIR/conformance the runner
// prints "SKIPPED: no conformance corpus at PATH" and exits 77, which ctest
// reports as a skip (SKIP_RETURN_CODE in tests/conformance/CMakeLists.txt).
//
// Usage: conformance_runner [-v] [--backend NAME] [--device DEV] [ID_SUBSTRING...]
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "frontend/frontend.h"
#include "ir/interpreter.h"
#include "kiln/compile.h"
#include "kiln/error.h"
#include "kiln/tensor.h"
#include "tests/conformance/json.h"

namespace {

using kiln::DType;
using kiln::Tensor;
using kiln::test::Json;

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw kiln::Error("cannot open " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The exit status for "no corpus here"; ctest's SKIP_RETURN_CODE.
constexpr int kSkipped = 77;

std::string shared_dir() {
  if (const char* env = std::getenv("KILN_SHARED_DIR"); env && *env) return env;
  return std::string(KILN_SOURCE_DIR) + "/../shared";
}

struct Tolerance {
  std::string cls;
  double rtol = 0, atol = 0;
};

// All elements of a (possibly strided) tensor as doubles, row-major.
std::vector<double> values(const Tensor& t) {
  Tensor c = t.contiguous();
  Tensor flat = c.view_as_strided({c.numel()}, {1}, c.storage_offset());
  std::vector<double> out;
  out.reserve(size_t(c.numel()));
  for (int64_t i = 0; i < c.numel(); ++i) out.push_back(flat.get(std::vector<int64_t>{i}));
  return out;
}

std::vector<int64_t> int_values(const Tensor& t) {
  Tensor c = t.contiguous();
  Tensor flat = c.view_as_strided({c.numel()}, {1}, c.storage_offset());
  std::vector<int64_t> out;
  for (int64_t i = 0; i < c.numel(); ++i) out.push_back(flat.get_int(std::vector<int64_t>{i}));
  return out;
}

// "" when `got` matches `want`, else what differs. Sets max_err for floats.
std::string compare(const Tensor& got, const Tensor& want, const Tolerance& tol, double& max_err) {
  max_err = 0;
  if (got.dtype() != want.dtype()) {
    return std::string("dtype ") + kiln::dtype_name(got.dtype()) + ", want " +
           kiln::dtype_name(want.dtype());
  }
  if (got.sizes() != want.sizes()) {
    return "shape " + kiln::shape_str(got.sizes()) + ", want " + kiln::shape_str(want.sizes());
  }
  if (want.numel() == 0) return "";
  if (!kiln::is_floating(want.dtype())) {
    std::vector<int64_t> g = int_values(got), w = int_values(want);
    for (size_t i = 0; i < g.size(); ++i) {
      if (g[i] != w[i]) {
        return "element " + std::to_string(i) + " is " + std::to_string(g[i]) + ", want " +
               std::to_string(w[i]);
      }
    }
    return "";
  }
  std::vector<double> g = values(got), w = values(want);
  std::string first;
  for (size_t i = 0; i < g.size(); ++i) {
    bool ok;
    if (std::isnan(w[i]) || std::isnan(g[i])) {
      ok = std::isnan(w[i]) && std::isnan(g[i]);
    } else if (std::isinf(w[i]) || std::isinf(g[i])) {
      ok = g[i] == w[i];
    } else {
      double err = std::fabs(g[i] - w[i]);
      max_err = std::max(max_err, err);
      ok = tol.cls == "exact" ? g[i] == w[i] : err <= tol.atol + tol.rtol * std::fabs(w[i]);
    }
    if (!ok && first.empty()) {
      std::ostringstream os;
      os.precision(9);
      os << "element " << i << " is " << g[i] << ", want " << w[i];
      first = os.str();
    }
  }
  return first;
}

struct Result {
  std::string status;  // pass, mismatch, error, unsupported
  std::string message;
};

Result run_case(const Json& c, const std::string& root, const std::string& backend,
                kiln::Device device) {
  std::string file = c.at("file").as_string();
  std::string source = read_text(root + "/" + file);
  std::vector<kiln::frontend::ArgBinding> bindings;
  std::vector<Tensor> inputs;
  for (const Json& in : c.at("inputs").as_array()) {
    kiln::frontend::ArgBinding b;
    b.name = in.at("name").as_string();
    const std::string& kind = in.at("kind").as_string();
    const Json* value = in.has("value") ? &in.at("value") : nullptr;
    if (kind == "tensor") {
      Tensor t = kiln::read_npy(root + "/" + in.at("file").as_string());
      b.tensor = kiln::ir::TensorType{t.dtype(), kiln::ir::dims_from_shape(t.sizes()),
                                      kiln::Device::cpu()};
      inputs.push_back(t);
    } else if (kind == "int") {
      b.value = value->as_int();
    } else if (kind == "float") {
      b.value = value->as_double();
    } else if (kind == "bool") {
      b.value = value->as_bool();
    } else if (kind == "str") {
      b.value = value->as_string();
    } else if (kind == "int_list") {
      std::vector<int64_t> v;
      for (const Json& x : value->as_array()) v.push_back(x.as_int());
      b.value = v;
    } else {
      return {"unsupported", "input kind '" + kind + "' is not supported by the runner"};
    }
    bindings.push_back(std::move(b));
  }

  std::unique_ptr<kiln::ir::Graph> graph;
  try {
    auto module = kiln::frontend::parse_module(source, file);
    graph = kiln::frontend::lower_function(*module, c.at("entry").as_string(), bindings);
  } catch (const kiln::Error& e) {
    return {"unsupported", e.what()};
  }
  std::vector<Tensor> outs;
  try {
    if (backend == "interp") {
      outs = kiln::ir::interpret(*graph, inputs);
    } else {
      kiln::CompileOptions o;
      o.backend = backend;
      o.device = device;
      outs = kiln::compile(*graph, o)(inputs);
      for (const Tensor& t : outs) {
        // Host inputs in, host outputs out, whatever device ran the kernels.
        if (t.defined() && !t.device().is_cpu()) {
          return {"error", "an output came back on " + t.device().str() + ", not the host"};
        }
      }
    }
  } catch (const std::exception& e) {
    return {"error", e.what()};
  }

  const Json& tj = c.at("tolerance");
  Tolerance tol{tj.at("class").as_string(), tj.at("rtol").as_double(), tj.at("atol").as_double()};
  const std::vector<Json>& want = c.at("outputs").as_array();
  if (outs.size() != want.size()) {
    return {"mismatch", "returned " + std::to_string(outs.size()) + " outputs, want " +
                            std::to_string(want.size())};
  }
  for (size_t k = 0; k < want.size(); ++k) {
    Tensor w = kiln::read_npy(root + "/" + want[k].at("file").as_string());
    double err = 0;
    std::string diff = compare(outs[k], w, tol, err);
    if (!diff.empty()) return {"mismatch", "output " + std::to_string(k) + ": " + diff};
  }
  return {"pass", ""};
}

}  // namespace

int main(int argc, char** argv) {
  bool verbose = false;
  std::string backend = "interp";
  kiln::Device device = kiln::Device::cpu();
  std::vector<std::string> filters;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "-v") {
      verbose = true;
    } else if (a == "--backend" && i + 1 < argc) {
      backend = argv[++i];
    } else if (a == "--device" && i + 1 < argc) {
      std::optional<kiln::Device> d = kiln::Device::parse(argv[++i]);
      if (!d) {
        std::cerr << "conformance: unknown device '" << argv[i] << "'\n";
        return 2;
      }
      device = *d;
    } else {
      filters.push_back(a);
    }
  }
  std::string root = shared_dir() + "/conformance";
  if (!std::filesystem::is_directory(root)) {
    std::cout << "SKIPPED: no conformance corpus at " << root << "\n";
    return kSkipped;
  }
  Json corpus;
  try {
    corpus = Json::parse(read_text(root + "/corpus.json"));
  } catch (const std::exception& e) {
    std::cerr << "conformance: " << e.what() << "\n";
    return 2;
  }

  struct Count {
    int pass = 0, mismatch = 0, error = 0, unsupported = 0;
  };
  std::map<std::string, Count> by_category;
  std::vector<std::string> order;
  int passed = 0, failed = 0;
  for (const Json& c : corpus.at("cases").as_array()) {
    std::string id = c.at("id").as_string();
    if (!filters.empty()) {
      bool hit = false;
      for (const std::string& f : filters) hit = hit || id.find(f) != std::string::npos;
      if (!hit) continue;
    }
    std::string cat = c.at("category").as_string();
    if (!by_category.count(cat)) order.push_back(cat);
    Result r;
    try {
      r = run_case(c, root, backend, device);
    } catch (const std::exception& e) {
      r = {"error", e.what()};
    }
    Count& n = by_category[cat];
    if (r.status == "pass") {
      ++n.pass;
      ++passed;
    } else {
      ++failed;
      (r.status == "mismatch" ? n.mismatch : r.status == "error" ? n.error : n.unsupported)++;
    }
    std::string msg = r.message;
    if (!verbose) {
      size_t nl = msg.find('\n');
      if (nl != std::string::npos) msg = msg.substr(0, nl) + " ...";
    }
    std::printf("%-12s %-28s %s\n", r.status.c_str(), id.c_str(), msg.c_str());
  }
  std::printf("\n%-16s %5s %9s %6s %12s\n", "category", "pass", "mismatch", "error", "unsupported");
  for (const std::string& cat : order) {
    const Count& n = by_category[cat];
    std::printf("%-16s %5d %9d %6d %12d\n", cat.c_str(), n.pass, n.mismatch, n.error,
                n.unsupported);
  }
  std::printf("%d passed, %d failed\n", passed, failed);
  return failed == 0 ? 0 : 1;
}
