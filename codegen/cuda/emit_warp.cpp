// The CUDA C of warp collectives (ir/loop/warp.h). warp_reduce_<op>(buf[i], W)
// becomes a register and log2(W) butterfly steps, each one __shfl_xor_sync
// and the combine the loop evaluator applies (KernelEmitter::binary: wrapping
// integers, NaN-propagating min/max, f16/bf16 rounded after every step):
//
//   float warp = acc0_p[0];
//   { const float other = __shfl_xor_sync(0xffffffffu, warp, 16, 32); warp = (warp + other); }
//   ... 8, 4, 2, 1
//
// The schedules only emit it where every lane of the warp runs it (a warp or
// a whole block per row, under uniform conditions), so the mask is the whole
// warp; bool and the narrow integers travel as int.
#include "codegen/cuda/emitter_internal.h"
#include "ir/loop/warp.h"
#include "kiln/error.h"

namespace kiln::codegen::cuda {

Value KernelEmitter::warp_reduce(const loop::Call* op, loop::BinOp combine) {
  int64_t width = 0;
  KILN_INTERNAL_CHECK(op->args.size() == 2 && loop::is_const_int(op->args[1], &width) &&
                          width >= 1 && width <= 32 && op->type.lanes == 1,
                      "cuda emitter: malformed " << op->name << " in " << k_.name);
  const DType t = op->type.dtype;
  const std::string T = register_type(t);
  const bool as_int = t == DType::Bool || t == DType::I8 || t == DType::U8 || t == DType::I16;
  Value v = emit(op->args[0]);
  const std::string w = names_.fresh("warp");
  line(T + " " + w + " = " + unparen(typed(v, 0)) + ";");
  // The combine is the IR's own Binary over two variables bound to the C names.
  const std::string wi = "warp.self", oi = "warp.other";
  const loop::Expr combined =
      loop::Binary::make(combine, loop::Var::make(op->type, wi), loop::Var::make(op->type, oi));
  for (int64_t s = width / 2; s >= 1; s /= 2) {
    const std::string o = names_.fresh("other");
    std::string shfl = "__shfl_xor_sync(0xffffffffu, " + (as_int ? "(int)" + w : w) + ", " +
                       std::to_string(s) + ", " + std::to_string(width) + ")";
    if (t == DType::Bool) {
      shfl = "(" + shfl + " != 0)";
    } else if (as_int) {
      shfl = "(" + T + ")" + shfl;
    }
    line("{");
    ++indent_;
    line("const " + T + " " + o + " = " + shfl + ";");
    with_var(wi, {w, 1, true, ""}, [&] {
      with_var(oi, {o, 1, true, ""}, [&] {
        Value r = binary(combined.as<loop::Binary>());
        line(w + " = " + unparen(r.lanes[0]) + ";");
      });
    });
    --indent_;
    line("}");
  }
  Value r;
  r.data = true;
  r.lanes = {w};
  return r;
}

}  // namespace kiln::codegen::cuda
