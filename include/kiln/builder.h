// The C++ builder API: build a graph with operator overloads and named
// functions, then build() it into a verified kiln::Function.
//
//   kiln::Builder b("mlp");
//   kiln::Var x = b.input("x", kiln::DType::F32, {kiln::sym("N"), 784});
//   kiln::Var w = b.input("w", kiln::DType::F32, {784, 256});
//   kiln::Var y = kiln::relu(kiln::matmul(x, w));
//   kiln::Function f = b.build({y});
//
// Each call adds one node whose output types come from the op registry's
// inference, so mistakes (shape mismatch, wrong dtype, mixing Vars of two
// builders) throw kiln::Error at the line that made them, naming the op and
// the operand types. Every registered op is reachable through kiln::op().
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "kiln/function.h"

namespace kiln {

namespace ir {
class Value;
}  // namespace ir

namespace detail {
struct BuilderState;  // the graph under construction (api/builder.cpp)
}  // namespace detail

// A Python-number-like operand: int, float or bool. In dtype promotion it ranks
// below every tensor (an f16 tensor times 2.5 stays f16; an i32 tensor plus 1
// stays i32), as in PyTorch.
class Scalar {
 public:
  enum class Kind : uint8_t { Int, Float, Bool };

  template <typename T>
  requires std::is_arithmetic_v<T> Scalar(T v) {  // NOLINT: implicit so `x * 2` and `1.0 - x` work
    if constexpr (std::is_same_v<T, bool>) {
      kind_ = Kind::Bool;
      i_ = v ? 1 : 0;
    } else if constexpr (std::is_integral_v<T>) {
      kind_ = Kind::Int;
      i_ = static_cast<int64_t>(v);
    } else {
      kind_ = Kind::Float;
      f_ = static_cast<double>(v);
    }
  }
  Kind kind() const { return kind_; }
  int64_t to_int() const { return kind_ == Kind::Float ? static_cast<int64_t>(f_) : i_; }
  double to_double() const { return kind_ == Kind::Float ? f_ : static_cast<double>(i_); }

 private:
  Kind kind_ = Kind::Int;
  int64_t i_ = 0;
  double f_ = 0;
};

// A value in a graph under construction. Cheap to copy; keeps its builder's
// graph alive. A default-constructed Var is "none" (an absent optional operand).
class Var {
 public:
  Var() = default;

  bool defined() const { return value_ != nullptr; }
  ValueKind kind() const;
  DType dtype() const;                     // a scalar's run-time dtype: int -> i64, float -> f64
  std::vector<Dim> dims() const;           // error unless a tensor
  int64_t rank() const;                    // error unless a tensor
  std::string type_str() const;            // "f32[N, 256]", "float", "none"
  const std::string& name() const;         // name hint ("" when none)
  void set_name(const std::string& name);  // name hint kept by the printer

  // For Kiln's own code: the IR value and the builder it belongs to.
  ir::Value* value() const { return value_; }
  const std::shared_ptr<detail::BuilderState>& state() const { return state_; }
  Var(std::shared_ptr<detail::BuilderState> state, ir::Value* value)
      : state_(std::move(state)), value_(value) {}

 private:
  std::shared_ptr<detail::BuilderState> state_;
  ir::Value* value_ = nullptr;
};

// One operand of kiln::op(): a Var (a default Var is none) or a scalar.
class Operand {
 public:
  Operand(Var v) : var_(std::move(v)) {}  // NOLINT
  template <typename T>
  requires std::is_arithmetic_v<T> Operand(T v) : scalar_(Scalar(v)) {}  // NOLINT
  Operand(Scalar s) : scalar_(s) {}                                      // NOLINT

  bool is_scalar() const { return scalar_.has_value(); }
  const Var& var() const { return var_; }
  const Scalar& scalar() const { return *scalar_; }

 private:
  Var var_;
  std::optional<Scalar> scalar_;
};

class Builder {
 public:
  explicit Builder(std::string name = "main");

  // A tensor input. Dims may be symbolic: {kiln::sym("N"), 784}.
  Var input(const std::string& name, DType dtype, std::vector<Dim> dims);
  // A scalar input (fed at run time as a 0-dim tensor: int -> i64, float -> f64).
  Var scalar_input(const std::string& name, Scalar::Kind kind);

  // Constants baked into the graph.
  Var constant(const Tensor& value);
  Var constant(Scalar value);

  // Any registered op, including those without tensor operands (arange, full).
  std::vector<Var> op(const std::string& name, const std::vector<Operand>& operands,
                      const AttrList& attrs = {});

  // Sets the outputs, verifies, and returns an independent Function (the
  // builder stays usable; later nodes do not change the Function).
  Function build(const std::vector<Var>& outputs);

