// torch.einsum as a composition of existing ops, so fusion and the matmul
// kernels apply: a repeated subscript within one operand is a diagonal
// view, a subscript no later operand or the output needs is summed away,
// and operands are contracted left to right, each pair as one matmul over
// [batch..., M, K] x [batch..., K, N] (permutes and reshapes around it are
// index remappings), or as a broadcast multiply when nothing is contracted.
// `bhqd,bhkd->bhqk` is therefore one batched matmul with a transposed
// operand. Semantics as PyTorch: subscripts are letters (A-Z sort before
// a-z in the implicit output), '...' stands for the broadcast dims of each
// operand, the implicit output is the ellipsis dims then the subscripts
// that appear exactly once, and size-1 dims broadcast.
#include <algorithm>
#include <map>

#include "frontend/lower.h"

namespace kiln::frontend {

namespace {

constexpr int kEllipsisBase = 52;  // label ids: A-Z 0..25, a-z 26..51, then ellipsis dims
constexpr int kEllipsisMark = -1;  // where a term has its ellipsis

std::string label_name(int l) {
  if (l < 26) return std::string(1, char('A' + l));
  if (l < 52) return std::string(1, char('a' + l - 26));
  return "...";
}

struct Term {
  std::vector<int> letters;  // in order, with kEllipsisMark marking the ellipsis
  bool ellipsis = false;
};

struct Operand {
  ir::Value* v = nullptr;
  std::vector<int> labels;  // one per dim
};

class Einsum {
 public:
  explicit Einsum(Bound& b) : b_(b) {}

