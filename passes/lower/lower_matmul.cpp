// Lowerings of matmul (every torch.matmul rank case: vectors, batched and
// broadcast batch dims), bmm and linear (optional bias, 1-D weight), with
// their algorithm candidates: "gemm.packed", "gemm.small", "gemv" (generated
// by gemm.h's generator) and "naive" (one accumulator per output element, any
// dtype). Each node becomes a GemmSpec: operands as index functions over the
// node's inputs, and a store that adds linear's bias before the output's
// epilogue (or store) sees the value.
//
// The heuristic (score): gemv wherever M or N is 1; the small path while B
// fits in L2, when A has only a few row blocks, or for tiny products; packing
// otherwise (B larger than L2, a linear weight to transpose, sizes unknown
// until run time); naive only for integers. Reasons are phrased for `kiln
// explain`; the measurements behind the rule are in docs/gemm.md.
#include <cmath>
#include <cstdio>

#include "ir/loop/simplify.h"
#include "passes/lower/gemm.h"
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

Stmt lower_with(GemmAlgorithm algorithm, NodeLowering& n, const std::vector<OutBuf>& outs) {
  const bool linear = n.op() == "linear";
  Problem p = linear ? linear_problem(n) : matmul_problem(n, outs[0].dims);
  GemmSpec& s = p.spec;
  s.acc = accum_dtype(n.out_dtype());
  s.specialize = unit_strides(n.ctx);
  const OutBuf out = outs[0];
  const Operand bias = linear ? n.in(2) : Operand{};
  auto out_index = p.out_index;
  s.store = [out, bias, out_index](const Index& bi, const Expr& m, const Expr& nn, const Expr& v) {
    Index o = out_index(bi, m, nn);
    // linear's bias joins the product before any fused consumer sees it.
    Expr value = bias.is_none() ? v : v + cast_to(bias.broadcast_at(o), v.type().dtype);
    return store_at(out, o, value);
  };
  return generate_gemm(n.ctx, s, algorithm, n.ctx.options().target);
}

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

// --- the heuristic ---------------------------------------------------------------------------

// A node's sizes as far as they are known at compile time (-1: symbolic).
struct Sizes {
  int64_t batch = 1, M = 1, N = 1, K = 1;
  bool known = true;  // every size static
  DType dtype = DType::F32;
  bool b_contiguous_k = false;  // linear's [N, K] weight
};

int64_t static_or(const ir::Dim& d, bool* known) {
  if (d.is_static()) return d.value;
  *known = false;
  return -1;
}

Sizes sizes_of(const ir::Node& n) {
  Sizes s;
  const ir::Dims& a = n.input(0)->type().dims();
  const ir::Dims& b = n.input(1)->type().dims();
  const ir::Dims& o = n.output()->type().dims();
  s.dtype = n.output()->type().dtype();
  const bool linear = n.op() == "linear";
  s.K = static_or(a.back(), &s.known);
  if (linear) {
    s.b_contiguous_k = b.size() == 2;
    s.N = b.size() == 1 ? 1 : static_or(b[0], &s.known);
    for (size_t d = 0; d + 1 < a.size(); ++d) {
      int64_t v = static_or(a[d], &s.known);
      if (d + 2 == a.size()) {
        s.M = v;
      } else if (v >= 0 && s.batch >= 0) {
        s.batch *= v;
      } else {
        s.batch = -1;
      }
    }
    return s;
  }
  s.M = a.size() == 1 ? 1 : static_or(a[a.size() - 2], &s.known);
  s.N = b.size() == 1 ? 1 : static_or(b.back(), &s.known);
  const size_t batch_rank = o.size() - (a.size() == 1 ? 0 : 1) - (b.size() == 1 ? 0 : 1);
  for (size_t d = 0; d < batch_rank; ++d) {
    int64_t v = static_or(o[d], &s.known);
    s.batch = v >= 0 && s.batch >= 0 ? s.batch * v : -1;
  }
  return s;
}

std::string sci(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2g", v);
  return buf;
}

std::string dims_text(const Sizes& s) {
  auto d = [](int64_t v) { return v < 0 ? std::string("?") : std::to_string(v); };
  return "M " + d(s.M) + ", N " + d(s.N) + ", K " + d(s.K);
}

bool floating_applies(const ir::Node& n, const CpuTarget&, std::string* why_not) {
  if (is_floating(n.output()->type().dtype())) return true;
  *why_not = "integer matmul runs the naive nest";
  return false;
}

