// The matmul/bmm/linear candidate of the GPU's GEMM generator (gpu_gemm.h):
// "gemm.simt", and the heuristic's rule for it against the target-neutral
// "naive" nest (score 0): the tiled GEMM wins unless M or N is known to be
// smaller than kGpuTileSmallSide, where most of a 64x64 tile's threads would idle
// and the naive nest's one thread per output element (reading the long
// operand coalesced) does as well. Sizes known only at run time count as
// large. Reasons are phrased for `kiln explain`.
#include "passes/lower/gpu/gpu_gemm.h"

#include "passes/lower/gpu/gpu_mma.h"

#include "passes/lower/gemm_spec.h"
#include "passes/lower/lower_internal.h"

namespace kiln::passes::lower {
namespace {

AlgorithmLowering simt_candidate() {
  AlgorithmLowering a;
  a.name = "gemm.simt";
  a.targets = {TargetKind::CUDA};
  a.applies = [](const ir::Node& n, const Target&, std::string* why_not) {
    if (is_floating(n.output()->type().dtype())) return true;
    *why_not = "integer matmul runs the naive nest";
    return false;
  };
  a.score = [](const ir::Node& n, const Target& t, std::string* why) {
    auto [m, nn] = gemm_rows_and_columns(n);
    const GpuGemmTiling tiling = gpu_gemm_tiling(t.gpu, accum_dtype(n.output()->type().dtype()));
    const std::string dims = "M " + gpu_size_text(m) + ", N " + gpu_size_text(nn);
    if ((m >= 0 && m < kGpuTileSmallSide) || (nn >= 0 && nn < kGpuTileSmallSide)) {
      *why = dims + ": a side under " + std::to_string(kGpuTileSmallSide) + " leaves most of a " +
             std::to_string(tiling.bm) + "x" + std::to_string(tiling.bn) +
             " tile idle; the naive nest's thread per output does as well";
      return -1.0;
    }
    *why = dims + (m < 0 || nn < 0 ? " (known at run time, assumed large)" : "") +
           ": shared-memory tiles and register blocking (" + tiling.str() + ")";
    return 2.0;
  };
  a.root = [](NodeLowering& n, const std::vector<OutBuf>& outs) {
    GemmSpec spec = node_gemm_spec(n, outs);
    return generate_gpu_gemm(n.ctx, spec, gpu_gemm_tiling(n.ctx.options().target.gpu, spec.acc));
  };
  return a;
}

}  // namespace

namespace {
int64_t static_or(const ir::Dim& d) {
  return d.is_static() ? d.value : -1;
}
}  // namespace

std::pair<int64_t, int64_t> gemm_rows_and_columns(const ir::Node& n) {
  const ir::Dims& a = n.input(0)->type().dims();
  const ir::Dims& b = n.input(1)->type().dims();
  const int64_t m = a.size() == 1 ? 1 : static_or(a[a.size() - 2]);
  if (n.op() == "linear") return {m, b.size() == 1 ? 1 : static_or(b[0])};
  return {m, b.size() == 1 ? 1 : static_or(b.back())};
}

std::string gpu_size_text(int64_t v) {
  return v < 0 ? std::string("?") : std::to_string(v);
}

std::vector<AlgorithmLowering> gpu_matmul_algorithms() {
  return {simt_candidate(), gpu_mma_candidate()};
}

}  // namespace kiln::passes::lower
