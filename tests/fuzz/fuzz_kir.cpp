// libFuzzer target: bytes as graph-IR text (docs/ir.md).
//
// parse_graph -> print/parse round trip -> verify -> (small static graphs)
// interpret on deterministic small-valued inputs. kiln::Error is the expected
// answer to bad text and is swallowed; anything else (kiln::InternalError, a
// sanitizer report, a broken round trip, a hang) is a finding and aborts.
// Assumes the registry's reference implementations need memory roughly
// proportional to the values' sizes, which the size guard below bounds.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "ir/graph.h"
#include "ir/interpreter.h"
#include "ir/op_registry.h"
#include "kiln/element.h"
#include "kiln/error.h"
#include "kiln/tensor.h"

namespace {

using namespace kiln;

[[noreturn]] void finding(const char* what, const std::string& detail) {
  std::fprintf(stderr, "fuzz_kir: %s\n%s\n", what, detail.c_str());
  std::abort();
}

// Keeps the interpreter's work small so the fuzzer spends its time on parsing
// and inference, not on big loops: static shapes, <= 4096 elements per value,
// and a rough bound on total element work (contractions and windows count
// output x largest input).
constexpr int64_t kMaxNumel = 4096;
constexpr int64_t kMaxWork = int64_t{1} << 24;

bool small_static(const ir::Type& t, int64_t* numel) {
  *numel = 1;
  if (!t.is_tensor()) return true;
  for (const ir::Dim& d : t.dims()) {
    if (!d.is_static() || d.value < 0 || d.value > kMaxNumel) return false;
    *numel *= d.value;
    if (*numel > kMaxNumel) return false;
  }
  return true;
}

bool worth_interpreting(const ir::Graph& g) {
  int64_t n = 0;
  for (const auto& in : g.inputs()) {
    if (!small_static(in->type(), &n)) return false;
  }
  int64_t work = 0;
  for (const auto& node : g.nodes()) {
    int64_t out = 0, max_in = 0, sum_in = 0;
    for (size_t k = 0; k < node->num_outputs(); ++k) {
      if (!small_static(node->output(k)->type(), &n)) return false;
      out += n;
    }
    for (const ir::Value* v : node->inputs()) {
      small_static(v->type(), &n);
      max_in = std::max(max_in, n);
      sum_in += n;
    }
    bool dense = node->def() && (node->def()->category == ir::OpCategory::Contraction ||
                                 node->def()->category == ir::OpCategory::Other);
    work += dense ? (out + 1) * (max_in + 1) : out + sum_in + 1;
    if (work > kMaxWork) return false;
  }
  return true;
}

// Small values (including zeros, so integer division by zero is exercised)
// that every dtype represents exactly.
Tensor make_input(const ir::Type& t) {
  switch (t.kind()) {
    case ir::TypeKind::None:
      return Tensor();
    case ir::TypeKind::Int:
      return Tensor::scalar(2, DType::I64);
    case ir::TypeKind::Float:
      return Tensor::scalar(0.5, DType::F64);
    case ir::TypeKind::Bool:
      return Tensor::scalar(1, DType::Bool);
    case ir::TypeKind::Tensor:
      break;
  }
  const ir::TensorType& tt = t.tensor_type();
  Tensor x = Tensor::empty(ir::static_shape(tt.dims), tt.dtype);
  bool unsigned_like = tt.dtype == DType::U8 || tt.dtype == DType::Bool;
  char* p = static_cast<char*>(x.data_ptr());
  for (int64_t i = 0; i < x.numel(); ++i) {
    int64_t v = unsigned_like ? i % 5 : i % 7 - 3;
    store_int(tt.dtype, p + i * static_cast<int64_t>(x.element_size()), v);
  }
  return x;
}

void run(std::string_view text) {
  std::unique_ptr<ir::Graph> g;
  try {
    g = ir::parse_graph(text, "fuzz.kir");
  } catch (const InternalError&) {
    throw;
  } catch (const Error&) {
    return;
  }

  // docs/ir.md: print_graph(parse_graph(print_graph(g))) == print_graph(g).
  std::string printed = ir::print_graph(*g);
  try {
    std::string again = ir::print_graph(*ir::parse_graph(printed, "printed.kir"));
    if (again != printed) finding("round trip changed the text", printed + "\n---\n" + again);
  } catch (const InternalError&) {
    throw;
  } catch (const Error& e) {
    finding("printed graph does not parse back", printed + "\n---\n" + e.what());
  }

  try {
    ir::verify(*g);
  } catch (const InternalError&) {
    throw;
  } catch (const Error&) {
    return;
  }

  if (!worth_interpreting(*g)) return;
  std::vector<Tensor> inputs;
  for (const auto& in : g->inputs()) inputs.push_back(make_input(in->type()));
  try {
    std::vector<Tensor> out = ir::interpret(*g, inputs);
    if (out.size() != g->outputs().size()) finding("interpret: wrong output count", printed);
  } catch (const InternalError&) {
    throw;
  } catch (const Error&) {
    // Run-time errors on a verified graph are allowed (e.g. an index out of
    // range only known from data).
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    run(std::string_view(reinterpret_cast<const char*>(data), size));
  } catch (const kiln::InternalError& e) {
    finding("kiln::InternalError", e.what());
  }
  return 0;
}
