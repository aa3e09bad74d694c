// The loop-IR verifier: the invariants of a kernel that its nodes' make()
// cannot check one node at a time (what is in scope where, which loops nest
// in which), and that every loop pass may assume and must keep. The rules are
// listed in verifier.cpp and docs/ir.md.
#pragma once

#include "ir/loop/loop_ir.h"

namespace kiln::loop {

// Throws kiln::Error when `k` breaks a rule. The message names the kernel,
// then one line per problem (the first 20, then a count): the rule, what is
// wrong, and the offending node as printed with the statement it sits in.
void verify_kernel(const Kernel& k);

}  // namespace kiln::loop
