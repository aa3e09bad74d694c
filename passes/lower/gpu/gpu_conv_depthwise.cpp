// conv.depthwise on GPU targets (gpu_conv.h shows the nest): a block of
// output tiles, one per channel plane, computed from their input patches in
// shared memory.
#include <algorithm>

#include "ir/loop/simplify.h"
#include "passes/lower/gpu/gpu_conv.h"

namespace kiln::passes::lower {

using namespace kiln::loop;  // NOLINT

namespace {

// The smallest power of two >= v, at most cap (cap for a symbolic size, v < 0).
int64_t pow2_at_least(int64_t v, int64_t cap) {
  if (v < 0) return cap;
  int64_t p = 1;
  while (p < v && p < cap) p *= 2;
  return p;
}

constexpr int64_t kThreads = 256;  // a block's threads when the image is large enough

}  // namespace

std::string GpuDepthwiseTiling::str() const {
  return std::to_string(channels) + (channels == 1 ? " channel x " : " channels x ") +
         std::to_string(rows) + "x" + std::to_string(cols) + " outputs, " +
         std::to_string(rows_per_thread) + (rows_per_thread == 1 ? " row" : " rows") +
         " per thread, " + std::to_string(threads()) + " threads";
}

GpuDepthwiseTiling gpu_depthwise_tiling(const ConvGeometry& g, const GpuTarget& target) {
  GpuDepthwiseTiling t;
  const int64_t bytes = int64_t(dtype_size(accum_dtype(g.dtype)));
  const int64_t limit = target.shared_memory_per_block;
  t.cols = pow2_at_least(g.ow, 32);
  t.rows = pow2_at_least(g.oh, 32);
  t.rows_per_thread = std::min<int64_t>(4, t.rows);
  auto plane_bytes = [&] {
    t.patch_rows = (t.rows - 1) * g.sh + (g.kh - 1) * g.dh + 1;
    t.patch_cols = (t.cols - 1) * g.sw + (g.kw - 1) * g.dw + 1;
    return t.patch_rows * t.patch_cols * bytes;
  };
  // Halve the tile (its longer side first) until one plane's patch fits.
  while (plane_bytes() > limit) {
    if (t.rows > 1 && t.rows >= t.cols) {
      t.rows /= 2;
    } else if (t.cols > 1) {
      t.cols /= 2;
    } else {
      t.fits = false;
      return t;
    }
    t.rows_per_thread = std::min(t.rows_per_thread, t.rows);
  }
  // More planes per block while a block has fewer than kThreads threads,
  // as far as the channels, the shared memory and the block size allow.
  const int64_t per_plane = (t.rows / t.rows_per_thread) * t.cols;
  const int64_t max_threads = std::min<int64_t>(kThreads, target.max_threads_per_block);
  const int64_t planes = pow2_at_least(g.cout, int64_t(1) << 20);
  while (t.channels * 2 * per_plane <= max_threads && t.channels * 2 <= planes &&
         t.channels * 2 * plane_bytes() <= limit) {
    t.channels *= 2;
  }
  // A tile wider than the block allows (a tiny target) gives up rows first.
  while (t.threads() > target.max_threads_per_block && t.rows_per_thread < t.rows) {
    t.rows_per_thread *= 2;
  }
  if (t.threads() > target.max_threads_per_block) t.fits = false;
  return t;
}

Stmt generate_gpu_depthwise(const ConvOperands& c, LowerContext& ctx, const GpuDepthwiseTiling& t) {
  const ConvGeometry& g = c.g;
  KILN_INTERNAL_CHECK(g.cin_g == 1 && t.fits, "gpu depthwise: not a depthwise conv that fits ("
                                                  << g.str() << ", " << t.str() << ")");
  const DType acc_t = c.acc;
  const int64_t T = t.threads(), TY = t.rows / t.rows_per_thread;
  const int64_t plane = t.patch_rows * t.patch_cols, elems = t.shared_elements();
  const int64_t mult = g.cout_g;  // output channels per input channel
  const Expr Cout = make_int(g.cout);
  Buf patch = ctx.scratch_buf("P", acc_t);
  Expr blk = ctx.loop_var("blk");
  Expr img = Var::make(i64_t(), ctx.fresh("img")), oc0 = Var::make(i64_t(), ctx.fresh("oc0"));
  Expr oy0 = Var::make(i64_t(), ctx.fresh("oy0")), ox0 = Var::make(i64_t(), ctx.fresh("ox0"));

  // Phase 1: the patches, element e = thr + r * T of the block's CT planes.
  Stmt load;
  {
    Expr thr = ctx.loop_var("thr"), r = ctx.loop_var("r");
    Expr e = simplify(thr + r * make_int(T));
    Expr cl = simplify(e / make_int(plane)), rest = simplify(e % make_int(plane));
    Expr py = simplify(rest / make_int(t.patch_cols)), px = simplify(rest % make_int(t.patch_cols));
    Expr oc = simplify(oc0 + cl);
    Expr ic = simplify(oc / make_int(mult));
    Expr iy = simplify(oy0 * make_int(g.sh) - make_int(g.pt) + py);
    Expr ix = simplify(ox0 * make_int(g.sw) - make_int(g.pl) + px);
    Expr inside = simplify(oc < Cout && in_range(iy, c.H) && in_range(ix, c.W));
    Expr v = Select::make(inside, predicated(c.x(img, ic, iy, ix), inside), imm(acc_t, 0));
    Stmt st = Store::make(patch, e, v);
    if (elems % T != 0) st = IfThenElse::make(e < make_int(elems), st);
    Stmt loop = For::make(r, make_int(0), make_int((elems + T - 1) / T), ForKind::Serial, st);
    load = For::make(thr, make_int(0), make_int(T), ForKind::GpuThread, loop);
  }

  // Phase 2: rows_per_thread outputs of one column per thread.
  Stmt compute;
  {
    Expr thr = ctx.loop_var("thr");
    Expr tx = Var::make(i64_t(), ctx.fresh("tx")), ty = Var::make(i64_t(), ctx.fresh("ty"));
    Expr cl = Var::make(i64_t(), ctx.fresh("cl"));
    Buf acc = ctx.scratch_buf("acc", acc_t);
    const int64_t R = t.rows_per_thread;
    const Expr oc = simplify(oc0 + cl);
    std::vector<Stmt> body;
    for (int64_t i = 0; i < R; ++i) body.push_back(Store::make(acc, make_int(i), imm(acc_t, 0)));
    Expr ky = ctx.loop_var("ky"), kx = ctx.loop_var("kx");
    Expr wv = Var::make({acc_t, 1}, ctx.fresh("wv"));
    std::vector<Stmt> fmas;
    for (int64_t i = 0; i < R; ++i) {
      Expr py = simplify((ty + make_int(i * TY)) * make_int(g.sh) + ky * make_int(g.dh));
      Expr px = simplify(tx * make_int(g.sw) + kx * make_int(g.dw));
      Expr at = simplify(cl * make_int(plane) + py * make_int(t.patch_cols) + px);
      Expr slot = make_int(i);
      fmas.push_back(Store::make(
          acc, slot, call("fma", {Load::make(patch, at), wv, Load::make(acc, slot)})));
    }
    Expr w = c.w(oc, make_int(0), ky, kx);
    if (g.cout % t.channels != 0) w = predicated(w, oc < Cout);
    Stmt taps = LetStmt::make(wv, w, Block::make(fmas));
    taps = For::make(kx, make_int(0), make_int(g.kw), ForKind::Unrolled, taps);
    body.push_back(For::make(ky, make_int(0), make_int(g.kh), ForKind::Serial, taps));
    for (int64_t i = 0; i < R; ++i) {
      Expr oy = simplify(oy0 + ty + make_int(i * TY)), ox = simplify(ox0 + tx);
      Stmt st = c.store(img, oc, oy, ox, c.with_bias(oc, Load::make(acc, make_int(i))));
      body.push_back(IfThenElse::make(simplify(oc < Cout && oy < c.OH && ox < c.OW), st));
    }
    Stmt b = Allocate::make(acc, make_int(R), MemoryScope::Stack, Block::make(body));
    b = LetStmt::make(cl, thr / make_int(TY * t.cols), b);
    b = LetStmt::make(ty, (thr / make_int(t.cols)) % make_int(TY), b);
    b = LetStmt::make(tx, thr % make_int(t.cols), b);
    compute = For::make(thr, make_int(0), make_int(T), ForKind::GpuThread, b);
  }

  Stmt body = Block::make({load, Barrier::make(), compute});
  body = Allocate::make(patch, make_int(elems), MemoryScope::GpuShared, body);
  // Blocks walk the columns of tiles fastest, then rows, channel blocks, images.
  const Expr tiles_x = ceil_div(c.OW, t.cols), tiles_y = ceil_div(c.OH, t.rows);
  const int64_t cblocks = (g.cout + t.channels - 1) / t.channels;
  Expr rest = simplify(blk / tiles_x), rest2 = simplify(rest / tiles_y);
  body = LetStmt::make(ox0, simplify((blk % tiles_x) * make_int(t.cols)), body);
  body = LetStmt::make(oy0, simplify((rest % tiles_y) * make_int(t.rows)), body);
  body = LetStmt::make(oc0, simplify((rest2 % make_int(cblocks)) * make_int(t.channels)), body);
  body = LetStmt::make(img, simplify(rest2 / make_int(cblocks)), body);
  Expr grid = simplify(c.N * make_int(cblocks) * tiles_y * tiles_x);
  return For::make(blk, make_int(0), grid, ForKind::GpuBlock, body);
}

}  // namespace kiln::passes::lower
