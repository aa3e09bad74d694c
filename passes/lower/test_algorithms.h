// A way for tests to add algorithm candidates to a contraction op (the
// lowering table is a static table, built once per process), e.g. a
// deliberately wrong candidate that autotuning must reject. Nothing in Kiln
// calls it: a normal build's candidate lists are exactly those registered in
// passes/lower.
#pragma once

#include <string>

#include "passes/lower/lower_internal.h"

namespace kiln::passes::lower {

// Appends `a` to the candidates of op `op` (an op that already has some).
//
// Thread safety: callers are serialized by a mutex, but the table's readers
// (every compile) take no lock, so call it while no other thread compiles —
// from a static initializer or at the start of a test, before the binary's
// first compile on another thread. The candidate stays for the rest of the
// process: give it an `applies` the test switches on (an atomic flag), so the
// binary's other tests do not see it. Internal error for an op without
// candidates or a name already in the list.
void add_test_algorithm(const std::string& op, AlgorithmLowering a);

}  // namespace kiln::passes::lower
