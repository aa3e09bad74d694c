// The reference interpreter: runs any verified graph on CPU tensors with the
// ops' reference implementations (plain loops, wide accumulation). It is the
// oracle every backend is tested against, so it stays simple.
#pragma once

#include <vector>

#include "ir/graph.h"
#include "kiln/tensor.h"

namespace kiln::ir {

// `inputs` follow the graph's input order; scalar inputs are 0-dim tensors.
// Symbolic dims are bound from the actual inputs (a symbol bound to two
// different sizes is an error), and every node's types are re-inferred with
// the concrete shapes. Throws kiln::Error for a missing or extra input, or one
// whose dtype, rank or shape does not match the graph's signature.
std::vector<Tensor> interpret(const Graph& g, const std::vector<Tensor>& inputs);

}  // namespace kiln::ir
