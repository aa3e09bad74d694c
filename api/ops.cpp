// The named op functions and operators of kiln/builder.h. Each is one call of
// kiln::op() with the registry's op and attribute names, so these stay thin and
// every rule (promotion, broadcasting, error text) lives in the op registry.
#include "ir/op_registry.h"
#include "kiln/builder.h"

namespace kiln {

namespace {

Var unary(const char* name, const Var& x, const AttrList& attrs = {}) {
  return op1(name, {x}, attrs);
}

// A binary op whose left operand is a scalar. Ops whose first operand takes a
// scalar (add, sub, mul, div, pow, ... in the registry) get it directly; should
// an op not, add and mul still work by commuting.
Var scalar_left(const char* name, Scalar a, const Var& b) {
  const ir::OpDef* def = ir::OpRegistry::global().find(name);
  bool takes_scalar = def && !def->operands.empty() &&
                      def->operands[0].kind != ir::OperandKind::Tensor &&
                      def->operands[0].kind != ir::OperandKind::OptionalTensor;
  if (takes_scalar) return op1(name, {a, b});
  std::string n = name;
  if (n == "add" || n == "mul") return op1(name, {b, a});
  return op1(name, {a, b});  // let the registry report what it accepts
}

AttrList reduce_attrs(std::vector<int64_t> dims, bool keepdim) {
  return {{"dim", std::move(dims)}, {"keepdim", keepdim}};
}

}  // namespace

// --- arithmetic ---------------------------------------------------------------------------

Var operator+(const Var& a, const Var& b) {
  return op1("add", {a, b});
}
Var operator+(const Var& a, Scalar b) {
  return op1("add", {a, b});
}
Var operator+(Scalar a, const Var& b) {
  return scalar_left("add", a, b);
}
Var operator-(const Var& a, const Var& b) {
  return op1("sub", {a, b});
}
Var operator-(const Var& a, Scalar b) {
  return op1("sub", {a, b});
}
Var operator-(Scalar a, const Var& b) {
  return scalar_left("sub", a, b);
}
Var operator*(const Var& a, const Var& b) {
  return op1("mul", {a, b});
}
Var operator*(const Var& a, Scalar b) {
  return op1("mul", {a, b});
}
Var operator*(Scalar a, const Var& b) {
  return scalar_left("mul", a, b);
}
Var operator/(const Var& a, const Var& b) {
  return op1("div", {a, b});
}
Var operator/(const Var& a, Scalar b) {
  return op1("div", {a, b});
}
Var operator/(Scalar a, const Var& b) {
  return scalar_left("div", a, b);
}
Var operator-(const Var& a) {
  return unary("neg", a);
}

namespace {
Var binary(const char* name, const Operand& a, const Operand& b) {
  if (a.is_scalar() && !b.is_scalar()) return scalar_left(name, a.scalar(), b.var());
  return op1(name, {a, b});
}
}  // namespace

Var add(const Operand& a, const Operand& b) {
  return binary("add", a, b);
}
Var sub(const Operand& a, const Operand& b) {
  return binary("sub", a, b);
}
Var mul(const Operand& a, const Operand& b) {
  return binary("mul", a, b);
}
Var div(const Operand& a, const Operand& b) {
  return binary("div", a, b);
}
Var pow(const Operand& a, const Operand& b) {
  return binary("pow", a, b);
}
Var maximum(const Var& a, const Var& b) {
  return op1("maximum", {a, b});
}
Var minimum(const Var& a, const Var& b) {
  return op1("minimum", {a, b});
}

// --- comparisons and selection ------------------------------------------------------------

Var eq(const Var& a, const Operand& b) {
  return op1("eq", {a, b});
}
Var ne(const Var& a, const Operand& b) {
  return op1("ne", {a, b});
}
Var lt(const Var& a, const Operand& b) {
  return op1("lt", {a, b});
}
Var le(const Var& a, const Operand& b) {
  return op1("le", {a, b});
}
Var gt(const Var& a, const Operand& b) {
  return op1("gt", {a, b});
}
Var ge(const Var& a, const Operand& b) {
  return op1("ge", {a, b});
}
Var logical_and(const Var& a, const Var& b) {
  return op1("logical_and", {a, b});
}
Var logical_or(const Var& a, const Var& b) {
  return op1("logical_or", {a, b});
}
Var logical_not(const Var& a) {
  return unary("logical_not", a);
}
Var where(const Var& cond, const Operand& a, const Operand& b) {
  return op1("where", {cond, a, b});
}
Var clamp(const Var& x, const Operand& min, const Operand& max) {
  return op1("clamp", {x, min, max});
}

// --- unary --------------------------------------------------------------------------------

Var neg(const Var& x) {
  return unary("neg", x);
}
Var abs(const Var& x) {
  return unary("abs", x);
}
Var exp(const Var& x) {
  return unary("exp", x);
}
Var log(const Var& x) {
  return unary("log", x);
}
Var sqrt(const Var& x) {
  return unary("sqrt", x);
}
Var rsqrt(const Var& x) {
  return unary("rsqrt", x);
}
Var reciprocal(const Var& x) {
  return unary("reciprocal", x);
}
Var sin(const Var& x) {
  return unary("sin", x);
}
Var cos(const Var& x) {
  return unary("cos", x);
}
Var tanh(const Var& x) {
  return unary("tanh", x);
}
Var erf(const Var& x) {
  return unary("erf", x);
}
Var sigmoid(const Var& x) {
  return unary("sigmoid", x);
}
Var relu(const Var& x) {
  return unary("relu", x);
}
Var silu(const Var& x) {
  return unary("silu", x);
}
Var gelu(const Var& x, const std::string& approximate) {
  return unary("gelu", x, {{"approximate", approximate}});
}
Var cast(const Var& x, DType dtype) {
  return unary("cast", x, {{"dtype", dtype}});
}

// --- reductions and normalization -----------------------------------------------------------

Var sum(const Var& x, std::vector<int64_t> dims, bool keepdim) {
  return unary("sum", x, reduce_attrs(std::move(dims), keepdim));
}
Var mean(const Var& x, std::vector<int64_t> dims, bool keepdim) {
  return unary("mean", x, reduce_attrs(std::move(dims), keepdim));
}
Var amax(const Var& x, std::vector<int64_t> dims, bool keepdim) {
  return unary("amax", x, reduce_attrs(std::move(dims), keepdim));
}
Var amin(const Var& x, std::vector<int64_t> dims, bool keepdim) {
  return unary("amin", x, reduce_attrs(std::move(dims), keepdim));
}
Var softmax(const Var& x, int64_t dim) {
  return unary("softmax", x, {{"dim", dim}});
}
Var log_softmax(const Var& x, int64_t dim) {
  return unary("log_softmax", x, {{"dim", dim}});
}
Var layer_norm(const Var& x, std::vector<int64_t> normalized_shape, const Var& weight,
               const Var& bias, double eps) {
  return op1("layer_norm", {x, weight, bias},
             {{"normalized_shape", std::move(normalized_shape)}, {"eps", eps}});
}

// --- contractions -----------------------------------------------------------------------------

Var matmul(const Var& a, const Var& b) {
  return op1("matmul", {a, b});
}
Var linear(const Var& x, const Var& w, const Var& bias) {
  return op1("linear", {x, w, bias});
}
Var conv2d(const Var& x, const Var& w, const Var& bias, std::vector<int64_t> stride,
           std::vector<int64_t> padding, std::vector<int64_t> dilation, int64_t groups) {
  return op1("conv2d", {x, w, bias},
             {{"stride", std::move(stride)},
              {"padding", std::move(padding)},
              {"dilation", std::move(dilation)},
              {"groups", groups}});
}

// --- layout -------------------------------------------------------------------------------------

Var reshape(const Var& x, std::vector<int64_t> shape) {
  return unary("reshape", x, {{"shape", std::move(shape)}});
}
Var permute(const Var& x, std::vector<int64_t> dims) {
  return unary("permute", x, {{"dims", std::move(dims)}});
}
Var transpose(const Var& x, int64_t dim0, int64_t dim1) {
  return unary("transpose", x, {{"dim0", dim0}, {"dim1", dim1}});
}
Var unsqueeze(const Var& x, int64_t dim) {
  return unary("unsqueeze", x, {{"dim", dim}});
}
Var squeeze(const Var& x, int64_t dim) {
  return unary("squeeze", x, {{"dim", std::vector<int64_t>{dim}}});
}

namespace {
Var join(const char* name, const std::vector<Var>& xs, int64_t dim) {
  std::vector<Operand> operands(xs.begin(), xs.end());
  return op1(name, operands, {{"dim", dim}});
}
}  // namespace

Var cat(const std::vector<Var>& xs, int64_t dim) {
  return join("cat", xs, dim);
}
Var stack(const std::vector<Var>& xs, int64_t dim) {
  return join("stack", xs, dim);
}

}  // namespace kiln
