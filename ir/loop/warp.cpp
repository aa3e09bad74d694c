#include "ir/loop/warp.h"

#include "kiln/error.h"

namespace kiln::loop {

namespace {
struct Named {
  BinOp op;
  const char* name;
};
constexpr Named kOps[] = {{BinOp::Add, "warp_reduce_add"}, {BinOp::Mul, "warp_reduce_mul"},
                          {BinOp::Min, "warp_reduce_min"}, {BinOp::Max, "warp_reduce_max"},
                          {BinOp::And, "warp_reduce_and"}, {BinOp::Or, "warp_reduce_or"}};
}  // namespace

std::optional<BinOp> warp_reduce_op(const std::string& call_name) {
  if (call_name.rfind("warp_reduce_", 0) != 0) return std::nullopt;
  for (const Named& n : kOps) {
    if (call_name == n.name) return n.op;
  }
  return std::nullopt;
}

std::string warp_reduce_name(BinOp op) {
  for (const Named& n : kOps) {
    if (n.op == op) return n.name;
  }
  KILN_INTERNAL_CHECK(false, "warp_reduce of " << binop_name(op));
}

Expr make_warp_reduce(BinOp op, const Buf& local, Expr index, int64_t width) {
  KILN_INTERNAL_CHECK(width >= 1 && (width & (width - 1)) == 0,
                      "warp_reduce width " << width << " is not a power of two");
  Expr v = Load::make(local, std::move(index));
  return Call::make(v.type(), warp_reduce_name(op), {v, make_int(width)});
}

}  // namespace kiln::loop
