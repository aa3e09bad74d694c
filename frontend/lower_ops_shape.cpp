// Op table, part 4: shapes and creation (issue 13). Most are compositions of
// existing registry ops, as PyTorch itself composes them, so fusion applies:
//   outer/ger, addmv/addr/baddbmm/addbmm  matmul/bmm/mul + scaled add
//   repeat/tile/repeat_interleave          unsqueeze + expand + reshape
//   roll                                   cat of two slices per dim
//   rot90                                  flip + transpose
//   tensor_split                           slices (views)
//   meshgrid/cartesian_prod                reshape + expand (+ stack)
//   diag (1-D), diag_embed                 where(col - row == k, x, 0)
//   trace                                  sum of a diagonal
//   movedim/moveaxis                       permute
// flip, diagonal and Tensor.unfold are registry layout ops (views; see
// ir/ops/layout_stride.cpp). linspace/logspace are compile-time constants.
// torch.einsum lives in lower_ops_einsum.cpp.
#include <algorithm>
#include <cmath>

#include "frontend/lower.h"
#include "kiln/error.h"

namespace kiln::frontend {

void add_einsum_ops(std::vector<OpEntry>& t);  // lower_ops_einsum.cpp

namespace {

const unsigned TM = kTorch | kMethod;

std::string ints_str(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

ir::Value* op(Bound& b, const std::string& name, std::vector<ir::Value*> ins,
              ir::Attrs attrs = {}) {
  return b.L.apply1(name, std::move(ins), std::move(attrs), b.call.callee);
}

Val view(Bound& b, ir::Value* v) {
  return b.L.view_of(v, b.val("input"));
}

int64_t norm_dim(Bound& b, int64_t d, int64_t rank, const std::string& arg) {
  int64_t r = std::max<int64_t>(rank, 1);
  if (d < -r || d >= r) {
    b.fail(arg, "dimension out of range (expected to be in range of [" + std::to_string(-r) + ", " +
                    std::to_string(r - 1) + "], but got " + std::to_string(d) + ")");
  }
  return d < 0 ? d + r : d;
}

int64_t sdim(Bound& b, ir::Value* x, int64_t d, const std::string& arg = "input") {
  return b.L.static_dim(x, d, b.span(arg));
}

std::vector<int64_t> static_dims(Bound& b, ir::Value* x, const std::string& arg = "input") {
  std::vector<int64_t> out;
  for (int64_t d = 0; d < x->type().rank(); ++d) out.push_back(sdim(b, x, d, arg));
  return out;
}

ir::Value* slice(Bound& b, ir::Value* x, int64_t dim, int64_t start, int64_t end) {
  return op(b, "slice", {x}, {{"dim", dim}, {"start", start}, {"end", end}, {"step", int64_t(1)}});
}

ir::Value* arange(Bound& b, int64_t n) {
  return op(b, "arange", {},
            {{"start", 0.0}, {"end", double(n)}, {"step", 1.0}, {"dtype", DType::I64}});
}

ir::Value* flip(Bound& b, ir::Value* x, std::vector<int64_t> dims) {
  return op(b, "flip", {x}, {{"dims", std::move(dims)}});
}

// beta * input + alpha * prod, as addmm; beta == 0 ignores input (NaN included).
Val scaled_add(Bound& b, ir::Value* prod) {
  if (b.float_("alpha") != 1) prod = op(b, "mul", {prod, b.operand("alpha")});
  ir::Value* in = b.tensor("input");
  if (b.float_("beta") == 0) {
    // where(true, prod, input): input only broadcasts, its NaN and inf do not propagate.
    ir::Value* yes = op(b, "full", {},
                        {{"size", std::vector<int64_t>{}}, {"value", 1.0}, {"dtype", DType::Bool}});
    return emit(b, "where", {yes, prod, in});
  }
  if (b.float_("beta") != 1) in = op(b, "mul", {in, b.operand("beta")});
  return emit(b, "add", {in, prod});
}

ir::Value* require_rank(Bound& b, const std::string& arg, int64_t rank, const std::string& what) {
  ir::Value* v = b.tensor(arg);
  if (v->type().rank() != rank) {
    b.fail(arg, what + ": expected " + std::to_string(rank) + "-D tensor for '" + arg + "', got " +
                    v->type().str());
  }
  return v;
}

ir::Value* outer(Bound& b, ir::Value* a, ir::Value* v) {
  return op(b, "mul", {op(b, "unsqueeze", {a}, {{"dim", int64_t(1)}}), v});
}

// x.repeat(*sizes): [1, s0, 1, s1, ...] expanded to [r0, s0, r1, s1, ...], merged pairwise.
Val repeat(Bound& b, ir::Value* x, std::vector<int64_t> reps, const std::string& arg) {
  const int64_t r = x->type().rank();
  if (int64_t(reps.size()) < r) {
    b.fail(arg, "number of dimensions of repeat dims (" + std::to_string(reps.size()) +
                    ") can not be smaller than number of dimensions of tensor (" +
                    std::to_string(r) + ")");
  }
  for (int64_t n : reps) {
    if (n < 0) b.fail(arg, "repeats can not be negative, got " + std::to_string(n));
  }
  std::vector<int64_t> sizes(reps.size() - size_t(r), 1), inter, expanded, merged;
  for (int64_t s : static_dims(b, x)) sizes.push_back(s);
  for (size_t k = 0; k < reps.size(); ++k) {
    inter.insert(inter.end(), {1, sizes[k]});
    expanded.insert(expanded.end(), {reps[k], sizes[k]});
    merged.push_back(reps[k] * sizes[k]);
  }
  ir::Value* v = op(b, "reshape", {x}, {{"shape", inter}});
  v = op(b, "expand", {v}, {{"size", expanded}});
  return emit(b, "reshape", {v}, {{"shape", merged}});
}

// The values of a compile-time constant tensor (torch.tensor([...]) in the
// script), or nothing for a tensor known only at run time.
std::optional<std::vector<int64_t>> constant_ints(ir::Value* v) {
  ir::Node* n = v->producer();
  if (n && n->op() == "full" && n->attrs().get_ints("size").empty() &&
      !n->attrs().is_none("dtype") && !is_floating(n->attrs().get_dtype("dtype"))) {
    return std::vector<int64_t>{int64_t(n->attrs().get_float("value"))};  // torch.tensor(2)
  }
  if (!n || n->op() != "constant") return std::nullopt;
  const ir::AttrValue* a = n->attrs().find("value");
  std::vector<int64_t> out;
  if (a && std::holds_alternative<int64_t>(*a)) return std::vector<int64_t>{std::get<int64_t>(*a)};
  if (!a || !std::holds_alternative<Tensor>(*a)) return std::nullopt;
  const Tensor& t = std::get<Tensor>(*a);
  if (is_floating(t.dtype()) || t.dim() > 1) return std::nullopt;
  Tensor flat = t.dim() == 0 ? t.view_as_strided({1}, {1}, 0) : t;
  for (int64_t k = 0; k < flat.numel(); ++k) out.push_back(flat.get_int(std::vector<int64_t>{k}));
  return out;
}

// x.repeat_interleave(repeats, dim): each element along dim repeated.
Val repeat_interleave(Bound& b) {
  ir::Value* x = b.tensor("input");
  int64_t dim = 0;
  if (b.is_none("dim")) {
    x = op(b, "reshape", {x}, {{"shape", std::vector<int64_t>{-1}}});
  } else {
    dim = norm_dim(b, b.int_("dim"), x->type().rank(), "dim");
    if (x->type().rank() == 0) x = op(b, "reshape", {x}, {{"shape", std::vector<int64_t>{1}}});
  }
  const int64_t n = sdim(b, x, dim);
  std::vector<int64_t> reps;
  const Val& r = b.val("repeats");
  if (r.is_tensor()) {
    std::optional<std::vector<int64_t>> c = constant_ints(r.value);
    if (!c) {
      b.fail("repeats",
             "repeat_interleave with a tensor of repeats has an output size that depends on "
             "the tensor's values; pass an int or a constant such as torch.tensor([1, 2])");
    }
    reps = *c;
  } else {
    reps = {b.int_("repeats")};
  }
  for (int64_t k : reps) {
    if (k < 0) b.fail("repeats", "repeats can not be negative, got " + std::to_string(k));
  }
  if (reps.size() == 1) reps.assign(size_t(n), reps[0]);
  if (int64_t(reps.size()) != n) {
    b.fail("repeats", "repeats must have the same size as input along dim: " +
                          std::to_string(reps.size()) + " vs " + std::to_string(n));
  }
  std::vector<int64_t> dims = static_dims(b, x);
  const bool uniform =
      std::all_of(reps.begin(), reps.end(), [&](int64_t k) { return k == reps[0]; });
  if (uniform || n == 0) {
    const int64_t k = n == 0 ? 0 : reps[0];
    std::vector<int64_t> inter = dims, expanded = dims, merged = dims;
    inter.insert(inter.begin() + dim + 1, 1);
    expanded.insert(expanded.begin() + dim + 1, k);
    merged[size_t(dim)] *= k;
    ir::Value* v = op(b, "reshape", {x}, {{"shape", inter}});
    v = op(b, "expand", {v}, {{"size", expanded}});
    return emit(b, "reshape", {v}, {{"shape", merged}});
  }
  if (n > 1024)
    b.fail("repeats",
           "repeat_interleave with varying repeats supports at most 1024 elements along dim");
  // Varying constant repeats: one expanded slice per element, joined.
  std::vector<ir::Value*> pieces;
  for (int64_t i = 0; i < n; ++i) {
    if (reps[size_t(i)] == 0) continue;
    std::vector<int64_t> size = dims;
    size[size_t(dim)] = reps[size_t(i)];
    pieces.push_back(op(b, "expand", {slice(b, x, dim, i, i + 1)}, {{"size", size}}));
  }
  if (pieces.empty()) {
    return emit(b, "slice", {x},
                {{"dim", dim}, {"start", int64_t(0)}, {"end", int64_t(0)}, {"step", int64_t(1)}});
  }
  while (pieces.size() > 32) {
    std::vector<ir::Value*> next;
    for (size_t i = 0; i < pieces.size(); i += 32) {
      std::vector<ir::Value*> group(pieces.begin() + ptrdiff_t(i),
                                    pieces.begin() + ptrdiff_t(std::min(pieces.size(), i + 32)));
      next.push_back(op(b, "cat", group, {{"dim", dim}}));
    }
    pieces = next;
  }
  return emit(b, "cat", pieces, {{"dim", dim}});
}

// torch.roll: per (shift, dim), cat(x[n-s:], x[:n-s]) along dim.
Val roll(Bound& b) {
  ir::Value* x = b.tensor("input");
  std::vector<int64_t> shifts = b.ints("shifts"), dims;
  if (b.is_none("dims")) {
    if (shifts.size() != 1) b.fail("shifts", "shifts must be a single int when dims is not given");
    std::vector<int64_t> shape = static_dims(b, x);
    ir::Value* flat = op(b, "reshape", {x}, {{"shape", std::vector<int64_t>{-1}}});
    int64_t n = 1;
    for (int64_t s : shape) n *= s;
    int64_t s = n == 0 ? 0 : ((shifts[0] % n) + n) % n;
    if (s != 0)
      flat = op(b, "cat", {slice(b, flat, 0, n - s, n), slice(b, flat, 0, 0, n - s)},
                {{"dim", int64_t(0)}});
    return emit(b, "reshape", {flat}, {{"shape", shape}});
  }
  dims = b.ints("dims");
  if (shifts.size() != dims.size()) {
    b.fail("shifts", "shifts and dimensions must align. shifts: " + std::to_string(shifts.size()) +
                         ", dims:" + std::to_string(dims.size()));
  }
  ir::Value* v = x;
  for (size_t k = 0; k < dims.size(); ++k) {
    int64_t d = norm_dim(b, dims[k], x->type().rank(), "dims");
    int64_t n = sdim(b, x, d);
    int64_t s = n == 0 ? 0 : ((shifts[k] % n) + n) % n;
    if (s == 0) continue;
    v = op(b, "cat", {slice(b, v, d, n - s, n), slice(b, v, d, 0, n - s)}, {{"dim", d}});
  }
  if (v == x) return emit(b, "copy", {x});
  return b.L.fresh(v);
}

Val rot90(Bound& b) {
  ir::Value* x = b.tensor("input");
  std::vector<int64_t> dims = b.is_none("dims") ? std::vector<int64_t>{0, 1} : b.ints("dims");
  const int64_t r = x->type().rank();
  if (dims.size() != 2)
    b.fail("dims",
           "expected total rotation dims == 2, but got dims = " + std::to_string(dims.size()));
  if (r < 2) b.fail("input", "expected total dims >= 2, but got total dims = " + std::to_string(r));
  int64_t d0 = norm_dim(b, dims[0], r, "dims"), d1 = norm_dim(b, dims[1], r, "dims");
  if (d0 == d1)
    b.fail("dims", "expected rotation dims to be different, but got dim0 = " + std::to_string(d0) +
                       " and dim1 = " + std::to_string(d1));
  int64_t k = ((b.int_("k") % 4) + 4) % 4;
  ir::Attrs tr{{"dim0", d0}, {"dim1", d1}};
  if (k == 1) return emit(b, "transpose", {flip(b, x, {d1})}, tr);
  if (k == 2) return emit(b, "flip", {x}, {{"dims", std::vector<int64_t>{d0, d1}}});
  if (k == 3) return emit(b, "transpose", {flip(b, x, {d0})}, tr);
  return emit(b, "copy", {x});
}

Val tensor_split(Bound& b) {
  ir::Value* x = b.tensor("input");
  const int64_t d = norm_dim(b, b.int_("dim"), x->type().rank(), "dim");
  if (x->type().rank() == 0)
    b.fail("input",
           "tensor_split expects at least a 1-dimensional tensor, but got a tensor with 0 dims");
  const int64_t n = sdim(b, x, d);
  std::vector<int64_t> bounds{0};
  const Val& s = b.val("indices_or_sections");
  if (s.is_seq()) {
    for (int64_t i : b.ints("indices_or_sections")) bounds.push_back(i);
  } else {
    int64_t k = b.int_("indices_or_sections");
    if (k <= 0)
      b.fail("indices_or_sections",
             "number of sections must be larger than 0, got " + std::to_string(k));
    int64_t base = n / k, extra = n % k, at = 0;
    for (int64_t i = 0; i + 1 < k; ++i) {
      at += base + (i < extra ? 1 : 0);
      bounds.push_back(at);
    }
  }
  bounds.push_back(INT64_MAX);
  std::vector<Val> outs;
  for (size_t i = 0; i + 1 < bounds.size(); ++i) {
    // Python slicing: negative indices count from the end, an end before the start is empty.
    auto clampi = [n](int64_t i) { return std::clamp<int64_t>(i < 0 ? i + n : i, 0, n); };
    int64_t lo = clampi(bounds[i]), hi = std::max(lo, clampi(bounds[i + 1]));
    outs.push_back(view(b, slice(b, x, d, lo, hi)));
  }
  return Val::tuple(std::move(outs));
}

std::vector<ir::Value*> tensors_arg(Bound& b, const std::string& name) {
  const Val& v = b.val(name);
  const Val* seq = &v;
  if (v.items.size() == 1 && v.items[0].is_seq()) seq = &v.items[0];
  std::vector<ir::Value*> out;
  for (const Val& item : seq->items) {
    if (item.kind == Val::Kind::Poison) throw Abort{};
    if (!item.is_tensor()) b.fail(name, "expected tensors, got " + kind_name(item));
    out.push_back(item.value);
  }
  return out;
}

std::vector<ir::Value*> meshgrid(Bound& b, std::vector<ir::Value*> xs, bool xy) {
  std::vector<int64_t> shape;
  for (ir::Value* x : xs) {
    if (x->type().rank() > 1)
      b.fail("tensors", "torch.meshgrid: Expected 0D or 1D tensor in the tensor list but got: " +
                            x->type().str());
    shape.push_back(x->type().rank() == 0 ? 1 : sdim(b, x, 0, "tensors"));
    if (x->type().dtype() != xs[0]->type().dtype())
      b.fail("tensors", "meshgrid expects all tensors to have the same dtype, got " +
                            xs[0]->type().str() + " and " + x->type().str());
  }
  if (xy && xs.size() >= 2) std::swap(shape[0], shape[1]);
  std::vector<ir::Value*> outs;
  for (size_t i = 0; i < xs.size(); ++i) {
    size_t at = i;
    if (xy && xs.size() >= 2 && i < 2) at = 1 - i;
    std::vector<int64_t> r(xs.size(), 1);
    r[at] = shape[at];
    ir::Value* v = op(b, "reshape", {xs[i]}, {{"shape", r}});
    outs.push_back(op(b, "expand", {v}, {{"size", shape}}));
  }
  return outs;
}

// diag_embed(x, offset, dim1, dim2): where(col - row == offset, x at the
// row (offset >= 0) or column, 0) over an m x m plane, m = n + |offset|.
Val diag_embed(Bound& b, ir::Value* x, int64_t offset, int64_t dim1, int64_t dim2,
               const std::string& dim_arg) {
  const int64_t r = x->type().rank() + 1;
  int64_t d1 = norm_dim(b, dim1, r, dim_arg), d2 = norm_dim(b, dim2, r, dim_arg);
  if (d1 == d2)
    b.fail(dim_arg, "diagonal dimensions cannot be identical " + std::to_string(dim1) + ", " +
                        std::to_string(dim2));
  const int64_t n = sdim(b, x, -1), k = std::abs(offset), m = n + k;
  std::vector<int64_t> lead = static_dims(b, x);
  lead.pop_back();
  ir::Value* padded = x;
  if (k > 0) {
    std::vector<int64_t> zshape = lead;
    zshape.push_back(k);
    ir::Value* z =
        op(b, "full", {}, {{"size", zshape}, {"value", 0.0}, {"dtype", x->type().dtype()}});
    padded = op(b, "cat", {x, z}, {{"dim", int64_t(-1)}});
  }
  ir::Value* val = op(b, "unsqueeze", {padded}, {{"dim", int64_t(offset >= 0 ? -1 : -2)}});
  ir::Value* rows = op(b, "unsqueeze", {arange(b, m)}, {{"dim", int64_t(1)}});
  ir::Value* diff = op(b, "sub", {op(b, "unsqueeze", {arange(b, m)}, {{"dim", int64_t(0)}}), rows});
  ir::Value* mask = op(b, "eq", {diff, b.L.constant(Val::int_(offset), b.call.callee)});
  ir::Value* plane = op(b, "where", {mask, val, b.L.constant(Val::int_(0), b.call.callee)});
  // plane is [lead..., m, m]; move its last two dims to d1 and d2.
  std::vector<int64_t> perm(size_t(r), -1);
  perm[size_t(d1)] = r - 2;
  perm[size_t(d2)] = r - 1;
  int64_t next = 0;
  for (int64_t& p : perm) {
    if (p < 0) p = next++;
  }
  bool identity = true;
  for (int64_t i = 0; i < r; ++i) identity = identity && perm[size_t(i)] == i;
  if (identity) return b.L.fresh(plane);
  return emit(b, "permute", {plane}, {{"dims", perm}});
}

// movedim(x, source, destination) as a permute.
Val movedim(Bound& b) {
  ir::Value* x = b.tensor("input");
  const int64_t r = x->type().rank();
  std::vector<int64_t> src = b.ints("source"), dst = b.ints("destination");
  if (src.size() != dst.size()) {
    b.fail("destination", "movedim: Invalid source or destination dims: source (" +
                              std::to_string(src.size()) +
                              " dims) should contain the same number of dims as destination (" +
                              std::to_string(dst.size()) + " dims)");
  }
  std::vector<int64_t> perm(size_t(std::max<int64_t>(r, 0)), -1);
  std::vector<bool> used(perm.size(), false);
  for (size_t i = 0; i < src.size(); ++i) {
    int64_t s = norm_dim(b, src[i], r, "source"), d = norm_dim(b, dst[i], r, "destination");
    if (r == 0) continue;
    if (used[size_t(s)])
      b.fail("source", "movedim: repeated dim in `source` (" + ints_str(src) + ")");
    if (perm[size_t(d)] >= 0)
      b.fail("destination", "movedim: repeated dim in `destination` (" + ints_str(dst) + ")");
    perm[size_t(d)] = s;
    used[size_t(s)] = true;
  }
  int64_t next = 0;
  for (int64_t& p : perm) {
    if (p >= 0) continue;
    while (used[size_t(next)]) ++next;
    p = next++;
  }
  if (r == 0) return b.val("input");
  return view(b, op(b, "permute", {x}, {{"dims", perm}}));
}

// linspace/logspace values, computed as PyTorch's CPU kernel: from both ends
// towards the middle, in double, then rounded (or truncated) to the dtype.
Val spaced(Bound& b, bool log) {
  for (const char* name : {"start", "end"}) {
    if (!b.val(name).is_number())
      b.fail(name, std::string("'") + name + "' must be a number known at compile time, got " +
                       kind_name(b.val(name)));
  }
  const double start = b.float_("start"), end = b.float_("end");
  const int64_t steps = b.int_("steps");
  if (steps < 0) b.fail("steps", "number of steps must be non-negative");
  DType dt = b.dtype("dtype").value_or(default_float());
  Tensor t = Tensor::empty({steps}, dt);
  const double step = steps > 1 ? (end - start) / double(steps - 1) : 0;
  const double base = log ? b.float_("base") : 0;
  for (int64_t i = 0; i < steps; ++i) {
    double v = i < steps / 2 ? start + step * double(i) : end - step * double(steps - 1 - i);
    if (steps == 1) v = start;
    if (log) v = std::pow(base, v);
    if (!is_floating(dt)) v = std::trunc(v);
    t.set(std::vector<int64_t>{i}, v);
  }
  try {
    return b.L.fresh(b.L.graph().constant(t, b.L.file().loc(b.call.callee)));
  } catch (const Error& e) {
    b.L.fail(b.call.callee, e.what());
  }
}

Val new_full(Bound& b, double value) {
  ir::Value* x = b.tensor("input");
  std::vector<int64_t> size = b.ints("size");
  for (int64_t s : size) {
    if (s < 0) b.fail("size", "negative size " + std::to_string(s));
  }
  return emit(
      b, "full", {},
      {{"size", size}, {"value", value}, {"dtype", b.dtype("dtype").value_or(x->type().dtype())}});
}

}  // namespace

void add_shape_ops(std::vector<OpEntry>& t) {
  add_einsum_ops(t);
  // --- contractions with scaling ------------------------------------------------------------
  for (const char* name : {"outer", "ger"}) {
    t.push_back({name, TM, "input, vec2", [](Bound& b) {
                   ir::Value* a = require_rank(b, "input", 1, "outer");
                   ir::Value* v = require_rank(b, "vec2", 1, "outer");
                   return b.L.fresh(outer(b, a, v));
                 }});
  }
  t.push_back({"addmv", TM, "input, mat, vec, *, beta=1, alpha=1", [](Bound& b) {
                 ir::Value* m = require_rank(b, "mat", 2, "addmv");
                 ir::Value* v = require_rank(b, "vec", 1, "addmv");
                 return scaled_add(b, op(b, "matmul", {m, v}));
               }});
  t.push_back({"addr", TM, "input, vec1, vec2, *, beta=1, alpha=1", [](Bound& b) {
                 ir::Value* a = require_rank(b, "vec1", 1, "addr");
                 ir::Value* v = require_rank(b, "vec2", 1, "addr");
                 return scaled_add(b, outer(b, a, v));
               }});
  t.push_back({"baddbmm", TM, "input, batch1, batch2, *, beta=1, alpha=1", [](Bound& b) {
                 return scaled_add(b, op(b, "bmm", {b.tensor("batch1"), b.tensor("batch2")}));
               }});
  t.push_back({"addbmm", TM, "input, batch1, batch2, *, beta=1, alpha=1", [](Bound& b) {
                 ir::Value* p = op(b, "bmm", {b.tensor("batch1"), b.tensor("batch2")});
                 return scaled_add(b, op(b, "sum", {p}, reduce_attrs({0}, false)));
               }});

  // --- creation -------------------------------------------------------------------------------
  t.push_back({"linspace", kTorch,
               "start, end, steps, *, dtype=None, layout=None, device=None, requires_grad=False",
               [](Bound& b) { return spaced(b, false); }});
  t.push_back(
      {"logspace", kTorch,
       "start, end, steps, base=10.0, *, dtype=None, layout=None, device=None, requires_grad=False",
       [](Bound& b) { return spaced(b, true); }});
  t.push_back(
      {"empty_like", kTorch,
       "input, *, dtype=None, layout=None, device=None, requires_grad=False, memory_format=None",
       [](Bound& b) {
         ir::Value* x = b.tensor("input");
         return emit(b, "full", {},
                     {{"size", static_dims(b, x)},
                      {"value", 0.0},
                      {"dtype", b.dtype("dtype").value_or(x->type().dtype())}});
       }});
  struct NewFill {
    const char* name;
    double value;
  };
  for (NewFill nf : {NewFill{"new_zeros", 0}, NewFill{"new_ones", 1}, NewFill{"new_empty", 0}}) {
    double value = nf.value;
    t.push_back({nf.name, kMethod,
                 "input, *size, dtype=None, layout=None, device=None, requires_grad=False",
                 [value](Bound& b) { return new_full(b, value); }});
  }
  t.push_back(
      {"new_full", kMethod,
       "input, size, fill_value, *, dtype=None, layout=None, device=None, requires_grad=False",
       [](Bound& b) {
         if (!b.val("fill_value").is_number()) b.fail("fill_value", "fill_value must be a number");
         return new_full(b, b.val("fill_value").num());
       }});
  t.push_back({"new_tensor", kMethod, "input, data, dtype=None, device=None, requires_grad=False",
               [](Bound& b) {
                 DType dt = b.dtype("dtype").value_or(b.tensor("input")->type().dtype());
                 Val v = find_op(kTorch, "tensor")->fn(b);
                 return b.L.fresh(b.L.cast(v.value, dt, b.call.callee));
               }});

  // --- repeats --------------------------------------------------------------------------------
  t.push_back({"repeat", kMethod, "input, *sizes",
               [](Bound& b) { return repeat(b, b.tensor("input"), b.ints("sizes"), "sizes"); }});
  t.push_back({"tile", TM, "input, dims", [](Bound& b) {
                 ir::Value* x = b.tensor("input");
                 std::vector<int64_t> reps = b.ints("dims");
                 while (int64_t(reps.size()) < x->type().rank()) reps.insert(reps.begin(), 1);
                 return repeat(b, x, reps, "dims");
               }});
  t.push_back({"repeat_interleave", TM, "input, repeats, dim=None, *, output_size=None",
               repeat_interleave});

  // --- reorderings ----------------------------------------------------------------------------
  t.push_back({"roll", TM, "input, shifts, dims=None", roll});
  t.push_back({"flip", kTorch, "input, dims", [](Bound& b) {
                 return emit(b, "flip", {b.tensor("input")}, {{"dims", b.ints("dims")}});
               }});
  t.push_back({"flip", kMethod, "input, *dims", [](Bound& b) {
                 return emit(b, "flip", {b.tensor("input")}, {{"dims", b.ints("dims")}});
               }});
  t.push_back({"fliplr", TM, "input", [](Bound& b) {
                 ir::Value* x = b.tensor("input");
                 if (x->type().rank() < 2)
                   b.fail("input", "Input must be >= 2-d, got " + x->type().str());
                 return emit(b, "flip", {x}, {{"dims", std::vector<int64_t>{1}}});
               }});
  t.push_back({"flipud", TM, "input", [](Bound& b) {
                 ir::Value* x = b.tensor("input");
                 if (x->type().rank() < 1)
                   b.fail("input", "Input must be >= 1-d, got " + x->type().str());
                 return emit(b, "flip", {x}, {{"dims", std::vector<int64_t>{0}}});
               }});
  t.push_back({"rot90", TM, "input, k=1, dims=None", rot90});
  for (const char* name : {"movedim", "moveaxis"})
    t.push_back({name, TM, "input, source, destination", movedim});

  // --- splitting and grids ---------------------------------------------------------------------
  t.push_back({"tensor_split", TM, "input, indices_or_sections, dim=0", tensor_split});
  t.push_back(
      {"meshgrid", kTorch, "*tensors, indexing=None", [](Bound& b) {
         std::vector<ir::Value*> xs = tensors_arg(b, "tensors");
         if (xs.empty()) b.fail("tensors", "torch.meshgrid: Expected at least one tensor");
         std::string ix = b.is_none("indexing") ? "ij" : b.str("indexing");
         if (ix != "ij" && ix != "xy")
           b.fail("indexing",
                  "torch.meshgrid: indexing must be one of \"xy\" or \"ij\", but received: " + ix);
         std::vector<Val> outs;
         for (ir::Value* v : meshgrid(b, xs, ix == "xy")) outs.push_back(b.L.fresh(v));
         return Val::tuple(std::move(outs));
       }});
  t.push_back({"cartesian_prod", kTorch, "*tensors", [](Bound& b) {
                 std::vector<ir::Value*> xs = tensors_arg(b, "tensors");
                 if (xs.empty()) b.fail("tensors", "expected at least one tensor");
                 for (ir::Value* x : xs) {
                   if (x->type().rank() != 1)
                     b.fail("tensors", "Expect a 1D vector, but got shape " + x->type().str());
                 }
                 if (xs.size() == 1) return b.L.fresh(xs[0]);
                 std::vector<ir::Value*> cols;
                 for (ir::Value* v : meshgrid(b, xs, false))
                   cols.push_back(op(b, "reshape", {v}, {{"shape", std::vector<int64_t>{-1}}}));
                 return emit(b, "stack", cols, {{"dim", int64_t(1)}});
               }});

  // --- diagonals and windows ------------------------------------------------------------------
  t.push_back({"diagonal", TM, "input, offset=0, dim1=0, dim2=1", [](Bound& b) {
                 return view(b, op(b, "diagonal", {b.tensor("input")},
                                   {{"offset", b.int_("offset")},
                                    {"dim1", b.int_("dim1")},
                                    {"dim2", b.int_("dim2")}}));
               }});
  t.push_back({"diag", TM, "input, diagonal=0", [](Bound& b) {
                 ir::Value* x = b.tensor("input");
                 int64_t r = x->type().rank(), k = b.int_("diagonal");
                 if (r == 1) return diag_embed(b, x, k, 0, 1, "diagonal");
                 if (r != 2)
                   b.fail("input", "diag(): Supports 1D or 2D tensors. Got " + x->type().str());
                 return emit(b, "diagonal", {x},
                             {{"offset", k}, {"dim1", int64_t(0)}, {"dim2", int64_t(1)}});
               }});
  t.push_back({"diag_embed", TM, "input, offset=0, dim1=-2, dim2=-1", [](Bound& b) {
                 ir::Value* x = b.tensor("input");
                 if (x->type().rank() == 0)
                   b.fail("input",
                          "diag_embed expects at least a 1-D tensor, got " + x->type().str());
                 return diag_embed(b, x, b.int_("offset"), b.int_("dim1"), b.int_("dim2"), "dim1");
               }});
  t.push_back({"trace", TM, "input", [](Bound& b) {
                 ir::Value* x = require_rank(b, "input", 2, "trace");
                 return emit(b, "sum", {op(b, "diagonal", {x})}, reduce_attrs({0}, false));
               }});
  t.push_back({"unfold", kMethod, "input, dimension, size, step", [](Bound& b) {
                 return view(b, op(b, "unfold", {b.tensor("input")},
                                   {{"dimension", b.int_("dimension")},
                                    {"size", b.int_("size")},
                                    {"step", b.int_("step")}}));
               }});
}

}  // namespace kiln::frontend
