// The kernel status word: how compiled code reports a run-time error that
// the interpreter raises (an integer division by zero, an index out of range)
// without trapping. An index is checked by the loop-IR intrinsic
// checked_index(i, n) (i when 0 <= i < n, else 0 and kStatusIndexOutOfRange).
// A kernel whose loop IR has such a check (loop::has_checked_division) finds a
// pointer to an int32 status word after its buffers (buffers[n_buffers]); on
// a zero divisor it stores 0 as the result and ORs a bit below into the word
// (relaxed atomic, once per function or parallel chunk). Lanes that a
// predicate masks off (a vector loop's tail) do not count: the store's
// predicate and those of the divisor's loads (loop::load_predicates). The
// launcher passes a zeroed word and, after the run, raises the interpreter's
// error for it.
#pragma once

#include <cstdint>

#include "kiln/error.h"

namespace kiln::runtime {

enum KernelStatusBit : int32_t {
  kStatusIntDivByZero = 1,  // integer Div by zero ("div: ...")
  kStatusIntModByZero = 2,  // integer Mod by zero ("remainder: ...")
  kStatusIndexOutOfRange = 4,  // a checked_index call out of range (gather, scatter, x[idx])
};

// The message of an index tensor's value outside its dimension: the
// interpreter's references (ir/ops/indexing.cpp) raise exactly this text, so
// compiled code, which only has the status bit, agrees with them.
inline constexpr const char* kIndexOutOfRangeMessage =
    "index out of range: an index tensor holds a value outside the dimension it indexes";

// Throws the interpreter's user error (ir/ops/binary.cpp) for a non-zero
// status word; a division wins over a remainder (C-style truncating division
// computes both). The loop evaluator reports through the same bits.
inline void raise_kernel_status(int32_t status) {
  if (status & kStatusIntDivByZero) KILN_USER_ERROR("div: integer division by zero");
  if (status & kStatusIntModByZero) KILN_USER_ERROR("remainder: integer division by zero");
  if (status & kStatusIndexOutOfRange) KILN_USER_ERROR(kIndexOutOfRangeMessage);
  KILN_INTERNAL_CHECK(status == 0, "kernel status word with unknown bits " << status);
}

}  // namespace kiln::runtime
