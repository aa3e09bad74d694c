// Recognition of scaled dot-product attention (see attention_pattern.h).
#include "passes/attention_pattern.h"

#include <algorithm>
#include <cmath>

#include <functional>
#include <map>
#include <set>

#include "ir/interpreter.h"
#include "ir/op_registry.h"
#include "kiln/error.h"
#include "passes/fuse.h"
#include "passes/lower/lower_graph.h"

namespace kiln::passes {

namespace {

constexpr size_t kMaxChain = 8;

bool single_reader(const ir::Graph& g, const ir::Value* v) {
  const auto& outs = g.outputs();
  if (std::find(outs.begin(), outs.end(), v) != outs.end()) return false;
  return g.users(v).size() == 1;
}

bool is_elementwise(const ir::Node& n) {
  if (n.num_outputs() != 1 || !n.output()->type().is_tensor()) return false;
  if (!has_pointwise_lowering(n.op())) return false;
  return !(n.def() && n.def()->category == ir::OpCategory::Layout);
}

// The matmul the value `v` is computed from by single-reader elementwise nodes
// (collected into `chain`, last first), or nullptr.
const ir::Node* scores_source(const ir::Graph& g, const ir::Value* v, const ir::Dims& dims,
                              std::vector<const ir::Node*>* chain) {
  const ir::Node* p = v->producer();
  if (!p || !v->type().is_tensor() || v->type().tensor_type().dims != dims) return nullptr;
  if (p->op() == "matmul") return p;
  if (chain->size() >= kMaxChain || !is_elementwise(*p)) return nullptr;
  const ir::Node* found = nullptr;
  std::vector<const ir::Node*> best;
  for (const ir::Value* in : p->inputs()) {
    std::vector<const ir::Node*> sub = *chain;
    sub.push_back(p);
    const ir::Node* m = in->producer() ? scores_source(g, in, dims, &sub) : nullptr;
    if (!m) continue;
    if (found) return nullptr;  // two paths to a product: not a chain
    found = m;
    best = std::move(sub);
  }
  if (!found) return nullptr;
  // Every value on the path has one reader (the next node).
  for (size_t i = chain->size(); i < best.size(); ++i) {
    if (i + 1 < best.size() && !single_reader(g, best[i + 1]->output())) return nullptr;
  }
  *chain = std::move(best);
  return found;
}

// A scalar constant's value.
std::optional<double> scalar_constant(const ir::Value* v) {
  const ir::Node* p = v->producer();
  if (!p || p->op() != "constant") return std::nullopt;
  const ir::AttrValue* a = p->attrs().find("value");
  if (!a) return std::nullopt;
  if (const double* d = std::get_if<double>(a)) return *d;
  if (const int64_t* i = std::get_if<int64_t>(a)) return double(*i);
  if (const Tensor* t = std::get_if<Tensor>(a); t && t->numel() == 1) {
    return t->to(DType::F64).item();
  }
  return std::nullopt;
}

// Whether `v` is a constant counting 0, 1, ... along one dim (all others 1);
// which one (counted from the end: 1 the last) goes into `axis`.
bool counts_along(const ir::Value* v, int* axis) {
  const ir::Node* p = v->producer();
  if (!p || p->op() != "constant") return false;
  const ir::AttrValue* a = p->attrs().find("value");
  const Tensor* t = a ? std::get_if<Tensor>(a) : nullptr;
  if (!t || t->dim() < 1 || t->dim() > 8) return false;
  int along = -1;
  for (int64_t d = 0; d < t->dim(); ++d) {
    if (t->size(d) == 1) continue;
    if (along >= 0) return false;
    along = int(d);
  }
  if (along < 0) along = int(t->dim()) - 1;  // a single element: 0 along the last dim
  if (t->numel() > (int64_t(1) << 20)) return false;
  std::vector<int64_t> idx(size_t(t->dim()), 0);
  for (int64_t i = 0; i < t->size(along); ++i) {
    idx[size_t(along)] = i;
    if (t->get(idx) != double(i)) return false;
  }
  *axis = int(t->dim()) - along;
  return true;
}

// For a compare of a row counter i and a column counter j: whether it holds at
// (i, j), or nullopt when `mask` is not such a compare.
std::optional<std::vector<bool>> compare_samples(const ir::Value* mask) {
  const ir::Node* c = mask->producer();
  if (!c || c->num_outputs() != 1 || c->inputs().size() != 2) return std::nullopt;
  const std::string& op = c->op();
  if (op != "gt" && op != "lt" && op != "ge" && op != "le") return std::nullopt;
  int ax = 0, bx = 0;
  if (!counts_along(c->input(0), &ax) || !counts_along(c->input(1), &bx)) return std::nullopt;
  if (!((ax == 1 && bx == 2) || (ax == 2 && bx == 1))) return std::nullopt;
  // Samples (i, j): j < i, j == i, j > i.
  const int64_t is[3] = {1, 1, 0}, js[3] = {0, 1, 1};
  std::vector<bool> out;
  for (int s = 0; s < 3; ++s) {
    int64_t a = ax == 1 ? js[s] : is[s], b = bx == 1 ? js[s] : is[s];
    bool r = op == "gt" ? a > b : op == "lt" ? a < b : op == "ge" ? a >= b : a <= b;
    out.push_back(r);
  }
  return out;
}

// The value of `v` when a few cheap nodes (cheap_to_recompute) compute it
// from constants alone and it is small: evaluated by the interpreter (a mask
// built with torch.tril that constant folding left as ops at this size).
std::optional<Tensor> constant_value(const ir::Value* v) {
  const ir::Type& t = v->type();
  if (!t.is_tensor() || !ir::dims_are_static(t.dims()) ||
      shape_numel(ir::static_shape(t.dims())) > (int64_t(1) << 20)) {
    return std::nullopt;
  }
  std::vector<const ir::Node*> order;
  std::set<const ir::Node*> seen;
  std::function<bool(const ir::Value*)> visit = [&](const ir::Value* x) {
    const ir::Node* p = x->producer();
    if (!p || p->num_outputs() != 1) return false;
    if (seen.count(p)) return true;
    if (p->op() != "constant" && !cheap_to_recompute(*p)) return false;
    for (const ir::Value* in : p->inputs()) {
      if (!visit(in)) return false;
    }
    seen.insert(p);
    order.push_back(p);
    return order.size() <= 16;
  };
  if (!visit(v)) return std::nullopt;
  ir::Graph g("mask");
  std::map<const ir::Value*, ir::Value*> copy;
  for (const ir::Node* p : order) {
    std::vector<ir::Value*> ins;
    for (const ir::Value* in : p->inputs()) ins.push_back(copy.at(in));
    ir::Node* n = g.add_node(p->op(), ins, p->attrs(), {p->output()->type()});
    copy[p->output()] = n->output();
  }
  g.set_outputs({copy.at(v)});
  try {
    return ir::interpret(g, {}).at(0);
  } catch (const Error&) {
    return std::nullopt;
  }
}

// Whether `mask` is a bool tensor of constants (folded, or computed from
// constants: constant_value) that holds `when` exactly where a key j comes
// after the query i.
bool constant_future(const ir::Value* mask, bool when) {
  std::optional<Tensor> value = constant_value(mask);
  const Tensor* t = value ? &*value : nullptr;
  if (!t || t->dtype() != DType::Bool || t->dim() < 2 || t->numel() > (int64_t(1) << 22)) {
    return false;
  }
  for (int64_t d = 0; d + 2 < t->dim(); ++d) {
    if (t->size(d) != 1) return false;
  }
  std::vector<int64_t> idx(size_t(t->dim()), 0);
  const int64_t rows = t->size(-2), cols = t->size(-1);
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < cols; ++j) {
      idx[idx.size() - 2] = i;
      idx.back() = j;
      if ((t->get(idx) != 0) != ((j > i) == when)) return false;
    }
  }
  return true;
}

