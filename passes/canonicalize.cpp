// canonicalize: one spelling for computations that can be written two ways.
//
// Assumes: a graph in topological order with exact types. Guarantees: a
// commutative binary op (add with alpha 1, mul, maximum, minimum, eq, ne, the
// logical and bitwise and/or/xor) whose first operand is a constant and second
// is not has them swapped, and a comparison with a constant first is mirrored
// (`lt(2, x)` becomes `gt(x, 2)`). So `2*a` and `a*2` look alike to CSE and
// the identities in simplify need match only `x op c`. Only swaps whose type
// inference gives the very same output types are made (promotion and
// broadcasting are symmetric, so that is every one today); values are
// unchanged, operands and attributes otherwise untouched.
#include "passes/graph_rewrite.h"
#include "passes/pipeline.h"

namespace kiln::passes {

namespace {

bool constant_first(const ir::Node& n) {
  return n.inputs().size() == 2 && constant_producer(n.input(0)) && !constant_producer(n.input(1));
}

std::vector<ir::Type> output_types(const ir::Node& n) {
  std::vector<ir::Type> t;
  for (const ir::Value* v : n.outputs()) t.push_back(v->type());
  return t;
}

}  // namespace

bool canonicalize(ir::Graph& g) {
  GraphEditor e(g);
  for (ir::Node* n : e.nodes()) {
    e.resolve_operands(n);
    if (!constant_first(*n)) continue;
    std::string op;
    if (is_commutative(*n)) {
      op = n->op();
    } else {
      op = mirrored_comparison(n->op());
      if (op.empty()) continue;
    }
    ir::Node* swapped =
        e.insert_before(n, op, {n->input(1), n->input(0)}, n->attrs(), output_types(*n));
    if (swapped) e.replace(n, swapped->outputs());
  }
  return e.commit();
}

}  // namespace kiln::passes