// Whether packing pays for itself. The small path reads B as vectors along n
// straight from the operand, for every block of MR rows of A: fine while B
// stays in L2 (or A has only a few row blocks), slow once B streams from L3,
// and gathers when B is contiguous along k (a linear layer's weight), which
// packing transposes once.
bool packing_pays(const Sizes& s, const CpuTarget& t, std::string* why) {
  const int64_t bytes = int64_t(dtype_size(accum_dtype(s.dtype)));
  const bool mnk_known = s.M >= 0 && s.N >= 0 && s.K >= 0;
  const double mnk = double(s.M) * double(s.N) * double(s.K);
  if (mnk_known && mnk < double(1 << 16)) {
    *why = dims_text(s) + ": M*N*K = " + sci(mnk) + ", too small for packing to pay";
    return false;
  }
  if (s.b_contiguous_k) {
    *why = "the weight is contiguous along K: packing transposes it once";
    return true;
  }
  if (s.N >= 0 && s.K >= 0 && s.K * s.N * bytes <= t.l2_bytes) {
    *why = dims_text(s) + ": B (" + sci(double(s.K * s.N * bytes)) +
           " bytes) fits in L2, read in place, too small for packing to pay";
    return false;
  }
  const int64_t few_rows = 4 * gemm_blocking(t, accum_dtype(s.dtype)).mr;
  if (s.M >= 0 && s.batch == 1 && s.M <= few_rows) {
    *why = dims_text(s) + ": M <= " + std::to_string(few_rows) +
           ", B read only a few times, too small for packing to pay";
    return false;
  }
  *why = mnk_known ? "M*N*K = " + sci(mnk) + " and B larger than L2: packing pays"
                   : dims_text(s) + ": sizes known at run time, assumed large: packing pays";
  return true;
}

AlgorithmLowering candidate(
    const char* name, GemmAlgorithm algorithm,
    std::function<bool(const ir::Node&, const CpuTarget&, std::string*)> ok,
    std::function<double(const ir::Node&, const CpuTarget&, std::string*)> score) {
  AlgorithmLowering a;
  a.name = name;
  a.applies = std::move(ok);
  a.score = std::move(score);
  a.root = [algorithm](NodeLowering& n, const std::vector<OutBuf>& outs) {
    return lower_with(algorithm, n, outs);
  };
  return a;
}

std::vector<AlgorithmLowering> matmul_algorithms() {
  std::vector<AlgorithmLowering> v;
  v.push_back(
      candidate("gemm.packed", GemmAlgorithm::Packed, floating_applies,
                [](const ir::Node& n, const CpuTarget& t, std::string* why) {
                  Sizes s = sizes_of(n);
                  bool pays = packing_pays(s, t, why);
                  const int64_t rows = s.batch >= 0 && s.M >= 0 ? s.batch * s.M : -1;
                  *why += " (" + gemm_blocking(t, accum_dtype(s.dtype), rows, s.N, s.K).str() + ")";
                  return pays ? 2.0 : 1.0;
                }));
  v.push_back(candidate("gemm.small", GemmAlgorithm::Small, floating_applies,
                        [](const ir::Node& n, const CpuTarget& t, std::string* why) {
                          Sizes s = sizes_of(n);
                          std::string pays;
                          bool big = packing_pays(s, t, &pays);
                          *why =
                              big ? "register tiles reading B in place for every block of " +
                                        std::to_string(gemm_blocking(t, accum_dtype(s.dtype)).mr) +
                                        " rows"
                                  : pays + ": register tiles straight from the operands";
                          return big ? 1.0 : 2.0;
                        }));
  v.push_back(candidate(
      "gemv", GemmAlgorithm::Gemv,
      [](const ir::Node& n, const CpuTarget& t, std::string* why) {
        if (!floating_applies(n, t, why)) return false;
        Sizes s = sizes_of(n);
        if (s.M == 1 || s.N == 1) return true;
        *why = dims_text(s) + ": needs M or N of 1";
        return false;
      },
      [](const ir::Node& n, const CpuTarget&, std::string* why) {
        Sizes s = sizes_of(n);
        *why = std::string(s.M == 1 ? "M" : "N") + " = 1: one output " +
               (s.M == 1 ? "row" : "column") + ", nothing to block for";
        return 3.0;
      }));
  AlgorithmLowering naive;
  naive.name = "naive";
  naive.applies = [](const ir::Node&, const CpuTarget&, std::string*) { return true; };
  naive.score = [](const ir::Node& n, const CpuTarget&, std::string* why) {
    *why = is_floating(n.output()->type().dtype())
               ? "plain loop nest, one accumulator per output element"
               : "integers: plain loop nest, exact wrapping accumulation";
    return 0.0;
  };
  naive.root = lower_naive;
  v.push_back(naive);
  return v;
}

}  // namespace

void register_matmul_lowerings(LoweringTable& t) {
  for (const char* op : {"matmul", "bmm", "linear"}) {
    t[op].root = lower_naive;
    t[op].algorithms = matmul_algorithms();
    t[op].stores_once = true;
  }
}

}  // namespace kiln::passes::lower