// Whether chain node n (reading the scores as `scores`) keeps exactly j <= i
// and sets the rest to -inf.
bool causal_fill(const ir::Node& n, const ir::Value* scores) {
  auto ninf = [](const ir::Value* v) {
    std::optional<double> d = scalar_constant(v);
    return d && std::isinf(*d) && *d < 0;
  };
  const ir::Value* mask = nullptr;
  bool keep_when_true = false;
  if (n.op() == "masked_fill" && n.inputs().size() == 3 && n.input(0) == scores &&
      ninf(n.input(2))) {
    mask = n.input(1);
  } else if (n.op() == "where" && n.inputs().size() == 3) {
    if (n.input(1) == scores && ninf(n.input(2))) {
      mask = n.input(0);
      keep_when_true = true;
    } else if (n.input(2) == scores && ninf(n.input(1))) {
      mask = n.input(0);
    }
  }
  if (!mask) return false;
  // A folded mask: true exactly on the future keys (masked_fill), or exactly
  // on the kept ones (where).
  if (constant_future(mask, !keep_when_true)) return true;
  std::optional<std::vector<bool>> cmp = compare_samples(mask);
  if (!cmp) return false;
  std::vector<bool> keep;
  for (bool b : *cmp) keep.push_back(b == keep_when_true);
  return keep[0] && keep[1] && !keep[2];
}

}  // namespace

