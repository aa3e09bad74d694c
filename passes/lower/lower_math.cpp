// Lowerings of the math ops of ir/ops/math.cpp (tan, asin, ..., lgamma,
// digamma, erfinv, atan2, copysign, hypot, trunc): each output element is one
// loop-IR intrinsic call on the operands' elements at the broadcast index, so
// they fuse like any elementwise op. Operands are cast to the inferred output
// dtype; f16/bf16 compute in f32 (each backend then widens to double) and are
// rounded once at the end, as the reference rounds once.
#include "ir/loop/extra_math.h"
#include "passes/lower/lower_internal.h"

namespace kiln::passes::lower {
namespace {

using namespace kiln::loop;  // NOLINT

DType work_dtype(DType out) {
  if (out == DType::F16 || out == DType::BF16) return DType::F32;
  return out;
}

// out = name(operands cast to the output dtype, then to the working dtype).
PointwiseFn intrinsic_op(const char* name, size_t arity) {
  return [name, arity](NodeLowering& n) {
    DType out = n.out_dtype(), work = work_dtype(out);
    std::vector<Operand> ins;
    for (size_t i = 0; i < arity; ++i) ins.push_back(n.in(i));
    return std::vector<Operand>{tensor_operand(
        out, n.out_dims(),
        [ins, name, out, work](const Index& idx) {
          std::vector<Expr> args;
          for (const Operand& o : ins)
            args.push_back(cast_to(cast_to(o.broadcast_at(idx), out), work));
          // Integral trunc: the value is whole already.
          if (!is_floating(work)) return args[0];
          return cast_to(call(name, args), out);
        },
        n.out_type())};
  };
}

}  // namespace

void register_math_lowerings(LoweringTable& t) {
  for (const ExtraMath& m : extra_math()) {
    t[m.name].pointwise = intrinsic_op(m.name, size_t(m.arity));
  }
  t["trunc"].pointwise = intrinsic_op("trunc", 1);
}

}  // namespace kiln::passes::lower
