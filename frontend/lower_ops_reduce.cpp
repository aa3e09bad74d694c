// Op table: scans and the reductions PyTorch composes from others — cumsum,
// cumprod, logcumsumexp, cummax/cummin (registry scan ops, ir/ops/scan.cpp),
// var_mean/std_mean, aminmax, count_nonzero, and the norms (torch.norm,
// Tensor.norm, torch.linalg.vector_norm/matrix_norm/norm) built from abs, sum,
// amax/amin, pow and sqrt so that fusion applies to them. Norms follow
// PyTorch's rules: floating inputs only, `dtype=` converts the input first,
// the 2-norm is sqrt(sum(x * x)) (no rescaling, as torch's CPU kernel), the
// 0-"norm" counts nonzeros (NaN counts), +-inf norms of an empty slice fail.
#include <cmath>

#include "frontend/lower.h"

namespace kiln::frontend {

namespace {

const unsigned TM = kTorch | kMethod;

std::vector<int64_t> dims_or_all(Bound& b, const std::string& name) {
  if (b.is_none(name)) return {};
  return b.ints(name);
}

Val pair(Lowerer& L, const std::vector<ir::Value*>& outs) {
  return Val::tuple({L.fresh(outs.at(0)), L.fresh(outs.at(1))});
}

// --- var_mean, std_mean ---------------------------------------------------------------

Val spread_mean(Bound& b, const std::string& op) {
  // var_mean(x, unbiased) is an overload: a bool in the dim slot is `unbiased`.
  const Val& d = b.val("dim");
  bool unbiased = b.bool_("unbiased");
  std::vector<int64_t> dims;
  if (d.kind == Val::Kind::Bool) {
    unbiased = d.i != 0;
  } else {
    dims = dims_or_all(b, "dim");
  }
  int64_t correction = unbiased ? 1 : 0;
  if (!b.is_none("correction")) correction = b.int_("correction");
  bool keep = b.bool_("keepdim");
  ir::Value* x = b.tensor("input");
  Lowerer& L = b.L;
  const Span& at = b.call.callee;
  ir::Value* s =
      L.apply1(op, {x}, {{"dim", dims}, {"correction", correction}, {"keepdim", keep}}, at);
  ir::Value* m = L.apply1("mean", {x}, reduce_attrs(dims, keep), at);
  return pair(L, {s, m});
}

// --- norms ------------------------------------------------------------------------------

struct NormArgs {
  Lowerer& L;
  const Span& at;
  ir::Value* c(double v) { return L.constant(Val::float_(v), at); }
  ir::Value* op(const std::string& name, std::vector<ir::Value*> in, ir::Attrs attrs = {}) {
    return L.apply1(name, std::move(in), std::move(attrs), at);
  }
};

// The input of a norm: floating (as PyTorch requires), converted to `dtype=`.
ir::Value* norm_input(Bound& b, const std::string& arg, const std::string& dtype_arg) {
  ir::Value* x = b.tensor(arg);
  DType t = x->type().dtype();
  if (!is_floating(t)) {
    b.fail(arg, std::string("needs a floating input, got ") + dtype_name(t) +
                    " (as in PyTorch); convert it first, e.g. x.float()");
  }
  if (!dtype_arg.empty()) {
    if (std::optional<DType> d = b.dtype(dtype_arg)) {
      if (!is_floating(*d)) b.fail(dtype_arg, "dtype must be floating for a norm");
      x = b.L.cast(x, *d, b.call.callee);
    }
  }
  return x;
}

// The vector p-norm of x over dims (all when empty).
ir::Value* vector_norm(NormArgs& n, ir::Value* x, double p, const std::vector<int64_t>& dims,
                       bool keep) {
  ir::Attrs r = reduce_attrs(dims, keep);
  if (p == INFINITY) return n.op("amax", {n.op("abs", {x})}, r);
  if (p == -INFINITY) return n.op("amin", {n.op("abs", {x})}, r);
  if (p == 0) {
    ir::Value* nz = n.op("ne", {x, n.c(0)});
    return n.L.cast(n.op("sum", {nz}, r), x->type().dtype(), n.at);
  }
  if (p == 1) return n.op("sum", {n.op("abs", {x})}, r);
  if (p == 2) return n.op("sqrt", {n.op("sum", {n.op("mul", {x, x})}, r)});
  ir::Value* s = n.op("sum", {n.op("pow", {n.op("abs", {x}), n.c(p)})}, r);
  return n.op("pow", {s, n.c(1.0 / p)});
}

double ord_value(Bound& b, const std::string& name) {
  const Val& v = b.val(name);
  if (!v.is_number()) b.fail(name, "ord must be a number here");
  return v.num();
}

// Dims of a matrix norm: two distinct dims of x (wrapped).
std::pair<int64_t, int64_t> matrix_dims(Bound& b, ir::Value* x, const std::vector<int64_t>& dims,
                                        const std::string& arg) {
  const int64_t rank = x->type().rank();
  if (dims.size() != 2) b.fail(arg, "a matrix norm needs dim to be a pair of dims");
  int64_t d[2];
  for (int i = 0; i < 2; ++i) {
    d[i] = dims[size_t(i)] < 0 ? dims[size_t(i)] + rank : dims[size_t(i)];
    if (d[i] < 0 || d[i] >= rank) {
      b.fail(arg, "dim " + std::to_string(dims[size_t(i)]) + " is out of range for a tensor of " +
                      std::to_string(rank) + " dims");
    }
  }
  if (d[0] == d[1]) b.fail(arg, "the two dims of a matrix norm must differ");
  return {d[0], d[1]};
}

// 'fro', or ord 1/-1 (max/min column abs sum) and inf/-inf (max/min row abs
// sum) of the matrices over dims (rows, cols). ord 2/-2 and 'nuc' need an SVD.
ir::Value* matrix_norm(Bound& b, NormArgs& n, ir::Value* x, const Val& ord,
                       const std::vector<int64_t>& dims, bool keep, const std::string& ord_arg,
                       const std::string& dim_arg) {
  auto [r, c] = matrix_dims(b, x, dims, dim_arg);
  if (ord.kind == Val::Kind::Str) {
    if (ord.s == "fro") return vector_norm(n, x, 2, {r, c}, keep);
    if (ord.s == "nuc") b.fail(ord_arg, "the nuclear norm needs an SVD, which Kiln lacks");
    b.fail(ord_arg, "ord must be 'fro', 'nuc' or a number, got '" + ord.s + "'");
  }
  double p = ord_value(b, ord_arg);
  if (p != 1 && p != -1 && p != INFINITY && p != -INFINITY) {
    if (p == 2 || p == -2)
      b.fail(ord_arg, "the spectral norm (ord=2/-2) needs an SVD, which Kiln lacks");
    b.fail(ord_arg, "a matrix norm takes ord 'fro', 'nuc', 1, -1, 2, -2, inf or -inf");
  }
  // ord +-1 sums over rows (per column); +-inf sums over columns (per row).
  bool cols = p == 1 || p == -1;
  int64_t summed = cols ? r : c, picked = cols ? c : r;
  ir::Value* s = n.op("sum", {n.op("abs", {x})}, reduce_attrs({summed}, true));
  ir::Value* m = n.op(p > 0 ? "amax" : "amin", {s}, reduce_attrs({picked}, true));
  if (keep) return m;
  return n.op("squeeze", {m}, {{"dim", std::vector<int64_t>{r, c}}});
}

// torch.norm / Tensor.norm (p='fro', dim=None, keepdim=False, dtype=None).
Val torch_norm(Bound& b) {
  NormArgs n{b.L, b.call.callee};
  ir::Value* x = norm_input(b, "input", "dtype");
  std::vector<int64_t> dims = dims_or_all(b, "dim");
  bool keep = b.bool_("keepdim");
  const Val& p = b.val("p");
  if (p.kind == Val::Kind::Str) {
    if (p.s == "fro" && dims.size() <= 2) return b.L.fresh(vector_norm(n, x, 2, dims, keep));
    if (p.s == "fro") b.fail("dim", "p='fro' takes at most two dims");
    if (dims.empty() && x->type().rank() == 2) dims = {0, 1};
    return b.L.fresh(matrix_norm(b, n, x, p, dims, keep, "p", "dim"));
  }
  double pv = p.kind == Val::Kind::None ? 2 : ord_value(b, "p");
  return b.L.fresh(vector_norm(n, x, pv, dims, keep));
}

// torch.linalg.norm(A, ord=None, dim=None, keepdim=False, *, dtype=None).
Val linalg_norm(Bound& b) {
  NormArgs n{b.L, b.call.callee};
  ir::Value* x = norm_input(b, "A", "dtype");
  const int64_t rank = x->type().rank();
  bool keep = b.bool_("keepdim");
  const Val& ord = b.val("ord");
  if (b.is_none("dim")) {
    if (ord.kind == Val::Kind::None) return b.L.fresh(vector_norm(n, x, 2, {}, keep));
    if (rank == 1) return b.L.fresh(vector_norm(n, x, ord_value(b, "ord"), {}, keep));
    if (rank == 2) return b.L.fresh(matrix_norm(b, n, x, ord, {0, 1}, keep, "ord", "dim"));
    b.fail("ord", "when ord is given without dim, the input must be 1-D or 2-D, got " +
                      std::to_string(rank) + "-D (as in PyTorch)");
  }
  std::vector<int64_t> dims = b.ints("dim");
  if (dims.size() == 1) {
    double p = ord.kind == Val::Kind::None ? 2 : ord_value(b, "ord");
    return b.L.fresh(vector_norm(n, x, p, dims, keep));
  }
  if (dims.size() != 2) b.fail("dim", "dim must name one dim (vector norm) or two (matrix norm)");
  if (ord.kind == Val::Kind::None) return b.L.fresh(vector_norm(n, x, 2, dims, keep));
  return b.L.fresh(matrix_norm(b, n, x, ord, dims, keep, "ord", "dim"));
}

}  // namespace

void add_reduce_ops(std::vector<OpEntry>& t) {
  // --- scans ------------------------------------------------------------------------------
  for (const char* name : {"cumsum", "cumprod"}) {
    std::string op = name;
    t.push_back({name, TM, "input, dim, *, dtype=None", [op](Bound& b) {
                   ir::Attrs attrs{{"dim", b.int_("dim")}};
                   if (auto d = b.dtype("dtype")) attrs.set("dtype", *d);
                   return emit(b, op, {b.tensor("input")}, attrs);
                 }});
  }
  t.push_back({"logcumsumexp", TM, "input, dim", [](Bound& b) {
                 return emit(b, "logcumsumexp", {b.tensor("input")}, {{"dim", b.int_("dim")}});
               }});
  for (const char* name : {"cummax", "cummin"}) {
    std::string op = name;
    t.push_back({name, TM, "input, dim", [op](Bound& b) {
                   return pair(b.L, b.L.apply(op, {b.tensor("input")}, {{"dim", b.int_("dim")}},
                                              b.call.callee));
                 }});
  }

  // --- compositions of reductions ------------------------------------------------------------
  t.push_back({"var_mean", kTorch,
               "input, dim=None, unbiased=True, keepdim=False, *, correction=None",
               [](Bound& b) { return spread_mean(b, "var"); }});
  t.push_back({"std_mean", kTorch,
               "input, dim=None, unbiased=True, keepdim=False, *, correction=None",
               [](Bound& b) { return spread_mean(b, "std"); }});
  t.push_back({"aminmax", TM, "input, *, dim=None, keepdim=False", [](Bound& b) {
                 ir::Value* x = b.tensor("input");
                 std::vector<int64_t> dims;
                 if (!b.is_none("dim")) dims = {b.int_("dim")};
                 ir::Attrs r = reduce_attrs(dims, b.bool_("keepdim"));
                 return pair(b.L, {b.L.apply1("amin", {x}, r, b.call.callee),
                                   b.L.apply1("amax", {x}, r, b.call.callee)});
               }});
  t.push_back({"count_nonzero", TM, "input, dim=None", [](Bound& b) {
                 ir::Value* x = b.tensor("input");
                 const Span& at = b.call.callee;
                 ir::Value* nz = b.L.apply1("ne", {x, b.L.constant(Val::int_(0), at)}, {}, at);
                 return emit(b, "sum", {nz}, reduce_attrs(dims_or_all(b, "dim"), false));
               }});

  // --- norms -------------------------------------------------------------------------------
  t.push_back({"norm", TM, "input, p='fro', dim=None, keepdim=False, dtype=None", torch_norm});
  t.push_back({"linalg.vector_norm", kTorch, "x, ord=2, dim=None, keepdim=False, *, dtype=None",
               [](Bound& b) {
                 NormArgs n{b.L, b.call.callee};
                 ir::Value* x = norm_input(b, "x", "dtype");
                 return b.L.fresh(vector_norm(n, x, ord_value(b, "ord"), dims_or_all(b, "dim"),
                                              b.bool_("keepdim")));
               }});
  t.push_back({"linalg.matrix_norm", kTorch, "A, ord='fro', dim=None, keepdim=False, *, dtype=None",
               [](Bound& b) {
                 NormArgs n{b.L, b.call.callee};
                 ir::Value* x = norm_input(b, "A", "dtype");
                 std::vector<int64_t> dims = {-2, -1};  // PyTorch's default dim=(-2, -1)
                 if (!b.is_none("dim")) dims = b.ints("dim");
                 return b.L.fresh(
                     matrix_norm(b, n, x, b.val("ord"), dims, b.bool_("keepdim"), "ord", "dim"));
               }});
  t.push_back(
      {"linalg.norm", kTorch, "A, ord=None, dim=None, keepdim=False, *, dtype=None", linalg_norm});
}

}  // namespace kiln::frontend
