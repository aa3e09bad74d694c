// Blocked (cascade) summation for the reductions that add floats on a CPU:
// sum, mean, var/std, the softmax denominator, layer_norm/rms_norm statistics
// (and logsumexp, which the frontend builds from them). A plain loop adds
// every term into one accumulator, so its rounding error grows with the
// count (1e7 x 0.1f sums to 998501.4); summing in blocks and adding the
// block sums in a fixed tree keeps it near the error of one block.
#pragma once

#include "passes/lower/lower_internal.h"

namespace kiln::passes::lower {

// Statement adding the terms at reduced index `r` into the accumulators
// `into` (one per accumulator of summing_nest, in its order), each as
// `into[k].store(into[k].load() + term)`; it may store elsewhere too.
using SumTerms = std::function<Stmt(const Index& r, const std::vector<Scratch>& into)>;

// Loops over the reduced dims `dims` (outermost first) adding every term
// into `accs`, which the caller initializes. On a CPU with floating
// accumulators each dim is split in two levels: blocks of 1024 (innermost
// dim) or 64 (outer dims) summed into a fresh partial, 64 such partials into
// another, and those into the enclosing level:
//
//   for r in 0..E: acc += t(r)
// becomes (E = 1e7, innermost dim)
//   for g in 0..ceil(E / 65536):
//     s2 = 0
//     for b in 0..min(64, ceil(E / 1024) - 64 g):
//       s1 = 0
//       for i in 0..min(1024, E - 1024 (64 g + b)): s1 += t(1024 (64 g + b) + i)
//       s2 += s1
//     acc += s2
//
// A static extent within one block stays a plain loop, one within one group
// drops the group loop. The order is fixed by the shapes alone, so results
// do not depend on the thread count. Elsewhere (integers, GPU targets, whose
// schedules split reductions their own way) it is the plain nest.
Stmt summing_nest(LowerContext& ctx, const std::vector<Expr>& dims,
                  const std::vector<Scratch>& accs, const SumTerms& add,
                  const std::string& prefix = "r");

}  // namespace kiln::passes::lower
