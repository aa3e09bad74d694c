// Which backends run an op, for listings (`kiln ops`).
#pragma once

#include <string>
#include <vector>

#include "ir/op_registry.h"

namespace kiln::passes {

// Of llvm, loop-eval, interp, sim, cuda: interp runs every op's reference;
// llvm and loop-eval run the ops that lower to loop IR; sim and cuda run
// those whose lowering serves the GPU target (a contraction needs an
// algorithm for it).
std::vector<std::string> op_backends(const ir::OpDef& op);

}  // namespace kiln::passes
