// The loop-IR math intrinsics beyond the original set (exp, log, sin, erf,
// ...): tan, asin, ..., lgamma, digamma, erfinv, atan2, copysign, hypot. Each
// is one double function that every backend computes with: the interpreter
// references and loop_eval call it, the LLVM backend calls it per lane from
// JIT code (under `symbol`), and the CUDA prelude has the same functions
// (kiln_<name>, kiln_prelude.cuh). f32 (and f16/bf16) values are widened to
// double, computed, and rounded once, so all backends agree bit for bit
// wherever libm is correctly rounded, and are within an ulp elsewhere.
#pragma once

#include <string_view>
#include <vector>

namespace kiln::loop {

struct ExtraMath {
  const char* name;              // the loop::Call name
  int arity;                     // 1 or 2
  double (*f1)(double);          // arity 1
  double (*f2)(double, double);  // arity 2
  const char* symbol;            // the process symbol JIT code calls
};

// Every extra intrinsic, in a fixed order.
const std::vector<ExtraMath>& extra_math();
// The entry named `name`, or null.
const ExtraMath* find_extra_math(std::string_view name);

// Special functions libm lacks, with PyTorch's values at poles and limits:
// digamma(+-0) = -+inf, digamma(negative integer or -inf) = NaN;
// erfinv(+-1) = +-inf, |y| > 1 gives NaN.
double digamma(double x);
double erfinv(double y);

}  // namespace kiln::loop