  Val run() {
    std::string eq = b_.str("equation");
    std::vector<ir::Value*> xs = operands();
    std::string lhs = eq, rhs;
    size_t arrow = eq.find("->");
    bool explicit_out = arrow != std::string::npos;
    if (explicit_out) {
      lhs = eq.substr(0, arrow);
      rhs = eq.substr(arrow + 2);
    }
    std::vector<Term> terms;
    size_t start = 0;
    while (true) {
      size_t comma = lhs.find(',', start);
      terms.push_back(parse_term(lhs.substr(start, comma - start)));
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
    if (terms.size() != xs.size()) {
      fail("einsum(): the equation has " + std::to_string(terms.size()) + " operand(s) but " +
           std::to_string(xs.size()) + " tensor(s) were given");
    }
    // Expand ellipses: all operands' ellipsis dims align to the right.
    int64_t ell = 0;
    std::vector<int64_t> ell_of(xs.size(), 0);
    for (size_t i = 0; i < xs.size(); ++i) {
      int64_t r = xs[i]->type().rank(), n = 0;
      for (int l : terms[i].letters) n += l != kEllipsisMark;
      if (terms[i].ellipsis ? n > r : n != r) {
        fail("einsum(): the number of subscripts in the equation (" + std::to_string(n) +
             ") does not match the number of dimensions (" + std::to_string(r) + ") for operand " +
             std::to_string(i) + (terms[i].ellipsis ? "" : " and no ellipsis was given"));
      }
      ell_of[i] = r - n;
      ell = std::max(ell, ell_of[i]);
    }
    for (size_t i = 0; i < xs.size(); ++i) {
      Operand o{xs[i], {}};
      for (int l : terms[i].letters) {
        if (l != kEllipsisMark) {
          o.labels.push_back(l);
          continue;
        }
        for (int64_t k = ell - ell_of[i]; k < ell; ++k) o.labels.push_back(kEllipsisBase + int(k));
      }
      ops_.push_back(std::move(o));
    }
    check_sizes();
    // The output's labels.
    if (explicit_out) {
      Term t = parse_term(rhs);
      for (int l : t.letters) {
        if (l == kEllipsisMark) {
          for (int64_t k = 0; k < ell; ++k) out_.push_back(kEllipsisBase + int(k));
          continue;
        }
        if (std::count(out_.begin(), out_.end(), l))
          fail("einsum(): output subscript " + label_name(l) +
               " appears more than once in the output");
        if (!count_.count(l))
          fail("einsum(): output subscript " + label_name(l) +
               " does not appear in the equation for any input operand");
        out_.push_back(l);
      }
    } else {
      for (int64_t k = 0; k < ell; ++k) out_.push_back(kEllipsisBase + int(k));
      for (auto [l, n] : count_) {
        if (l < kEllipsisBase && n == 1) out_.push_back(l);
      }
    }
    for (Operand& o : ops_) take_diagonals(o);
    Operand cur = ops_[0];
    for (size_t i = 1; i < ops_.size(); ++i) cur = contract(cur, ops_[i], i + 1);
    cur = sum_unneeded(cur, nullptr, ops_.size());
    std::vector<int64_t> perm;
    for (int l : out_) perm.push_back(pos(cur, l));
    return b_.L.fresh(permute(cur.v, perm));
  }

 private:
  [[noreturn]] void fail(const std::string& msg) { b_.fail("equation", msg); }

  std::vector<ir::Value*> operands() {
    const Val& v = b_.val("operands");
    const Val* seq = &v;
    // einsum(eq, [a, b]) as well as einsum(eq, a, b)
    if (v.items.size() == 1 && v.items[0].is_seq()) seq = &v.items[0];
    std::vector<ir::Value*> out;
    for (const Val& item : seq->items) {
      if (item.kind == Val::Kind::Poison) throw Abort{};
      if (!item.is_tensor())
        b_.fail("operands", "einsum(): operands must be tensors, got " + kind_name(item));
      out.push_back(item.value);
    }
    if (out.empty()) b_.fail("operands", "einsum(): must provide at least one operand");
    return out;
  }

  Term parse_term(const std::string& s) {
    Term t;
    for (size_t i = 0; i < s.size(); ++i) {
      char c = s[i];
      if (c == ' ') continue;
      if (c == '.') {
        if (s.compare(i, 3, "...") != 0 || t.ellipsis)
          fail(
              "einsum(): found '.' for an operand that is not part of any ellipsis, or more than "
              "one ellipsis");
        t.ellipsis = true;
        t.letters.push_back(kEllipsisMark);
        i += 2;
      } else if (c >= 'A' && c <= 'Z') {
        t.letters.push_back(c - 'A');
      } else if (c >= 'a' && c <= 'z') {
        t.letters.push_back(26 + c - 'a');
      } else {
        fail(std::string("einsum(): invalid subscript '") + c +
             "' in the equation: subscripts must be letters in [a-zA-Z]");
      }
    }
    return t;
  }

  // Counts label uses (for the implicit output) and checks that sizes agree
  // or broadcast (size 1), as PyTorch.
  void check_sizes() {
    std::map<int, std::pair<ir::Dim, size_t>> seen;
    for (size_t i = 0; i < ops_.size(); ++i) {
      const ir::Dims& dims = ops_[i].v->type().dims();
      for (size_t d = 0; d < dims.size(); ++d) {
        int l = ops_[i].labels[d];
        ++count_[l];
        auto it = seen.find(l);
        if (it == seen.end()) {
          seen[l] = {dims[d], i};
          continue;
        }
        const ir::Dim& a = it->second.first;
        const ir::Dim& c = dims[d];
        bool same_operand = it->second.second == i;
        if (a == c) continue;
        if (!same_operand && (c == ir::Dim(1))) continue;
        if (!same_operand && a == ir::Dim(1)) {
          it->second.first = c;
          continue;
        }
        fail("einsum(): subscript " + label_name(l) + " has size " + c.str() + " for operand " +
             std::to_string(i) + " which does not " +
             (same_operand ? "match the size of its repeat " : "broadcast with size ") + a.str() +
             (same_operand ? "" : " from operand " + std::to_string(it->second.second)));
      }
    }
  }

  static int64_t pos(const Operand& o, int l) {
    return int64_t(std::find(o.labels.begin(), o.labels.end(), l) - o.labels.begin());
  }

  ir::Value* apply(const std::string& op, std::vector<ir::Value*> ins, ir::Attrs attrs = {}) {
    return b_.L.apply1(op, std::move(ins), std::move(attrs), b_.call.callee);
  }

  ir::Value* permute(ir::Value* v, const std::vector<int64_t>& perm) {
    bool identity = true;
    for (size_t i = 0; i < perm.size(); ++i) identity = identity && perm[i] == int64_t(i);
    if (identity) return v;
    return apply("permute", {v}, {{"dims", perm}});
  }

  ir::Value* reshape(ir::Value* v, const ir::Dims& to) {
    if (v->type().dims() == to) return v;
    std::vector<int64_t> shape;
    int syms = 0;
    for (const ir::Dim& d : to) {
      syms += !d.is_static();
      shape.push_back(d.is_static() ? d.value : -1);
    }
    if (syms > 1) {
      b_.fail("einsum: merging several symbolic sizes (" + ir::dims_str(to) +
              ") into one matmul dim is not supported; give the inputs static sizes");
    }
    return apply("reshape", {v}, {{"shape", shape}});
  }

  // A label repeated within one operand takes the diagonal (moved last).
  void take_diagonals(Operand& o) {
    for (size_t p = 0; p < o.labels.size(); ++p) {
      for (size_t q = p + 1; q < o.labels.size(); ++q) {
        if (o.labels[p] != o.labels[q]) continue;
        int l = o.labels[p];
        o.v = apply("diagonal", {o.v},
                    {{"offset", int64_t(0)}, {"dim1", int64_t(p)}, {"dim2", int64_t(q)}});
        o.labels.erase(o.labels.begin() + ptrdiff_t(q));
        o.labels.erase(o.labels.begin() + ptrdiff_t(p));
        o.labels.push_back(l);
        take_diagonals(o);
        return;
      }
    }
  }

  // Whether label l is needed by the output or an operand from `later` on.
  bool needed(int l, size_t later) const {
    if (std::count(out_.begin(), out_.end(), l)) return true;
    for (size_t j = later; j < ops_.size(); ++j) {
      if (pos(ops_[j], l) < int64_t(ops_[j].labels.size())) return true;
    }
    return false;
  }

  // Sums the labels of `o` that neither `other` nor anything from `later` needs.
  Operand sum_unneeded(Operand o, const Operand* other, size_t later) {
    std::vector<int64_t> dims;
    Operand kept{o.v, {}};
    for (size_t d = 0; d < o.labels.size(); ++d) {
      int l = o.labels[d];
      bool in_other = other && pos(*other, l) < int64_t(other->labels.size());
      if (in_other || needed(l, later)) {
        kept.labels.push_back(l);
      } else {
        dims.push_back(int64_t(d));
      }
    }
    if (!dims.empty()) kept.v = apply("sum", {o.v}, reduce_attrs(dims, false));
    return kept;
  }

  Operand contract(Operand a, Operand c, size_t later) {
    a = sum_unneeded(a, &c, later);
    c = sum_unneeded(c, &a, later);
    std::vector<int> batch, contr, aonly, conly;
    for (int l : a.labels) {
      bool shared = pos(c, l) < int64_t(c.labels.size());
      (shared ? (needed(l, later) ? batch : contr) : aonly).push_back(l);
    }
    for (int l : c.labels) {
      if (pos(a, l) == int64_t(a.labels.size())) conly.push_back(l);
    }
    auto order = [&](const Operand& o, std::initializer_list<const std::vector<int>*> groups) {
      std::vector<int64_t> perm;
      for (const auto* g : groups) {
        for (int l : *g) perm.push_back(pos(o, l));
      }
      return permute(o.v, perm);
    };
    const size_t nb = batch.size();
    Operand r;
    for (const auto* g : {&batch, &aonly, &conly})
      r.labels.insert(r.labels.end(), g->begin(), g->end());
    if (contr.empty()) {
      // Nothing to sum: a broadcast multiply of [batch, aonly, 1...] and [batch, 1..., conly].
      ir::Value* x = order(a, {&batch, &aonly});
      for (size_t k = 0; k < conly.size(); ++k) x = apply("unsqueeze", {x}, {{"dim", int64_t(-1)}});
      ir::Value* y = order(c, {&batch, &conly});
      for (size_t k = 0; k < aonly.size(); ++k) y = apply("unsqueeze", {y}, {{"dim", int64_t(nb)}});
      r.v = apply("mul", {x, y});
      return r;
    }
    ir::Value* x = order(a, {&batch, &aonly, &contr});
    ir::Value* y = order(c, {&batch, &contr, &conly});
    const ir::Dims xd = x->type().dims(), yd = y->type().dims();
    // A contracted dim of size 1 on one side broadcasts against the other.
    std::vector<int64_t> xe, ye;
    bool expand_x = false, expand_y = false;
    for (size_t k = 0; k < xd.size(); ++k) xe.push_back(-1);
    for (size_t k = 0; k < yd.size(); ++k) ye.push_back(-1);
    ir::Dims kdims;
    for (size_t k = 0; k < contr.size(); ++k) {
      const ir::Dim& dx = xd[nb + aonly.size() + k];
      const ir::Dim& dy = yd[nb + k];
      kdims.push_back(dx == ir::Dim(1) ? dy : dx);
      if (dx == dy) continue;
      if (dx == ir::Dim(1)) {
        if (!dy.is_static())
          b_.fail("einsum: broadcasting a contracted dim to a symbolic size is not supported");
        xe[nb + aonly.size() + k] = dy.value;
        expand_x = true;
      } else {
        if (!dx.is_static())
          b_.fail("einsum: broadcasting a contracted dim to a symbolic size is not supported");
        ye[nb + k] = dx.value;
        expand_y = true;
      }
    }
    if (expand_x) x = apply("expand", {x}, {{"size", xe}});
    if (expand_y) y = apply("expand", {y}, {{"size", ye}});
    auto merged = [](const ir::Dims& ds) {
      if (ds.size() == 1) return ds[0];
      int64_t n = 1;
      for (const ir::Dim& d : ds) n *= d.is_static() ? d.value : 1;
      for (const ir::Dim& d : ds) {
        if (!d.is_static()) return ir::Dim(-1);  // reshape() reports it
      }
      return ir::Dim(n);
    };
    auto slice_dims = [](const ir::Dims& ds, size_t from, size_t n) {
      return ir::Dims(ds.begin() + ptrdiff_t(from), ds.begin() + ptrdiff_t(from + n));
    };
    ir::Dims adims = slice_dims(xd, nb, aonly.size()),
             cdims = slice_dims(yd, nb + contr.size(), conly.size());
    ir::Dims xs = slice_dims(xd, 0, nb), ys = slice_dims(yd, 0, nb);
    xs.push_back(merged(adims));
    xs.push_back(merged(kdims));
    ys.push_back(merged(kdims));
    ys.push_back(merged(cdims));
    for (ir::Dims* s : {&xs, &ys}) {
      for (ir::Dim& d : *s) {
        if (d == ir::Dim(-1))
          b_.fail(
              "einsum: merging several symbolic sizes into one matmul dim is not supported; give "
              "the inputs static sizes");
      }
    }
    // A single merged group keeps its (possibly symbolic) dim; an empty one is 1.
    if (adims.empty()) xs[nb] = ir::Dim(1);
    if (kdims.empty()) xs[nb + 1] = ys[nb] = ir::Dim(1);
    if (cdims.empty()) ys[nb + 1] = ir::Dim(1);
    ir::Value* p = apply("matmul", {reshape(x, xs), reshape(y, ys)});
    ir::Dims rd = slice_dims(p->type().dims(), 0, nb);
    rd.insert(rd.end(), adims.begin(), adims.end());
    rd.insert(rd.end(), cdims.begin(), cdims.end());
    r.v = reshape(p, rd);
    return r;
  }

  Bound& b_;
  std::vector<Operand> ops_;
  std::vector<int> out_;
  std::map<int, int> count_;
};

}  // namespace

void add_einsum_ops(std::vector<OpEntry>& t) {
  t.push_back({"einsum", kTorch, "equation, *operands", [](Bound& b) { return Einsum(b).run(); }});
}

}  // namespace kiln::frontend
