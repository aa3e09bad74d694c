// Lowerings of the indexing ops (ir/ops/indexing.cpp). gather is pure
// indexing, so it fuses as a producer like the layout ops: the element at p
// is x at p with p[dim] replaced by checked_index(index[p], size), the loop-IR
// intrinsic that yields 0 for a value outside [0, size) and sets the kernel
// status bit the launcher raises (runtime/kernel_status.h).
//
// scatter is a root of three steps over its output buffer:
//   out = x                                   (a copy nest)
//   for p in index (row-major, serial):       (one loop nest, inside an
//     out[t(p)] = combine(out[t(p)], src[p])   Allocate so no schedule runs
//                                              its iterations in parallel)
// with t(p) = p with p[dim] = checked_index(index[p]). include_self=False
// first stores the reduction's identity at every target (a second nest over
// index before the combining one).
#include "ir/loop/simplify.h"
#include "passes/lower/lower_internal.h"

namespace kiln::passes::lower {
namespace {

using namespace kiln::loop;  // NOLINT

int64_t dim_of(const NodeLowering& n) {
  const int64_t r = n.in(0).rank();
  return r == 0 ? 0 : wrap_dim(n.attrs().get_int("dim"), r);
}

// index[p] checked against the size of x's dim d.
Expr checked(const Operand& index, const Index& p, const Expr& size) {
  return call("checked_index", {cast_to(index.at(p), DType::I64), size});
}

// p with p[d] from the index (a 0-d x: checked against 1, the empty index).
Index target(const Operand& x, const Operand& index, const Index& p, int64_t d, Expr* check) {
  if (x.rank() == 0) {
    *check = checked(index, p, make_int(1));
    return {};
  }
  Index at = p;
  at[size_t(d)] = checked(index, p, x.dims[size_t(d)]);
  return at;
}

std::vector<Operand> lower_gather(NodeLowering& n) {
  const Operand x = n.in(0), index = n.in(1);
  const int64_t d = dim_of(n);
  return {tensor_operand(
      x.dtype, n.out_dims(),
      [x, index, d](const Index& p) {
        Expr check;
        Expr v = x.at(target(x, index, p, d, &check));
        // A 0-d x has one element; its index must still be 0.
        if (check.defined()) return Select::make(check == make_int(0), v, make_zero(v.type()));
        return v;
      },
      n.out_type())};
}

Expr combine(const std::string& reduce, const Expr& a, const Expr& b) {
  if (reduce == "sum") return a + b;
  if (reduce == "prod") return a * b;
  if (reduce == "amax") return Select::make(is_nan(a) || a > b, a, b);
  if (reduce == "amin") return Select::make(is_nan(a) || a < b, a, b);
  return b;
}

Stmt lower_scatter(NodeLowering& n, const std::vector<OutBuf>& outs) {
  const Operand x = n.in(0), index = n.in(1), src = n.in(2);
  const OutBuf& out = outs[0];
  const int64_t d = dim_of(n);
  const std::string reduce = n.attrs().get_string("reduce");
  const bool include_self = n.attrs().get_bool("include_self");
  const DType acc = accum_dtype(out.buf->dtype);
  auto element = [&](const Index& at) { return Load::make(out.buf, flat_index(at, out.dims)); };
  auto store = [&](const Index& at, const Expr& v, const Expr& check) {
    Stmt s = Store::make(out.buf, flat_index(at, out.dims), cast_to(v, out.buf->dtype));
    // A 0-d x: the check's value is unused, so make the store depend on it.
    if (check.defined()) s = IfThenElse::make(check == make_int(0), s, Stmt());
    return s;
  };
  std::vector<Stmt> steps;
  steps.push_back(store_all(n.ctx, out, [&](const Index& p) { return x.at(p); }));
  if (reduce != "none" && !include_self) {
    DType t = out.buf->dtype;
    Expr id = reduce == "sum"    ? imm(t, 0)
              : reduce == "prod" ? imm(t, 1)
              : reduce == "amax" ? lowest(t)
                                 : highest(t);
    steps.push_back(loop_nest(n.ctx, index.dims, [&](const Index& p) {
      Expr check;
      Index at = target(x, index, p, d, &check);
      return store(at, id, check);
    }));
  }
  Stmt combining = loop_nest(n.ctx, index.dims, [&](const Index& p) {
    Expr check;
    Index at = target(x, index, p, d, &check);
    Expr v = reduce == "none" ? src.at(p)
                              : combine(reduce, cast_to(element(at), acc), cast_to(src.at(p), acc));
    return store(at, v, check);
  });
  // Iterations may hit the same element: they must run in order, so the nest
  // sits inside an Allocate, which the schedules leave serial.
  Scratch guard = make_scratch(n.ctx, "order", DType::I64);
  steps.push_back(allocate({guard}, Block::make({guard.store(make_int(0)), combining})));
  return Block::make(steps);
}

}  // namespace

void register_indexing_lowerings(LoweringTable& t) {
  t["gather"].pointwise = lower_gather;
  t["scatter"].root = lower_scatter;
}

}  // namespace kiln::passes::lower
