// "conv.winograd": 3x3, stride 1, dilation 1, groups 1 conv2d by Winograd's
// F(2x2, 3x3): each 2x2 output tile is A^T [ (G g G^T) . (B^T d B) ] A, with d
// the 4x4 input tile and g the 3x3 filter, so a tile costs 16 multiply-adds
// per (input, output) channel pair instead of 36 -- 2.25x fewer, moved into
// 16 independent GEMMs (one per element xi of the 4x4 transformed tile) over
// the channels:
//
//   U[oc, ic, xi] = (G w[oc, ic] G^T)[xi]        // once per call (heap, 16 lanes
//                                                // per pair), or at compile time for
//                                                // a constant weight
//   for (t, 0, N * tile_row_blocks * oc_splits) parallel {
//     allocate V[f32 * 16 * Cin * TB] in heap     // TB tiles: `tile_rows` rows of tiles
//     for (ic) for (tile vectors) {               // input transform, 16 lanes of tiles
//       d[i][j] = x[n, ic, 2*ty - pt + i, 2*tx - pl + j]   (stride-2 loads, masked
//                                                         to the image)
//       V[xi, ic, tile] = (B^T d B)[xi]
//     }
//     for (ob, this split's oc blocks) {
//       for (xi, 0, 16) {                         // 16 GEMMs, RegisterTile each
//         tile[r][v] = sum_ic U[ob*R + r, ic, xi] * V[xi, ic, v*L + l]
//         M[xi, r, v*L + l] = tile[r][v]
//       }
//       for (r) for (tile vectors) {              // output transform
//         y = A^T M[:, r, tiles] A                // 2x2 per tile
//         out[n, ob*R + r, 2*ty + i, 2*tx + j] = y[i][j] + bias   (epilogue here;
//                                                 masked past OH, OW; stride-2 stores)
//       }
//     }
//   }
//
// Why F(2x2, 3x3) rather than F(4x4, 3x3): its transforms use only 0, +-1
// and +-1/2, so the result stays within a few ulps of the direct sum (the
// tests hold it to 1e-5 relative, scaled by K, like the direct kernels),
// while F(4x4)'s 1/4 .. 1/24 and 4, 5, 8 coefficients lose about one decimal
// digit in f32; its 2x2 tiles waste less of 14- and 28-wide images; and the
// GEMMs it leaves are already as fast per FMA as the direct kernel.
// F(4x4)'s 4x fewer multiplies would need transforms of 6x6 tiles that cost
// as much as what they save here at 64-256 channels.
#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "ir/loop/simplify.h"
#include "ir/loop/visitor.h"
#include "passes/lower/cpu/conv_cpu.h"
#include "passes/schedule/schedule.h"

namespace kiln::passes::lower {

using namespace kiln::loop;  // NOLINT

namespace {

// 1-D transforms of F(2, 3): B^T d (4 -> 4) and A^T m (4 -> 2); G's is in
// filter_coefficient.
std::vector<Expr> input_1d(const std::vector<Expr>& d) {
  return {d[0] - d[2], d[1] + d[2], d[2] - d[1], d[1] - d[3]};
}
std::vector<Expr> output_1d(const std::vector<Expr>& m) {
  return {m[0] + m[1] + m[2], m[1] - m[2] - m[3]};
}

// A 2-D transform: rows of `in` (rows x cols) through f, then the columns.
std::vector<std::vector<Expr>> transform_2d(
    const std::vector<std::vector<Expr>>& in,
    const std::function<std::vector<Expr>(const std::vector<Expr>&)>& f) {
  std::vector<std::vector<Expr>> rows;
  for (const auto& r : in) rows.push_back(f(r));
  std::vector<std::vector<Expr>> out;
  for (size_t j = 0; j < rows[0].size(); ++j) {
    std::vector<Expr> col;
    for (const auto& r : rows) col.push_back(r[j]);
    std::vector<Expr> t = f(col);
    for (size_t i = 0; i < t.size(); ++i) {
      if (out.size() <= i) out.emplace_back();
      out[i].push_back(t[i]);
    }
  }
  return out;  // out[i][j]: the transform's row i, column j
}

// Binds each element to a scalar variable, so vectorize sees each load once.
Stmt bind_all(LowerContext& ctx, std::vector<std::vector<Expr>>& values, DType t,
              const std::function<Stmt()>& body) {
  std::vector<std::pair<Expr, Expr>> lets;
  for (auto& row : values) {
    for (Expr& v : row) {
      Expr var = Var::make({t, 1}, ctx.fresh("w"));
      lets.push_back({var, v});
      v = var;
    }
  }
  Stmt s = body();
  for (size_t i = lets.size(); i-- > 0;) s = LetStmt::make(lets[i].first, lets[i].second, s);
  return s;
}

// Binds the subexpressions of epilogue values that load and use none of the
// `varying` variables (the tile's row and column, the root's values): the
// batch-norm parameters of the tile's channel. Bound outside the store's
// guard, they are unmasked broadcast loads instead of masked gathers, once
// per tile instead of once per element.
class InvariantLoads : public IRMutator {
 public:
  InvariantLoads(LowerContext& ctx, std::set<std::string> varying)
      : ctx_(ctx), varying_(std::move(varying)) {}
  std::vector<std::pair<Expr, Expr>> lets;

