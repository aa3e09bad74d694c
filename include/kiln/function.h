// kiln::Function — a verified graph you can print, inspect and run — and the
// small value types the public API shares: Dim, TensorSpec, ValueInfo, Attr.
//
// This header stays free of Kiln's internal headers: the graph IR is only
// forward-declared, so including kiln/kiln.h pulls in the public runtime types
// (Tensor, DType, Error) and nothing else.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "kiln/dtype.h"
#include "kiln/error.h"
#include "kiln/tensor.h"

namespace kiln {

namespace ir {
class Graph;
}  // namespace ir

// One dimension of a tensor type: a known size, or a symbol such as `N` that is
// bound only when the function runs (so one graph serves every batch size).
struct Dim {
  int64_t value = 0;
  std::string symbol;  // non-empty => symbolic

  Dim() = default;
  // Implicit from any integer so {2, 3} and {n, x.size()} read as dims.
  template <typename T>
  requires(std::is_integral_v<T> && !std::is_same_v<T, bool>) Dim(T v)
      : value(static_cast<int64_t>(v)) {}  // NOLINT
  bool is_static() const { return symbol.empty(); }
  bool operator==(const Dim&) const = default;
  std::string str() const;  // "784" or "N"
};

// A symbolic dim: `{kiln::sym("N"), 784}`.
Dim sym(std::string name);

// A tensor's compile-time type: element type and dims (some maybe symbolic).
struct TensorSpec {
  DType dtype = DType::F32;
  std::vector<Dim> dims;

  bool operator==(const TensorSpec&) const = default;
  std::string str() const;  // "f32[N, 784]"
};

// Kinds of graph values: tensors, and compile-time scalar operands.
enum class ValueKind : uint8_t { Tensor, Int, Float, Bool, None };

// A function input or output as seen from outside.
struct ValueInfo {
  std::string name;
  ValueKind kind = ValueKind::Tensor;
  TensorSpec tensor;  // meaningful when kind == Tensor; else dtype is the scalar's
  std::string type;   // printed type: "f32[N, 784]", "float", ...
};

// An attribute value for kiln::op(): none, bool, int, float, string, int list,
// float list, dtype or constant tensor. Constructors are implicit so attribute
// lists read naturally: {{"dim", 1}, {"keepdim", true}, {"shape", {2, 3}}}.
class Attr {
 public:
  using Storage = std::variant<std::monostate, bool, int64_t, double, std::string,
                               std::vector<int64_t>, std::vector<double>, DType, Tensor>;

  Attr() = default;  // none
  template <typename T>
  requires std::is_arithmetic_v<T> Attr(T v) {  // NOLINT
    if constexpr (std::is_same_v<T, bool>) {
      v_ = v;
    } else if constexpr (std::is_integral_v<T>) {
      v_ = static_cast<int64_t>(v);
    } else {
      v_ = static_cast<double>(v);
    }
  }
  Attr(const char* s) : v_(std::string(s)) {}                                    // NOLINT
  Attr(std::string s) : v_(std::move(s)) {}                                      // NOLINT
  Attr(std::initializer_list<int64_t> ints) : v_(std::vector<int64_t>(ints)) {}  // NOLINT
  Attr(std::vector<int64_t> ints) : v_(std::move(ints)) {}                       // NOLINT
  Attr(std::vector<double> floats) : v_(std::move(floats)) {}                    // NOLINT
  Attr(DType t) : v_(t) {}                                                       // NOLINT
  Attr(Tensor t) : v_(std::move(t)) {}                                           // NOLINT

  bool is_none() const { return v_.index() == 0; }
  const Storage& storage() const { return v_; }
  std::string str() const;  // the text-IR spelling: none, 3, 1.0e-05, [1, 2], "floor", f32

 private:
  Storage v_;
};

using AttrList = std::vector<std::pair<std::string, Attr>>;

// A verified graph. Copies share the (immutable) graph.
class Function {
 public:
  Function() = default;  // empty; most methods throw kiln::Error on it

  bool valid() const { return graph_ != nullptr; }
  const std::string& name() const;
  std::string str() const;  // text IR (docs/ir.md); parse_ir(f.str()) gives it back
  void verify() const;      // throws kiln::Error naming the bad node
  std::vector<ValueInfo> inputs() const;
  std::vector<ValueInfo> outputs() const;
  // Position of the input called `name`, or -1.
  int input_index(std::string_view name) const;

  // Runs the reference interpreter. `inputs` follow inputs() order; a scalar
  // input is a 0-dim tensor. Symbolic dims bind to the actual sizes.
  std::vector<Tensor> run_interpreter(const std::vector<Tensor>& inputs) const;

  // The underlying graph, for Kiln's own tools and tests (ir/graph.h).
  const ir::Graph& graph() const;
  // Wraps a graph (takes ownership; does not verify).
  static Function from_graph(std::shared_ptr<ir::Graph> graph);

 private:
  std::shared_ptr<const ir::Graph> graph_;
};

// Parses text IR (one `graph @name(...) { ... }`) and verifies it. Errors carry
// "filename:line:col: error: ..." with the source line and a caret.
Function parse_ir(std::string_view text, const std::string& filename = "<input>");
// Reads and parses a .kir file.
Function load_ir(const std::string& path);

// The registered ops, for listings (`kiln ops`) and for reaching ops by name.
struct OpInfo {
  std::string name;
  std::string signature;  // "add(a: Tensor, b: Tensor|Scalar) {alpha: float = 1.0} -> elementwise"
  std::string category;   // elementwise, reduction, contraction, layout, other
  std::string doc;        // one line
  std::string family;     // activation, scan, indexing, ... (`kiln ops` groups by it)
  std::vector<std::string> dtypes;    // accepted tensor dtypes ("f32", "i64", ...); empty: unknown
  std::vector<std::string> backends;  // of llvm, loop-eval, interp, sim, cuda
};
std::vector<OpInfo> list_ops();  // sorted by name
std::optional<OpInfo> find_op(std::string_view name);
// Up to `n` registered names close to `name` (for "did you mean").
std::vector<std::string> suggest_ops(std::string_view name, size_t n = 3);

// Kiln's version, "0.1.0".
const char* version();

}  // namespace kiln