  const std::string& name() const;
  // The graph built so far as text (no verification).
  std::string str() const;

 private:
  std::shared_ptr<detail::BuilderState> state_;
};

// --- generic --------------------------------------------------------------------
// Applies registered op `name`. The builder comes from the Var operands (all
// must share one); scalar operands become constants. Returns every output.
std::vector<Var> op(const std::string& name, const std::vector<Operand>& operands,
                    const AttrList& attrs = {});
// Same, for single-output ops (error if the op has several outputs).
Var op1(const std::string& name, const std::vector<Operand>& operands, const AttrList& attrs = {});

// --- arithmetic (broadcasting, PyTorch dtype promotion) --------------------------
Var operator+(const Var& a, const Var& b);
Var operator+(const Var& a, Scalar b);
Var operator+(Scalar a, const Var& b);
Var operator-(const Var& a, const Var& b);
Var operator-(const Var& a, Scalar b);
Var operator-(Scalar a, const Var& b);
Var operator*(const Var& a, const Var& b);
Var operator*(const Var& a, Scalar b);
Var operator*(Scalar a, const Var& b);
Var operator/(const Var& a, const Var& b);  // true division: ints give floats
Var operator/(const Var& a, Scalar b);
Var operator/(Scalar a, const Var& b);
Var operator-(const Var& a);

Var add(const Operand& a, const Operand& b);
Var sub(const Operand& a, const Operand& b);
Var mul(const Operand& a, const Operand& b);
Var div(const Operand& a, const Operand& b);
Var pow(const Operand& a, const Operand& b);
Var maximum(const Var& a, const Var& b);
Var minimum(const Var& a, const Var& b);

// --- comparisons and selection (bool results) -----------------------------------
Var eq(const Var& a, const Operand& b);
Var ne(const Var& a, const Operand& b);
Var lt(const Var& a, const Operand& b);
Var le(const Var& a, const Operand& b);
Var gt(const Var& a, const Operand& b);
Var ge(const Var& a, const Operand& b);
Var logical_and(const Var& a, const Var& b);
Var logical_or(const Var& a, const Var& b);
Var logical_not(const Var& a);
Var where(const Var& cond, const Operand& a, const Operand& b);
// Bounds may be tensors, scalars or none (a default Var).
Var clamp(const Var& x, const Operand& min, const Operand& max);

// --- unary math and activations --------------------------------------------------
Var neg(const Var& x);
Var abs(const Var& x);
Var exp(const Var& x);
Var log(const Var& x);
Var sqrt(const Var& x);
Var rsqrt(const Var& x);
Var reciprocal(const Var& x);
Var sin(const Var& x);
Var cos(const Var& x);
Var tanh(const Var& x);
Var erf(const Var& x);
Var sigmoid(const Var& x);
Var relu(const Var& x);
Var silu(const Var& x);
Var gelu(const Var& x, const std::string& approximate = "none");  // or "tanh"
Var cast(const Var& x, DType dtype);

// --- reductions and normalization -------------------------------------------------
// `dims` empty reduces over every dim.
Var sum(const Var& x, std::vector<int64_t> dims = {}, bool keepdim = false);
Var mean(const Var& x, std::vector<int64_t> dims = {}, bool keepdim = false);
Var amax(const Var& x, std::vector<int64_t> dims = {}, bool keepdim = false);
Var amin(const Var& x, std::vector<int64_t> dims = {}, bool keepdim = false);
Var softmax(const Var& x, int64_t dim);
Var log_softmax(const Var& x, int64_t dim);
// weight and bias may be none (a default Var).
Var layer_norm(const Var& x, std::vector<int64_t> normalized_shape, const Var& weight = {},
               const Var& bias = {}, double eps = 1e-5);

// --- contractions -------------------------------------------------------------------
Var matmul(const Var& a, const Var& b);
// x @ w^T + b, as torch.nn.functional.linear; bias may be none.
Var linear(const Var& x, const Var& w, const Var& bias = {});
Var conv2d(const Var& x, const Var& w, const Var& bias = {}, std::vector<int64_t> stride = {1, 1},
           std::vector<int64_t> padding = {0, 0}, std::vector<int64_t> dilation = {1, 1},
           int64_t groups = 1);

// --- layout -----------------------------------------------------------------------
Var reshape(const Var& x, std::vector<int64_t> shape);  // one entry may be -1
Var permute(const Var& x, std::vector<int64_t> dims);
Var transpose(const Var& x, int64_t dim0, int64_t dim1);
Var unsqueeze(const Var& x, int64_t dim);
Var squeeze(const Var& x, int64_t dim);
Var cat(const std::vector<Var>& xs, int64_t dim = 0);
Var stack(const std::vector<Var>& xs, int64_t dim = 0);

}  // namespace kiln
