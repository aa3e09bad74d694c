// merge-siblings: linear (or matmul) nodes that read the same input with
// constant weights (the Q, K and V projections of attention) become one, over
// weights concatenated along N at compile time, and each old output a slice of
// the merged one:
//
//   %q = linear(%x, %wq, %bq)          %w = constant() {cat(wq, wk, wv)}
//   %k = linear(%x, %wk, %bk)    ->    %b = constant() {cat(bq, bk, bv)}
//   %v = linear(%x, %wv, none)         %qkv = linear(%x, %w, %b)
//                                      %q = slice(%qkv) {dim=-1, start=0, end=Nq} ...
//
// (a missing bias is zeros; matmul(%x, %w) with a 2-D constant [K, N] weight
// concatenates along dim 1). One GEMM packs or reads x once, where three did
// so three times, and runs as one kernel; the slices are views, inlined into
// their readers. Weights that are not constants are left alone: a concat
// kernel would copy every weight on every call, which costs more than it
// saves unless the rows of x far outnumber the weights' columns.
//
// Assumes: a graph in topological order with exact types (infer-types ran);
// runs after constant-fold, so weights computed from constants are constants.
// Guarantees: only siblings with the same op, input, dtype, K and weight
// layout merge; each merged output's values are the old ones up to the
// summation order the GEMM picks for the merged shape (the same dot
// products); names move to the slices, and the old nodes go (dce removes
// their constants).
#include <cstring>
#include <map>
#include <tuple>

#include "passes/graph_rewrite.h"
#include "passes/pipeline.h"

