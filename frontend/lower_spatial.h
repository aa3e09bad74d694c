// Shared helpers of the spatial op table (lower_ops_spatial.cpp,
// lower_ops_interp.cpp): emitting ops at the call, static shapes, constant
// weight matrices applied along one dim.
#pragma once

#include <string>
#include <vector>

#include "frontend/lower.h"
#include "kiln/error.h"

namespace kiln::frontend {

void add_interp_ops(std::vector<OpEntry>& t);  // F.interpolate, F.upsample*

namespace spatial {

inline ir::Value* ap(Bound& b, const std::string& op, std::vector<ir::Value*> in,
                     ir::Attrs attrs = {}) {
  return b.L.apply1(op, std::move(in), std::move(attrs), b.call.callee);
}

inline int64_t rank(ir::Value* x) {
  return x->type().rank();
}

inline Shape static_shape_of(Bound& b, ir::Value* x) {
  Shape s;
  for (int64_t d = 0; d < rank(x); ++d) s.push_back(b.L.static_dim(x, d, b.span("input")));
  return s;
}

inline ir::Value* slice(Bound& b, ir::Value* x, int64_t d, int64_t start, int64_t end,
                        int64_t step = 1) {
  return ap(b, "slice", {x}, {{"dim", d}, {"start", start}, {"end", end}, {"step", step}});
}

inline ir::Value* reshape(Bound& b, ir::Value* x, const Shape& s) {
  return ap(b, "reshape", {x}, {{"shape", s}});
}

inline ir::Value* fill(Bound& b, const Shape& s, double value, DType dt) {
  return ap(b, "full", {}, {{"size", s}, {"value", value}, {"dtype", dt}});
}

inline ir::Value* cat(Bound& b, const std::vector<ir::Value*>& pieces, int64_t d) {
  return pieces.size() == 1 ? pieces[0] : ap(b, "cat", pieces, {{"dim", d}});
}

// A constant tensor of x's dtype holding `vals` (row-major).
inline ir::Value* const_tensor(Bound& b, const Shape& shape, const std::vector<double>& vals,
                               DType dt) {
  Tensor t = Tensor::empty(shape, dt);
  Tensor flat = t.view_as_strided({t.numel()}, {1}, 0);
  for (int64_t k = 0; k < t.numel(); ++k) flat.set(std::vector<int64_t>{k}, vals[size_t(k)]);
  try {
    return b.L.graph().constant(t, b.L.file().loc(b.call.callee));
  } catch (const Error& e) {
    b.L.fail(b.call.callee, e.what());
  }
}

// An int or a tuple of n ints.
inline std::vector<int64_t> ntuple(Bound& b, const std::string& name, size_t n) {
  std::vector<int64_t> v = b.ints(name);
  if (v.size() == 1) v.resize(n, v[0]);
  if (v.size() != n) {
    b.fail(name, "'" + name + "' must be an int or a tuple of " + std::to_string(n) +
                     " ints, got " + std::to_string(v.size()) + " values");
  }
  return v;
}

// "conv1d" for "F.conv1d", to start messages as the other nn ops do.
inline std::string short_name(const Bound& b) {
  return b.fn.substr(b.fn.rfind('.') + 1);
}

inline void check_rank(Bound& b, ir::Value* x, int64_t lo, int64_t hi, const std::string& what) {
  if (rank(x) < lo || rank(x) > hi)
    b.fail("input", short_name(b) + " expects " + what + ", got " + x->type().str());
}

inline void check_floating(Bound& b, ir::Value* x) {
  if (!is_floating(x->type().dtype()))
    b.fail("input", short_name(b) + " expects a floating input, got " + x->type().str());
}

// y = x resampled along dim d by the [in, out] matrix mt (out[o] = sum_i x[i] * mt[i][o]).
inline ir::Value* apply_matrix(Bound& b, ir::Value* x, int64_t d, int64_t in, int64_t out,
                               const std::vector<double>& mt) {
  const int64_t last = rank(x) - 1;
  ir::Value* m = const_tensor(b, {in, out}, mt, x->type().dtype());
  if (d != last) x = ap(b, "transpose", {x}, {{"dim0", d}, {"dim1", last}});
  ir::Value* y = ap(b, "matmul", {x, m});
  if (d != last) y = ap(b, "transpose", {y}, {{"dim0", d}, {"dim1", last}});
  return y;
}

// Adaptive window i of `out` over `in` elements: [start, end), PyTorch's formulas.
inline int64_t window_start(int64_t i, int64_t out, int64_t in) {
  return (i * in) / out;
}
inline int64_t window_end(int64_t i, int64_t out, int64_t in) {
  return ((i + 1) * in + out - 1) / out;
}

}  // namespace spatial
}  // namespace kiln::frontend
