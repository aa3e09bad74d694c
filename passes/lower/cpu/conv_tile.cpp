// RegisterTile (conv_cpu.h): a block of vector accumulators that the convolution
// kernels multiply-accumulate into and store from. Every operation is written
// as scalar code over one lane variable and vectorized here; rows and vectors
// are unrolled in C++, so each scratch access is at a constant offset
// (ramp(k * lanes, 1, lanes)) and LLVM's SROA turns the scratch into values
// that live in vector registers across the reduction loops around them.
#include "ir/loop/simplify.h"
#include "passes/lower/cpu/conv_cpu.h"
#include "passes/schedule/schedule.h"

namespace kiln::passes::lower {

using namespace kiln::loop;  // NOLINT

RegisterTile::RegisterTile(LowerContext& ctx, int rows, int vectors, int lanes, DType acc)
    : ctx_(ctx), rows_(rows), vectors_(vectors), lanes_(lanes), acc_(acc) {
  KILN_INTERNAL_CHECK(rows >= 1 && vectors >= 1 && lanes >= 1, "empty register tile");
  buf_ = ctx.scratch_buf("tile", acc);
}

Expr RegisterTile::index(int row, int vec, const Expr& l) const {
  return simplify(make_int((int64_t(row) * vectors_ + vec) * lanes_) + l);
}

Stmt RegisterTile::over_lanes(const std::function<Stmt(const Expr& l)>& body) const {
  Expr l = ctx_.loop_var("l");
  const std::string& name = l.as<Var>()->name;
  Stmt s = For::make(l, make_int(0), make_int(lanes_), ForKind::Vectorized, body(l));
  return vectorize(s, name);
}

Stmt RegisterTile::init(
    const std::function<Expr(int row, int vec, const Expr& lane)>& value) const {
  return over_lanes([&](const Expr& l) {
    std::vector<Stmt> s;
    for (int r = 0; r < rows_; ++r) {
      for (int v = 0; v < vectors_; ++v) {
        s.push_back(Store::make(buf_, index(r, v, l), cast_to(value(r, v, l), acc_)));
      }
    }
    return Block::make(s);
  });
}

Stmt RegisterTile::update(const RowFn& a, const LaneFn& b, const LaneFn& guard) const {
  return update_lanes([&](int r, int, const Expr&) { return a(r); }, b, guard);
}

Stmt RegisterTile::update_lanes(const std::function<Expr(int row, int vec, const Expr& lane)>& a,
                                const LaneFn& b, const LaneFn& guard) const {
  return over_lanes([&](const Expr& l) {
    // One load per vector, bound once and used by every row.
    std::vector<Expr> vars, values;
    for (int v = 0; v < vectors_; ++v) {
      Expr value = cast_to(b(v, l), acc_);
      if (guard) value = predicated(value, guard(v, l));
      vars.push_back(Var::make({acc_, 1}, ctx_.fresh("b")));
      values.push_back(value);
    }
    std::vector<Stmt> s;
    for (int r = 0; r < rows_; ++r) {
      for (int v = 0; v < vectors_; ++v) {
        Expr idx = index(r, v, l);
        Expr factor = a(r, v, l);
        if (!factor.defined()) continue;  // this row takes no part in the update
        factor = cast_to(factor, acc_);
        s.push_back(
            Store::make(buf_, idx, call("fma", {vars[size_t(v)], factor, Load::make(buf_, idx)})));
      }
    }
    Stmt body = Block::make(s);
    for (size_t v = vars.size(); v-- > 0;) body = LetStmt::make(vars[v], values[v], body);
    return body;
  });
}

Stmt RegisterTile::store(
    const FinishFn& finish,
    const std::function<Stmt(int row, int vec, const Expr& lane, const Expr& value)>& emit,
    const LaneFn& guard) const {
  return over_lanes([&](const Expr& l) {
    std::vector<Stmt> s;
    for (int r = 0; r < rows_; ++r) {
      for (int v = 0; v < vectors_; ++v) {
        Expr value = Load::make(buf_, index(r, v, l));
        if (finish) value = finish(r, value);
        Expr g = guard ? guard(v, l) : Expr();
        if (!g.defined()) {
          s.push_back(emit(r, v, l, value));
          continue;
        }
        // Bound outside the guard: the tile's slots are read unmasked (a
        // masked access would keep them out of registers).
        Expr tmp = Var::make(value.type(), ctx_.fresh("out"));
        s.push_back(LetStmt::make(tmp, value, IfThenElse::make(g, emit(r, v, l, tmp))));
      }
    }
    return Block::make(s);
  });
}

Stmt RegisterTile::allocate(Stmt body) const {
  return Allocate::make(buf_, make_int(int64_t(rows_) * vectors_ * lanes_), MemoryScope::Stack,
                        std::move(body));
}

Stmt over_column_blocks(const ConvOperands& c, LowerContext& ctx, int64_t cols,
                        const std::function<Stmt(const Expr& col0, bool masked)>& block) {
  const ConvGeometry& g = c.g;
  std::vector<Stmt> s;
  auto loop = [&](int64_t from, const Expr& count, bool masked) {
    Expr b = ctx.loop_var("cb");
    s.push_back(For::make(b, make_int(from), count, ForKind::Serial,
                          block(simplify(b * make_int(cols)), masked)));
  };
  if (g.ow < 0 || g.w < 0) {
    loop(0, ceil_div(c.OW, cols), true);
    return Block::make(s);
  }
  // Blocks whose every load is inside the row and every lane an output.
  const int64_t nb = (g.ow + cols - 1) / cols;
  auto left_ok = [&](int64_t b) { return b * cols * g.sw - g.pl >= 0; };
  auto right_ok = [&](int64_t b) {
    return (b + 1) * cols <= g.ow &&
           ((b + 1) * cols - 1) * g.sw - g.pl + (g.kw - 1) * g.dw <= g.w - 1;
  };
  int64_t lo = 0;
  while (lo < nb && !left_ok(lo)) ++lo;
  int64_t hi = nb;
  while (hi > lo && !right_ok(hi - 1)) --hi;
  if (hi <= lo) lo = hi = nb;  // no interior block: all masked
  auto border = [&](int64_t from, int64_t to) {
    if (to - from <= 3) {
      for (int64_t b = from; b < to; ++b) s.push_back(block(make_int(b * cols), true));
    } else if (to > from) {
      loop(from, make_int(to - from), true);
    }
  };
  border(0, lo);
  if (hi > lo) loop(lo, make_int(hi - lo), false);
  border(std::max(hi, lo), nb);
  return Block::make(s);
}

}  // namespace kiln::passes::lower
