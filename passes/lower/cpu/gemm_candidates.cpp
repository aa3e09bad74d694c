// The matmul/bmm/linear candidates of the CPU's GEMM generator (gemm.h):
// "gemm.packed", "gemm.small" and "gemv", and the heuristic that scores them
// against each other (the target-neutral "naive" nest scores 0; it wins only
// where none of these applies, i.e. for integers).
//
// The heuristic: gemv wherever M or N is 1; the small path while B fits in
// a quarter of L2, when A has only a few row blocks, or for tiny products; packing
// otherwise (B larger than a quarter of L2, a linear weight to transpose, sizes unknown
// until run time). Reasons are phrased for `kiln explain`; the measurements
// behind the rule are in docs/gemm.md.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "passes/lower/cpu/gemm.h"
#include "passes/lower/gemm_spec.h"
#include "passes/lower/lower_internal.h"

namespace kiln::passes::lower {
namespace {

// A node's sizes as far as they are known at compile time (-1: symbolic).
struct Sizes {
  int64_t batch = 1, M = 1, N = 1, K = 1;
  bool known = true;  // every size static
  DType dtype = DType::F32;
  bool b_contiguous_k = false;  // linear's [N, K] weight, or x @ w.t()
};

int64_t static_or(const ir::Dim& d, bool* known) {
  if (d.is_static()) return d.value;
  *known = false;
  return -1;
}

// Whether `v` is its producer's input with the last two dims swapped (w.t(),
// w.transpose(-2, -1), a permute that swaps just them): a matmul operand
// stored along what the product reads as its first dim.
bool swaps_last_two(const ir::Value* v) {
  const ir::Node* p = v->producer();
  const int64_t r = v->type().is_tensor() ? v->type().rank() : 0;
  if (!p || r < 2) return false;
  if (p->op() == "transpose") {
    auto norm = [r](int64_t d) { return d < 0 ? d + r : d; };
    int64_t d0 = norm(p->attrs().get_int("dim0")), d1 = norm(p->attrs().get_int("dim1"));
    return std::min(d0, d1) == r - 2 && std::max(d0, d1) == r - 1;
  }
  if (p->op() == "permute") {
    std::vector<int64_t> d = p->attrs().get_ints("dims");
    if (int64_t(d.size()) != r) return false;
    for (int64_t i = 0; i < r; ++i) {
      int64_t want = i < r - 2 ? i : (i == r - 2 ? r - 1 : r - 2);
      if ((d[size_t(i)] + r) % r != want) return false;
    }
    return true;
  }
  return false;
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
  s.b_contiguous_k = b.size() >= 2 && swaps_last_two(n.input(1));  // x @ w.t()
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
// stays well inside L2 (or A has only a few row blocks), slow once B streams from L3,
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
  // Read in place, B streams from L2 a row stride apart per k (a TLB page
  // every few k at N >= 512); packed, it streams contiguously. On the Xeon
  // (L2 2 MiB) packing won from a quarter of L2 up, one and two threads:
  // SGEMM 384 0.69 against 0.73 ms, 512 1.66 against 1.81 ms (one thread)
  // and 0.89 against 0.97 (two), 1024x256 @ 256x768 2.44 against 2.71 and
  // 1.30 against 1.47; at 256 (B an eighth of L2) and below the small path
  // kept up or won. On Zen 5 (L2 1 MiB) the two measured equal at 512.
  if (s.N >= 0 && s.K >= 0 && s.K * s.N * bytes <= t.l2_bytes / 4) {
    *why = dims_text(s) + ": B (" + sci(double(s.K * s.N * bytes)) +
           " bytes) fits in L2 (a quarter of it), read in place, too small for packing to pay";
    return false;
  }
  const int64_t few_rows = 4 * gemm_blocking(t, accum_dtype(s.dtype)).mr;
  if (s.M >= 0 && s.batch == 1 && s.M <= few_rows) {
    *why = dims_text(s) + ": M <= " + std::to_string(few_rows) +
           ", B read only a few times, too small for packing to pay";
    return false;
  }
  *why = mnk_known ? "M*N*K = " + sci(mnk) + " and B larger than a quarter of L2: packing pays"
                   : dims_text(s) + ": sizes known at run time, assumed large: packing pays";
  return true;
}

// A CPU candidate running generate_gemm's `algorithm`; its test and score
// read the CPU description of the target.
AlgorithmLowering candidate(
    const char* name, GemmAlgorithm algorithm,
    std::function<bool(const ir::Node&, const CpuTarget&, std::string*)> ok,
    std::function<double(const ir::Node&, const CpuTarget&, std::string*)> score) {
  AlgorithmLowering a;
  a.name = name;
  a.targets = {TargetKind::CPU};
  a.applies = [ok](const ir::Node& n, const Target& t, std::string* why) {
    return ok(n, t.cpu, why);
  };
  a.score = [score](const ir::Node& n, const Target& t, std::string* why) {
    return score(n, t.cpu, why);
  };
  a.root = [algorithm](NodeLowering& n, const std::vector<OutBuf>& outs) {
    return generate_gemm(n.ctx, node_gemm_spec(n, outs), algorithm, n.ctx.options().target.cpu);
  };
  return a;
}

}  // namespace

std::vector<AlgorithmLowering> cpu_matmul_algorithms() {
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
  return v;
}

}  // namespace kiln::passes::lower
