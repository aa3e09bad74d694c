// How the autotuner (api/autotune.cpp) tells whether a candidate computed the
// right values: the seeded inputs it runs every candidate on, the reference it
// compares with, and the tolerance (docs/autotune.md).
//
// The reference is the interpreter, the oracle every backend is tested
// against. A node small enough (kFullReferenceMacs) is interpreted whole and
// every output element compared. A larger one would take the interpreter
// seconds, so for the ops this file knows (matmul, bmm, linear, conv2d) it
// runs the same op on slices of the operands that produce a sample of output
// elements — first, last and random rows, columns, batches and output
// channels, every k — and compares the candidate's full-size output there.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "kiln/tensor.h"

namespace kiln::compile_detail {

// Multiply-adds above which the reference is sampled (about 0.1 s of the
// interpreter on this machine).
inline constexpr double kFullReferenceMacs = double(1 << 26);

// Seeded values for each input of `g`: normal floats, small integers (exact
// in every accumulator), coin flips for bool.
std::vector<Tensor> tuning_inputs(const ir::Graph& g);

// Multiply-adds behind one output element of contraction `n` (the K of the
// tolerance), and behind all of them.
double reduction_length(const ir::Node& n);
double multiply_adds(const ir::Node& n);

struct ReferenceCheck {
  std::string what;  // "the interpreter", "the interpreter on 144 sampled elements"
  // Empty when `outputs` (a candidate's, on the inputs the check was made
  // for) match the reference within the tolerance; else what differs.
  std::function<std::string(const std::vector<Tensor>& outputs)> check;
};

// The reference for `g`, a graph holding one contraction node (its last node,
// operands being graph inputs or constants), run on `inputs`; sampled above
// `full_macs` multiply-adds (tests lower it to check the sampling on small nodes).
ReferenceCheck make_reference(const ir::Graph& g, const std::vector<Tensor>& inputs,
                              double full_macs = kFullReferenceMacs);

}  // namespace kiln::compile_detail
