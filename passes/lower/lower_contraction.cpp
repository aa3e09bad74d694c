// Lowerings of the convolution family as naive but correct loop nests: conv2d
// (stride, 2- or 4-int padding, dilation, groups), max_pool2d and avg_pool2d
// (torch's divisor rules). Each output element accumulates in f32
// (f16/bf16/f32), f64 or i64 (integers wrap like the reference) and is rounded
// once into the output. Matmul, bmm and linear live in lower_matmul.cpp.
#include "ir/loop/simplify.h"
#include "passes/lower/lower_internal.h"

namespace kiln::passes::lower {
namespace {

using namespace kiln::loop;  // NOLINT

// An int-list attribute with 1 or 2 entries, as two values.
std::pair<int64_t, int64_t> pair_attr(const ir::Attrs& a, const std::string& name) {
  std::vector<int64_t> v = a.get_ints(name);
  KILN_INTERNAL_CHECK(!v.empty(), name << " is empty");
  return {v[0], v.size() > 1 ? v[1] : v[0]};
}

Expr in_range(const Expr& i, const Expr& size) {
  return i >= make_int(0) && i < size;
}

Stmt lower_conv2d(NodeLowering& n, const std::vector<OutBuf>& outs) {
  const Operand& x = n.in(0);
  const Operand& w = n.in(1);
  Operand bias = n.in(2);
  const bool batched = x.rank() == 4;
  DType acc_t = accum_dtype(n.out_dtype());
  // Plain variables, not structured bindings: clang 14 cannot capture those.
  const auto stride = pair_attr(n.attrs(), "stride");
  const auto dilation = pair_attr(n.attrs(), "dilation");
  const int64_t sh = stride.first, sw = stride.second;
  const int64_t dh = dilation.first, dw = dilation.second;
  std::vector<int64_t> p = n.attrs().get_ints("padding");
  if (p.size() == 1) p = {p[0], p[0], p[0], p[0]};
  if (p.size() == 2) p = {p[0], p[0], p[1], p[1]};
  const int64_t groups = n.attrs().get_int("groups");
  int64_t cout = 0, cin_g = 0, kh = 0, kw = 0;
  is_const_int(w.dims[0], &cout), is_const_int(w.dims[1], &cin_g);
  is_const_int(w.dims[2], &kh), is_const_int(w.dims[3], &kw);
  const int64_t cout_g = cout / groups;
  const size_t r = x.dims.size();
  Expr H = x.dims[r - 2], W = x.dims[r - 1];
  return loop_nest(n.ctx, outs[0].dims, [&](const Index& o) {
    Expr oc = o[o.size() - 3], oh = o[o.size() - 2], ow = o[o.size() - 1];
    Expr c0 = simplify((oc / make_int(cout_g)) * make_int(cin_g));
    Scratch acc = make_scratch(n.ctx, "acc", acc_t);
    Stmt loop = loop_nest(
        n.ctx, {make_int(cin_g), make_int(kh), make_int(kw)},
        [&](const Index& k) {
          Expr iy = simplify(oh * make_int(sh) - make_int(p[0]) + k[1] * make_int(dh));
          Expr ix = simplify(ow * make_int(sw) - make_int(p[2]) + k[2] * make_int(dw));
          Index xi;
          if (batched) xi.push_back(o[0]);
          xi.insert(xi.end(), {simplify(c0 + k[0]), iy, ix});
          Expr term = cast_to(x.at(xi), acc_t) * cast_to(w.at({oc, k[0], k[1], k[2]}), acc_t);
          return IfThenElse::make(in_range(iy, H) && in_range(ix, W), acc.store(acc.load() + term));
        },
        "k");
    Expr result = acc.load();
    if (!bias.is_none()) result = result + cast_to(bias.at({oc}), acc_t);
    return allocate({acc},
                    Block::make({acc.store(imm(acc_t, 0)), loop, store_at(outs[0], o, result)}));
  });
}

struct PoolAttrs {
  int64_t kh, kw, sh, sw, ph, pw, dh = 1, dw = 1;
};

PoolAttrs pool_attrs(const ir::Attrs& a, bool has_dilation) {
  PoolAttrs p{};
  std::tie(p.kh, p.kw) = pair_attr(a, "kernel_size");
  if (a.get_ints("stride").empty()) {
    p.sh = p.kh, p.sw = p.kw;
  } else {
    std::tie(p.sh, p.sw) = pair_attr(a, "stride");
  }
  std::tie(p.ph, p.pw) = pair_attr(a, "padding");
  if (has_dilation) std::tie(p.dh, p.dw) = pair_attr(a, "dilation");
  return p;
}

Stmt lower_max_pool(NodeLowering& n, const std::vector<OutBuf>& outs) {
  const Operand& x = n.in(0);
  PoolAttrs p = pool_attrs(n.attrs(), true);
  DType acc_t = accum_dtype(x.dtype);
  const size_t r = x.dims.size();
  Expr H = x.dims[r - 2], W = x.dims[r - 1];
  return loop_nest(n.ctx, outs[0].dims, [&](const Index& o) {
    Expr oh = o[r - 2], ow = o[r - 1];
    Scratch best = make_scratch(n.ctx, "best", acc_t);
    Stmt loop = loop_nest(
        n.ctx, {make_int(p.kh), make_int(p.kw)},
        [&](const Index& k) {
          Expr iy = simplify(oh * make_int(p.sh) - make_int(p.ph) + k[0] * make_int(p.dh));
          Expr ix = simplify(ow * make_int(p.sw) - make_int(p.pw) + k[1] * make_int(p.dw));
          Index xi(o.begin(), o.end() - 2);
          xi.push_back(iy), xi.push_back(ix);
          Expr v = cast_to(x.at(xi), acc_t);
          // NaN propagates (padding is -inf and never wins).
          Stmt update = IfThenElse::make(v > best.load() || is_nan(v), best.store(v));
          return IfThenElse::make(in_range(iy, H) && in_range(ix, W), update);
        },
        "k");
    return allocate(
        {best}, Block::make({best.store(lowest(acc_t)), loop, store_at(outs[0], o, best.load())}));
  });
}

Stmt lower_avg_pool(NodeLowering& n, const std::vector<OutBuf>& outs) {
  const Operand& x = n.in(0);
  PoolAttrs p = pool_attrs(n.attrs(), false);
  const bool include_pad = n.attrs().get_bool("count_include_pad");
  const bool has_divisor = !n.attrs().is_none("divisor_override");
  DType acc_t = accum_dtype(x.dtype);
  const size_t r = x.dims.size();
  Expr H = x.dims[r - 2], W = x.dims[r - 1];
  return loop_nest(n.ctx, outs[0].dims, [&](const Index& o) {
    Expr y0 = simplify(o[r - 2] * make_int(p.sh) - make_int(p.ph));
    Expr x0 = simplify(o[r - 1] * make_int(p.sw) - make_int(p.pw));
    // The window clipped to the padded input counts for count_include_pad;
    // clipped to the input, it is what gets summed.
    Expr y1 = min(y0 + make_int(p.kh), H + make_int(p.ph));
    Expr x1 = min(x0 + make_int(p.kw), W + make_int(p.pw));
    Expr padded_count = (y1 - y0) * (x1 - x0);
    Expr cy0 = max(y0, make_int(0)), cx0 = max(x0, make_int(0));
    Expr cy1 = min(y1, H), cx1 = min(x1, W);
    Expr count = has_divisor   ? make_int(n.attrs().get_int("divisor_override"))
                 : include_pad ? padded_count
                               : (cy1 - cy0) * (cx1 - cx0);
    Scratch acc = make_scratch(n.ctx, "acc", acc_t);
    Stmt loop = loop_nest(
        n.ctx, {make_int(p.kh), make_int(p.kw)},
        [&](const Index& k) {
          Expr iy = simplify(y0 + k[0]), ix = simplify(x0 + k[1]);
          Index xi(o.begin(), o.end() - 2);
          xi.push_back(iy), xi.push_back(ix);
          Expr inside = iy >= cy0 && iy < cy1 && ix >= cx0 && ix < cx1;
          return IfThenElse::make(inside, acc.store(acc.load() + cast_to(x.at(xi), acc_t)));
        },
        "k");
    Expr empty = cy0 >= cy1 || cx0 >= cx1;
    Expr result = Select::make(empty, imm(acc_t, 0), acc.load() / cast_to(count, acc_t));
    return allocate({acc}, Block::make({acc.store(imm(acc_t, 0)), loop,
                                        store_at(outs[0], o, simplify(result))}));
  });
}

// The plain loop nests: one accumulator per output element, any shape, any
// dtype. Always applicable, never preferred once a faster candidate applies.
AlgorithmLowering naive(RootFn root) {
  AlgorithmLowering a;
  a.name = "naive";
  a.applies = [](const ir::Node&, const CpuTarget&, std::string*) { return true; };
  a.score = [](const ir::Node&, const CpuTarget&, std::string* why) {
    *why = "plain loop nest, one accumulator per output element";
    return 0.0;
  };
  a.root = std::move(root);
  return a;
}

}  // namespace

void register_contraction_lowerings(LoweringTable& t) {
  t["conv2d"].root = lower_conv2d;
  t["max_pool2d"].root = lower_max_pool;
  t["avg_pool2d"].root = lower_avg_pool;
  t["conv2d"].algorithms.push_back(naive(lower_conv2d));
  for (const char* op : {"conv2d", "max_pool2d", "avg_pool2d"}) {
    t[op].stores_once = true;
  }
}

}  // namespace kiln::passes::lower