  Expr mutate(const Expr& e) override {
    if (!e.defined() || e.as<Var>() || !invariant_load(e)) return IRMutator::mutate(e);
    const std::string key = to_string(e);
    auto it = bound_.find(key);
    if (it != bound_.end()) return it->second;
    Expr v = Var::make(e.type(), ctx_.fresh("inv"));
    lets.push_back({v, e});
    bound_[key] = v;
    return v;
  }

 private:
  struct Scan : IRVisitor {
    using IRVisitor::visit_node;
    const std::set<std::string>* varying = nullptr;
    bool loads = false, varies = false;
    void visit_node(const Var* op) override { varies = varies || varying->count(op->name) > 0; }
    void visit_node(const Load* op) override {
      loads = true;
      IRVisitor::visit_node(op);
    }
  };
  bool invariant_load(const Expr& e) const {
    Scan s;
    s.varying = &varying_;
    s.visit(e);
    return s.loads && !s.varies;
  }
  LowerContext& ctx_;
  std::set<std::string> varying_;
  std::map<std::string, Expr> bound_;
};

// The names of the variables `e` uses.
void var_names(const Expr& e, std::set<std::string>* out) {
  struct Names : IRVisitor {
    using IRVisitor::visit_node;
    std::set<std::string>* out = nullptr;
    void visit_node(const Var* op) override { out->insert(op->name); }
  } n;
  n.out = out;
  n.visit(e);
}

Stmt vector_loop(LowerContext& ctx, int lanes, const std::function<Stmt(const Expr& l)>& body) {
  Expr l = ctx.loop_var("l");
  return vectorize(For::make(l, make_int(0), make_int(lanes), ForKind::Vectorized, body(l)),
                   l.as<Var>()->name);
}

struct WinogradPlan {
  int lanes = 16;
  int rows = 4;             // output channels per GEMM tile
  int64_t tw = 0, th = 0;   // tiles along the width and height
  int64_t row_vectors = 1;  // vectors per row of tiles
  int64_t tile_rows = 1;    // rows of tiles per task
  int64_t chunk = 1;        // input channels per GEMM pass
  double lane_use = 1;
  int64_t tiles() const { return tile_rows * row_vectors * lanes; }  // tiles per task (padded)
};

WinogradPlan plan_winograd(const ConvGeometry& g, const CpuTarget& t) {
  WinogradPlan p;
  p.lanes = conv_lanes(g.dtype, t);
  p.th = (g.oh + 1) / 2, p.tw = (g.ow + 1) / 2;
  p.row_vectors = (p.tw + p.lanes - 1) / p.lanes;
  const int64_t max_vectors = t.vector_registers >= 32 ? 4 : 2;
  // The task's transformed input (16 x Cin x tiles) stays in half of L2.
  const int64_t bytes = int64_t(dtype_size(accum_dtype(g.dtype)));
  const int64_t tiles_in_l2 = t.l2_bytes / 2 / (16 * std::max<int64_t>(g.cin, 1) * bytes);
  const int64_t vectors_in_l2 = std::max<int64_t>(1, tiles_in_l2 / p.lanes);
  const int64_t vectors = std::min(max_vectors, vectors_in_l2);
  p.tile_rows = std::max<int64_t>(1, std::min<int64_t>(p.th, vectors / p.row_vectors));
  p.lane_use = double(p.tw) / double(p.row_vectors * p.lanes);
  const int64_t used = p.tile_rows * p.row_vectors;
  p.rows = int(std::min<int64_t>(g.cout, used >= 3 ? 4 : 8));
  // Channels per GEMM pass: the rows' U lines and the tiles' V of one chunk
  // in L1, reused by the 16 passes.
  const int64_t per_channel = p.rows * 16 * bytes + p.tiles() * bytes;
  p.chunk = std::max<int64_t>(8, t.l1d_bytes / per_channel);
  if (p.chunk >= g.cin) {
    p.chunk = g.cin;
  } else {
    const int64_t chunks = (g.cin + p.chunk - 1) / p.chunk;
    p.chunk = (g.cin + chunks - 1) / chunks;
  }
  return p;
}

constexpr int64_t kMinChannels = 32;

bool winograd_shape(const ConvGeometry& g) {
  return g.kh == 3 && g.kw == 3 && g.sh == 1 && g.sw == 1 && g.dh == 1 && g.dw == 1 &&
         g.groups == 1 && g.h > 0 && g.w > 0 && g.oh > 0 && g.ow > 0;
}

class WinogradLowering {
 public:
  WinogradLowering(NodeLowering& n, const OutBuf& out)
      : c_(n, out), g_(c_.g), p_(plan_winograd(g_, n.ctx.options().target.cpu)), ctx_(n.ctx) {}
  Stmt run();

