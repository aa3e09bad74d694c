// Lowerings of matmul (every torch.matmul rank case: vectors, batched and
// broadcast batch dims), bmm and linear (optional bias, 1-D weight), with
// their algorithm candidates: each target's generated ones (on the CPU
// "gemm.packed", "gemm.small", "gemv": passes/lower/cpu/gemm_candidates.cpp;
// on a GPU "gemm.simt": passes/lower/gpu/gpu_gemm_candidates.cpp) and
// "naive" (one accumulator per output element, any dtype, every target).
// Each node becomes a GemmSpec (gemm_spec.h): operands as index functions
// over the node's inputs, and a store that adds linear's bias before the
// output's epilogue (or store) sees the value.
#include <cmath>
#include <cstdio>

#include "ir/loop/analysis.h"
#include "ir/loop/simplify.h"
#include "passes/lower/cpu/gemm.h"
#include "passes/lower/gemm_spec.h"
#include "passes/lower/gpu/gpu_gemm.h"
#include "passes/lower/gpu/vendor_candidates.h"
#include "passes/lower/lower_internal.h"

namespace kiln::passes::lower {
namespace {

using namespace kiln::loop;  // NOLINT

// Batch dims of an operand aligned right against the output's batch index;
// static size-1 dims read index 0.
Index batch_index(const std::vector<Expr>& dims, size_t batch_rank, const Index& out_batch) {
  Index idx;
  const size_t lead = out_batch.size() - batch_rank;
  for (size_t d = 0; d < batch_rank; ++d) {
    int64_t s = 0;
    idx.push_back(is_const_int(dims[d], &s) && s == 1 ? make_int(0) : out_batch[lead + d]);
  }
  return idx;
}

bool all_ones(const std::vector<Expr>& dims, size_t n) {
  for (size_t d = 0; d < n; ++d) {
    int64_t s = 0;
    if (!is_const_int(dims[d], &s) || s != 1) return false;
  }
  return true;
}

// The problem a matmul/bmm/linear node computes, as a GemmSpec over its
// operands (stores not yet attached).
struct Problem {
  GemmSpec spec;
  // The output index of element (batch, m, n).
  std::function<Index(const Index&, const Expr&, const Expr&)> out_index;
};

Problem matmul_problem(const NodeLowering& n, const std::vector<Expr>& out_dims) {
  const Operand& a = n.in(0);
  const Operand& b = n.in(1);
  const bool a_vec = a.rank() == 1, b_vec = b.rank() == 1;
  const size_t out_batch = out_dims.size() - (a_vec ? 0 : 1) - (b_vec ? 0 : 1);
  const size_t a_batch = a_vec ? 0 : size_t(a.rank()) - 2;
  const size_t b_batch = b_vec ? 0 : size_t(b.rank()) - 2;
  Problem p;
  GemmSpec& s = p.spec;
  s.batch.assign(out_dims.begin(), out_dims.begin() + ptrdiff_t(out_batch));
  s.M = a_vec ? make_int(1) : a.dims[a.dims.size() - 2];
  s.N = b_vec ? make_int(1) : b.dims.back();
  s.K = a.dims.back();
  s.a_batch_invariant = all_ones(a.dims, a_batch);
  s.b_batch_invariant = all_ones(b.dims, b_batch);
  s.a = [a, a_batch, a_vec](const Index& bi, const Expr& m, const Expr& k) {
    Index i = batch_index(a.dims, a_batch, bi);
    if (!a_vec) i.push_back(m);
    i.push_back(k);
    return a.at(i);
  };
  s.b = [b, b_batch, b_vec](const Index& bi, const Expr& k, const Expr& nn) {
    Index i = batch_index(b.dims, b_batch, bi);
    i.push_back(k);
    if (!b_vec) i.push_back(nn);
    return b.at(i);
  };
  p.out_index = [a_vec, b_vec](const Index& bi, const Expr& m, const Expr& nn) {
    Index o = bi;
    if (!a_vec) o.push_back(m);
    if (!b_vec) o.push_back(nn);
    return o;
  };
  return p;
}

Problem linear_problem(const NodeLowering& n) {
  const Operand& x = n.in(0);
  const Operand& w = n.in(1);
  const bool w_vec = w.rank() == 1;
  Problem p;
  GemmSpec& s = p.spec;
  // x's leading dims: all but the last are batch dims over one shared weight
  // (the generator folds them into M), the last is M.
  std::vector<Expr> lead(x.dims.begin(), x.dims.end() - 1);
  const bool x_vec = lead.empty();
  if (!x_vec) s.batch.assign(lead.begin(), lead.end() - 1);
  s.M = x_vec ? make_int(1) : lead.back();
  s.N = w_vec ? make_int(1) : w.dims[0];
  s.K = x.dims.back();
  s.b_batch_invariant = true;
  s.b_contiguous_k = true;  // the weight is [out_features, in_features]
  s.a = [x, x_vec](const Index& bi, const Expr& m, const Expr& k) {
    Index i = bi;
    if (!x_vec) i.push_back(m);
    i.push_back(k);
    return x.at(i);
  };
  s.b = [w, w_vec](const Index&, const Expr& k, const Expr& nn) {
    return w_vec ? w.at({k}) : w.at({nn, k});
  };
  p.out_index = [x_vec, w_vec](const Index& bi, const Expr& m, const Expr& nn) {
    Index o = bi;
    if (!x_vec) o.push_back(m);
    if (!w_vec) o.push_back(nn);
    return o;
  };
  return p;
}

// The stride parameters of the kernel's inputs that are worth versioning the
// operand reads on: each buffer's last-dim stride, usually 1.
std::vector<std::pair<std::string, int64_t>> unit_strides(LowerContext& ctx) {
  std::vector<std::pair<std::string, int64_t>> out;
  for (const ScalarParam& s : ctx.scalars()) {
    if (s.role != ScalarRole::Stride) continue;
    const BufferParam& b = ctx.buffers()[size_t(s.buffer)];
    if (s.dim + 1 == int(b.shape.size())) out.push_back({s.var.as<Var>()->name, 1});
  }
  return out;
}

// Whether the operand read f(p, q) steps one element per step of p (its
// stride 1, or a stride the code is versioned on being 1) and not per step of
// q: a transposed view (x @ w.t() reads w along K), which the generators then
// read like a linear layer's weight instead of gathering along N.
bool unit_along_first(const std::function<Expr(const Expr&, const Expr&)>& f,
                      const std::vector<std::pair<std::string, int64_t>>& specialize) {
  Expr p = Var::make(i64_t(), "probe_p"), q = Var::make(i64_t(), "probe_q");
  Expr e = f(p, q);
  while (const auto* c = e.as<Cast>()) e = c->value;
  const auto* load = e.as<Load>();
  if (!load) return false;
  auto unit = [&](const Expr& c) {
    int64_t v = 0;
    if (!c.defined()) return false;
    if (is_const_int(c, &v)) return v == 1;
    const auto* var = c.as<Var>();
    for (const auto& [name, value] : specialize) {
      if (var && var->name == name && value == 1) return true;
    }
    return false;
  };
  Expr cp = linear_coefficient(load->index, "probe_p");
  Expr cq = linear_coefficient(load->index, "probe_q");
  return unit(cp) && cq.defined() && !unit(cq);
}

}  // namespace

GemmSpec node_gemm_spec(NodeLowering& n, const std::vector<OutBuf>& outs) {
  const bool linear = n.op() == "linear";
  Problem p = linear ? linear_problem(n) : matmul_problem(n, outs[0].dims);
  GemmSpec& s = p.spec;
  s.acc = accum_dtype(n.out_dtype());
  s.specialize = unit_strides(n.ctx);
  if (!linear) {
    // A transposed view as an operand: read along its stored dim.
    Index pb(s.batch.size(), make_int(0));
    const auto& a = s.a;
    const auto& b = s.b;
    s.a_contiguous_m =
        unit_along_first([&](const Expr& m, const Expr& k) { return a(pb, m, k); }, s.specialize);
    s.b_contiguous_k =
        unit_along_first([&](const Expr& k, const Expr& nn) { return b(pb, k, nn); }, s.specialize);
  }
  const OutBuf out = outs[0];
  const Operand bias = linear ? n.in(2) : Operand{};
  auto out_index = p.out_index;
  s.store = [out, bias, out_index](const Index& bi, const Expr& m, const Expr& nn, const Expr& v) {
    Index o = out_index(bi, m, nn);
    // linear's bias joins the product before any fused consumer sees it.
    Expr value = bias.is_none() ? v : v + cast_to(bias.broadcast_at(o), v.type().dtype);
    return store_at(out, o, value);
  };
  return s;
}

namespace {

// --- naive -----------------------------------------------------------------------------------

// acc = sum over k of term(k), stored at `out_idx`.
Stmt reduce_into(LowerContext& ctx, const OutBuf& out, const Index& out_idx, DType acc_t,
                 const Expr& K, const std::function<Expr(const Expr&)>& term,
                 const std::function<Expr(const Expr&)>& finish) {
  Scratch acc = make_scratch(ctx, "acc", acc_t);
  Expr k = ctx.loop_var("k");
  Stmt loop = For::make(k, make_int(0), K, ForKind::Serial,
                        acc.store(acc.load() + cast_to(term(k), acc_t)));
  return allocate({acc}, Block::make({acc.store(imm(acc_t, 0)), loop,
                                      store_at(out, out_idx, finish(acc.load()))}));
}

Stmt lower_naive(NodeLowering& n, const std::vector<OutBuf>& outs) {
  const bool linear = n.op() == "linear";
  Problem p = linear ? linear_problem(n) : matmul_problem(n, outs[0].dims);
  const GemmSpec& s = p.spec;
  const DType acc_t = accum_dtype(n.out_dtype());
  const Operand bias = linear ? n.in(2) : Operand{};
  // The batch dims as the output's; folded leading dims of linear's x too.
  std::vector<Expr> dims = s.batch;
  dims.push_back(s.M);
  dims.push_back(s.N);
  return loop_nest(n.ctx, dims, [&](const Index& i) {
    Index bi(i.begin(), i.end() - 2);
    const Expr m = i[i.size() - 2], nn = i.back();
    Index o = p.out_index(bi, m, nn);
    return reduce_into(
        n.ctx, outs[0], o, acc_t, s.K,
        [&](const Expr& k) {
          return cast_to(s.a(bi, m, k), acc_t) * cast_to(s.b(bi, k, nn), acc_t);
        },
        [&](const Expr& acc) {
          return bias.is_none() ? acc : acc + cast_to(bias.broadcast_at(o), acc_t);
        });
  });
}

AlgorithmLowering naive_algorithm() {
  AlgorithmLowering naive;
  naive.name = "naive";
  naive.targets = all_target_kinds();
  naive.applies = [](const ir::Node&, const Target&, std::string*) { return true; };
  naive.score = [](const ir::Node& n, const Target&, std::string* why) {
    *why = is_floating(n.output()->type().dtype())
               ? "plain loop nest, one accumulator per output element"
               : "integers: plain loop nest, exact wrapping accumulation";
    return 0.0;
  };
  naive.root = lower_naive;
  return naive;
}

}  // namespace

void register_matmul_lowerings(LoweringTable& t) {
  for (const char* op : {"matmul", "bmm", "linear"}) {
    t[op].root = lower_naive;
    // The CPU generator's candidates, the GPU's, then the plain nest every
    // target has.
    t[op].algorithms = cpu_matmul_algorithms();
    for (AlgorithmLowering& a : gpu_matmul_algorithms()) t[op].algorithms.push_back(std::move(a));
    for (AlgorithmLowering& a : gpu_vendor_matmul_algorithms()) t[op].algorithms.push_back(std::move(a));
    t[op].algorithms.push_back(naive_algorithm());
    t[op].stores_once = true;
  }
}

}  // namespace kiln::passes::lower
