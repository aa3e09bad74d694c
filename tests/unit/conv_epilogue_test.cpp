// The OutBuf epilogue contract for every conv2d candidate: built by hand here
// (the fusion pass that makes such groups is separate), an epilogue that
// applies a per-channel scale and shift and a relu (batch norm folded into an
// affine map, then an activation) and stores into its own buffer. Each
// candidate must call it once per output element with the conv's final value
// (bias included) and never touch its own output buffer, which is not a
// kernel parameter here: an access to it would not even compile.
#include <gtest/gtest.h>

#include "api/target.h"
#include "conv_test_util.h"
#include "passes/algorithms.h"
#include "passes/lower/lower_internal.h"

namespace kiln::test {
namespace {

using namespace kiln::loop;  // NOLINT
namespace lw = kiln::passes::lower;

struct EpilogueRun {
  Tensor y;       // what the epilogue stored
  Tensor counts;  // how many times each element was stored
};

// Lowers the conv node of `b` with `algorithm`, its output through the
// epilogue y = relu(v * scale[c] + shift[c]) (plus a store count per element).
EpilogueRun run_with_epilogue(const ConvGraph& b, const std::string& algorithm, const Tensor& scale,
                              const Tensor& shift) {
  const ir::Node* conv = nullptr;
  for (const auto& n : b.g->nodes()) {
    if (n->op() == "conv2d") conv = n.get();
  }
  passes::LowerOptions o;
  o.target = api::host_target();
  o.algorithm = algorithm;
  lw::LowerContext ctx(o);
  auto input = [&](const ir::Value* v, const std::string& name) {
    std::vector<Expr> dims = ctx.dims(v->type().dims());
    int i = ctx.add_buffer(v, passes::BufferRole::Input, name, v->type().dtype(), dims, false);
    Buf buf = ctx.buffers()[size_t(i)].buf;
    std::vector<Expr> strides = lw::packed_strides(dims);
    return lw::tensor_operand(
        v->type().dtype(), dims,
        [buf, strides](const lw::Index& idx) {
          return Load::make(buf, lw::offset_of(idx, strides));
        },
        v->type());
  };
  std::vector<lw::Operand> ins = {input(conv->input(0), "x"), input(conv->input(1), "w")};
  ins.push_back(conv->input(2)->type().is_none() ? lw::Operand{} : input(conv->input(2), "b"));
  const ir::Type& ot = conv->output()->type();
  std::vector<Expr> out_dims = ctx.dims(ot.dims());
  Buf sc = ctx.buffers()[size_t(ctx.add_buffer(nullptr, passes::BufferRole::Input, "scale",
                                               DType::F32, {out_dims[1]}, false))]
               .buf;
  Buf sh = ctx.buffers()[size_t(ctx.add_buffer(nullptr, passes::BufferRole::Input, "shift",
                                               DType::F32, {out_dims[1]}, false))]
               .buf;
  Buf y = ctx.buffers()[size_t(ctx.add_buffer(nullptr, passes::BufferRole::Output, "y", DType::F32,
                                              out_dims, false))]
              .buf;
  Buf count = ctx.buffers()[size_t(ctx.add_buffer(nullptr, passes::BufferRole::Output, "count",
                                                  DType::F32, out_dims, false))]
                  .buf;
  // Not a kernel buffer: the contract says nothing may touch it.
  Buf unused = make_buf("conv_out_unused", ot.dtype());
  lw::OutBuf out(unused, out_dims, [&](const lw::Index& idx, const Expr& value) {
    Expr at = lw::flat_index(idx, out_dims);
    Expr c = idx[1];
    Expr v = lw::cast_to(value, DType::F32) * Load::make(sc, c) + Load::make(sh, c);
    Expr relu = max(v, make_zero(v.type()));
    return Block::make(
        {Store::make(y, at, relu),
         Store::make(count, at, Load::make(count, at) + make_const({DType::F32, 1}, 1))});
  });
  lw::NodeLowering nl{*conv, ins, ctx};
  const lw::OpLowering& l = lw::lowering_table().at("conv2d");
  Stmt body;
  for (const lw::AlgorithmLowering& a : l.algorithms) {
    if (a.name == algorithm) body = a.root(nl, {out});
  }
  EXPECT_TRUE(body.defined()) << algorithm;
  Kernel k;
  k.name = "conv_epilogue";
  for (const passes::BufferParam& p : ctx.buffers()) k.buffers.push_back(p.buf);
  for (const passes::ScalarParam& s : ctx.scalars()) k.scalars.push_back(s.var);
  k.body = simplify(body);
  k = passes::default_schedule(k, ir::OpCategory::Contraction, {});
  k.body = simplify(k.body);
  EpilogueRun r;
  r.y = Tensor::full(
      ot.dims().size() == 4
          ? Shape{ot.dims()[0].value, ot.dims()[1].value, ot.dims()[2].value, ot.dims()[3].value}
          : Shape{ot.dims()[0].value, ot.dims()[1].value, ot.dims()[2].value},
      -7.0);
  r.counts = Tensor::zeros(r.y.sizes());
  // In the kernel's buffer order: the graph inputs, the epilogue's, and any
  // constant the lowering added (Winograd's coefficient table).
  std::vector<Tensor> bufs;
  size_t next_input = 0;
  for (const passes::BufferParam& p : ctx.buffers()) {
    const std::string& name = p.buf->name;
    if (p.role == passes::BufferRole::Constant) {
      bufs.push_back(p.constant);
    } else if (name == "scale" || name == "shift") {
      bufs.push_back(name == "scale" ? scale : shift);
    } else if (name == "y" || name == "count") {
      bufs.push_back(name == "y" ? r.y : r.counts);
    } else {
      bufs.push_back(b.feed.at(next_input++));
    }
  }
#ifdef KILN_WITH_LLVM
  NativeKernels nk({k});
  nk.runner()(0, bufs, {});
#else
  loop::eval_kernel(k, bufs, {});
#endif
  return r;
}

TEST(ConvEpilogue, EveryCandidateStoresEachElementOnceThroughTheEpilogue) {
  std::vector<ConvCase> cases;
  ConvCase c;
  c.n = 2, c.cin = 17, c.cout = 19, c.h = c.w = 9, c.padding = {1};  // odd sizes, tails
  cases.push_back(c);
  c.n = 1, c.cin = 8, c.cout = 8, c.h = c.w = 20, c.bias = false;
  cases.push_back(c);
  c.cin = c.cout = 16, c.groups = 16, c.bias = true;  // depthwise
  cases.push_back(c);
  c.groups = 1, c.kh = c.kw = 1, c.padding = {0}, c.cout = 33;  // 1x1
  cases.push_back(c);
  c.kh = c.kw = 3, c.stride = {2, 2}, c.padding = {1};  // stride 2
  cases.push_back(c);
  c.stride = {1, 1}, c.padding = {0, 2, 1, 0}, c.dtype = DType::BF16;  // asymmetric, bf16
  cases.push_back(c);
  int ran = 0;
  for (const ConvCase& cc : cases) {
    ConvGraph b = conv_graph(cc, 11);
    Tensor want = ir::interpret(*b.g, b.feed).at(0).to(DType::F32);
    const int64_t C = cc.cout;
    Tensor scale = random_tensor({C}, DType::F32, 5), shift = random_tensor({C}, DType::F32, 6);
    // The reference epilogue on the interpreter's result.
    Tensor ref = want.contiguous();
    const int64_t plane = ref.numel() / (ref.size(0) * C);
    float* p = ref.data<float>();
    for (int64_t i = 0; i < ref.numel(); ++i) {
      int64_t ch = (i / plane) % C;
      p[i] = std::max(0.0f, p[i] * scale.data<float>()[ch] + shift.data<float>()[ch]);
    }
    const ir::Node* conv = nullptr;
    for (const auto& n : b.g->nodes()) {
      if (n->op() == "conv2d") conv = n.get();
    }
    for (const std::string& a : passes::applicable_algorithms(*conv, api::host_target())) {
      EpilogueRun r = run_with_epilogue(b, a, scale, shift);
      const double k = double(cc.cin / cc.groups * cc.kh * cc.kw);
      const double tol = cc.dtype == DType::BF16 ? 6e-2 * (1 + k * 1e-2) : 2e-5 * k * 8;
      EXPECT_TRUE(tensors_close(r.y, ref, cc.dtype == DType::BF16 ? 3.2e-2 : 1e-4, tol))
          << a << " on " << cc.str();
      EXPECT_TRUE(tensors_close(r.counts, Tensor::full(r.y.sizes(), 1.0), 0, 0))
          << a << " on " << cc.str() << ": an element stored other than once";
      ++ran;
    }
  }
  EXPECT_GE(ran, 20);
}

}  // namespace
}  // namespace kiln::test