 private:
  // U[xi, oc, ic] as an expression: a constant buffer, or the heap scratch
  // `u_` filled by filter_transform().
  Expr u(int xi, const Expr& oc, const Expr& ic) const;
  Stmt filter_transform() const;
  bool constant_filter();
  Stmt input_transform(const Buf& v, const Expr& nn, const Expr& ty0) const;
  Stmt oc_block(const Buf& v, const Expr& nn, const Expr& ty0, const Expr& ob, int rows) const;
  Stmt pooled_store(const std::vector<std::vector<Expr>>& y, const Expr& nn, const Expr& oc,
                    const Expr& ty, const Expr& tx) const;

  ConvOperands c_;
  const ConvGeometry& g_;
  WinogradPlan p_;
  LowerContext& ctx_;
  Buf u_;  // U, [Cout][Cin][16]
};

Expr WinogradLowering::u(int xi, const Expr& oc, const Expr& ic) const {
  return Load::make(u_, simplify((oc * make_int(g_.cin) + ic) * make_int(16) + make_int(xi)));
}

// U = (G (x) G) vec(g): the 16 x 9 matrix that maps a filter to its transform.
double filter_coefficient(int xi, int tap) {
  static const double G[4][3] = {{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}};
  return G[xi / 4][tap / 3] * G[xi % 4][tap % 3];
}

// U computed here, when the weight is a constant of the graph.
bool WinogradLowering::constant_filter() {
  const ir::Node* prod = c_.node.node.input(1)->producer();
  if (!prod || prod->op() != "constant") return false;
  const ir::AttrValue* a = prod->attrs().find("value");
  const Tensor* w = a ? std::get_if<Tensor>(a) : nullptr;
  if (!w) return false;
  Tensor wc = w->contiguous();
  Tensor ut = Tensor::empty({g_.cout, g_.cin, 16}, c_.acc);
  Tensor flat_w = wc.view_as_strided({wc.numel()}, {1}, wc.storage_offset());
  Tensor flat_u = ut.view_as_strided({ut.numel()}, {1}, 0);
  for (int64_t q = 0; q < g_.cout * g_.cin; ++q) {
    double f[9];
    for (int t = 0; t < 9; ++t) f[t] = flat_w.get(std::vector<int64_t>{q * 9 + t});
    for (int xi = 0; xi < 16; ++xi) {
      double v = 0;
      for (int t = 0; t < 9; ++t) v += filter_coefficient(xi, t) * f[t];
      flat_u.set(std::vector<int64_t>{q * 16 + xi}, v);
    }
  }
  int idx = ctx_.add_constant(ut, ctx_.fresh("winograd_u"));
  u_ = ctx_.buffers()[size_t(idx)].buf;
  return true;
}

// U for every (oc, ic), vectorized over the 16 elements of one pair's U:
// nine broadcast filter taps times columns of the coefficient table.
Stmt WinogradLowering::filter_transform() const {
  Tensor table = Tensor::empty({9, 16}, c_.acc);
  Tensor flat = table.view_as_strided({144}, {1}, 0);
  for (int t = 0; t < 9; ++t) {
    for (int xi = 0; xi < 16; ++xi) {
      flat.set(std::vector<int64_t>{t * 16 + xi}, filter_coefficient(xi, t));
    }
  }
  Buf coef = ctx_.buffers()[size_t(ctx_.add_constant(table, ctx_.fresh("winograd_g")))].buf;
  Expr oc = ctx_.loop_var("oc"), ic = ctx_.loop_var("ic");
  Stmt lanes = vector_loop(ctx_, 16, [&](const Expr& xi) {
    Expr v = imm(c_.acc, 0);
    for (int t = 0; t < 9; ++t) {
      Expr c = Load::make(coef, simplify(make_int(t * 16) + xi));
      v = call("fma", {c, c_.w(oc, ic, make_int(t / 3), make_int(t % 3)), v});
    }
    return Store::make(u_, simplify((oc * make_int(g_.cin) + ic) * make_int(16) + xi), v);
  });
  Stmt loop = For::make(ic, make_int(0), make_int(g_.cin), ForKind::Serial, lanes);
  ForKind kind = ctx_.options().target.cpu.cores > 1 ? ForKind::Parallel : ForKind::Serial;
  return For::make(oc, make_int(0), make_int(g_.cout), kind, loop);
}

// V[xi, ic, tile] for the task's tiles: tile = (row, vector, lane) in
// [tile_rows][row_vectors][lanes].
Stmt WinogradLowering::input_transform(const Buf& v, const Expr& nn, const Expr& ty0) const {
  const int L = p_.lanes;
  const int64_t tb = p_.tiles();
  Expr ic = ctx_.loop_var("ic"), tr = ctx_.loop_var("tr"), tv = ctx_.loop_var("tv");
  Stmt lanes = vector_loop(ctx_, L, [&](const Expr& l) {
    Expr tx = simplify(tv * make_int(L) + l);
    Expr ty = simplify(ty0 + tr);
    std::vector<std::vector<Expr>> d(4);
    for (int i = 0; i < 4; ++i) {
      Expr iy = simplify(ty * make_int(2) - make_int(g_.pt) + make_int(i));
      for (int j = 0; j < 4; ++j) {
        Expr ix = simplify(tx * make_int(2) - make_int(g_.pl) + make_int(j));
        Expr inside = in_range(iy, c_.H) && in_range(ix, c_.W);
        d[size_t(i)].push_back(predicated(c_.x(nn, ic, iy, ix), inside));
      }
    }
    return bind_all(ctx_, d, c_.acc, [&] {
      auto t = transform_2d(d, input_1d);
      Expr tile = simplify((tr * make_int(p_.row_vectors) + tv) * make_int(L) + l);
      std::vector<Stmt> s;
      for (int i = 0; i < 4; ++i) {
        for (int j = 0; j < 4; ++j) {
          Expr at = simplify((make_int(i * 4 + j) * make_int(g_.cin) + ic) * make_int(tb) + tile);
          s.push_back(Store::make(v, at, t[size_t(i)][size_t(j)]));
        }
      }
      return Block::make(s);
    });
  });
  Stmt s = For::make(tv, make_int(0), make_int(p_.row_vectors), ForKind::Serial, lanes);
  s = For::make(tr, make_int(0), make_int(p_.tile_rows), ForKind::Serial, s);
  return For::make(ic, make_int(0), make_int(g_.cin), ForKind::Serial, s);
}

// The 16 GEMMs and the output transform of `rows` output channels from ob*R.
Stmt WinogradLowering::oc_block(const Buf& v, const Expr& nn, const Expr& ty0, const Expr& ob,
                                int rows) const {
  const int L = p_.lanes;
  const int64_t tb = p_.tiles();
  const int vectors = int(p_.tile_rows * p_.row_vectors);
  Expr oc0 = simplify(ob * make_int(p_.rows));
  Buf m = ctx_.scratch_buf("m", c_.acc);  // M[xi][r][tile]
  RegisterTile tile(ctx_, rows, vectors, L, c_.acc);
  // The 16 GEMMs, a chunk of input channels at a time: a chunk's U (16
  // values per channel pair, the 16 passes' broadcasts) stays in L1; the
  // partial sums wait in M between chunks.
  Expr icb = ctx_.loop_var("icb");
  const int64_t chunks = (g_.cin + p_.chunk - 1) / p_.chunk;
  auto m_at = [&](int xi, int r, int vec, const Expr& l) {
    return simplify((make_int(xi) * make_int(rows) + make_int(r)) * make_int(tb) +
                    make_int(int64_t(vec) * L) + l);
  };
  std::vector<Stmt> gemms;
  for (int xi = 0; xi < 16; ++xi) {
    Expr ic = ctx_.loop_var("ic");
    Stmt update = tile.update(
        [&](int r) { return u(xi, simplify(oc0 + make_int(r)), ic); },
        [&](int vec, const Expr& l) {
          return Load::make(v, simplify((make_int(xi) * make_int(g_.cin) + ic) * make_int(tb) +
                                        make_int(int64_t(vec) * L) + l));
        });
    Expr lo = simplify(icb * make_int(p_.chunk));
    Expr n_ic = g_.cin % p_.chunk == 0 ? make_int(p_.chunk)
                                       : simplify(min(make_int(p_.chunk), make_int(g_.cin) - lo));
    Stmt reduce = For::make(ic, lo, n_ic, ForKind::Serial, update);
    Stmt init = tile.init([&](int r, int vec, const Expr& l) {
      if (chunks == 1) return imm(c_.acc, 0);
      return Select::make(icb == make_int(0), imm(c_.acc, 0), Load::make(m, m_at(xi, r, vec, l)));
    });
    Stmt store = tile.store({}, [&](int r, int vec, const Expr& l, const Expr& value) {
      return Store::make(m, m_at(xi, r, vec, l), value);
    });
    gemms.push_back(Block::make({init, reduce, store}));
  }
  Stmt passes = For::make(icb, make_int(0), make_int(chunks), ForKind::Serial, Block::make(gemms));
  // Output transform: one vector of tiles of one channel at a time.
  Expr r = ctx_.loop_var("r"), tr = ctx_.loop_var("tr"), tv = ctx_.loop_var("tv");
  Stmt lanes = vector_loop(ctx_, L, [&](const Expr& l) {
    Expr tile_at = simplify((tr * make_int(p_.row_vectors) + tv) * make_int(L) + l);
    std::vector<std::vector<Expr>> mm(4);
    for (int i = 0; i < 4; ++i) {
      for (int j = 0; j < 4; ++j) {
        mm[size_t(i)].push_back(Load::make(
            m, simplify((make_int(i * 4 + j) * make_int(rows) + r) * make_int(tb) + tile_at)));
      }
    }
    return bind_all(ctx_, mm, c_.acc, [&] {
      auto y = transform_2d(mm, output_1d);
      Expr oc = simplify(oc0 + r);
      Expr ty = simplify(ty0 + tr), tx = simplify(tv * make_int(L) + l);
      if (c_.out.pool) return pooled_store(y, nn, oc, ty, tx);
      std::vector<Stmt> s;
      for (int i = 0; i < 2; ++i) {
        for (int j = 0; j < 2; ++j) {
          Expr oy = simplify(ty * make_int(2) + make_int(i));
          Expr ox = simplify(tx * make_int(2) + make_int(j));
          Expr value = Var::make({c_.acc, 1}, ctx_.fresh("y"));
          // The bias joins outside the guard (unmasked broadcast).
          s.push_back(LetStmt::make(
              value, c_.with_bias(oc, y[size_t(i)][size_t(j)]),
              IfThenElse::make(oy < c_.OH && ox < c_.OW, c_.store(nn, oc, oy, ox, value))));
        }
      }
      return Block::make(s);
    });
  });
  Stmt out = For::make(tv, make_int(0), make_int(p_.row_vectors), ForKind::Serial, lanes);
  out = For::make(tr, make_int(0), make_int(p_.tile_rows), ForKind::Serial, out);
  out = For::make(r, make_int(0), make_int(rows), ForKind::Serial, out);
  Stmt body = tile.allocate(Block::make({passes, out}));
  return Allocate::make(m, make_int(16 * int64_t(rows) * tb), MemoryScope::Stack, body);
}

// A max pool folded into the store (OutBuf::pool; the fusion makes one only
// when OH and OW are even, so a tile is never partial): the tile's four
// values through the epilogue, their max (NaN propagating, as max_pool2d),
// one store at the tile's index of the pooled output.
Stmt WinogradLowering::pooled_store(const std::vector<std::vector<Expr>>& y, const Expr& nn,
                                    const Expr& oc, const Expr& ty, const Expr& tx) const {
  KILN_INTERNAL_CHECK(g_.oh % 2 == 0 && g_.ow % 2 == 0, "conv.winograd: pool fold of odd sizes");
  const PooledOut& pool = *c_.out.pool;
  // The roots' values (with the bias) are unmasked broadcasts; the epilogue
  // (which may load at the element's index) runs under the guard, but for
  // its loads that depend on neither the tile's position nor the values.
  std::vector<std::pair<Expr, Expr>> roots, values;
  std::set<std::string> varying;
  var_names(ty, &varying);
  var_names(tx, &varying);
  for (const Expr& e : {nn, oc}) {
    std::set<std::string> keep;
    var_names(e, &keep);
    for (const std::string& k : keep) varying.erase(k);
  }
  std::vector<Expr> epilogue;
  Expr best;
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 2; ++j) {
      Index at;
      if (g_.batched) at.push_back(nn);
      at.insert(at.end(), {oc, simplify(ty * make_int(2) + make_int(i)),
                           simplify(tx * make_int(2) + make_int(j))});
      Expr root = Var::make({c_.acc, 1}, ctx_.fresh("y"));
      roots.push_back({root, c_.with_bias(oc, y[size_t(i)][size_t(j)])});
      varying.insert(root.as<Var>()->name);
      epilogue.push_back(pool.value(at, root));
    }
  }
  InvariantLoads hoist(ctx_, varying);
  for (Expr& e : epilogue) e = hoist.mutate(e);
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 2; ++j) {
      const Expr& e = epilogue[size_t(i * 2 + j)];
      Expr z = Var::make(e.type(), ctx_.fresh("z"));
      values.push_back({z, e});
      if (best.defined()) {
        // Each running max bound to a variable (the select reads it twice).
        Expr m = Var::make(e.type(), ctx_.fresh("z"));
        values.push_back({m, Select::make(z > best || is_nan(z), z, best)});
        z = m;
      }
      best = z;
    }
  }
  Index at;
  if (g_.batched) at.push_back(nn);
  at.insert(at.end(), {oc, ty, tx});
  Stmt s = store_at(pool.out, at, best);
  for (size_t k = values.size(); k-- > 0;) s = LetStmt::make(values[k].first, values[k].second, s);
  s = IfThenElse::make(ty < make_int(g_.oh / 2) && tx < make_int(g_.ow / 2), s);
  for (size_t k = hoist.lets.size(); k-- > 0;) {
    s = LetStmt::make(hoist.lets[k].first, hoist.lets[k].second, s);
  }
  for (size_t k = roots.size(); k-- > 0;) s = LetStmt::make(roots[k].first, roots[k].second, s);
  return s;
}

