// fold-batch-norm: folds an inference batch_norm into the conv2d it
// normalizes, at compile time, when everything but the conv's input is a
// constant:
//
//   %c = conv2d(%x, %w, %b) {...}                 (%b may be none)
//   %y = batch_norm(%c, %mean, %var, %gamma, %beta) {eps}   (%gamma, %beta may be none)
// becomes
//   %w2 = constant() {w[o] * s[o]}                where s = gamma / sqrt(var + eps)
//   %b2 = constant() {(b[o] - mean[o]) * s[o] + beta[o]}
//   %y  = conv2d(%x, %w2, %b2) {...}
//
// Assumes: a graph in topological order with exact types (infer-types ran);
// runs after constant-fold, so weights computed from constants are constants.
// Guarantees: only a conv2d whose output is used by that one batch_norm (and
// is not a graph output) is folded; the new weight and bias have the conv's
// dtype and are computed in double and rounded once, so the folded conv is
// the unfolded pair up to the rounding of the conv's output before the batch
// norm (which it no longer has). The old nodes become unused (dce removes
// their constants); the values keep their names.
#include <algorithm>
#include <cmath>

#include "passes/graph_rewrite.h"
#include "passes/pipeline.h"

namespace kiln::passes {

namespace {

// The constant tensor `v` holds, packed, as doubles; empty for none.
std::vector<double> values_of(const ir::Value* v) {
  std::optional<Tensor> t = constant_value(v);
  std::vector<double> out;
  if (!t || !t->defined()) return out;
  Tensor c = t->contiguous();
  Tensor flat = c.view_as_strided({c.numel()}, {1}, c.storage_offset());
  for (int64_t i = 0; i < c.numel(); ++i) out.push_back(flat.get(std::vector<int64_t>{i}));
  return out;
}

bool is_tensor_constant(const ir::Value* v) {
  std::optional<Tensor> t = constant_value(v);
  return t && t->defined();
}

bool is_none_or_tensor_constant(const ir::Value* v) {
  return v->type().is_none() || is_tensor_constant(v);
}

Tensor tensor_of(const std::vector<double>& values, const Shape& shape, DType dtype) {
  Tensor t = Tensor::empty(shape, dtype);
  Tensor flat = t.view_as_strided({t.numel()}, {1}, 0);
  for (int64_t i = 0; i < t.numel(); ++i) flat.set(std::vector<int64_t>{i}, values[size_t(i)]);
  return t;
}

// Folds `bn` (a batch_norm of a foldable conv2d) when it can; true when done.
bool fold(GraphEditor& e, ir::Node* bn) {
  ir::Node* conv = bn->input(0)->producer();
  // An unbatched conv's [C, H, W] would have batch_norm normalize over H.
  if (!conv || conv->op() != "conv2d" || conv->output()->type().dims().size() != 4) return false;
  ir::Graph& g = e.graph();
  const ir::Value* c = conv->output();
  const auto& outs = g.outputs();
  if (std::find(outs.begin(), outs.end(), c) != outs.end() || g.users(c).size() != 1) return false;
  if (!is_tensor_constant(conv->input(1)) || !is_none_or_tensor_constant(conv->input(2))) {
    return false;
  }
  for (size_t i = 1; i < 5; ++i) {
    if (!(i >= 3 ? is_none_or_tensor_constant(bn->input(i)) : is_tensor_constant(bn->input(i)))) {
      return false;
    }
  }
  const ir::Type& wt = conv->input(1)->type();
  const int64_t cout = wt.dims()[0].value;
  const int64_t per_channel = cout > 0 ? int64_t(values_of(conv->input(1)).size()) / cout : 0;
  std::vector<double> w = values_of(conv->input(1)), b = values_of(conv->input(2));
  std::vector<double> mean = values_of(bn->input(1)), var = values_of(bn->input(2));
  std::vector<double> gamma = values_of(bn->input(3)), beta = values_of(bn->input(4));
  const double eps = bn->attrs().get_float("eps");
  std::vector<double> w2(w.size());
  std::vector<double> b2(static_cast<size_t>(cout));
  for (int64_t o = 0; o < cout; ++o) {
    const size_t oi = size_t(o);
    const double s = (gamma.empty() ? 1.0 : gamma[oi]) / std::sqrt(var[oi] + eps);
    for (int64_t k = 0; k < per_channel; ++k) {
      w2[size_t(o * per_channel + k)] = w[size_t(o * per_channel + k)] * s;
    }
    b2[oi] = ((b.empty() ? 0.0 : b[oi]) - mean[oi]) * s + (beta.empty() ? 0.0 : beta[oi]);
  }
  const DType dtype = conv->output()->type().dtype();
  const Shape wshape = ir::static_shape(wt.dims());
  const ir::Type w2t = ir::Type::tensor(dtype, wt.dims());
  const ir::Type b2t = ir::Type::tensor(dtype, {ir::Dim(cout)});
  ir::Node* wn = e.insert_before(bn, "constant", {},
                                 {{"value", ir::AttrValue(tensor_of(w2, wshape, dtype))}}, {w2t});
  ir::Node* bnode = e.insert_before(bn, "constant", {},
                                    {{"value", ir::AttrValue(tensor_of(b2, {cout}, dtype))}}, {b2t});
  if (!wn || !bnode) return false;
  ir::Node* folded = e.insert_before(bn, "conv2d", {conv->input(0), wn->output(), bnode->output()},
                                     conv->attrs(), {bn->output()->type()});
  if (!folded) return false;
  e.replace(bn, {folded->output()});
  e.erase(conv);
  return true;
}

}  // namespace

bool fold_batch_norm(ir::Graph& g) {
  GraphEditor e(g);
  for (ir::Node* n : e.nodes()) {
    e.resolve_operands(n);
    if (n->op() == "batch_norm") fold(e, n);
  }
  return e.commit();
}

}  // namespace kiln::passes
