// libFuzzer target: bytes as a Kiln script (docs/language.md).
//
// parse_module -> dump_ast -> for every def: lower_function with each tensor
// parameter bound to a small static type (its declared dtype and dims when
// annotated, symbols set to 3; else f32[2, 3]) and each other parameter left to
// its default or given a plain value -> verify -> print/parse round trip.
// kiln::Error is the expected answer to a bad script and is swallowed;
// anything else (kiln::InternalError, a lowered graph that does not verify or
// does not read back, a sanitizer report, a hang) is a finding and aborts.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "frontend/frontend.h"
#include "ir/graph.h"
#include "kiln/error.h"

namespace {

using namespace kiln;

[[noreturn]] void finding(const char* what, const std::string& detail) {
  std::fprintf(stderr, "fuzz_script: %s\n%s\n", what, detail.c_str());
  std::abort();
}

std::vector<frontend::ArgBinding> bindings(const frontend::FunctionInfo& fn) {
  std::vector<frontend::ArgBinding> args;
  for (const frontend::ParamInfo& p : fn.params) {
    frontend::ArgBinding a;
    a.name = p.name;
    if (p.kind == frontend::ParamKind::Tensor) {
      ir::TensorType t;
      if (p.declared) {
        t = *p.declared;
        for (ir::Dim& d : t.dims) {
          if (!d.is_static()) d = ir::Dim(3);
        }
      } else {
        t.dims = {2, 3};
      }
      a.tensor = t;
      args.push_back(std::move(a));
      continue;
    }
    if (p.has_default) continue;  // exercise the default path
    switch (p.kind) {
      case frontend::ParamKind::Float:
        a.value = 1.0;
        break;
      case frontend::ParamKind::Bool:
        a.value = true;
        break;
      case frontend::ParamKind::Str:
        a.value = std::string("none");
        break;
      case frontend::ParamKind::IntList:
        a.value = std::vector<int64_t>{1};
        break;
      case frontend::ParamKind::FloatList:
        a.value = std::vector<double>{1.0};
        break;
      case frontend::ParamKind::TensorList: {
        ir::TensorType t;
        t.dims = {2, 3};
        a.tensors = std::vector<ir::TensorType>{t, t};
        break;
      }
      default:
        a.value = int64_t{1};
        break;
    }
    args.push_back(std::move(a));
  }
  return args;
}

void check_graph(const ir::Graph& g) {
  std::string printed = ir::print_graph(g);
  try {
    ir::verify(g);
  } catch (const InternalError&) {
    throw;
  } catch (const Error& e) {
    finding("lowered graph does not verify", printed + "\n---\n" + e.what());
  }
  try {
    std::string again = ir::print_graph(*ir::parse_graph(printed, "lowered.kir"));
    if (again != printed) finding("round trip changed the text", printed + "\n---\n" + again);
  } catch (const InternalError&) {
    throw;
  } catch (const Error& e) {
    finding("lowered graph does not parse back", printed + "\n---\n" + e.what());
  }
}

void run(const std::string& source) {
  std::shared_ptr<const frontend::Module> m;
  try {
    m = frontend::parse_module(source, "fuzz.kiln");
  } catch (const InternalError&) {
    throw;
  } catch (const Error&) {
    return;
  }
  (void)frontend::dump_ast(*m);
  for (const frontend::FunctionInfo& fn : frontend::functions(*m)) {
    std::unique_ptr<ir::Graph> g;
    try {
      g = frontend::lower_function(*m, fn.name, bindings(fn));
    } catch (const InternalError&) {
      throw;
    } catch (const Error&) {
      continue;
    }
    if (!g) finding("lower_function returned null", fn.name);
    check_graph(*g);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    run(std::string(reinterpret_cast<const char*>(data), size));
  } catch (const kiln::InternalError& e) {
    finding("kiln::InternalError", e.what());
  }
  return 0;
}
