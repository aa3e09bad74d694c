// Lowerings of comparisons, logical and bitwise ops, and the select-like ops
// where, clamp and masked_fill, with the registry's semantics: comparisons run
// in result_type of the operands; logical ops test each operand != 0 in its own
// dtype (NaN is true); clamp propagates NaN and gives max when min > max;
// masked_fill converts its value to x's dtype.
#include "ir/ops/ops.h"
#include "passes/lower/lower_internal.h"

namespace kiln::passes::lower {
namespace {

using namespace kiln::loop;  // NOLINT

Operand elementwise(NodeLowering& n, std::vector<Operand> ins,
                    std::function<Expr(const std::vector<Expr>&)> f) {
  return tensor_operand(
      n.out_dtype(), n.out_dims(),
      [ins, f](const Index& idx) {
        std::vector<Expr> args;
        for (const Operand& o : ins) {
          args.push_back(o.is_none() ? Expr() : o.broadcast_at(idx));
        }
        return f(args);
      },
      n.out_type());
}

// Compares in f32 for f16/bf16 (exact: both widen losslessly).
DType compare_dtype(DType t) {
  return t == DType::F16 || t == DType::BF16 ? DType::F32 : t;
}

PointwiseFn compare(CmpOp op) {
  return [op](NodeLowering& n) {
    std::vector<ir::Type> types{n.node.input(0)->type(), n.node.input(1)->type()};
    DType compute = ir::result_type(types);
    DType wide = compare_dtype(compute);
    return std::vector<Operand>{elementwise(n, {n.in(0), n.in(1)}, [=](const std::vector<Expr>& a) {
      Expr x = cast_to(cast_to(a[0], compute), wide), y = cast_to(cast_to(a[1], compute), wide);
      return Compare::make(op, x, y);
    })};
  };
}

PointwiseFn logical(BinOp op) {
  return [op](NodeLowering& n) {
    return std::vector<Operand>{elementwise(n, {n.in(0), n.in(1)}, [=](const std::vector<Expr>& a) {
      Expr x = cast_to(a[0], DType::Bool), y = cast_to(a[1], DType::Bool);
      if (op == BinOp::BitXor) return x != y;
      return Binary::make(op, x, y);
    })};
  };
}

PointwiseFn bitwise(BinOp op) {
  return [op](NodeLowering& n) {
    DType out = n.out_dtype();
    return std::vector<Operand>{elementwise(n, {n.in(0), n.in(1)}, [=](const std::vector<Expr>& a) {
      return Binary::make(op, cast_to(a[0], out), cast_to(a[1], out));
    })};
  };
}

std::vector<Operand> lower_bitwise_not(NodeLowering& n) {
  DType out = n.out_dtype();
  return {elementwise(n, {n.in(0)}, [=](const std::vector<Expr>& a) {
    Expr x = cast_to(a[0], out);
    if (out == DType::Bool) return !x;
    return Binary::make(BinOp::BitXor, x, imm_int(out, -1));
  })};
}

std::vector<Operand> lower_where(NodeLowering& n) {
  DType out = n.out_dtype();
  return {elementwise(n, {n.in(0), n.in(1), n.in(2)}, [=](const std::vector<Expr>& a) {
    return Select::make(cast_to(a[0], DType::Bool), cast_to(a[1], out), cast_to(a[2], out));
  })};
}

std::vector<Operand> lower_clamp(NodeLowering& n) {
  DType out = n.out_dtype();
  bool has_lo = !n.in(1).is_none(), has_hi = !n.in(2).is_none();
  return {elementwise(n, {n.in(0), n.in(1), n.in(2)}, [=](const std::vector<Expr>& a) {
    Expr x = cast_to(a[0], out);
    if (has_lo) x = max(x, cast_to(a[1], out));
    if (has_hi) x = min(x, cast_to(a[2], out));
    return x;
  })};
}

std::vector<Operand> lower_masked_fill(NodeLowering& n) {
  DType out = n.out_dtype();
  Operand value = n.in(2);
  return {elementwise(n, {n.in(0), n.in(1)}, [=](const std::vector<Expr>& a) {
    // The value is a scalar or a 0-dim tensor: read it at the empty index.
    Expr v = value.kind == Operand::Kind::Scalar ? value.scalar : value.at({});
    return Select::make(cast_to(a[1], DType::Bool), cast_to(v, out), cast_to(a[0], out));
  })};
}

}  // namespace

void register_compare_lowerings(LoweringTable& t) {
  t["eq"].pointwise = compare(CmpOp::EQ);
  t["ne"].pointwise = compare(CmpOp::NE);
  t["lt"].pointwise = compare(CmpOp::LT);
  t["le"].pointwise = compare(CmpOp::LE);
  t["gt"].pointwise = compare(CmpOp::GT);
  t["ge"].pointwise = compare(CmpOp::GE);
  t["logical_and"].pointwise = logical(BinOp::And);
  t["logical_or"].pointwise = logical(BinOp::Or);
  t["logical_xor"].pointwise = logical(BinOp::BitXor);
  t["bitwise_and"].pointwise = bitwise(BinOp::BitAnd);
  t["bitwise_or"].pointwise = bitwise(BinOp::BitOr);
  t["bitwise_xor"].pointwise = bitwise(BinOp::BitXor);
  t["bitwise_not"].pointwise = lower_bitwise_not;
  t["where"].pointwise = lower_where;
  t["clamp"].pointwise = lower_clamp;
  t["masked_fill"].pointwise = lower_masked_fill;
}

}  // namespace kiln::passes::lower
