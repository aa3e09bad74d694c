// Lowerings of the reduction ops (sum, prod, mean, amax, amin, max, min,
// argmax, argmin, var, std, any, all): a loop nest over the kept dims holding
// stack accumulators, an inner nest over the reduced dims, then one store.
// Accumulation is in f32 for f16/bf16/f32 inputs, f64 for f64 and i64 for
// integers (wrapping like the reference); float sums are blocked
// (cascade_sum.h), so a long f32 sum stays within a few ulps of the
// reference's f64 one. NaN propagates through max/min; on ties the first index
// wins and the first NaN wins outright, as in the reference. var/std take two
// passes and accumulate in f64 for every input dtype, so the squares of large
// finite values (1e30 in f32) do not overflow.
#include "ir/loop/simplify.h"
#include "passes/lower/cascade_sum.h"
#include "passes/lower/lower_internal.h"

namespace kiln::passes::lower {
namespace {

using namespace kiln::loop;  // NOLINT

// Which input dims a node reduces.
std::vector<bool> reduced_mask(const NodeLowering& n, bool single_dim) {
  const int64_t rank = n.in(0).rank();
  std::vector<bool> mask(size_t(rank), false);
  std::vector<int64_t> dims;
  const ir::Attrs& a = n.attrs();
  if (single_dim) {
    if (!a.is_none("dim")) dims.push_back(a.get_int("dim"));
  } else {
    dims = a.get_ints("dim");
  }
  if (rank == 0) return mask;  // a 0-dim input reduces nothing
  if (dims.empty()) return std::vector<bool>(size_t(rank), true);
  for (int64_t d : dims) mask[size_t(wrap_dim(d, rank))] = true;
  return mask;
}

struct RowSpec {
  std::vector<bool> reduced;
  bool keepdim = false;
};

// The element index of x from the kept and reduced loop indices.
Index merge(const RowSpec& spec, const Index& kept, const Index& red) {
  Index full;
  size_t k = 0, r = 0;
  for (bool is_red : spec.reduced) full.push_back(is_red ? red[r++] : kept[k++]);
  return full;
}

Index out_index(const RowSpec& spec, const Index& kept) {
  if (!spec.keepdim) return kept;
  Index out;
  size_t k = 0;
  for (bool is_red : spec.reduced) out.push_back(is_red ? make_int(0) : kept[k++]);
  return out;
}

void split_dims(const RowSpec& spec, const std::vector<Expr>& dims, std::vector<Expr>* kept,
                std::vector<Expr>* red) {
  for (size_t d = 0; d < dims.size(); ++d) (spec.reduced[d] ? red : kept)->push_back(dims[d]);
}

// A row loop: for every kept index, `body(kept_index, reduced_dims)` gives the
// statement computing that row (it loops over the reduced dims itself).
Stmt row_loops(LowerContext& ctx, const RowSpec& spec, const std::vector<Expr>& dims,
               const std::function<Stmt(const Index&, const std::vector<Expr>&)>& body) {
  std::vector<Expr> kept, red;
  split_dims(spec, dims, &kept, &red);
  return loop_nest(ctx, kept, [&](const Index& k) { return body(k, red); });
}

// acc = update(acc, x[row, col]) over one row.
Stmt over_row(LowerContext& ctx, const RowSpec& spec, const Operand& x, const Index& kept,
              const std::vector<Expr>& red,
              const std::function<Stmt(const Expr& element, const Index& red_index)>& update) {
  return loop_nest(
      ctx, red, [&](const Index& r) { return update(x.at(merge(spec, kept, r)), r); }, "r");
}

// --- sum, prod, mean ---------------------------------------------------------------------

enum class Accum { Sum, Prod, Mean };

RootFn accumulate(Accum kind) {
  return [kind](NodeLowering& n, const std::vector<OutBuf>& outs) {
    const Operand& x = n.in(0);
    RowSpec spec{reduced_mask(n, false), n.attrs().get_bool("keepdim")};
    DType out = n.out_dtype();
    std::optional<DType> given;
    if (!n.attrs().is_none("dtype")) given = n.attrs().get_dtype("dtype");
    DType acc_t = accum_dtype(out);
    return row_loops(n.ctx, spec, x.dims, [&](const Index& kept, const std::vector<Expr>& red) {
      Scratch acc = make_scratch(n.ctx, "acc", acc_t);
      Stmt init = acc.store(imm(acc_t, kind == Accum::Prod ? 1 : 0));
      auto term = [&](const Expr& e) { return cast_to(given ? cast_to(e, *given) : e, acc_t); };
      Stmt loop = kind == Accum::Prod
                      ? over_row(n.ctx, spec, x, kept, red,
                                 [&](const Expr& e, const Index&) {
                                   return acc.store(acc.load() * term(e));
                                 })
                      : summing_nest(n.ctx, red, {acc},
                                     [&](const Index& r, const std::vector<Scratch>& into) {
                                       Expr v = term(x.at(merge(spec, kept, r)));
                                       return into[0].store(into[0].load() + v);
                                     });
      Expr result = acc.load();
      if (kind == Accum::Mean) result = result / cast_to(product(red), acc_t);
      return allocate({acc},
                      Block::make({init, loop, store_at(outs[0], out_index(spec, kept), result)}));
    });
  };
}

// --- amax, amin ---------------------------------------------------------------------------

RootFn extreme(bool want_max) {
  return [want_max](NodeLowering& n, const std::vector<OutBuf>& outs) {
    const Operand& x = n.in(0);
    RowSpec spec{reduced_mask(n, false), n.attrs().get_bool("keepdim")};
    DType acc_t = accum_dtype(x.dtype);
    return row_loops(n.ctx, spec, x.dims, [&](const Index& kept, const std::vector<Expr>& red) {
      Scratch acc = make_scratch(n.ctx, "acc", acc_t);
      Stmt init = acc.store(want_max ? lowest(acc_t) : highest(acc_t));
      Stmt loop = over_row(n.ctx, spec, x, kept, red, [&](const Expr& e, const Index&) {
        Expr v = cast_to(e, acc_t);
        return acc.store(want_max ? max(acc.load(), v) : min(acc.load(), v));
      });
      return allocate(
          {acc}, Block::make({init, loop, store_at(outs[0], out_index(spec, kept), acc.load())}));
    });
  };
}

// --- max/min with indices, argmax/argmin ------------------------------------------------

// outs: values (optional) then indices. `single`: the dim attribute is one int.
Stmt arg_extreme(NodeLowering& n, const OutBuf* values, const OutBuf& indices, bool want_max) {
  const Operand& x = n.in(0);
  RowSpec spec{reduced_mask(n, true), n.attrs().get_bool("keepdim")};
  DType acc_t = accum_dtype(x.dtype);
  bool fl = is_floating(acc_t);
  return row_loops(n.ctx, spec, x.dims, [&](const Index& kept, const std::vector<Expr>& red) {
    Scratch best = make_scratch(n.ctx, "best", acc_t);
    Scratch at = make_scratch(n.ctx, "best_i", DType::I64);
    Stmt init =
        Block::make({best.store(want_max ? lowest(acc_t) : highest(acc_t)), at.store(make_int(0))});
    Stmt loop = over_row(n.ctx, spec, x, kept, red, [&](const Expr& e, const Index& r) {
      Expr v = cast_to(e, acc_t);
      Expr b = best.load();
      Expr better = want_max ? v > b : v < b;
      // The first NaN wins and then stays.
      if (fl) better = !is_nan(b) && (is_nan(v) || better);
      return IfThenElse::make(better, Block::make({best.store(v), at.store(flat_index(r, red))}));
    });
    Index oi = out_index(spec, kept);
    std::vector<Stmt> body{init, loop};
    if (values) body.push_back(store_at(*values, oi, best.load()));
    body.push_back(store_at(indices, oi, at.load()));
    return allocate({best, at}, Block::make(body));
  });
}

// --- var, std --------------------------------------------------------------------------------

RootFn spread(bool take_sqrt) {
  return [take_sqrt](NodeLowering& n, const std::vector<OutBuf>& outs) {
    const Operand& x = n.in(0);
    RowSpec spec{reduced_mask(n, false), n.attrs().get_bool("keepdim")};
    const DType acc_t = DType::F64;
    const int64_t correction = n.attrs().get_int("correction");
    return row_loops(n.ctx, spec, x.dims, [&](const Index& kept, const std::vector<Expr>& red) {
      Scratch sum = make_scratch(n.ctx, "acc", acc_t);
      Scratch squares = make_scratch(n.ctx, "acc", acc_t);
      Expr count = product(red);
      Expr mean_var = Var::make({acc_t, 1}, n.ctx.fresh("mean"));
      auto value = [&](const Index& r) { return cast_to(x.at(merge(spec, kept, r)), acc_t); };
      Stmt pass1 =
          summing_nest(n.ctx, red, {sum}, [&](const Index& r, const std::vector<Scratch>& into) {
            return into[0].store(into[0].load() + value(r));
          });
      Stmt pass2 = summing_nest(n.ctx, red, {squares},
                                [&](const Index& r, const std::vector<Scratch>& into) {
                                  Expr d = value(r) - mean_var;
                                  return into[0].store(into[0].load() + d * d);
                                });
      Expr divisor = cast_to(max(count - make_int(correction), make_int(0)), acc_t);
      Expr var = squares.load() / divisor;
      if (take_sqrt) var = call("sqrt", {var});
      Stmt rest = Block::make(
          {squares.store(imm(acc_t, 0)), pass2, store_at(outs[0], out_index(spec, kept), var)});
      Stmt body = Block::make({sum.store(imm(acc_t, 0)), pass1,
                               LetStmt::make(mean_var, sum.load() / cast_to(count, acc_t), rest)});
      return allocate({sum, squares}, body);
    });
  };
}

// --- any, all ----------------------------------------------------------------------------------

RootFn logical(bool is_any) {
  return [is_any](NodeLowering& n, const std::vector<OutBuf>& outs) {
    const Operand& x = n.in(0);
    RowSpec spec{reduced_mask(n, false), n.attrs().get_bool("keepdim")};
    return row_loops(n.ctx, spec, x.dims, [&](const Index& kept, const std::vector<Expr>& red) {
      Scratch acc = make_scratch(n.ctx, "acc", DType::Bool);
      Stmt init = acc.store(imm_int(DType::Bool, is_any ? 0 : 1));
      Stmt loop = over_row(n.ctx, spec, x, kept, red, [&](const Expr& e, const Index&) {
        Expr v = cast_to(e, DType::Bool);
        return acc.store(is_any ? (acc.load() || v) : (acc.load() && v));
      });
      return allocate(
          {acc}, Block::make({init, loop, store_at(outs[0], out_index(spec, kept), acc.load())}));
    });
  };
}

}  // namespace

void register_reduction_lowerings(LoweringTable& t) {
  t["sum"].root = accumulate(Accum::Sum);
  t["prod"].root = accumulate(Accum::Prod);
  t["mean"].root = accumulate(Accum::Mean);
  t["amax"].root = extreme(true);
  t["amin"].root = extreme(false);
  t["max"].root = [](NodeLowering& n, const std::vector<OutBuf>& outs) {
    return arg_extreme(n, &outs[0], outs[1], true);
  };
  t["min"].root = [](NodeLowering& n, const std::vector<OutBuf>& outs) {
    return arg_extreme(n, &outs[0], outs[1], false);
  };
  t["argmax"].root = [](NodeLowering& n, const std::vector<OutBuf>& outs) {
    return arg_extreme(n, nullptr, outs[0], true);
  };
  t["argmin"].root = [](NodeLowering& n, const std::vector<OutBuf>& outs) {
    return arg_extreme(n, nullptr, outs[0], false);
  };
  t["var"].root = spread(false);
  t["std"].root = spread(true);
  t["any"].root = logical(true);
  t["all"].root = logical(false);
  // Each stores every output element once with its final value (max/min with
  // indices have two outputs, which epilogue fusion leaves alone).
  for (const char* op : {"sum", "prod", "mean", "amax", "amin", "max", "min", "argmax", "argmin",
                         "var", "std", "any", "all"}) {
    t[op].stores_once = true;
  }
  for (const char* op :
       {"sum", "prod", "mean", "amax", "amin", "max", "min", "argmax", "argmin", "any", "all"}) {
    t[op].reads_once = true;
  }
}

}  // namespace kiln::passes::lower
