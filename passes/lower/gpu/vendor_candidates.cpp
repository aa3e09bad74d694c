// "matmul.cublaslt" and "conv.cudnn" (see vendor_candidates.h): applicability,
// the heuristic's rule, the lowering to one library call, and the split of a
// library contraction's fused consumers into a kernel of their own.
//
// The heuristic, with no GPU timing yet: cuBLASLt scores 5 (above the tiled
// SIMT GEMM's 2 and the tensor-core GEMM's 3) for f32/f16/bf16/f64 products unless the whole product is
// known to be tiny (M*N*K < 2^12, where a launch of either costs the same and
// the generated kernel keeps fused epilogues); cuDNN scores 5 (above the
// generated nests, the depthwise one's 4 included) for every convolution it applies to. Where the library is
// absent, the candidate does not apply and says why.
#include "passes/lower/gpu/vendor_candidates.h"

#include <algorithm>
#include <set>

#include "ir/loop/analysis.h"
#include "ir/loop/visitor.h"
#include "passes/algorithms.h"
#include "passes/lower/conv.h"
#include "passes/lower/gemm_spec.h"
#include "passes/lower/gpu/gpu_gemm.h"

namespace kiln::passes {

using loop::Expr;
using loop::make_int;
using loop::make_zero;

bool is_library_algorithm(const std::string& algorithm) {
  return algorithm == "matmul.cublaslt" || algorithm == "conv.cudnn";
}

void split_library_groups(std::vector<KernelGroup>& groups) {
  for (size_t g = 0; g < groups.size(); ++g) {
    KernelGroup& grp = groups[g];
    if (!is_library_algorithm(grp.algorithm.name) || grp.nodes.size() < 2) continue;
    // A contraction group starts with its contraction; consumers follow.
    if (!has_algorithms(grp.nodes[0]->op())) continue;
    KernelGroup rest;
    rest.nodes.assign(grp.nodes.begin() + 1, grp.nodes.end());
    // The recomputed layout nodes the consumers read (through each other).
    std::set<const ir::Node*> readers(rest.nodes.begin(), rest.nodes.end());
    for (auto it = grp.recomputed.rbegin(); it != grp.recomputed.rend(); ++it) {
      for (const ir::Node* r : readers) {
        const auto& ins = r->inputs();
        if (std::find(ins.begin(), ins.end(), (*it)->output()) != ins.end()) {
          readers.insert(*it);
          break;
        }
      }
    }
    for (const ir::Node* r : grp.recomputed) {
      if (readers.count(r)) rest.recomputed.push_back(r);
    }
    rest.reason = "the consumers of " + grp.nodes[0]->op() + " run after " +
                  grp.algorithm.name + " in a generated kernel (the library cannot apply them as "
                  "it stores)";
    grp.nodes.resize(1);
    groups.insert(groups.begin() + ptrdiff_t(g) + 1, std::move(rest));
  }
}

namespace lower {
namespace {

// A load of a kernel buffer at base + sum(coef[i] * vars[i]).
struct Access {
  Buf buf;
  Expr base;
  std::vector<Expr> coef;
};

bool uses_any(const Expr& e, const std::vector<Expr>& vars) {
  for (const Expr& v : vars) {
    if (loop::uses_var(e, v.as<loop::Var>()->name)) return true;
  }
  return false;
}

// The affine decomposition of `index` over `vars` (each coefficient free of
// them), when there is one.
bool affine(const Expr& index, const std::vector<Expr>& vars, Expr* base, std::vector<Expr>* coef) {
  coef->clear();
  Expr b = index;
  for (const Expr& v : vars) {
    const std::string& name = v.as<loop::Var>()->name;
    Expr c = loop::linear_coefficient(index, name);
    if (!c.defined() || uses_any(c, vars)) return false;
    coef->push_back(c);
    b = loop::substitute(b, name, make_int(0));
  }
  if (uses_any(b, vars)) return false;
  *base = b;
  return true;
}

bool kernel_buffer(LowerContext& ctx, const Buf& b) {
  for (const BufferParam& p : ctx.buffers()) {
    if (p.buf == b) return true;
  }
  return false;
}

// `e` as a plain load of a kernel buffer, affine in `vars`.
bool access_of(LowerContext& ctx, const Expr& e, const std::vector<Expr>& vars, Access* out) {
  const auto* load = e.as<loop::Load>();
  if (!load || e.type().lanes != 1 || load->predicate.defined()) return false;
  if (!kernel_buffer(ctx, load->buf)) return false;
  out->buf = load->buf;
  return affine(load->index, vars, &out->base, &out->coef);
}

// The store of `s` (a Store of a kernel buffer), affine in `vars`.
bool store_access(LowerContext& ctx, const Stmt& s, const std::vector<Expr>& vars, Access* out) {
  const auto* st = s.as<loop::Store>();
  if (!st || st->predicate.defined() || !kernel_buffer(ctx, st->buf)) return false;
  out->buf = st->buf;
  return affine(st->index, vars, &out->base, &out->coef);
}

// The call inside a one-block GPU loop: gpu-map leaves a mapped kernel alone,
// and the backend finds the call and makes it a library launch.
Stmt library_kernel_body(LowerContext& ctx, const char* name, std::vector<Expr> args,
                         std::vector<Buf> bufs) {
  return loop::For::make(ctx.loop_var("lib"), make_int(0), make_int(1), loop::ForKind::GpuBlock,
                         loop::ExternCall::make(name, std::move(args), std::move(bufs)));
}

bool library_dtype(DType t) {
  return t == DType::F32 || t == DType::F16 || t == DType::BF16 || t == DType::F64;
}

int64_t static_or(const ir::Dim& d) {
  return d.is_static() ? d.value : -1;
}

// Why the node's operand `i` cannot be read by a library (empty: it can):
// computed operands are recomputed inside the contraction's kernel.
std::string operand_problem(const ir::Node& n, size_t i) {
  const ir::Node* p = n.input(i)->producer();
  if (!p || p->op() == "constant") return "";
  if (cheap_to_recompute(*p) && p->def() && p->def()->category != ir::OpCategory::Layout) {
    return "operand " + std::to_string(i) + " is computed in the kernel (" + p->op() +
           "), the library reads memory";
  }
  return "";
}

// ---- cuBLASLt

AlgorithmLowering cublaslt_candidate() {
  AlgorithmLowering a;
  a.name = "matmul.cublaslt";
  a.targets = {TargetKind::CUDA};
  a.applies = [](const ir::Node& n, const Target& t, std::string* why_not) {
    if (!t.gpu.cublaslt_missing.empty()) {
      *why_not = t.gpu.cublaslt_missing;
      return false;
    }
    const DType dt = n.output()->type().dtype();
    if (!library_dtype(dt)) {
      *why_not = std::string("cuBLASLt has no exact ") + dtype_name(dt) + " product";
      return false;
    }
    for (size_t i = 0; i < n.inputs().size(); ++i) {
      if (n.input(i)->type().is_tensor() && n.input(i)->type().dtype() != dt) {
        *why_not = "operands of mixed dtypes";
        return false;
      }
      if (std::string p = operand_problem(n, i); !p.empty()) {
        *why_not = p;
        return false;
      }
    }
    const ir::Dims& ad = n.input(0)->type().dims();
    if (!ad.empty() && ad.back().is_static() && ad.back().value == 0) {
      *why_not = "K is 0";
      return false;
    }
    return true;
  };
  a.score = [](const ir::Node& n, const Target&, std::string* why) {
    const ir::Dims& ad = n.input(0)->type().dims();
    const ir::Dims& bd = n.input(1)->type().dims();
    const int64_t m = ad.size() == 1 ? 1 : static_or(ad[ad.size() - 2]);
    const int64_t k = static_or(ad.back());
    const int64_t nn =
        bd.size() == 1 ? 1 : static_or(n.op() == "linear" ? bd[0] : bd.back());
    const bool bias = n.op() == "linear" && !n.input(2)->type().is_none();
    if (m >= 0 && k >= 0 && nn >= 0 && m * k * nn < (int64_t(1) << 12)) {
      *why = "a product of " + std::to_string(m * k * nn) +
             " multiply-adds: a library call costs what the generated kernel does";
      return 1.0;
    }
    *why = std::string("vendor GEMM (tensor cores for f16/bf16)") +
           (bias ? ", bias in its epilogue" : "") +
           "; fused consumers run in a kernel after it";
    return 5.0;
  };
  a.root = [](NodeLowering& n, const std::vector<OutBuf>& outs) -> Stmt {
    GemmSpec s = node_gemm_spec(n, outs);
    auto generated = [&] {
      return generate_gpu_gemm(n.ctx, s, gpu_gemm_tiling(n.ctx.options().target.gpu, s.acc));
    };
    const DType dt = n.out_dtype();
    if (outs[0].epilogue || outs[0].buf->dtype != dt) return generated();
    std::vector<Expr> vars;
    for (size_t i = 0; i < s.batch.size(); ++i) vars.push_back(n.ctx.loop_var("b"));
    const Expr m = n.ctx.loop_var("m"), k = n.ctx.loop_var("k"), col = n.ctx.loop_var("n");
    const Index bi(vars.begin(), vars.end());
    vars.insert(vars.end(), {m, k, col});
    const size_t im = vars.size() - 3, ik = im + 1, in = im + 2;
    Access A, B, C, bias;
    if (!access_of(n.ctx, s.a(bi, m, k), vars, &A) || !access_of(n.ctx, s.b(bi, k, col), vars, &B) ||
        A.buf->dtype != dt || B.buf->dtype != dt) {
      return generated();
    }
    // C's layout from a store of the bare product (linear's bias aside).
    GemmSpec plain = s;
    if (!store_access(n.ctx, plain.store(bi, m, col, make_zero({s.acc, 1})), vars, &C)) {
      return generated();
    }
    const bool has_bias = n.op() == "linear" && !n.in(2).is_none();
    if (has_bias) {
      const Operand& b = n.in(2);
      if (b.rank() != 1 || b.dtype != dt || !access_of(n.ctx, b.at({col}), vars, &bias)) {
        return generated();
      }
    }
    std::vector<Expr> args(kLtFixedArgs);
    args[kLtEpilogue] = make_int(has_bias ? 1 : 0);  // BlasEpilogue::Bias : None
    args[kLtM] = s.M, args[kLtN] = s.N, args[kLtK] = s.K;
    args[kLtAOffset] = A.base, args[kLtAm] = A.coef[im], args[kLtAk] = A.coef[ik];
    args[kLtBOffset] = B.base, args[kLtBk] = B.coef[ik], args[kLtBn] = B.coef[in];
    args[kLtCOffset] = C.base, args[kLtCm] = C.coef[im], args[kLtCn] = C.coef[in];
    args[kLtBiasOffset] = has_bias ? bias.base : make_int(0);
    args[kLtBiasStride] = has_bias ? bias.coef[in] : make_int(1);
    for (size_t d = 0; d < s.batch.size(); ++d) {
      args.insert(args.end(), {s.batch[d], A.coef[d], B.coef[d], C.coef[d]});
    }
    std::vector<Buf> bufs = {A.buf, B.buf, C.buf};
    if (has_bias) bufs.push_back(bias.buf);
    return library_kernel_body(n.ctx, kCublasLtCall, std::move(args), std::move(bufs));
  };
  return a;
}

// ---- cuDNN

AlgorithmLowering cudnn_candidate() {
  AlgorithmLowering a;
  a.name = "conv.cudnn";
  a.targets = {TargetKind::CUDA};
  a.applies = [](const ir::Node& n, const Target& t, std::string* why_not) {
    if (!t.gpu.cudnn_missing.empty()) {
      *why_not = t.gpu.cudnn_missing;
      return false;
    }
    const ConvGeometry g = conv_geometry(n);
    if (!library_dtype(g.dtype)) {
      *why_not = std::string("cuDNN has no exact ") + dtype_name(g.dtype) + " convolution";
      return false;
    }
    if (g.pt != g.pb || g.pl != g.pr) {
      *why_not = "asymmetric padding";
      return false;
    }
    for (size_t i = 0; i < n.inputs().size(); ++i) {
      if (std::string p = operand_problem(n, i); !p.empty()) {
        *why_not = p;
        return false;
      }
    }
    return true;
  };
  a.score = [](const ir::Node& n, const Target&, std::string* why) {
    *why = "vendor convolution (" + conv_geometry(n).str() +
           "); fused consumers run in a kernel after it";
    return 5.0;
  };
  a.root = [](NodeLowering& n, const std::vector<OutBuf>& outs) -> Stmt {
    static const AlgorithmLowering naive = conv_naive();
    const ConvOperands co(n, outs[0]);
    const ConvGeometry& g = co.g;
    if (outs[0].epilogue || outs[0].buf->dtype != g.dtype) return naive.root(n, outs);
    const Expr vn = n.ctx.loop_var("n"), vc = n.ctx.loop_var("c"), vy = n.ctx.loop_var("y"),
               vx = n.ctx.loop_var("x");
    const std::vector<Expr> vars = {vn, vc, vy, vx};
    Index xi;
    if (g.batched) xi.push_back(vn);
    xi.insert(xi.end(), {vc, vy, vx});
    Access X, W, Y, bias;
    if (!access_of(n.ctx, n.in(0).at(xi), vars, &X) || X.buf->dtype != g.dtype ||
        !access_of(n.ctx, n.in(1).at({vn, vc, vy, vx}), vars, &W) || W.buf->dtype != g.dtype ||
        !store_access(n.ctx, co.store(vn, vc, vy, vx, make_zero({co.acc, 1})), vars, &Y)) {
      return naive.root(n, outs);
    }
    if (g.has_bias) {
      if (n.in(2).rank() != 1 || n.in(2).dtype != g.dtype ||
          !access_of(n.ctx, n.in(2).at({vc}), vars, &bias)) {
        return naive.root(n, outs);
      }
    }
    std::vector<Expr> args(kDnnArgs);
    args[kDnnN] = co.N, args[kDnnC] = make_int(g.cin), args[kDnnH] = co.H, args[kDnnW] = co.W;
    args[kDnnXsN] = X.coef[0], args[kDnnXsC] = X.coef[1], args[kDnnXsH] = X.coef[2],
    args[kDnnXsW] = X.coef[3], args[kDnnXOffset] = X.base;
    args[kDnnK] = make_int(g.cout), args[kDnnR] = make_int(g.kh), args[kDnnS] = make_int(g.kw);
    args[kDnnWsK] = W.coef[0], args[kDnnWsC] = W.coef[1], args[kDnnWsR] = W.coef[2],
    args[kDnnWsS] = W.coef[3], args[kDnnWOffset] = W.base;
    args[kDnnGroups] = make_int(g.groups);
    args[kDnnPadH] = make_int(g.pt), args[kDnnPadW] = make_int(g.pl);
    args[kDnnStrideH] = make_int(g.sh), args[kDnnStrideW] = make_int(g.sw);
    args[kDnnDilH] = make_int(g.dh), args[kDnnDilW] = make_int(g.dw);
    args[kDnnP] = co.OH, args[kDnnQ] = co.OW, args[kDnnYOffset] = Y.base;
    args[kDnnBiasOffset] = g.has_bias ? bias.base : make_int(0);
    args[kDnnBiasStride] = g.has_bias ? bias.coef[1] : make_int(1);
    // y is the packed output: strides (k*p*q, p*q, q, 1), checked by the backend.
    std::vector<Buf> bufs = {X.buf, W.buf, Y.buf};
    if (g.has_bias) bufs.push_back(bias.buf);
    return library_kernel_body(n.ctx, kCudnnCall, std::move(args), std::move(bufs));
  };
  return a;
}

}  // namespace

std::vector<AlgorithmLowering> gpu_vendor_matmul_algorithms() {
  return {cublaslt_candidate()};
}

std::vector<AlgorithmLowering> gpu_vendor_conv_algorithms() {
  return {cudnn_candidate()};
}

}  // namespace lower
}  // namespace kiln::passes
