// Op table, part 4: neural-net functions that PyTorch itself composes from
// other ops — group/instance norm, scaled_dot_product_attention, the losses
// (with reduction='none'|'mean'|'sum'), cosine_similarity, pairwise_distance
// and a few small activations. Each is a composition of registry ops, so the
// fusion passes see ordinary elementwise ops and reductions.
//
// Class indices (nll_loss, cross_entropy) pick their log-probability with a
// gather along the class dim, ignored targets (ignore_index) replaced by
// class 0 and masked out after. A target outside [0, C) that is not
// ignore_index is therefore gather's run-time error ("index out of range"),
// raised by the interpreter and, through the kernel status word, by compiled
// CPU code (cuda clamps indices for now), as PyTorch raises "Target N is out
// of bounds". Class weights are still selected with a one-hot compare
// against arange(C).
#include <cmath>

#include "frontend/lower.h"
#include "kiln/error.h"

namespace kiln::frontend {

namespace {

// Emission helpers at the call's callee.
struct G {
  Bound& b;
  Lowerer& L;
  const Span& at;
  explicit G(Bound& bound) : b(bound), L(bound.L), at(bound.call.callee) {}

  ir::Value* op(const std::string& name, std::vector<ir::Value*> in, ir::Attrs a = {}) {
    return L.apply1(name, std::move(in), std::move(a), at);
  }
  ir::Value* c(double v) { return L.constant(Val::float_(v), at); }
  ir::Value* none() { return L.constant(Val::none(), at); }
  ir::Value* add(ir::Value* x, ir::Value* y) { return op("add", {x, y}); }
  ir::Value* sub(ir::Value* x, ir::Value* y) { return op("sub", {x, y}); }
  ir::Value* mul(ir::Value* x, ir::Value* y) { return op("mul", {x, y}); }
  ir::Value* div(ir::Value* x, ir::Value* y) { return op("div", {x, y}); }
  ir::Value* sum(ir::Value* x, std::vector<int64_t> dims = {}, bool keep = false) {
    return op("sum", {x}, reduce_attrs(dims, keep));
  }
  ir::Value* mean(ir::Value* x, std::vector<int64_t> dims = {}, bool keep = false) {
    return op("mean", {x}, reduce_attrs(dims, keep));
  }
  ir::Value* where(ir::Value* cond, ir::Value* x, ir::Value* y) {
    return op("where", {cond, x, y});
  }
  ir::Value* clamp_min(ir::Value* x, double lo) { return op("clamp", {x, c(lo), none()}); }
  // `w` (a 1-D tensor of C) shaped to broadcast along dim `dim` of a rank-`rank` tensor.
  ir::Value* along(ir::Value* w, int64_t dim, int64_t rank) {
    for (int64_t d = dim + 1; d < rank; ++d) w = op("unsqueeze", {w}, {{"dim", int64_t(-1)}});
    return w;
  }
};

void require_float(Bound& b, const std::string& name, ir::Value* x) {
  if (!is_floating(x->type().dtype())) {
    b.fail(name, "expects a floating '" + name + "', got " + x->type().str());
  }
}

void require_same_shape(Bound& b, ir::Value* input, ir::Value* target) {
  if (input->type().dims() != target->type().dims()) {
    b.fail("target", "target size " + target->type().str() + " must be the same as input size " +
                         input->type().str());
  }
}

// The deprecated size_average/reduce flags PyTorch still accepts.
void reject_legacy(Bound& b) {
  for (const char* a : {"size_average", "reduce"}) {
    if (b.given(a) && !b.is_none(a)) {
      b.fail(a, std::string("'") + a + "' is deprecated and not supported; use reduction=");
    }
  }
}

// reduction= as PyTorch spells it; `extra` allows 'batchmean' (kl_div).
std::string reduction_of(Bound& b, bool batchmean = false) {
  reject_legacy(b);
  std::string r = b.str("reduction");
  if (r == "none" || r == "mean" || r == "sum" || (batchmean && r == "batchmean")) return r;
  b.fail("reduction", "reduction must be 'none', 'mean', 'sum'" +
                          std::string(batchmean ? " or 'batchmean'" : "") + ", got '" + r + "'");
}

Val reduce(Bound& b, ir::Value* loss, const std::string& r) {
  G g(b);
  if (r == "none") return b.L.fresh(loss);
  return b.L.fresh(r == "sum" ? g.sum(loss) : g.mean(loss));
}

// --- pointwise losses -----------------------------------------------------------------------

const char* kLossSig = "input, target, size_average=None, reduce=None, reduction='mean'";

using Pointwise = std::function<ir::Value*(G&, ir::Value* diff_abs, ir::Value* diff)>;

Val pointwise_loss(Bound& b, const Pointwise& f) {
  G g(b);
  ir::Value* x = b.tensor("input");
  ir::Value* t = b.tensor("target");
  require_float(b, "input", x);
  require_float(b, "target", t);
  std::string r = reduction_of(b);
  ir::Value* d = g.sub(x, t);
  return reduce(b, f(g, g.op("abs", {d}), d), r);
}

// x^2 / 2 / scale below `limit`, a line above it (smooth_l1: scale = beta;
// huber: scale = 1 and the line is scaled by delta).
ir::Value* quad_lin(G& g, ir::Value* a, double limit, double quad_div, double lin_mul) {
  ir::Value* quad = g.div(g.mul(g.mul(a, a), g.c(0.5)), g.c(quad_div));
  ir::Value* lin = g.mul(g.sub(a, g.c(0.5 * limit)), g.c(lin_mul));
  return g.where(g.op("lt", {a, g.c(limit)}), quad, lin);
}

// --- class-index losses ---------------------------------------------------------------------

// What nll_loss and cross_entropy share for integer targets.
struct ClassPick {
  ir::Value* onehot = nullptr;  // bool, input's shape
  ir::Value* valid = nullptr;   // bool, target's shape: target != ignore_index
  ir::Value* index = nullptr;   // i64, target unsqueezed at cdim, 0 where ignored
  ir::Value* wt = nullptr;      // weight of each target's class (0 where ignored)
  ir::Value* wfull = nullptr;   // weight broadcast along the class dim (or null)
  int64_t cdim = 1, classes = 0;
};

ClassPick pick_classes(Bound& b, ir::Value* input, ir::Value* target) {
  G g(b);
  const ir::Type& it = input->type();
  const ir::Type& tt = target->type();
  if (tt.dtype() != DType::I64) {
    bool ce = b.fn.find("cross_entropy") != std::string::npos;
    b.fail("target", "expects int64 class indices" +
                         (ce ? std::string(" or floating class probabilities") : std::string()) +
                         " as target, got " + tt.str());
  }
  if (it.rank() == 0) b.fail("input", "expects an input of 1 or more dims, got " + it.str());
  ClassPick p;
  p.cdim = it.rank() == 1 ? 0 : 1;
  p.classes = b.L.static_dim(input, p.cdim, b.span("input"));
  if (p.classes == 0) b.fail("input", "needs at least one class, got " + it.str());
  ir::Dims want = it.dims();
  want.erase(want.begin() + p.cdim);
  if (tt.dims() != want) {
    b.fail("target", "expected target of shape " + ir::dims_str(want) + " for input " + it.str() +
                         ", got " + tt.str());
  }
  ir::Value* ar =
      g.op("arange", {},
           {{"start", 0.0}, {"end", double(p.classes)}, {"step", 1.0}, {"dtype", DType::I64}});
  ar = g.along(ar, p.cdim, it.rank());
  p.onehot = g.op("eq", {g.op("unsqueeze", {target}, {{"dim", p.cdim}}), ar});
  p.valid = g.op("ne", {target, b.L.constant(Val::int_(b.int_("ignore_index")), g.at)});
  ir::Value* zero = b.L.constant(Val::int_(0), g.at);
  p.index = g.op("unsqueeze", {g.where(p.valid, target, zero)}, {{"dim", p.cdim}});
  ir::Value* one = g.c(1.0);
  if (!b.is_none("weight")) {
    ir::Value* w = b.tensor("weight");
    if (w->type().rank() != 1 || w->type().dims()[0] != ir::Dim(p.classes)) {
      b.fail("weight", "weight must be a 1-D tensor of " + std::to_string(p.classes) +
                           " elements (one per class), got " + w->type().str());
    }
    require_float(b, "weight", w);
    p.wfull = g.along(w, p.cdim, it.rank());
    p.wt = g.sum(g.where(p.onehot, p.wfull, g.c(0.0)), {p.cdim});
    p.wt = g.where(p.valid, p.wt, g.c(0.0));
  } else {
    p.wt = b.L.cast(g.where(p.valid, one, g.c(0.0)), it.dtype(), g.at);
  }
  return p;
}

// -input[target] * weight[target], reduced; `logp` has the input's shape.
ir::Value* nll_terms(G& g, const ClassPick& p, ir::Value* logp) {
  ir::Value* picked = g.op("gather", {logp, p.index}, {{"dim", p.cdim}});
  picked = g.op("squeeze", {picked}, {{"dim", std::vector<int64_t>{p.cdim}}});
  return g.where(p.valid, g.mul(g.op("neg", {picked}), p.wt), g.c(0.0));
}

ir::Value* reduce_weighted(G& g, ir::Value* terms, const ClassPick& p, const std::string& r) {
  if (r == "none") return terms;
  if (r == "sum") return g.sum(terms);
  return g.div(g.sum(terms), g.sum(p.wt));
}

Val nll_loss(Bound& b) {
  G g(b);
  ir::Value* x = b.tensor("input");
  require_float(b, "input", x);
  ir::Value* t = b.tensor("target");
  std::string r = reduction_of(b);
  ClassPick p = pick_classes(b, x, t);
  return b.L.fresh(reduce_weighted(g, nll_terms(g, p, x), p, r));
}

Val cross_entropy(Bound& b) {
  G g(b);
  ir::Value* x = b.tensor("input");
  require_float(b, "input", x);
  ir::Value* t = b.tensor("target");
  std::string r = reduction_of(b);
  double ls = b.float_("label_smoothing");
  if (!(ls >= 0.0 && ls <= 1.0)) {
    b.fail("label_smoothing",
           "label_smoothing must be between 0.0 and 1.0, got " + std::to_string(ls));
  }
  if (x->type().rank() == 0) b.fail("input", "expects an input of 1 or more dims");
  int64_t cdim = x->type().rank() == 1 ? 0 : 1;
  ir::Value* logp = g.op("log_softmax", {x}, {{"dim", cdim}});
  if (is_floating(t->type().dtype())) {
    // Class probabilities.
    require_same_shape(b, x, t);
    if (b.int_("ignore_index") != -100) {
      b.fail("ignore_index", "ignore_index is not supported for floating point target");
    }
    int64_t classes = b.L.static_dim(x, cdim, b.span("input"));
    if (classes == 0) b.fail("input", "needs at least one class, got " + x->type().str());
    if (ls > 0) t = g.add(g.mul(t, g.c(1 - ls)), g.c(ls / double(classes)));
    ir::Value* prod = g.mul(logp, t);
    if (!b.is_none("weight")) {
      ir::Value* w = b.tensor("weight");
      if (w->type().rank() != 1 || w->type().dims()[0] != ir::Dim(classes)) {
        b.fail("weight", "weight must be a 1-D tensor of " + std::to_string(classes) +
                             " elements, got " + w->type().str());
      }
      prod = g.mul(prod, g.along(w, cdim, x->type().rank()));
    }
    if (r == "none") return b.L.fresh(g.op("neg", {g.sum(prod, {cdim})}));
    ir::Value* total = g.op("neg", {g.sum(prod)});
    if (r == "sum") return b.L.fresh(total);
    // Divided by the number of samples (input.numel() / C); counted at run
    // time so a symbolic batch size works.
    ir::Value* first = g.op("select", {x}, {{"dim", cdim}, {"index", int64_t(0)}});
    ir::Value* ones = g.where(g.op("isnan", {first}), g.c(1.0), g.c(1.0));
    ir::Value* samples = b.L.cast(g.sum(ones), x->type().dtype(), g.at);
    return b.L.fresh(g.div(total, samples));
  }
  ClassPick p = pick_classes(b, x, t);
  ir::Value* nll = reduce_weighted(g, nll_terms(g, p, logp), p, r);
  if (ls <= 0) return b.L.fresh(nll);
  ir::Value* smooth = p.wfull ? g.mul(logp, p.wfull) : logp;
  smooth = g.where(p.valid, g.op("neg", {g.sum(smooth, {cdim})}), g.c(0.0));
  if (r == "sum") {
    smooth = g.sum(smooth);
  } else if (r == "mean") {
    smooth = g.div(g.sum(smooth), g.sum(p.wt));
  }
  return b.L.fresh(g.add(g.mul(nll, g.c(1 - ls)), g.mul(smooth, g.c(ls / double(p.classes)))));
}

// --- binary and distribution losses ---------------------------------------------------------

Val binary_cross_entropy(Bound& b) {
  G g(b);
  ir::Value* x = b.tensor("input");
  ir::Value* t = b.tensor("target");
  require_float(b, "input", x);
  require_float(b, "target", t);
  require_same_shape(b, x, t);
  std::string r = reduction_of(b);
  // (t - 1) * max(log(1 - x), -100) - t * max(log(x), -100), as PyTorch clamps.
  ir::Value* log_x = g.clamp_min(g.op("log", {x}), -100);
  ir::Value* log_1mx = g.clamp_min(g.op("log1p", {g.op("neg", {x})}), -100);
  ir::Value* loss = g.sub(g.mul(g.sub(t, g.c(1.0)), log_1mx), g.mul(t, log_x));
  if (!b.is_none("weight")) loss = g.mul(loss, b.tensor("weight"));
  return reduce(b, loss, r);
}

Val bce_with_logits(Bound& b) {
  G g(b);
  ir::Value* x = b.tensor("input");
  ir::Value* t = b.tensor("target");
  require_float(b, "input", x);
  require_float(b, "target", t);
  require_same_shape(b, x, t);
  std::string r = reduction_of(b);
  // (1 - t) * x + lw * (log1p(exp(-|x|)) + max(-x, 0)): log(1 + exp(-x))
  // without overflow; lw = 1 + (pos_weight - 1) * t.
  ir::Value* softplus_neg = g.add(g.op("log1p", {g.op("exp", {g.op("neg", {g.op("abs", {x})})})}),
                                  g.op("relu", {g.op("neg", {x})}));
  if (!b.is_none("pos_weight")) {
    ir::Value* lw = g.add(g.mul(g.sub(b.tensor("pos_weight"), g.c(1.0)), t), g.c(1.0));
    softplus_neg = g.mul(lw, softplus_neg);
  }
  ir::Value* loss = g.add(g.mul(g.sub(g.c(1.0), t), x), softplus_neg);
  if (!b.is_none("weight")) loss = g.mul(loss, b.tensor("weight"));
  return reduce(b, loss, r);
}

Val kl_div(Bound& b) {
  G g(b);
  ir::Value* x = b.tensor("input");
  ir::Value* t = b.tensor("target");
  require_float(b, "input", x);
  require_float(b, "target", t);
  std::string r = reduction_of(b, true);
  ir::Value* loss = b.bool_("log_target") ? g.mul(g.op("exp", {t}), g.sub(t, x))
                                          : g.sub(g.op("xlogy", {t, t}), g.mul(t, x));
  if (r != "batchmean") return reduce(b, loss, r);
  ir::Value* total = g.sum(loss);
  if (x->type().rank() == 0) return b.L.fresh(total);
  const ir::Dim& n = x->type().dims()[0];
  if (n.is_static()) return b.L.fresh(g.div(total, g.c(double(n.value))));
  ir::Value* first = g.op("select", {g.op("flatten", {x}, {{"start_dim", int64_t(1)}})},
                          {{"dim", int64_t(1)}, {"index", int64_t(0)}});
  ir::Value* count = g.sum(g.where(g.op("isnan", {first}), g.c(1.0), g.c(1.0)));
  return b.L.fresh(g.div(total, b.L.cast(count, x->type().dtype(), g.at)));
}

// --- distances ---------------------------------------------------------------------------

// The p-norm of x over `dim` (p = 0 counts nonzeros, inf is the max).
ir::Value* vector_norm(G& g, ir::Value* x, double p, int64_t dim, bool keep) {
  ir::Value* a = g.op("abs", {x});
  if (std::isinf(p)) return g.op(p > 0 ? "amax" : "amin", {a}, reduce_attrs({dim}, keep));
  if (p == 0) {
    return g.L.cast(g.sum(g.op("ne", {a, g.c(0.0)}), {dim}, keep), x->type().dtype(), g.at);
  }
  if (p == 1) return g.sum(a, {dim}, keep);
  if (p == 2) return g.op("sqrt", {g.sum(g.mul(x, x), {dim}, keep)});
  return g.op("pow", {g.sum(g.op("pow", {a, g.c(p)}), {dim}, keep), g.c(1.0 / p)});
}

// Expands x1 and x2 to their broadcast shape (for a reduction over one dim of it).
void broadcast_pair(Bound& b, ir::Value*& x1, ir::Value*& x2) {
  G g(b);
  const ir::Dims d1 = x1->type().dims(), d2 = x2->type().dims();
  if (d1 == d2) return;
  size_t r = std::max(d1.size(), d2.size());
  auto expand = [&](ir::Value*& x, const ir::Dims& mine, const ir::Dims& other, const char* name) {
    std::vector<int64_t> size;
    bool change = mine.size() < r;
    for (size_t k = 0; k < r; ++k) {
      size_t off_m = r - mine.size(), off_o = r - other.size();
      bool have_m = k >= off_m, have_o = k >= off_o;
      const ir::Dim* m = have_m ? &mine[k - off_m] : nullptr;
      const ir::Dim* o = have_o ? &other[k - off_o] : nullptr;
      if (m && !(*m == ir::Dim(1) && o && !(*o == ir::Dim(1)))) {
        size.push_back(-1);
        continue;
      }
      if (!o->is_static()) {
        b.fail(name, "broadcasting to the symbolic size '" + o->symbol +
                         "' is not supported here; expand the tensors first");
      }
      size.push_back(o->value);
      change = true;
    }
    if (change) x = g.op("expand", {x}, {{"size", size}});
  };
  expand(x1, d1, d2, "x1");
  expand(x2, d2, d1, "x2");
}

Val cosine_similarity(Bound& b) {
  G g(b);
  ir::Value* x1 = b.tensor("x1");
  ir::Value* x2 = b.tensor("x2");
  require_float(b, "x1", x1);
  require_float(b, "x2", x2);
  int64_t dim = b.int_("dim");
  double eps = b.float_("eps");
  broadcast_pair(b, x1, x2);
  // Each side over its norm, clamped at eps, as PyTorch does.
  auto unit = [&](ir::Value* x) {
    return g.div(x, g.clamp_min(vector_norm(g, x, 2, dim, true), eps));
  };
  return b.L.fresh(g.sum(g.mul(unit(x1), unit(x2)), {dim}));
}

Val pairwise_distance(Bound& b) {
  G g(b);
  ir::Value* x1 = b.tensor("x1");
  ir::Value* x2 = b.tensor("x2");
  require_float(b, "x1", x1);
  require_float(b, "x2", x2);
  int64_t rank = std::max(x1->type().rank(), x2->type().rank());
  ir::Value* d = g.add(g.sub(x1, x2), g.c(b.float_("eps")));
  if (rank == 0) b.fail("x1", "expects inputs of 1 or more dims");
  return b.L.fresh(vector_norm(g, d, b.float_("p"), rank - 1, b.bool_("keepdim")));
}

// --- normalization -----------------------------------------------------------------------

// (x - mean) / sqrt(var + eps) over `dims` (biased variance), then a
// per-channel (dim 1) affine transform.
ir::Value* normalize_over(Bound& b, ir::Value* x, const std::vector<int64_t>& dims, double eps,
                          ir::Value* shape_back, int64_t rank) {
  G g(b);
  ir::Value* m = g.mean(x, dims, true);
  ir::Value* v = g.op("var", {x}, {{"dim", dims}, {"correction", int64_t(0)}, {"keepdim", true}});
  ir::Value* y = g.mul(g.sub(x, m), g.op("rsqrt", {g.add(v, g.c(eps))}));
  if (shape_back)
    y = g.op("reshape", {y}, {{"shape", ir::static_shape(shape_back->type().dims())}});
  if (!b.is_none("weight")) y = g.mul(y, g.along(b.tensor("weight"), 1, rank));
  if (!b.is_none("bias")) y = g.add(y, g.along(b.tensor("bias"), 1, rank));
  return y;
}

void check_channels(Bound& b, const char* name, int64_t channels) {
  if (b.is_none(name)) return;
  ir::Value* w = b.tensor(name);
  if (w->type().rank() != 1 || w->type().dims()[0] != ir::Dim(channels)) {
    b.fail(name, std::string("'") + name + "' must be a 1-D tensor of " + std::to_string(channels) +
                     " elements (one per channel), got " + w->type().str());
  }
}

Val group_norm(Bound& b) {
  G g(b);
  ir::Value* x = b.tensor("input");
  require_float(b, "input", x);
  const ir::Type& t = x->type();
  if (t.rank() < 2) b.fail("input", "expects an input of 2 or more dims (N, C, *), got " + t.str());
  if (!ir::dims_are_static(t.dims())) {
    b.fail("input", "a tensor with symbolic sizes " + t.str() + " is not supported yet");
  }
  Shape shape = ir::static_shape(t.dims());
  int64_t groups = b.int_("num_groups"), channels = shape[1];
  if (groups <= 0 || channels % groups != 0) {
    b.fail("num_groups", "expected the number of channels (" + std::to_string(channels) +
                             ") to be divisible by num_groups (" + std::to_string(groups) + ")");
  }
  check_channels(b, "weight", channels);
  check_channels(b, "bias", channels);
  int64_t inner = 1;
  for (size_t k = 1; k < shape.size(); ++k) inner *= shape[k];
  ir::Value* xg =
      g.op("reshape", {x}, {{"shape", std::vector<int64_t>{shape[0], groups, inner / groups}}});
  return b.L.fresh(normalize_over(b, xg, {2}, b.float_("eps"), x, t.rank()));
}

Val instance_norm(Bound& b) {
  G g(b);
  ir::Value* x = b.tensor("input");
  require_float(b, "input", x);
  const ir::Type& t = x->type();
  if (t.rank() < 3) {
    b.fail("input", "expects an input of 3 or more dims (N, C, *), got " + t.str());
  }
  int64_t channels = b.L.static_dim(x, 1, b.span("input"));
  check_channels(b, "weight", channels);
  check_channels(b, "bias", channels);
  bool stats = b.bool_("use_input_stats");
  if (!stats) {
    if (b.is_none("running_mean") || b.is_none("running_var")) {
      b.fail("use_input_stats", "use_input_stats=False needs running_mean and running_var");
    }
    return emit(b, "batch_norm",
                {x, b.tensor("running_mean"), b.tensor("running_var"), b.opt_tensor("weight"),
                 b.opt_tensor("bias")},
                {{"eps", b.float_("eps")}});
  }
  if (!b.is_none("running_mean") || !b.is_none("running_var")) {
    b.fail("use_input_stats",
           "use_input_stats=True updates running_mean/running_var in place, "
           "which is not supported; pass use_input_stats=False (eval mode) or no running stats");
  }
  std::vector<int64_t> dims;
  bool one = true;
  for (int64_t d = 2; d < t.rank(); ++d) {
    dims.push_back(d);
    if (!(t.dims()[size_t(d)] == ir::Dim(1))) one = false;
  }
  if (one) {
    b.fail("input",
           "expects more than 1 spatial element when using input stats, "
           "got " +
               t.str());
  }
  return b.L.fresh(normalize_over(b, x, dims, b.float_("eps"), nullptr, t.rank()));
}

// --- attention ---------------------------------------------------------------------------

// Grouped-query attention: each of key's Hk heads serves Hq / Hk query heads
// (dim -3), as repeat_interleave(Hq / Hk, dim=-3) would.
ir::Value* repeat_heads(Bound& b, ir::Value* kv, ir::Value* q, const char* name) {
  G g(b);
  const ir::Type& t = kv->type();
  if (t.rank() < 3 || q->type().rank() < 3) return kv;
  int64_t hq = b.L.static_dim(q, -3, b.span("query")), hk = b.L.static_dim(kv, -3, b.span(name));
  if (hq == hk) return kv;
  if (hk == 0 || hq % hk != 0) {
    b.fail(name, "enable_gqa needs the query heads (" + std::to_string(hq) +
                     ") to be a multiple of the " + name + " heads (" + std::to_string(hk) + ")");
  }
  if (!ir::dims_are_static(t.dims())) {
    b.fail(name, "enable_gqa with symbolic sizes " + t.str() + " is not supported yet");
  }
  Shape shape = ir::static_shape(t.dims());
  int64_t r = t.rank();
  std::vector<int64_t> size(shape.begin(), shape.end());
  size.insert(size.begin() + (r - 2), hq / hk);  // [..., Hk, group, S, E]
  ir::Value* e = g.op("expand", {g.op("unsqueeze", {kv}, {{"dim", r - 2}})}, {{"size", size}});
  shape[size_t(r - 3)] = hq;
  return g.op("reshape", {e}, {{"shape", std::vector<int64_t>(shape.begin(), shape.end())}});
}

Val sdpa(Bound& b) {
  G g(b);
  ir::Value* q = b.tensor("query");
  ir::Value* k = b.tensor("key");
  ir::Value* v = b.tensor("value");
  for (const char* n : {"query", "key", "value"}) require_float(b, n, b.tensor(n));
  if (b.float_("dropout_p") != 0.0) {
    b.fail("dropout_p",
           "dropout_p > 0 is random and is not "
           "supported; pass dropout_p=0.0 (eval mode)");
  }
  for (const char* n : {"query", "key"}) {
    if (b.tensor(n)->type().rank() < 2) {
      b.fail(n, std::string("'") + n + "' must have 2 or more dims (..., L, E), got " +
                    b.tensor(n)->type().str());
    }
  }
  bool causal = b.bool_("is_causal");
  if (causal && !b.is_none("attn_mask")) {
    b.fail("attn_mask", "attn_mask must be None when is_causal=True");
  }
  if (b.bool_("enable_gqa")) {
    k = repeat_heads(b, k, q, "key");
    v = repeat_heads(b, v, q, "value");
  }
  double scale = b.is_none("scale")
                     ? 1.0 / std::sqrt(double(b.L.static_dim(q, -1, b.span("query"))))
                     : b.float_("scale");
  ir::Value* s =
      g.op("matmul", {q, g.op("transpose", {k}, {{"dim0", int64_t(-2)}, {"dim1", int64_t(-1)}})});
  s = g.mul(s, g.c(scale));
  ir::Value* ninf = g.c(-INFINITY);
  if (causal) {
    int64_t rows = b.L.static_dim(q, -2, b.span("query")),
            cols = b.L.static_dim(k, -2, b.span("key"));
    auto ar = [&](int64_t n, int64_t dim) {
      ir::Value* a = g.op(
          "arange", {}, {{"start", 0.0}, {"end", double(n)}, {"step", 1.0}, {"dtype", DType::I64}});
      return g.op("unsqueeze", {a}, {{"dim", dim}});
    };
    s = g.where(g.op("le", {ar(cols, 0), ar(rows, 1)}), s, ninf);
  } else if (!b.is_none("attn_mask")) {
    ir::Value* m = b.tensor("attn_mask");
    if (m->type().dtype() == DType::Bool) {
      s = g.where(m, s, ninf);
    } else if (is_floating(m->type().dtype())) {
      s = g.add(s, m);
    } else {
      b.fail("attn_mask", "attn_mask must be a bool or floating tensor, got " + m->type().str());
    }
  }
  return emit(b, "matmul", {g.op("softmax", {s}, {{"dim", int64_t(-1)}}), v});
}

// --- small activations -----------------------------------------------------------------------

Val shrink(Bound& b, bool soft) {
  G g(b);
  ir::Value* x = b.tensor("input");
  require_float(b, "input", x);
  double l = b.float_("lambd");
  ir::Value* above = g.op("gt", {x, g.c(l)});
  ir::Value* below = g.op("lt", {x, g.c(-l)});
  if (!soft) {
    // x outside [-l, l], NaN kept.
    ir::Value* inside = g.op("logical_and", {g.op("ge", {x, g.c(-l)}), g.op("le", {x, g.c(l)})});
    return b.L.fresh(g.where(inside, g.c(0.0), x));
  }
  return b.L.fresh(g.where(above, g.sub(x, g.c(l)), g.where(below, g.add(x, g.c(l)), g.c(0.0))));
}

Val glu(Bound& b) {
  G g(b);
  ir::Value* x = b.tensor("input");
  require_float(b, "input", x);
  int64_t dim = b.int_("dim");
  int64_t n = b.L.static_dim(x, dim, b.span("dim"));
  if (n % 2 != 0) {
    b.fail("dim", "halves dimension " + std::to_string(dim) + ", which must be even, got size " +
                      std::to_string(n));
  }
  auto half = [&](int64_t start) {
    return g.op("slice", {x},
                {{"dim", dim}, {"start", start}, {"end", start + n / 2}, {"step", int64_t(1)}});
  };
  return b.L.fresh(g.mul(half(0), g.op("sigmoid", {half(n / 2)})));
}

Val local_response_norm(Bound& b) {
  G g(b);
  ir::Value* x = b.tensor("input");
  require_float(b, "input", x);
  const ir::Type& t = x->type();
  if (t.rank() < 3) {
    b.fail("input", "expects an input of 3 or more dims, got " + t.str());
  }
  int64_t size = b.int_("size");
  if (size <= 0) b.fail("size", "size must be positive, got " + std::to_string(size));
  int64_t channels = b.L.static_dim(x, 1, b.span("input"));
  // The mean of x^2 over a window of `size` channels (zero-padded: size/2
  // before, (size-1)/2 after), divisor `size` as avg_pool's count_include_pad.
  ir::Value* sq = g.mul(x, x);
  ir::Value* acc = nullptr;
  for (int64_t j = 0; j < size; ++j) {
    int64_t lo = j - size / 2;  // channel offset of this window slot
    int64_t start = std::max<int64_t>(0, lo), end = std::min(channels, channels + lo);
    if (start >= end) continue;
    ir::Value* part = g.op(
        "slice", {sq}, {{"dim", int64_t(1)}, {"start", start}, {"end", end}, {"step", int64_t(1)}});
    // Shifted so that output channel c sees channel c + lo; zeros where that is outside.
    std::vector<ir::Value*> pieces;
    int64_t before = start - lo, after = channels - (end - lo);
    auto zeros = [&](int64_t n) {
      ir::Value* z =
          g.op("slice", {sq},
               {{"dim", int64_t(1)}, {"start", int64_t(0)}, {"end", n}, {"step", int64_t(1)}});
      return g.where(g.op("isnan", {z}), g.c(0.0), g.c(0.0));
    };
    if (before > 0) pieces.push_back(zeros(before));
    pieces.push_back(part);
    if (after > 0) pieces.push_back(zeros(after));
    ir::Value* shifted = pieces.size() == 1 ? part : g.op("cat", pieces, {{"dim", int64_t(1)}});
    acc = acc ? g.add(acc, shifted) : shifted;
  }
  ir::Value* div = g.div(acc ? acc : g.mul(sq, g.c(0.0)), g.c(double(size)));
  div = g.op("pow", {g.add(g.mul(div, g.c(b.float_("alpha"))), g.c(b.float_("k"))),
                     g.c(b.float_("beta"))});
  return b.L.fresh(g.div(x, div));
}

}  // namespace

void add_nn2_ops(std::vector<OpEntry>& t) {
  // --- normalization ---------------------------------------------------------------------
  t.push_back(
      {"group_norm", kF, "input, num_groups, weight=None, bias=None, eps=1e-05", group_norm});
  t.push_back({"group_norm", kTorch,
               "input, num_groups, weight=None, bias=None, eps=1e-05, cudnn_enabled=True",
               group_norm});
  t.push_back({"instance_norm", kF,
               "input, running_mean=None, running_var=None, weight=None, bias=None, "
               "use_input_stats=True, momentum=0.1, eps=1e-05",
               instance_norm});
  t.push_back({"local_response_norm", kF, "input, size, alpha=0.0001, beta=0.75, k=1.0",
               local_response_norm});
  // --- attention -------------------------------------------------------------------------
  t.push_back({"scaled_dot_product_attention", kF,
               "query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, *, scale=None, "
               "enable_gqa=False",
               sdpa});
  // --- losses ----------------------------------------------------------------------------
  t.push_back({"mse_loss", kF, kLossSig, [](Bound& b) {
                 return pointwise_loss(b,
                                       [](G& g, ir::Value*, ir::Value* d) { return g.mul(d, d); });
               }});
  t.push_back({"l1_loss", kF, kLossSig, [](Bound& b) {
                 return pointwise_loss(b, [](G&, ir::Value* a, ir::Value*) { return a; });
               }});
  t.push_back({"smooth_l1_loss", kF, std::string(kLossSig) + ", beta=1.0", [](Bound& b) {
                 double beta = b.float_("beta");
                 if (beta < 0) b.fail("beta", "does not support negative beta");
                 return pointwise_loss(b, [beta](G& g, ir::Value* a, ir::Value*) {
                   return beta == 0 ? a : quad_lin(g, a, beta, beta, 1.0);
                 });
               }});
  t.push_back({"huber_loss", kF, "input, target, reduction='mean', delta=1.0", [](Bound& b) {
                 double delta = b.float_("delta");
                 if (delta <= 0) b.fail("delta", "does not support non-positive delta");
                 return pointwise_loss(b, [delta](G& g, ir::Value* a, ir::Value*) {
                   return quad_lin(g, a, delta, 1.0, delta);
                 });
               }});
  t.push_back({"nll_loss", kF,
               "input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, "
               "reduction='mean'",
               nll_loss});
  t.push_back({"cross_entropy", kF,
               "input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, "
               "reduction='mean', label_smoothing=0.0",
               cross_entropy});
  t.push_back({"binary_cross_entropy", kF,
               "input, target, weight=None, size_average=None, reduce=None, reduction='mean'",
               binary_cross_entropy});
  t.push_back({"binary_cross_entropy_with_logits", kF,
               "input, target, weight=None, size_average=None, reduce=None, reduction='mean', "
               "pos_weight=None",
               bce_with_logits});
  t.push_back({"kl_div", kF,
               "input, target, size_average=None, reduce=None, reduction='mean', log_target=False",
               kl_div});
  // --- distances -------------------------------------------------------------------------
  t.push_back({"cosine_similarity", kF | kTorch, "x1, x2, dim=1, eps=1e-08", cosine_similarity});
  t.push_back({"normalize", kF, "input, p=2.0, dim=1, eps=1e-12, out=None", [](Bound& b) {
                 G g(b);
                 ir::Value* x = b.tensor("input");
                 require_float(b, "input", x);
                 if (!b.is_none("out")) b.fail("out", "out= is not supported");
                 ir::Value* n = vector_norm(g, x, b.float_("p"), b.int_("dim"), true);
                 return b.L.fresh(g.div(x, g.clamp_min(n, b.float_("eps"))));
               }});
  t.push_back({"pairwise_distance", kF | kTorch, "x1, x2, p=2.0, eps=1e-06, keepdim=False",
               pairwise_distance});
  // --- small activations -------------------------------------------------------------------
  t.push_back({"softmin", kF, "input, dim=None, _stacklevel=3, dtype=None", [](Bound& b) {
                 if (b.is_none("dim"))
                   b.fail("softmin without an explicit dim is not supported; pass dim=");
                 ir::Attrs attrs{{"dim", b.int_("dim")}};
                 if (auto d = b.dtype("dtype")) attrs.set("dtype", *d);
                 G g(b);
                 return emit(b, "softmax", {g.op("neg", {b.tensor("input")})}, attrs);
               }});
  t.push_back({"softsign", kF, "input", [](Bound& b) {
                 G g(b);
                 ir::Value* x = b.tensor("input");
                 return b.L.fresh(g.div(x, g.add(g.op("abs", {x}), g.c(1.0))));
               }});
  t.push_back({"tanhshrink", kF, "input", [](Bound& b) {
                 G g(b);
                 ir::Value* x = b.tensor("input");
                 return b.L.fresh(g.sub(x, g.op("tanh", {x})));
               }});
  t.push_back({"hardshrink", kF | kTorch | kMethod, "input, lambd=0.5",
               [](Bound& b) { return shrink(b, false); }});
  t.push_back({"softshrink", kF, "input, lambd=0.5", [](Bound& b) { return shrink(b, true); }});
  t.push_back({"glu", kF, "input, dim=-1", glu});
}

}  // namespace kiln::frontend
