// conv2d's lowerings: the candidates (registered here, in the order the
// heuristic breaks ties by), what they share (ConvGeometry, ConvOperands,
// predicated loads), and "naive", the plain loop nest every target has and
// every other candidate is tested against. The CPU's candidates live under
// passes/lower/cpu/, one file each (conv_direct.cpp, conv_depthwise.cpp,
// conv_winograd.cpp, conv_gemm.cpp; how they read the input's layout in
// conv_input.cpp, their list in conv_candidates.cpp); docs/conv.md shows
// their nests and when the heuristic picks each.
#include <algorithm>
#include <sstream>

#include "ir/loop/simplify.h"
#include "ir/loop/visitor.h"
#include "passes/fuse.h"
#include "passes/lower/conv.h"
#include "passes/lower/cpu/conv_cpu.h"
#include "passes/lower/gpu/gpu_conv.h"
#include "passes/lower/gpu/vendor_candidates.h"

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

Expr predicated(const Expr& e, const Expr& pred) {
  if (!pred.defined()) return e;
  Predicator p(pred);
  return p.mutate(e);
}

Expr ceil_div(const Expr& a, int64_t b) {
  return simplify((a + make_int(b - 1)) / make_int(b));
}

Expr in_range(const Expr& i, const Expr& size) {
  return i >= make_int(0) && i < size;
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
  a.targets = all_target_kinds();
  a.applies = [](const ir::Node&, const Target&, std::string*) { return true; };
  a.score = [](const ir::Node&, const Target&, std::string* why) {
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
  // The plain nest every target has, then the CPU's and the GPU's generated candidates.
  l.algorithms = {conv_naive()};
  for (AlgorithmLowering& a : cpu_conv_algorithms()) l.algorithms.push_back(std::move(a));
  add_gpu_conv_algorithms(l.algorithms);
  for (AlgorithmLowering& a : gpu_vendor_conv_algorithms()) l.algorithms.push_back(std::move(a));
}

}  // namespace kiln::passes::lower

namespace kiln::passes {

// Declared in passes/fuse.h (the fusion's fold_pool and lower_root's
// foldable_pool ask it); kept with the conv lowerings whose tiles it matches.
std::string pool_fold_blocker(const ir::Node& pool) {
  if (pool.op() != "max_pool2d") return "not a max_pool2d";
  const ir::Attrs& a = pool.attrs();
  auto pair = [&](const std::string& name, int64_t want, bool empty_ok) {
    std::vector<int64_t> v = a.get_ints(name);
    if (v.empty()) return empty_ok;
    return v.size() <= 2 && v.front() == want && v.back() == want;
  };
  if (!pair("kernel_size", 2, false)) return "its kernel is not 2x2";
  if (!pair("stride", 2, true)) return "its stride is not 2";
  if (!pair("padding", 0, true)) return "it pads";
  if (!pair("dilation", 1, true)) return "it is dilated";
  if (a.get_bool("ceil_mode")) return "ceil_mode rounds up";
  const ir::Type& t = pool.input(0)->type();
  if (!t.is_tensor() || t.dims().size() != 4) return "its operand is not NCHW";
  const ir::Dim& h = t.dims()[2];
  const ir::Dim& w = t.dims()[3];
  if (!h.is_static() || !w.is_static()) return "the height or width is symbolic";
  if (h.value % 2 != 0 || w.value % 2 != 0 || h.value <= 0 || w.value <= 0) {
    return "the height or width is odd";
  }
  return "";
}

}  // namespace kiln::passes