std::optional<AttentionMatch> match_attention(const ir::Graph& g, const ir::Node& pv,
                                              std::string* why_not) {
  std::string scratch;
  std::string& why = why_not ? *why_not : scratch;
  why.clear();
  if (pv.op() != "matmul" || pv.inputs().size() != 2) return std::nullopt;
  const ir::Value* p = pv.input(0);
  const ir::Node* sm = p->producer();
  if (!sm || sm->op() != "softmax") return std::nullopt;
  auto fail = [&](const std::string& w) -> std::optional<AttentionMatch> {
    why = "not fused as attention: " + w;
    return std::nullopt;
  };
  const ir::Value* v = pv.input(1);
  const ir::Type& pt = p->type();
  if (pt.rank() < 2 || v->type().rank() < 2) {
    return fail("the probabilities and values need 2 or more dims");
  }
  const int64_t dim = sm->attrs().get_int("dim");
  if (dim != -1 && dim != pt.rank() - 1) {
    return fail("softmax over dim " + std::to_string(dim) + ", not the last (the keys)");
  }
  const DType dt = pt.dtype();
  if (dt != DType::F32 && dt != DType::F64) {
    return fail(std::string("dtype ") + dtype_name(dt) + " (the fused kernel takes f32 and f64)");
  }
  if (!single_reader(g, p)) return fail("the probabilities are read elsewhere");
  const ir::Value* s = sm->input(0);
  if (!single_reader(g, s)) return fail("the scores are read elsewhere");
  std::vector<const ir::Node*> chain;
  const ir::Node* qk = scores_source(g, s, s->type().tensor_type().dims, &chain);
  if (!qk) {
    return fail("the softmax's operand is not a matmul's product through elementwise ops "
                "(scale, mask) each read once");
  }
  if (!chain.empty() && !single_reader(g, qk->output())) {
    return fail("the scores are read elsewhere");
  }
  std::reverse(chain.begin(), chain.end());
  if (qk->input(0)->type().rank() < 2 || qk->input(1)->type().rank() < 2) {
    return fail("the query and key products need 2 or more dims");
  }
  for (const ir::Value* x : std::initializer_list<const ir::Value*>{qk->input(0), qk->input(1), v, pv.output(), s}) {
    if (x->type().dtype() != dt) return fail("operands of different dtypes");
  }
  const ir::Dim& dv = v->type().tensor_type().dims.back();
  if (!dv.is_static() || dv.value > kMaxAttentionValueDim) {
    return fail("the values' last dim is not a static size of at most " +
                std::to_string(kMaxAttentionValueDim));
  }
  AttentionMatch m;
  m.qk = qk;
  m.chain = chain;
  m.softmax = sm;
  m.pv = &pv;
  // Blocks above the diagonal are skipped only when the causal fill is the
  // last op on the scores (a later op could turn -inf into something else).
  if (!chain.empty()) {
    const ir::Value* before = chain.size() > 1 ? chain[chain.size() - 2]->output() : qk->output();
    m.causal = causal_fill(*chain.back(), before);
  }
  return m;
}

}  // namespace kiln::passes
