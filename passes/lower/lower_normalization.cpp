// Lowerings of the normalization ops as row loops: softmax and log_softmax
// (row max, sum of exp(x - max), then one pass writing; see softmax()), layer_norm and
// rms_norm over the trailing normalized_shape dims (mean, then the biased
// variance in a second pass), and batch_norm, which is elementwise given the
// running statistics. Rows compute in f32 (f64 for f64 inputs); the input is
// first converted to the output dtype, as the reference does. Row sums are
// blocked on the CPU (cascade_sum.h); a norm row whose sum of squares
// overflows is NaN, as in the reference.
#include <cmath>
#include <limits>

#include "passes/lower/cascade_sum.h"
#include "passes/lower/lower_internal.h"

namespace kiln::passes::lower {
namespace {

using namespace kiln::loop;  // NOLINT

// Rows over all dims except those in `cols` (a mask); `body` gets the row index
// (kept dims) and builds a function from a column index to the full index.
using FullIndex = std::function<Index(const Index& col)>;

Stmt rows(LowerContext& ctx, const std::vector<Expr>& dims, const std::vector<bool>& is_col,
          const std::function<Stmt(const FullIndex&, const std::vector<Expr>& col_dims)>& body) {
  std::vector<Expr> row_dims, col_dims;
  for (size_t d = 0; d < dims.size(); ++d) (is_col[d] ? col_dims : row_dims).push_back(dims[d]);
  return loop_nest(ctx, row_dims, [&](const Index& row) {
    FullIndex full = [row, is_col](const Index& col) {
      Index f;
      size_t r = 0, c = 0;
      for (bool b : is_col) f.push_back(b ? col[c++] : row[r++]);
      return f;
    };
    return body(full, col_dims);
  });
}

Stmt over(LowerContext& ctx, const std::vector<Expr>& col_dims,
          const std::function<Stmt(const Index&)>& f) {
  return loop_nest(ctx, col_dims, f, "c");
}

// softmax: a max pass, then (f32/f64 outputs) one pass that writes exp(x - max)
// to the output while summing it and a pass scaling the output row in place
// (it is still in cache), so exp runs once per element; f16/bf16 outputs
// recompute exp in the last pass instead, so they are rounded once, from f32,
// like the reference. log_softmax: max, sum of exp, then x - max - log(sum).
RootFn softmax(bool log) {
  return [log](NodeLowering& n, const std::vector<OutBuf>& outs) {
    const Operand& x = n.in(0);
    DType out = n.out_dtype();
    DType acc_t = accum_dtype(out);
    std::vector<bool> is_col(x.dims.size(), false);
    if (!is_col.empty()) is_col[size_t(wrap_dim(n.attrs().get_int("dim"), x.rank()))] = true;
    auto value = [&](const Index& i) { return cast_to(cast_to(x.at(i), out), acc_t); };
    const bool in_place = !log && out == acc_t;
    // A row along the innermost dim of at most 32 KiB keeps exp(x - max) in a
    // stack row instead of the output: the output is then written once, by
    // the last pass, which a large softmax writes with streaming stores
    // (docs/schedules.md) without first reading each line for the stores of
    // the exp pass. The stack row stays in L1 (48 KiB on Emerald Rapids and
    // Zen 5). CPU only: GPU schedules map rows their own way.
    int64_t row_len = 0;
    const bool row_buffer = in_place && n.ctx.options().target.is_cpu() && !is_col.empty() &&
                            is_col.back() &&
                            is_const_int(x.dims.back(), &row_len) && row_len > 0 &&
                            row_len * int64_t(dtype_size(acc_t)) <= (32 << 10);
    return rows(n.ctx, x.dims, is_col, [&](const FullIndex& full, const std::vector<Expr>& cols) {
      Buf e_row = row_buffer ? make_buf(n.ctx.fresh("e_row"), acc_t) : Buf();
      auto put_e = [&](const Index& c, const Expr& e) {
        return row_buffer ? Store::make(e_row, c[0], e) : store_at(outs[0], full(c), e);
      };
      auto get_e = [&](const Index& c) {
        return row_buffer ? Load::make(e_row, c[0])
                          : Load::make(outs[0].buf, flat_index(full(c), outs[0].dims));
      };
      Scratch mx = make_scratch(n.ctx, "acc", acc_t), sum = make_scratch(n.ctx, "acc", acc_t);
      Expr row_max = Var::make({acc_t, 1}, n.ctx.fresh("max"));
      Expr scale = Var::make({acc_t, 1}, n.ctx.fresh(log ? "log_sum" : "inv_sum"));
      Stmt find_max = over(
          n.ctx, cols, [&](const Index& c) { return mx.store(max(mx.load(), value(full(c)))); });
      Stmt add_exp = summing_nest(
          n.ctx, cols, {sum},
          [&](const Index& c, const std::vector<Scratch>& into) {
            Expr e = call("exp", {value(full(c)) - row_max});
            if (!in_place) return into[0].store(into[0].load() + e);
            Expr ev = Var::make({acc_t, 1}, n.ctx.fresh("e"));
            return LetStmt::make(
                ev, e,
                Block::make({put_e(c, ev), into[0].store(into[0].load() + ev)}));
          },
          "c");
      Stmt write = over(n.ctx, cols, [&](const Index& c) {
        if (in_place) {
          return store_at(outs[0], full(c), get_e(c) * scale);
        }
        Expr shifted = value(full(c)) - row_max;
        Expr y = log ? shifted - scale : call("exp", {shifted}) * scale;
        return store_at(outs[0], full(c), y);
      });
      Expr scale_value = log ? call("log", {sum.load()}) : imm(acc_t, 1) / sum.load();
      Stmt after_max = Block::make(
          {sum.store(imm(acc_t, 0)), add_exp, LetStmt::make(scale, scale_value, write)});
      Stmt row = allocate({mx, sum}, Block::make({mx.store(lowest(acc_t)), find_max,
                                                  LetStmt::make(row_max, mx.load(), after_max)}));
      if (!row_buffer) return row;
      return Allocate::make(e_row, make_int(row_len), MemoryScope::Stack, row);
    });
  };
}

// torch.finfo(t).eps: rms_norm's eps when none is given.
double machine_epsilon(DType t) {
  switch (t) {
    case DType::F16:
      return std::ldexp(1.0, -10);
    case DType::BF16:
      return std::ldexp(1.0, -7);
    case DType::F32:
      return std::ldexp(1.0, -23);
    default:
      return std::ldexp(1.0, -52);
  }
}

RootFn trailing_norm(bool center) {
  return [center](NodeLowering& n, const std::vector<OutBuf>& outs) {
    const Operand& x = n.in(0);
    const Operand& weight = n.in(1);
    Operand bias = n.inputs.size() > 2 ? n.in(2) : Operand{};
    DType acc_t = accum_dtype(n.out_dtype());
    const size_t k = n.attrs().get_ints("normalized_shape").size();
    double eps =
        center || !n.attrs().is_none("eps") ? n.attrs().get_float("eps") : machine_epsilon(x.dtype);
    std::vector<bool> is_col(x.dims.size(), false);
    for (size_t d = x.dims.size() - k; d < x.dims.size(); ++d) is_col[d] = true;
    auto value = [&](const Index& i) { return cast_to(x.at(i), acc_t); };
    return rows(n.ctx, x.dims, is_col, [&](const FullIndex& full, const std::vector<Expr>& cols) {
      Scratch sum = make_scratch(n.ctx, "acc", acc_t), sq = make_scratch(n.ctx, "acc", acc_t);
      Expr count = cast_to(product(cols), acc_t);
      Expr mean = Var::make({acc_t, 1}, n.ctx.fresh("mean"));
      Expr inv = Var::make({acc_t, 1}, n.ctx.fresh("inv"));
      Stmt pass1 = summing_nest(
          n.ctx, cols, {sum},
          [&](const Index& c, const std::vector<Scratch>& into) {
            return into[0].store(into[0].load() + value(full(c)));
          },
          "c");
      Stmt pass2 = summing_nest(
          n.ctx, cols, {sq},
          [&](const Index& c, const std::vector<Scratch>& into) {
            Expr d = value(full(c)) - mean;
            return into[0].store(into[0].load() + d * d);
          },
          "c");
      Stmt write = over(n.ctx, cols, [&](const Index& c) {
        Expr y = (value(full(c)) - mean) * inv;
        if (!weight.is_none()) y = y * cast_to(weight.at(c), acc_t);
        if (!bias.is_none()) y = y + cast_to(bias.at(c), acc_t);
        return store_at(outs[0], full(c), y);
      });
      Expr mean_value = center ? sum.load() / count : imm(acc_t, 0);
      // A sum of squares that overflowed gives a NaN row (as the reference
      // does), not 1 / sqrt(inf) = 0 times every element.
      Expr spread = sq.load();
      Expr inv_value = Select::make(
          spread == highest(acc_t), imm(acc_t, std::numeric_limits<double>::quiet_NaN()),
          imm(acc_t, 1) / call("sqrt", {spread / count + imm(acc_t, eps)}));
      Stmt after_mean =
          Block::make({sq.store(imm(acc_t, 0)), pass2, LetStmt::make(inv, inv_value, write)});
      std::vector<Stmt> body{sum.store(imm(acc_t, 0))};
      if (center) body.push_back(pass1);
      body.push_back(LetStmt::make(mean, mean_value, after_mean));
      return allocate({sum, sq}, Block::make(body));
    });
  };
}

std::vector<Operand> batch_norm(NodeLowering& n) {
  Operand x = n.in(0), mean = n.in(1), var = n.in(2), weight = n.in(3), bias = n.in(4);
  DType out = n.out_dtype();
  DType acc_t = accum_dtype(out);
  double eps = n.attrs().get_float("eps");
  return {tensor_operand(
      out, n.out_dims(),
      [=](const Index& idx) {
        Index c{idx[1]};
        Expr scale = imm(acc_t, 1) / call("sqrt", {cast_to(var.at(c), acc_t) + imm(acc_t, eps)});
        if (!weight.is_none()) scale = scale * cast_to(weight.at(c), acc_t);
        Expr y = (cast_to(x.at(idx), acc_t) - cast_to(mean.at(c), acc_t)) * scale;
        if (!bias.is_none()) y = y + cast_to(bias.at(c), acc_t);
        return cast_to(y, out);
      },
      n.out_type())};
}

}  // namespace

void register_normalization_lowerings(LoweringTable& t) {
  t["softmax"].root = softmax(false);
  t["log_softmax"].root = softmax(true);
  t["layer_norm"].root = trailing_norm(true);
  t["rms_norm"].root = trailing_norm(false);
  t["batch_norm"].pointwise = batch_norm;
  // softmax stores exp(x - max) and rescales it in place, so only the norms
  // take epilogues.
  t["layer_norm"].stores_once = true;
  t["rms_norm"].stores_once = true;
}

}  // namespace kiln::passes::lower
