// conv2d's candidates on GPU targets (gpu_conv.h) and the heuristic's rules
// for them against the target-neutral "naive" nest (score 0, a thread per
// output element):
//
//   conv.depthwise      4   wherever it applies (groups == Cin): a GEMM over
//                           K = KH*KW per channel would leave its tiles idle
//   conv.1x1            3   1x1 stride 1 unpadded, unless its batched GEMM's
//                           images are known to be under one 64-wide tile and
//                           there is more than one (1: the implicit GEMM folds
//                           the batch into the tiles)
//   conv.implicit_gemm  2   any float conv2d
//   the GEMMs          -1   when Cout/groups (the GEMM's M) or the pixels
//                           (its N) are known to be under 16: most of a tile
//                           would idle, as gemm.simt's rule for a thin matmul
//
// Sizes known only at run time count as large. Reasons are phrased for
// `kiln explain`. conv.depthwise and conv.1x1 share their names with CPU
// candidates: lowering finds a candidate by name, so each pair is one table
// entry serving both kinds of target, with each kind's rules and lowering.
#include <algorithm>

#include "passes/lower/gpu/gpu_conv.h"
#include "passes/lower/gpu/gpu_gemm.h"

namespace kiln::passes::lower {
namespace {

bool float_conv(const ConvGeometry& g, std::string* why_not) {
  if (conv_supported_dtype(g.dtype)) return true;
  *why_not = "dtype " + std::string(dtype_name(g.dtype)) + " runs the naive nest";
  return false;
}

bool is_1x1(const ConvGeometry& g) {
  return g.kh == 1 && g.kw == 1 && g.sh == 1 && g.sw == 1 && !g.pt && !g.pb && !g.pl && !g.pr;
}

// N*OH*OW, -1 when any is symbolic.
int64_t pixels(const ConvGeometry& g) {
  if (g.n < 0 || g.oh < 0 || g.ow < 0) return -1;
  return g.n * g.oh * g.ow;
}

// The GEMM's sides as explain shows them, and the -1 rule for thin ones.
double gemm_score(const ConvGeometry& g, int64_t n_side, const std::string& n_text,
                  const Target& t, double score, const std::string& how, std::string* why) {
  const GpuGemmTiling tiling = gpu_gemm_tiling(t.gpu, accum_dtype(g.dtype));
  const std::string dims = "M " + std::to_string(g.cout_g) + " (Cout/groups), N " + n_text +
                           ", K " + std::to_string(g.cin_g * g.kh * g.kw);
  if (g.cout_g < kGpuTileSmallSide || (n_side >= 0 && n_side < kGpuTileSmallSide)) {
    *why = dims + ": a side under " + std::to_string(kGpuTileSmallSide) + " leaves most of a " +
           std::to_string(tiling.bm) + "x" + std::to_string(tiling.bn) +
           " tile idle; the naive nest's thread per output does as well";
    return -1.0;
  }
  *why = dims + (n_side < 0 ? " (known at run time, assumed large)" : "") + ": " + how + " (" +
         tiling.str() + ")";
  return score;
}

Stmt lower_gemm(NodeLowering& n, const std::vector<OutBuf>& outs, bool one_by_one) {
  ConvOperands c(n, outs[0]);
  GemmSpec spec = one_by_one ? gpu_conv_1x1_spec(c) : gpu_conv_implicit_gemm_spec(c);
  return generate_gpu_gemm(n.ctx, spec, gpu_gemm_tiling(n.ctx.options().target.gpu, spec.acc));
}

AlgorithmLowering implicit_gemm() {
  AlgorithmLowering a;
  a.name = "conv.implicit_gemm";
  a.targets = {TargetKind::CUDA};
  a.applies = [](const ir::Node& n, const Target&, std::string* why_not) {
    return float_conv(conv_geometry(n), why_not);
  };
  a.score = [](const ir::Node& n, const Target& t, std::string* why) {
    ConvGeometry g = conv_geometry(n);
    const int64_t p = pixels(g);
    const std::string n_text = gpu_size_text(p) + " (batch x OH x OW)";
    return gemm_score(g, p, n_text, t, 2.0,
                      "the input patch gathered into the shared-memory tiles, no column buffer",
                      why);
  };
  a.root = [](NodeLowering& n, const std::vector<OutBuf>& outs) {
    return lower_gemm(n, outs, false);
  };
  return a;
}

AlgorithmLowering one_by_one() {
  AlgorithmLowering a;
  a.name = "conv.1x1";
  a.targets = {TargetKind::CUDA};
  a.applies = [](const ir::Node& n, const Target&, std::string* why_not) {
    ConvGeometry g = conv_geometry(n);
    if (!float_conv(g, why_not)) return false;
    if (!is_1x1(g)) {
      *why_not = "needs a 1x1 kernel, stride 1 and no padding";
      return false;
    }
    return true;
  };
  a.score = [](const ir::Node& n, const Target& t, std::string* why) {
    ConvGeometry g = conv_geometry(n);
    const int64_t plane = g.oh < 0 || g.ow < 0 ? -1 : g.oh * g.ow;
    const std::string n_text = gpu_size_text(plane) + " (H x W) per image of " + gpu_size_text(g.n);
    if (plane >= 0 && plane < 64 && g.n != 1) {
      // Each image's GEMM fills a fraction of its tiles; the implicit GEMM
      // runs all images' pixels through one.
      const double s = gemm_score(g, plane, n_text, t, 1.0, "", why);
      if (s < 0) return s;
      *why = n_text + ": images under one 64-wide tile each; conv.implicit_gemm folds the batch "
                      "into its tiles";
      return 1.0;
    }
    return gemm_score(g, plane, n_text, t, 3.0,
                      "a batched GEMM over (image, group), no tap or padding index math", why);
  };
  a.root = [](NodeLowering& n, const std::vector<OutBuf>& outs) {
    return lower_gemm(n, outs, true);
  };
  return a;
}

AlgorithmLowering depthwise() {
  AlgorithmLowering a;
  a.name = "conv.depthwise";
  a.targets = {TargetKind::CUDA};
  a.applies = [](const ir::Node& n, const Target& t, std::string* why_not) {
    ConvGeometry g = conv_geometry(n);
    if (!float_conv(g, why_not)) return false;
    if (!g.depthwise()) {
      *why_not = "not a depthwise convolution (groups == Cin)";
      return false;
    }
    if (!gpu_depthwise_tiling(g, t.gpu).fits) {
      *why_not = "the input patch of one output does not fit shared memory";
      return false;
    }
    return true;
  };
  a.score = [](const ir::Node& n, const Target& t, std::string* why) {
    ConvGeometry g = conv_geometry(n);
    *why = "depthwise, channel multiplier " + std::to_string(g.cout_g) +
           ": no channel reduction to tile; " + gpu_depthwise_tiling(g, t.gpu).str() +
           ", input patches in shared memory";
    return 4.0;
  };
  a.root = [](NodeLowering& n, const std::vector<OutBuf>& outs) {
    ConvOperands c(n, outs[0]);
    return generate_gpu_depthwise(c, n.ctx, gpu_depthwise_tiling(c.g, n.ctx.options().target.gpu));
  };
  return a;
}

// One entry for a name both kinds of target have: each kind gets its own
// rules and root (lowering looks candidates up by name).
AlgorithmLowering by_target(const AlgorithmLowering& cpu, const AlgorithmLowering& gpu) {
  AlgorithmLowering a = cpu;
  a.targets.insert(a.targets.end(), gpu.targets.begin(), gpu.targets.end());
  auto for_kind = [cpu, gpu](TargetKind k) -> const AlgorithmLowering& {
    return k == TargetKind::CUDA ? gpu : cpu;
  };
  a.applies = [for_kind](const ir::Node& n, const Target& t, std::string* why_not) {
    const AlgorithmLowering& x = for_kind(t.kind);
    return !x.applies || x.applies(n, t, why_not);
  };
  a.score = [for_kind](const ir::Node& n, const Target& t, std::string* why) {
    return for_kind(t.kind).score(n, t, why);
  };
  a.root = [for_kind](NodeLowering& n, const std::vector<OutBuf>& outs) {
    return for_kind(n.ctx.options().target.kind).root(n, outs);
  };
  return a;
}

}  // namespace

std::vector<AlgorithmLowering> gpu_conv_algorithms() {
  return {implicit_gemm(), depthwise(), one_by_one()};
}

void add_gpu_conv_algorithms(std::vector<AlgorithmLowering>& list) {
  for (AlgorithmLowering& g : gpu_conv_algorithms()) {
    auto same = std::find_if(list.begin(), list.end(),
                             [&](const AlgorithmLowering& a) { return a.name == g.name; });
    if (same == list.end()) {
      list.push_back(std::move(g));
    } else {
      *same = by_target(*same, g);
    }
  }
}

}  // namespace kiln::passes::lower
