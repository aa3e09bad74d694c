// conv2d's lowerings: the candidates (registered here, in the order the
// heuristic breaks ties by), what they share (ConvGeometry, ConvOperands,
// predicated loads), and "naive", the plain loop nest every other candidate
// is tested against and falls back to. Each candidate lives in its own file
// (conv_direct.cpp, conv_depthwise.cpp, conv_winograd.cpp); docs/conv.md
// shows their nests and when the heuristic picks each.
#include <sstream>

#include "ir/loop/simplify.h"
#include "ir/loop/visitor.h"
#include "passes/lower/conv.h"
#include "passes/schedule/schedule.h"

namespace kiln::passes::lower {

using namespace kiln::loop;  // NOLINT

namespace {

// An int-list attribute with 1 or 2 entries, as two values.
std::pair<int64_t, int64_t> pair_attr(const ir::Attrs& a, const std::string& name) {
  std::vector<int64_t> v = a.get_ints(name);
  KILN_INTERNAL_CHECK(!v.empty(), name << " is empty");
  return {v[0], v.size() > 1 ? v[1] : v[0]};
}

int64_t static_or(const ir::Dim& d) {
  return d.is_static() ? d.value : -1;
}

bool is_channels_last_view(const ir::Value* v) {
  const ir::Node* p = v->producer();
  if (!p || p->op() != "permute" || v->type().dims().size() != 4) return false;
  return p->attrs().get_ints("dims") == std::vector<int64_t>{0, 3, 1, 2};
}

class Predicator : public IRMutator {
 public:
  explicit Predicator(Expr pred) : pred_(std::move(pred)) {}

 protected:
  using IRMutator::visit;
  Expr visit(const Load* op, const Expr&) override {
    Expr index = mutate(op->index);
    Expr p = op->predicate.defined() ? (mutate(op->predicate) && pred_) : pred_;
    return Load::make(op->buf, index, p);
  }

