// Fault injection: named points in the compiler where a test can make Kiln
// fail as a bug would, to prove that an internal error surfaces (kiln exits 2,
// compile() throws kiln::InternalError) instead of being taken for "this
// transform does not apply" and quietly producing slower code.
//
// KILN_INJECT_FAULT=<name> arms the point of that name. The variable is read
// once, at the first use of this facility in the process; unarmed, a point
// costs one relaxed atomic load. Points: "vectorize" (the vector-lane
// rewriter under vectorize and vectorize_reduction), "vectorize_reduction".
#pragma once

#include <string>

namespace kiln::runtime {

// Throws kiln::InternalError("internal error: injected fault at <name>
// (KILN_INJECT_FAULT)") when the point `name` is armed; does nothing otherwise.
void fault_point(const char* name);

// Arms the point `name` (empty: none) in place of KILN_INJECT_FAULT, for tests
// in a process that is already running; returns the name armed before, so a
// test can restore it. Safe to call while other threads pass fault points.
std::string arm_fault_point(const std::string& name);

}  // namespace kiln::runtime