Stmt WinogradLowering::run() {
  const bool at_compile_time = constant_filter();
  if (!at_compile_time) u_ = ctx_.scratch_buf("winograd_u", c_.acc);
  const int64_t row_blocks = (p_.th + p_.tile_rows - 1) / p_.tile_rows;
  const int64_t oc_blocks = (g_.cout + p_.rows - 1) / p_.rows;
  // Enough tasks for every core; each split of the channel blocks redoes
  // the (cheap) input transform of its tiles.
  const int cores = std::max(1, ctx_.options().target.cpu.cores);
  int64_t splits = 1;
  if (c_.g.n > 0) {
    while (c_.g.n * row_blocks * splits < 2 * cores && splits * 2 <= oc_blocks) splits *= 2;
  }
  const int64_t per_split = (oc_blocks + splits - 1) / splits;
  Expr t = ctx_.loop_var("t"), nn = ctx_.loop_var("n"), rb = ctx_.loop_var("rb");
  Expr sp = ctx_.loop_var("sp"), ob = ctx_.loop_var("ob");
  Buf v = ctx_.scratch_buf("v", c_.acc);
  Expr ty0 = simplify(rb * make_int(p_.tile_rows));
  // Channel blocks of this split; the last block may be partial.
  Stmt full = oc_block(v, nn, ty0, ob, p_.rows);
  Stmt blocks;
  if (const int64_t tail = g_.cout % p_.rows) {
    blocks =
        IfThenElse::make(ob < make_int(oc_blocks - 1), full, oc_block(v, nn, ty0, ob, int(tail)));
  } else {
    blocks = full;
  }
  Expr ob_lo = simplify(sp * make_int(per_split));
  Stmt oc_loop =
      For::make(ob, ob_lo, simplify(min(make_int(per_split), make_int(oc_blocks) - ob_lo)),
                ForKind::Serial, blocks);
  Stmt task = Block::make({input_transform(v, nn, ty0), oc_loop});
  task = Allocate::make(v, make_int(16 * g_.cin * p_.tiles()), MemoryScope::Heap, task);
  task = LetStmt::make(nn, simplify(t / make_int(row_blocks * splits)),
                       LetStmt::make(rb, simplify((t / make_int(splits)) % make_int(row_blocks)),
                                     LetStmt::make(sp, simplify(t % make_int(splits)), task)));
  ForKind kind = cores > 1 ? ForKind::Parallel : ForKind::Serial;
  Stmt tasks =
      For::make(t, make_int(0), simplify(c_.N * make_int(row_blocks * splits)), kind, task);
  if (at_compile_time) return tasks;
  return Allocate::make(u_, make_int(16 * g_.cout * g_.cin), MemoryScope::Heap,
                        Block::make({filter_transform(), tasks}));
}