 private:
  Expr pred_;
};

}  // namespace

// --- shared ----------------------------------------------------------------------------

double ConvGeometry::macs() const {
  if (oh < 0 || ow < 0) return 0;
  return double(cout) * double(cin_g) * double(kh) * double(kw) * double(oh) * double(ow);
}

std::string ConvGeometry::str() const {
  std::ostringstream os;
  os << kh << "x" << kw << " s" << sh;
  if (sw != sh) os << "," << sw;
  os << " p" << pt;
  if (pb != pt || pl != pt || pr != pt) os << "," << pb << "," << pl << "," << pr;
  os << " d" << dh;
  if (dw != dh) os << "," << dw;
  os << " g" << groups << " " << cin << "->" << cout << " @ ";
  os << (h < 0 ? std::string("H") : std::to_string(h)) << "x"
     << (w < 0 ? std::string("W") : std::to_string(w));
  return os.str();
}

ConvGeometry conv_geometry(const ir::Node& n) {
  ConvGeometry g;
  const ir::Type& xt = n.input(0)->type();
  const ir::Type& wt = n.input(1)->type();
  const ir::Dims& xd = xt.dims();
  const ir::Dims& wd = wt.dims();
  g.batched = xd.size() == 4;
  g.dtype = n.output()->type().dtype();
  g.has_bias = !n.input(2)->type().is_none();
  const size_t r = xd.size();
  g.n = g.batched ? static_or(xd[0]) : 1;
  g.cin = xd[r - 3].value;
  g.h = static_or(xd[r - 2]);
  g.w = static_or(xd[r - 1]);
  g.cout = wd[0].value, g.cin_g = wd[1].value, g.kh = wd[2].value, g.kw = wd[3].value;
  g.groups = n.attrs().get_int("groups");
  g.cout_g = g.cout / g.groups;
  std::tie(g.sh, g.sw) = pair_attr(n.attrs(), "stride");
  std::tie(g.dh, g.dw) = pair_attr(n.attrs(), "dilation");
  std::vector<int64_t> p = n.attrs().get_ints("padding");
  if (p.size() == 1) p = {p[0], p[0], p[0], p[0]};
  if (p.size() == 2) p = {p[0], p[0], p[1], p[1]};
  g.pt = p[0], g.pb = p[1], g.pl = p[2], g.pr = p[3];
  const ir::Dims& od = n.output()->type().dims();
  g.oh = static_or(od[od.size() - 2]);
  g.ow = static_or(od[od.size() - 1]);
  g.channels_last = is_channels_last_view(n.input(0));
  return g;
}

ConvOperands::ConvOperands(NodeLowering& n, const OutBuf& o)
    : node(n), out(o), g(conv_geometry(n.node)), acc(accum_dtype(n.out_dtype())) {
  const Operand& xo = n.in(0);
  const size_t r = xo.dims.size();
  N = g.batched ? xo.dims[0] : make_int(1);
  H = xo.dims[r - 2], W = xo.dims[r - 1];
  OH = o.dims[o.dims.size() - 2], OW = o.dims[o.dims.size() - 1];
}

Expr ConvOperands::x(const Expr& n, const Expr& c, const Expr& iy, const Expr& ix) const {
  Index i;
  if (g.batched) i.push_back(n);
  i.insert(i.end(), {c, iy, ix});
  return cast_to(node.in(0).at(i), acc);
}

Expr ConvOperands::w(const Expr& oc, const Expr& ic, const Expr& ky, const Expr& kx) const {
  return cast_to(node.in(1).at({oc, ic, ky, kx}), acc);
}

Expr ConvOperands::bias(const Expr& oc) const {
  if (!g.has_bias) return imm(acc, 0);
  return cast_to(node.in(2).at({oc}), acc);
}

Expr ConvOperands::with_bias(const Expr& oc, const Expr& value) const {
  return g.has_bias ? value + bias(oc) : value;
}

Stmt ConvOperands::store(const Expr& n, const Expr& oc, const Expr& oy, const Expr& ox,
                         const Expr& value) const {
  Index i;
  if (g.batched) i.push_back(n);
  i.insert(i.end(), {oc, oy, ox});
  return store_at(out, i, value);
}

bool conv_supported_dtype(DType t) {
  return t == DType::F32 || t == DType::F64 || t == DType::F16 || t == DType::BF16;
}

int conv_lanes(DType t, const CpuTarget& target) {
  return std::max(1, target.lanes(int(dtype_size(accum_dtype(t)))));
}

Expr predicated(const Expr& e, const Expr& pred) {
  if (!pred.defined()) return e;
  Predicator p(pred);
  return p.mutate(e);
}

namespace {

// Whether `e` is affine in variable `v`: sums of terms, each free of v or v
// times a factor free of v.
bool affine_in(const Expr& e, const std::string& v) {
  struct Uses : IRVisitor {
    using IRVisitor::visit_node;
    const std::string& name;
    bool found = false;
    explicit Uses(const std::string& n) : name(n) {}
    void visit_node(const Var* op) override { found = found || op->name == name; }
  };
  auto uses = [&](const Expr& x) {
    Uses u(v);
    u.visit(x);
    return u.found;
  };
  if (!uses(e)) return true;
  if (const Var* var = e.as<Var>()) return var->name == v;
  if (const Binary* b = e.as<Binary>()) {
    if (b->op == BinOp::Add || b->op == BinOp::Sub) return affine_in(b->a, v) && affine_in(b->b, v);
    if (b->op == BinOp::Mul) {
      return (!uses(b->a) && affine_in(b->b, v)) || (!uses(b->b) && affine_in(b->a, v));
    }
  }
  return false;
}

}  // namespace

Expr input_rows_contiguous(const ConvOperands& c, LowerContext& ctx) {
  const Operand& xo = c.node.in(0);
  Index probe;
  if (c.g.batched) probe.push_back(ctx.loop_var("pn"));
  probe.push_back(ctx.loop_var("pc"));
  Expr py = ctx.loop_var("py"), px = ctx.loop_var("px");
  Index at = probe;
  at.push_back(py);
  at.push_back(px);
  Expr e = xo.at(at);
  const Load* ld = e.as<Load>();
  if (!ld || ld->predicate.defined() || !affine_in(ld->index, py.as<Var>()->name) ||
      !affine_in(ld->index, px.as<Var>()->name)) {
    return make_const(bool_t(), 0);
  }
  // Offsets at image 0, channel 0 (an affine index moves the same way from
  // any of them), so the differences are constants or stride parameters.
  auto offset = [&](int64_t iy, int64_t ix) {
    Expr o = substitute(ld->index, py.as<Var>()->name, make_int(iy));
    o = substitute(o, px.as<Var>()->name, make_int(ix));
    for (const Expr& v : probe) o = substitute(o, v.as<Var>()->name, make_int(0));
    return simplify(o);
  };
  Expr o00 = offset(0, 0);
  Expr dx = simplify(offset(0, 1) - o00), dy = simplify(offset(1, 0) - o00);
  return simplify(dx == make_int(1) && dy == c.W);
}

Expr ceil_div(const Expr& a, int64_t b) {
  return simplify((a + make_int(b - 1)) / make_int(b));
}

Expr in_range(const Expr& i, const Expr& size) {
  return i >= make_int(0) && i < size;
}

// --- input layout ----------------------------------------------------------------------

namespace {

// How far x[.., ix + 1] is from x[.., ix] in its buffer, when x is read
// straight from one (undefined otherwise).
Expr width_stride(const Operand& xo, LowerContext& ctx) {
  Index at;
  for (size_t d = 0; d + 1 < xo.dims.size(); ++d) at.push_back(ctx.loop_var("pd"));
  Expr px = ctx.loop_var("px");
  at.push_back(px);
  Expr e = xo.at(at);
  const Load* ld = e.as<Load>();
  if (!ld) return Expr();
  if (!affine_in(ld->index, px.as<Var>()->name)) return Expr();
  // At index 0 in the other dims, so the difference is a constant or a
  // stride parameter.
  auto offset = [&](int64_t ix) {
    Expr o = ld->index;
    for (size_t d = 0; d + 1 < at.size(); ++d) o = substitute(o, at[d].as<Var>()->name, make_int(0));
    return simplify(substitute(o, px.as<Var>()->name, make_int(ix)));
  };
  return simplify(offset(1) - offset(0));
}

// The copy of x into a packed NCHW buffer: one pass, vectorized along the
// width (loads strided by the input's layout, dense stores).
Stmt pack_input(const Operand& xo, LowerContext& ctx, const Buf& xp) {
  const int L = std::max(1, ctx.options().target.lanes(int(dtype_size(xo.dtype))));
  const Expr W = xo.dims.back();
  std::vector<Expr> lead(xo.dims.begin(), xo.dims.end() - 1);
  Expr row = ctx.loop_var("row"), wb = ctx.loop_var("wb"), l = ctx.loop_var("l");
  Index at = unflatten(row, lead);
  Expr w = simplify(wb * make_int(L) + l);
  at.push_back(w);
  Stmt store = IfThenElse::make(w < W, Store::make(xp, simplify(row * W + w), xo.at(at)));
  Stmt lanes = vectorize(For::make(l, make_int(0), make_int(L), ForKind::Vectorized, store),
                         l.as<Var>()->name);
  Stmt cols = For::make(wb, make_int(0), ceil_div(W, L), ForKind::Serial, lanes);
  ForKind kind = ctx.options().target.cores > 1 ? ForKind::Parallel : ForKind::Serial;
  return For::make(row, make_int(0), product(lead), kind, cols);
}

// Whether a width stride is (probably) 1: the constant 1, or the last-dim
// stride parameter of a graph input, which the default schedule versions on
// being 1. A constant other than 1 or another dim's stride parameter is a
// layout whose width is strided: channels-last data through a permute.
bool width_is_dense(const Expr& dx, LowerContext& ctx) {
  int64_t k = 0;
  if (is_const_int(dx, &k)) return k == 1;
  const Var* v = dx.as<Var>();
  if (!v) return false;
  for (const ScalarParam& s : ctx.scalars()) {
    if (s.role != ScalarRole::Stride || s.var.as<Var>()->name != v->name) continue;
    return s.dim + 1 == int(ctx.buffers()[size_t(s.buffer)].shape.size());
  }
  return false;
}

}  // namespace

RootFn with_packed_input(RootFn inner) {
  return [inner](NodeLowering& n, const std::vector<OutBuf>& outs) -> Stmt {
    const Operand& xo = n.in(0);
    Expr dx = width_stride(xo, n.ctx);
    if (!dx.defined() || width_is_dense(dx, n.ctx)) return inner(n, outs);
    Buf xp = make_buf(n.ctx.fresh("x_nchw"), xo.dtype);
    const std::vector<Expr> dims = xo.dims;
    Operand packed = tensor_operand(
        xo.dtype, dims, [xp, dims](const Index& i) { return Load::make(xp, flat_index(i, dims)); },
        xo.type);
    NodeLowering repacked{n.node, n.inputs, n.ctx};
    repacked.inputs[0] = packed;
    Stmt body = Block::make({pack_input(xo, n.ctx, xp), inner(repacked, outs)});
    return Allocate::make(xp, product(dims), MemoryScope::Heap, body);
  };
}

// --- naive -----------------------------------------------------------------------------

namespace {

// One accumulator per output element; out-of-image taps are skipped by a
// branch. Any shape, any dtype: the reference the other candidates match.
Stmt lower_naive(NodeLowering& n, const std::vector<OutBuf>& outs) {
  ConvOperands c(n, outs[0]);
  const ConvGeometry& g = c.g;
  return loop_nest(n.ctx, outs[0].dims, [&](const Index& o) {
    Expr nn = g.batched ? o[0] : make_int(0);
    Expr oc = o[o.size() - 3], oh = o[o.size() - 2], ow = o[o.size() - 1];
    Expr c0 = simplify((oc / make_int(g.cout_g)) * make_int(g.cin_g));
    Scratch acc = make_scratch(n.ctx, "acc", c.acc);
    Stmt loop = loop_nest(
        n.ctx, {make_int(g.cin_g), make_int(g.kh), make_int(g.kw)},
        [&](const Index& k) {
          Expr iy = simplify(oh * make_int(g.sh) - make_int(g.pt) + k[1] * make_int(g.dh));
          Expr ix = simplify(ow * make_int(g.sw) - make_int(g.pl) + k[2] * make_int(g.dw));
          Expr term = c.x(nn, simplify(c0 + k[0]), iy, ix) * c.w(oc, k[0], k[1], k[2]);
          return IfThenElse::make(in_range(iy, c.H) && in_range(ix, c.W),
                                  acc.store(acc.load() + term));
        },
        "k");
    return allocate({acc}, Block::make({acc.store(imm(c.acc, 0)), loop,
                                        c.store(nn, oc, oh, ow, c.with_bias(oc, acc.load()))}));
  });
}

}  // namespace

AlgorithmLowering conv_naive() {
  AlgorithmLowering a;
  a.name = "naive";
  a.applies = [](const ir::Node&, const CpuTarget&, std::string*) { return true; };
  a.score = [](const ir::Node&, const CpuTarget&, std::string* why) {
    *why = "plain loop nest, one accumulator per output element";
    return 0.0;
  };
  a.root = lower_naive;
  return a;
}

void register_conv_lowerings(LoweringTable& t) {
  OpLowering& l = t["conv2d"];
  l.root = lower_naive;
  l.stores_once = true;
  l.algorithms = {conv_naive(),    conv_direct(), conv_depthwise(),
                  conv_winograd(), conv_1x1(),    conv_im2col()};
  for (AlgorithmLowering& a : l.algorithms) {
    if (a.name != "naive") a.root = with_packed_input(a.root);
  }
}

}  // namespace kiln::passes::lower