namespace kiln::passes {

namespace {

// The largest merged weight (elements): a bigger one is left as it is.
constexpr int64_t kMaxMergedElements = int64_t{1} << 26;

std::optional<Tensor> tensor_constant(const ir::Value* v) {
  std::optional<Tensor> t = constant_value(v);
  if (!t || !t->defined() || !t->device().is_cpu()) return std::nullopt;
  return t->contiguous();
}

// A node that is one of a merge group: linear(x, W[N, K], bias) or
// matmul(x, W[K, N]) with x of rank >= 2, W (and a bias) constants.
struct Sibling {
  ir::Node* node;
  Tensor w, bias;  // bias undefined when none
  int64_t n;       // output features
};

std::optional<Sibling> as_sibling(ir::Node* n) {
  const bool linear = n->op() == "linear";
  if (!linear && n->op() != "matmul") return std::nullopt;
  const ir::Type& x = n->input(0)->type();
  if (!x.is_tensor() || x.rank() < 2 || !is_floating(x.dtype())) return std::nullopt;
  std::optional<Tensor> w = tensor_constant(n->input(1));
  if (!w || w->dim() != 2 || w->dtype() != n->output()->type().dtype()) return std::nullopt;
  Sibling s{n, *w, Tensor(), w->size(linear ? 0 : 1)};
  if (linear && !n->input(2)->type().is_none()) {
    std::optional<Tensor> b = tensor_constant(n->input(2));
    if (!b || b->dim() != 1 || b->dtype() != w->dtype()) return std::nullopt;
    s.bias = *b;
  }
  return s;
}

// The siblings' weights side by side along N (linear: rows of [N, K]; matmul:
// columns of [K, N]), packed.
Tensor concat_weights(const std::vector<Sibling>& group, bool linear) {
  const Tensor& w0 = group[0].w;
  const int64_t k = linear ? w0.size(1) : w0.size(0);
  int64_t total = 0;
  for (const Sibling& s : group) total += s.n;
  Tensor out = Tensor::empty(linear ? Shape{total, k} : Shape{k, total}, w0.dtype());
  const size_t es = w0.element_size();
  auto* dst = static_cast<unsigned char*>(out.data_ptr());
  int64_t col = 0;
  for (const Sibling& s : group) {
    const auto* src = static_cast<const unsigned char*>(s.w.data_ptr());
    if (linear) {
      std::memcpy(dst + size_t(col * k) * es, src, size_t(s.n * k) * es);
    } else {
      for (int64_t r = 0; r < k; ++r) {
        std::memcpy(dst + size_t(r * total + col) * es, src + size_t(r * s.n) * es,
                    size_t(s.n) * es);
      }
    }
    col += s.n;
  }
  return out;
}

Tensor concat_biases(const std::vector<Sibling>& group) {
  int64_t total = 0;
  for (const Sibling& s : group) total += s.n;
  Tensor out = Tensor::zeros({total}, group[0].w.dtype());
  const size_t es = out.element_size();
  auto* dst = static_cast<unsigned char*>(out.data_ptr());
  int64_t col = 0;
  for (const Sibling& s : group) {
    if (s.bias.defined()) std::memcpy(dst + size_t(col) * es, s.bias.data_ptr(), size_t(s.n) * es);
    col += s.n;
  }
  return out;
}

ir::Type with_last_dim(const ir::Type& t, int64_t n) {
  ir::Dims d = t.dims();
  d.back() = ir::Dim(n);
  return ir::Type::tensor(t.dtype(), d, t.tensor_type().device);
}

}  // namespace

bool merge_siblings(ir::Graph& g) {
  // Groups by (op, input, K, dtype), in graph order of their first member.
  using Key = std::tuple<std::string, const ir::Value*, int64_t, DType>;
  std::map<Key, std::vector<Sibling>> groups;
  std::vector<Key> order;
  for (const auto& node : g.nodes()) {
    ir::Node* n = node.get();
    std::optional<Sibling> s = as_sibling(n);
    if (!s) continue;
    const int64_t k = n->op() == "linear" ? s->w.size(1) : s->w.size(0);
    Key key{n->op(), n->input(0), k, s->w.dtype()};
    auto [it, fresh] = groups.try_emplace(key);
    if (fresh) order.push_back(key);
    it->second.push_back(*s);
  }
  // Each group is rewritten when the sweep reaches its first member: the
  // merged node goes there, and every member becomes a slice of it as the
  // sweep reaches it.
  std::map<const ir::Node*, std::vector<Sibling>*> first;
  for (const Key& key : order) {
    std::vector<Sibling>& group = groups[key];
    int64_t elements = 0;
    for (const Sibling& s : group) elements += s.w.numel();
    if (group.size() >= 2 && elements <= kMaxMergedElements) first[group[0].node] = &group;
  }
  if (first.empty()) return false;
  GraphEditor e(g);
  std::map<const ir::Node*, ir::Value*> slice_of;
  for (ir::Node* n : e.nodes()) {
    e.resolve_operands(n);
    if (auto it = first.find(n); it != first.end()) {
      const std::vector<Sibling>& group = *it->second;
      const bool linear = n->op() == "linear";
      Tensor w = concat_weights(group, linear);
      int64_t total = linear ? w.size(0) : w.size(1);
      const DType dt = w.dtype();
      ir::Node* wn = e.insert_before(n, "constant", {}, {{"value", ir::AttrValue(w)}},
                                     {ir::Type::tensor(dt, ir::dims_from_shape(w.sizes()))});
      if (!wn) continue;
      std::vector<ir::Value*> ins = {n->input(0), wn->output()};
      if (linear) {
        bool any_bias = false;
        for (const Sibling& s : group) any_bias = any_bias || s.bias.defined();
        if (any_bias) {
          ir::Node* bn =
              e.insert_before(n, "constant", {}, {{"value", ir::AttrValue(concat_biases(group))}},
                              {ir::Type::tensor(dt, {ir::Dim(total)})});
          if (!bn) continue;
          ins.push_back(bn->output());
        } else {
          ins.push_back(n->input(2));  // none, as every member's
        }
      }
      const ir::Type& out_t = n->output()->type();
      ir::Node* merged =
          e.insert_before(n, n->op(), ins, n->attrs(), {with_last_dim(out_t, total)});
      if (!merged) continue;
      const int64_t last = out_t.rank() - 1;
      int64_t start = 0;
      for (const Sibling& s : group) {
        // Every slice sits before the first member: later members' readers
        // come after it.
        ir::Node* sl = e.insert_before(n, "slice", {merged->output()},
                                       {{"dim", ir::AttrValue(last)},
                                        {"start", ir::AttrValue(start)},
                                        {"end", ir::AttrValue(start + s.n)},
                                        {"step", ir::AttrValue(int64_t{1})}},
                                       {s.node->output()->type()});
        start += s.n;
        if (sl) slice_of[s.node] = sl->output();
      }
    }
    if (auto it = slice_of.find(n); it != slice_of.end()) e.replace(n, {it->second});
  }
  return e.commit();
}

}  // namespace kiln::passes
