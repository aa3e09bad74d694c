// Lowerings of the scan ops (cumsum, cumprod, logcumsumexp, cummax, cummin):
// a loop nest over every dim but the scanned one (these iterations are
// independent, so the schedule may run the outer one in parallel or map it
// onto GPU threads), holding stack accumulators, and inside it a serial loop
// along the scanned dim that updates the accumulators and stores each
// running value once:
//
//   for i0 in [0, d0): for i2 in [0, d2):           (kept dims)
//     acc = init
//     for j in [0, d1): acc = op(acc, x[i0, j, i2]); out[i0, j, i2] = acc
//
// Floating sums, products and logcumsumexp accumulate in f64 (torch's CPU
// kernels accumulate float in double); integers in wrapping i64. cummax/cummin
// keep the running extreme in the input's accumulation dtype with its i64
// index; the update rule is the reference's (ties take the later index, a NaN
// always takes over).
#include <cmath>
#include <optional>

#include "passes/lower/lower_internal.h"

namespace kiln::passes::lower {
namespace {

using namespace kiln::loop;  // NOLINT

enum class Scan { Sum, Prod, LogSumExp, Max, Min };

// The nest above: `init` sets the accumulators for one row, `step` updates
// them with the element at `full` (j: its index along the scanned dim) and
// stores the running values.
struct ScanNest {
  NodeLowering& n;
  int64_t dim = 0;  // wrapped; meaningless for a 0-dim input

  Stmt build(const std::function<Stmt()>& init,
             const std::function<Stmt(const Index& full, const Expr& j)>& step,
             const std::vector<Scratch>& scratch) {
    const Operand& x = n.in(0);
    if (x.rank() == 0) return allocate(scratch, Block::make({init(), step({}, make_int(0))}));
    std::vector<Expr> kept;
    for (int64_t d = 0; d < x.rank(); ++d) {
      if (d != dim) kept.push_back(x.dims[size_t(d)]);
    }
    return loop_nest(n.ctx, kept, [&](const Index& k) {
      Expr j = n.ctx.loop_var("j");
      Index full = k;
      full.insert(full.begin() + dim, j);
      Stmt loop = For::make(j, make_int(0), x.dims[size_t(dim)], ForKind::Serial, step(full, j));
      return allocate(scratch, Block::make({init(), loop}));
    });
  }
};

// torch's log_add_exp in dtype t: equal infinities stay as they are.
Expr log_add_exp(const Expr& acc, const Expr& v) {
  Expr lo = min(acc, v), hi = max(acc, v);
  Expr inf = imm(acc.type().dtype, INFINITY);
  Expr same_inf = lo == hi && call("abs", {lo}) == inf;
  Expr r = Select::make(same_inf, acc, call("log1p", {call("exp", {lo - hi})}) + hi);
  return Select::make(is_nan(acc) || is_nan(v), acc + v, r);
}

RootFn accumulate(Scan kind) {
  return [kind](NodeLowering& n, const std::vector<OutBuf>& outs) {
    const Operand& x = n.in(0);
    ScanNest nest{n, x.rank() ? wrap_dim(n.attrs().get_int("dim"), x.rank()) : 0};
    const DType out = n.out_dtype();
    const DType acc_t = is_floating(out) ? DType::F64 : DType::I64;
    std::optional<DType> given;
    if (!n.attrs().is_none("dtype")) given = n.attrs().get_dtype("dtype");
    Scratch acc = make_scratch(n.ctx, "acc", acc_t);
    double start = kind == Scan::Prod ? 1 : kind == Scan::LogSumExp ? -INFINITY : 0;
    return nest.build([&] { return acc.store(imm(acc_t, start)); },
                      [&](const Index& full, const Expr&) {
                        Expr e = x.at(full);
                        if (given) e = cast_to(e, *given);  // torch converts the input first
                        Expr v = cast_to(e, acc_t);
                        Expr next = kind == Scan::Sum    ? acc.load() + v
                                    : kind == Scan::Prod ? acc.load() * v
                                                         : log_add_exp(acc.load(), v);
                        return Block::make({acc.store(next), store_at(outs[0], full, acc.load())});
                      },
                      {acc});
  };
}

RootFn extreme(bool want_max) {
  return [want_max](NodeLowering& n, const std::vector<OutBuf>& outs) {
    const Operand& x = n.in(0);
    ScanNest nest{n, x.rank() ? wrap_dim(n.attrs().get_int("dim"), x.rank()) : 0};
    const DType acc_t = accum_dtype(x.dtype);
    Scratch best = make_scratch(n.ctx, "best", acc_t);
    Scratch at = make_scratch(n.ctx, "best_i", DType::I64);
    return nest.build(
        [&] {
          return Block::make(
              {best.store(want_max ? lowest(acc_t) : highest(acc_t)), at.store(make_int(0))});
        },
        [&](const Index& full, const Expr& j) {
          Expr v = cast_to(x.at(full), acc_t);
          Expr b = best.load();
          Expr take = want_max ? v >= b : v <= b;
          if (is_floating(acc_t)) take = is_nan(v) || (!is_nan(b) && take);
          // The index first: `take` reads the old best.
          return Block::make(
              {at.store(Select::make(take, j, at.load())), best.store(Select::make(take, v, b)),
               store_at(outs[0], full, best.load()), store_at(outs[1], full, at.load())});
        },
        {best, at});
  };
}

}  // namespace

void register_scan_lowerings(LoweringTable& t) {
  t["cumsum"].root = accumulate(Scan::Sum);
  t["cumprod"].root = accumulate(Scan::Prod);
  t["logcumsumexp"].root = accumulate(Scan::LogSumExp);
  t["cummax"].root = extreme(true);
  t["cummin"].root = extreme(false);
  for (const char* op : {"cumsum", "cumprod", "logcumsumexp", "cummax", "cummin"}) {
    t[op].stores_once = true;
    t[op].reads_once = true;
  }
}

}  // namespace kiln::passes::lower