Stmt lower_winograd(NodeLowering& n, const std::vector<OutBuf>& outs) {
  WinogradLowering w(n, outs[0]);
  return w.run();
}

}  // namespace

AlgorithmLowering conv_winograd() {
  AlgorithmLowering a;
  a.name = "conv.winograd";
  a.applies = [](const ir::Node& n, const Target&, std::string* why_not) {
    ConvGeometry g = conv_geometry(n);
    if (!conv_supported_dtype(g.dtype)) {
      *why_not = "dtype " + std::string(dtype_name(g.dtype)) + " is not a float type";
      return false;
    }
    if (!winograd_shape(g)) {
      *why_not = "needs a 3x3 kernel, stride 1, dilation 1, groups 1 and static sizes";
      return false;
    }
    return true;
  };
  a.score = [](const ir::Node& n, const Target& target, std::string* why) {
    const CpuTarget& t = target.cpu;
    ConvGeometry g = conv_geometry(n);
    WinogradPlan p = plan_winograd(g, t);
    const std::string lanes =
        std::to_string(int(std::lround(100 * p.lane_use))) + "% of lanes used";
    // Few channels leave the transforms (per channel and tile) as the main
    // cost and the 16 GEMMs too short to run at speed.
    if (g.cin < kMinChannels || g.cout < kMinChannels) {
      *why = "F(2x2, 3x3), but under " + std::to_string(kMinChannels) +
             " channels the transforms cost more than the multiplies saved";
      return 1.0;
    }
    // Measured on Zen 5 (docs/conv.md): about 1.6x conv.direct's speed at equal
    // lane use (2.25x fewer multiplies, less the transforms), so 16 per lane
    // used against conv.direct's 10.
    *why = "3x3 stride 1, Cin and Cout >= " + std::to_string(kMinChannels) +
           ": Winograd F(2x2, 3x3) does 2.25x fewer multiplies; 2x2 tiles, " + lanes;
    return 16 * p.lane_use;
  };
  a.root = lower_winograd;
  return a;
}

}  // namespace kiln::passes::lower
