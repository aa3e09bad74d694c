// The autotuner's correctness check (see autotune_check.h): seeded inputs,
// the interpreter's reference (whole, or on operand slices that produce a
// sample of output elements), and the per-element tolerance.
#include "api/autotune_check.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <optional>

#include "ir/interpreter.h"
#include "kiln/error.h"

namespace kiln::compile_detail {

namespace {

// --- tolerance ----------------------------------------------------------------------------

// The unit roundoff of a dtype (half an ulp at 1).
double unit_roundoff(DType t) {
  switch (t) {
    case DType::F16:
      return std::ldexp(1.0, -11);
    case DType::BF16:
      return std::ldexp(1.0, -8);
    case DType::F32:
      return std::ldexp(1.0, -24);
    case DType::F64:
      return std::ldexp(1.0, -53);
    default:
      return 0;
  }
}

// Per element: |out - ref| <= rel |ref| + abs, with
//   rel = 4 u_out: both sides round once into the output dtype, so they may
//         be an ulp (2 u_out) apart; twice that is allowed;
//   abs = 4 K u_acc S: two summation orders of K products in the accumulator
//         (f32 for f16/bf16/f32, f64 for f64) differ by at most about
//         2 K u_acc times the sum of the products' sizes, each below S
//         (max|a| * max|b|, plus max|bias|).
// Integers and bool: exact (rel = abs = 0).
struct Tolerance {
  double rel = 0, abs = 0;
};

Tolerance tolerance(DType out, double k, double scale) {
  Tolerance t;
  if (!is_floating(out)) return t;
  DType acc = out == DType::F64 ? DType::F64 : DType::F32;
  t.rel = 4 * unit_roundoff(out);
  t.abs = 4 * k * unit_roundoff(acc) * scale;
  return t;
}

std::string shape_text(const Shape& s) {
  std::string t = "[";
  for (size_t i = 0; i < s.size(); ++i) t += (i ? ", " : "") + std::to_string(s[i]);
  return t + "]";
}

// Empty when `out` matches `ref` within `tol`; else the worst element.
std::string mismatch(const Tensor& out, const Tensor& ref, const Tolerance& tol) {
  if (out.sizes() != ref.sizes() || out.dtype() != ref.dtype()) {
    return "output " + shape_text(out.sizes()) + " " + dtype_name(out.dtype()) + ", reference " +
           shape_text(ref.sizes()) + " " + dtype_name(ref.dtype());
  }
  Tensor x = out.contiguous().to(DType::F64), y = ref.contiguous().to(DType::F64);
  const double* px = x.data<double>();
  const double* py = y.data<double>();
  double worst = 0, worst_tol = 0;
  int64_t at = -1;
  for (int64_t i = 0; i < x.numel(); ++i) {
    if (std::isnan(px[i]) && std::isnan(py[i])) continue;
    if (px[i] == py[i]) continue;  // equal infinities too
    double err = std::isnan(px[i]) || std::isnan(py[i]) ? INFINITY : std::fabs(px[i] - py[i]);
    double allowed = tol.rel * std::fabs(py[i]) + tol.abs;
    if (!(err <= allowed) && (at < 0 || err - allowed > worst - worst_tol)) {
      worst = err, worst_tol = allowed, at = i;
    }
  }
  if (at < 0) return "";
  char buf[160];
  std::snprintf(buf, sizeof buf, "max |error| %.3g > tolerance %.3g at element %lld", worst,
                worst_tol, static_cast<long long>(at));
  return buf;
}

double max_abs(const Tensor& t) {
  if (!t.defined() || t.numel() == 0) return 0;
  Tensor x = t.contiguous().to(DType::F64);
  const double* p = x.data<double>();
  double m = 0;
  for (int64_t i = 0; i < x.numel(); ++i) {
    if (std::isfinite(p[i])) m = std::max(m, std::fabs(p[i]));
  }
  return m;
}

// --- slices -------------------------------------------------------------------------------

using Picks = std::vector<std::vector<int64_t>>;  // per dim: the indices kept (empty: all)

// The elements of `t` at the cartesian product of `picks`, packed, same dtype.
Tensor take(const Tensor& t, const Picks& picks) {
  size_t rank = t.sizes().size();
  Picks p(rank);
  Shape sizes(rank);
  for (size_t d = 0; d < rank; ++d) {
    if (d < picks.size() && !picks[d].empty()) {
      p[d] = picks[d];
    } else {
      for (int64_t i = 0; i < t.sizes()[d]; ++i) p[d].push_back(i);
    }
    sizes[d] = int64_t(p[d].size());
  }
  Tensor out = Tensor::empty(sizes, t.dtype());
  if (out.numel() == 0) return out;
  size_t bytes = t.element_size();
  const char* src = static_cast<const char*>(t.data_ptr());
  char* dst = static_cast<char*>(out.data_ptr());
  std::vector<size_t> pos(rank, 0);
  for (int64_t n = 0; n < out.numel(); ++n) {
    int64_t offset = 0;
    for (size_t d = 0; d < rank; ++d) offset += p[d][pos[d]] * t.strides()[d];
    std::memcpy(dst + size_t(n) * bytes, src + offset * int64_t(bytes), bytes);
    for (size_t d = rank; d-- > 0;) {  // odometer, last dim fastest
      if (++pos[d] < p[d].size()) break;
      pos[d] = 0;
    }
  }
  return out;
}

uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Indices of a dim to check: all of a small one; else the first and last
// three (where blocked loops keep their tails) and six seeded others.
std::vector<int64_t> sample(int64_t size, uint64_t salt) {
  std::vector<int64_t> s;
  if (size <= 16) {
    for (int64_t i = 0; i < size; ++i) s.push_back(i);
    return s;
  }
  s = {0, 1, 2, size - 3, size - 2, size - 1};
  for (uint64_t i = 0; s.size() < 12 && i < 64; ++i) {
    int64_t v = int64_t(mix(salt * 131 + i) % uint64_t(size));
    if (std::find(s.begin(), s.end(), v) == s.end()) s.push_back(v);
  }
  std::sort(s.begin(), s.end());
  return s;
}

// Runs `op` on `operands` (undefined: none) through the interpreter.
Tensor interpret_op(const std::string& op, const std::vector<Tensor>& operands,
                    const ir::Attrs& attrs) {
  ir::Graph g("reference");
  std::vector<ir::Value*> values;
  std::vector<Tensor> inputs;
  for (size_t i = 0; i < operands.size(); ++i) {
    const Tensor& t = operands[i];
    if (!t.defined()) {
      values.push_back(g.constant(ir::AttrValue{}));
      continue;
    }
    values.push_back(g.add_input(
        "in" + std::to_string(i), ir::Type::tensor(t.dtype(), ir::dims_from_shape(t.sizes()))));
    inputs.push_back(t);
  }
  g.set_outputs({g.apply1(op, values, attrs)});
  return ir::interpret(g, inputs).at(0);
}

// The operands of the node, in order: graph inputs and constant tensors
// (undefined for none).
std::vector<Tensor> operands_of(const ir::Node& n, const std::vector<Tensor>& inputs) {
  std::vector<Tensor> out;
  for (const ir::Value* v : n.inputs()) {
    const ir::Node* producer = v->producer();
    if (!producer) {
      out.push_back(inputs.at(size_t(v->index())));
    } else if (const ir::AttrValue* a = producer->attrs().find("value");
               a && std::holds_alternative<Tensor>(*a)) {
      out.push_back(std::get<Tensor>(*a));
    } else {
      out.push_back(Tensor());
    }
  }
  return out;
}

// Picks for one operand of a matmul-like op whose dims align right with the
// output's batch dims: batch dims of size 1 broadcast (all), others follow
// the output; `tail` gives the picks of its last two dims.
Picks batch_picks(const Tensor& t, size_t tail_dims, const Picks& out, size_t out_batch,
                  Picks tail) {
  Picks p;
  size_t rank = t.sizes().size();
  size_t batch = rank - tail_dims;
  for (size_t d = 0; d < batch; ++d) {
    size_t od = out_batch - batch + d;
    p.push_back(t.sizes()[d] == 1 ? std::vector<int64_t>{} : out[od]);
  }
  for (auto& x : tail) p.push_back(std::move(x));
  return p;
}

// The sampled reference of a large node: the picks of the output it checks,
// and the interpreter's values there. Nothing for an op it does not know.
struct Sampled {
  Picks out;
  Tensor values;
};

std::optional<Sampled> sampled_reference(const ir::Node& n, const std::vector<Tensor>& x) {
  const std::string& op = n.op();
  Shape out_shape = ir::static_shape(n.output()->type().dims());
  Sampled s;
  for (size_t d = 0; d < out_shape.size(); ++d) s.out.push_back(sample(out_shape[d], d + 1));
  if ((op == "matmul" || op == "bmm") && x.size() == 2) {
    const Tensor &a = x[0], &b = x[1];
    bool a_vec = a.dim() == 1, b_vec = b.dim() == 1;
    size_t out_batch = out_shape.size() - (a_vec ? 0 : 1) - (b_vec ? 0 : 1);
    Picks pa = a_vec ? Picks{{}} : batch_picks(a, 2, s.out, out_batch, {s.out[out_batch], {}});
    Picks pb = b_vec ? Picks{{}} : batch_picks(b, 2, s.out, out_batch, {{}, s.out.back()});
    s.values = interpret_op(op, {take(a, pa), take(b, pb)}, n.attrs());
    return s;
  }
  if (op == "linear" && x.size() == 3) {
    const Tensor &in = x[0], &w = x[1], &bias = x[2];
    bool w_vec = w.dim() == 1;
    Picks pin(s.out.begin(), s.out.begin() + (in.dim() - 1));
    pin.push_back({});
    Picks pw = w_vec ? Picks{{}} : Picks{s.out.back(), {}};
    Tensor b = bias.defined() && bias.dim() == 1 && !w_vec ? take(bias, {s.out.back()}) : bias;
    s.values = interpret_op(op, {take(in, pin), take(w, pw), b}, n.attrs());
    return s;
  }
  if (op == "conv2d" && x.size() == 3 && x[0].dim() == 4 && x[1].dim() == 4) {
    // Batches and output channels sampled, every pixel kept. Each output
    // channel reads its group's input channels: one groups=1 conv per group
    // that has sampled channels, joined along the channels in order.
    const Tensor &in = x[0], &w = x[1], &bias = x[2];
    s.out[2].clear();
    s.out[3].clear();
    int64_t groups = n.attrs().get_int("groups");
    int64_t cg = in.sizes()[1] / groups, og = w.sizes()[0] / groups;
    ir::Attrs one = n.attrs();
    one.set("groups", int64_t{1});
    std::map<int64_t, std::vector<int64_t>> by_group;
    for (int64_t oc : s.out[1]) by_group[oc / og].push_back(oc);
    ir::Graph g("reference");
    std::vector<ir::Value*> parts;
    std::vector<Tensor> inputs;
    auto input = [&](const Tensor& t) {
      inputs.push_back(t);
      return g.add_input("in" + std::to_string(inputs.size()),
                         ir::Type::tensor(t.dtype(), ir::dims_from_shape(t.sizes())));
    };
    for (const auto& [grp, ocs] : by_group) {
      std::vector<int64_t> channels;
      for (int64_t c = grp * cg; c < (grp + 1) * cg; ++c) channels.push_back(c);
      ir::Value* xv = input(take(in, {s.out[0], channels}));
      ir::Value* wv = input(take(w, {ocs}));
      ir::Value* bv = bias.defined() ? input(take(bias, {ocs})) : g.constant(ir::AttrValue{});
      parts.push_back(g.apply1("conv2d", {xv, wv, bv}, one));
    }
    g.set_outputs({parts.size() == 1 ? parts[0] : g.apply1("cat", parts, {{"dim", int64_t{1}}})});
    s.values = ir::interpret(g, inputs).at(0);
    return s;
  }
  return std::nullopt;
}

}  // namespace

std::vector<Tensor> tuning_inputs(const ir::Graph& g) {
  std::vector<Tensor> out;
  for (size_t i = 0; i < g.inputs().size(); ++i) {
    const ir::TensorType& t = g.input(i)->type().tensor_type();
    Shape shape = ir::static_shape(t.dims);
    uint64_t seed = 0x6b696c6e + i;
    if (is_floating(t.dtype)) {
      out.push_back(Tensor::randn(shape, seed, t.dtype));
      continue;
    }
    Tensor x = Tensor::randn(shape, seed, DType::F64);
    double* p = x.data<double>();
    for (int64_t e = 0; e < x.numel(); ++e) {
      double v = std::nearbyint(p[e] * 1.5);
      if (t.dtype == DType::Bool) v = p[e] > 0;
      if (!is_signed(t.dtype)) v = std::fabs(v);
      p[e] = std::clamp(v, -3.0, 3.0);
    }
    out.push_back(x.to(t.dtype));
  }
  return out;
}

double reduction_length(const ir::Node& n) {
  auto dims = [&](size_t i) { return n.input(i)->type().dims(); };
  const std::string& op = n.op();
  if ((op == "matmul" || op == "bmm" || op == "linear") && !dims(0).empty()) {
    return double(dims(0).back().value);
  }
  if (op == "conv2d" && dims(1).size() == 4) {
    return double(dims(1)[1].value * dims(1)[2].value * dims(1)[3].value);
  }
  // An op this file does not know: its largest input dim bounds K loosely.
  double k = 1;
  for (const ir::Value* v : n.inputs()) {
    if (!v->type().is_tensor()) continue;
    for (const ir::Dim& d : v->type().dims()) k = std::max(k, double(d.value));
  }
  return k;
}

double multiply_adds(const ir::Node& n) {
  double elements = 1;
  for (const ir::Dim& d : n.output()->type().dims()) elements *= double(d.value);
  return elements * reduction_length(n);
}

ReferenceCheck make_reference(const ir::Graph& g, const std::vector<Tensor>& inputs,
                              double full_macs) {
  const ir::Node& n = *g.nodes().back();
  std::vector<Tensor> operands = operands_of(n, inputs);
  double scale = 1;
  if (operands.size() >= 2) scale = max_abs(operands[0]) * max_abs(operands[1]);
  if (operands.size() >= 3) scale += max_abs(operands[2]);
  Tolerance tol = tolerance(n.output()->type().dtype(), reduction_length(n), scale);

  ReferenceCheck r;
  std::optional<Sampled> sampled;
  if (multiply_adds(n) > full_macs) sampled = sampled_reference(n, operands);
  if (sampled) {
    auto s = std::make_shared<Sampled>(std::move(*sampled));
    r.what = "the interpreter on " + std::to_string(s->values.numel()) + " sampled elements";
    r.check = [s, tol](const std::vector<Tensor>& out) {
      return mismatch(take(out.at(0), s->out), s->values, tol);
    };
    return r;
  }
  auto want = std::make_shared<std::vector<Tensor>>(ir::interpret(g, inputs));
  r.what = "the interpreter";
  r.check = [want, tol](const std::vector<Tensor>& out) -> std::string {
    if (out.size() != want->size()) return "wrong number of outputs";
    for (size_t i = 0; i < out.size(); ++i) {
      std::string why = mismatch(out[i], (*want)[i], tol);
      if (!why.empty()) return why;
    }
    return "";
  };
  return r;
}

}  // namespace kiln::compile_detail
