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
//
// A cat or stack of more than kMaxJoinOperands values (a .kir graph may hold
// one; the script frontend already lowers them so) becomes a tree of joins of
// at most kMaxJoinOperands each, with the same output: one node with
// thousands of operands makes fusion and code generation superlinear.
#include <algorithm>

#include "ir/op_registry.h"
#include "kiln/error.h"
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

constexpr size_t kMaxJoinOperands = 32;

// Splits a wide cat/stack into a tree (stack(ts) = cat of stacks of groups
// along the same dim); false when it is narrow or a piece does not type.
bool split_wide_join(GraphEditor& e, ir::Node* n) {
  if ((n->op() != "cat" && n->op() != "stack") || n->inputs().size() <= kMaxJoinOperands) {
    return false;
  }
  std::vector<ir::Value*> level = n->inputs();
  std::string op = n->op();
  while (level.size() > kMaxJoinOperands) {
    const ir::OpDef* def = ir::OpRegistry::global().find(op);
    if (!def) return false;
    std::vector<ir::Value*> next;
    for (size_t i = 0; i < level.size(); i += kMaxJoinOperands) {
      std::vector<ir::Value*> group(
          level.begin() + ptrdiff_t(i),
          level.begin() + ptrdiff_t(std::min(level.size(), i + kMaxJoinOperands)));
      std::vector<ir::Type> types;
      for (const ir::Value* v : group) types.push_back(v->type());
      std::vector<ir::Type> out;
      try {
        out = ir::infer_types(*def, types, n->attrs());
      } catch (const InternalError&) {
        throw;
      } catch (const Error&) {
        return false;  // the pieces made so far are dead; dce drops them
      }
      ir::Node* j = e.insert_before(n, op, std::move(group), n->attrs(), out);
      if (!j) return false;
      next.push_back(j->output());
    }
    level = std::move(next);
    op = "cat";
  }
  ir::Node* top = e.insert_before(n, op, std::move(level), n->attrs(), output_types(*n));
  if (!top) return false;
  e.replace(n, top->outputs());
  return true;
}

}  // namespace

bool canonicalize(ir::Graph& g) {
  GraphEditor e(g);
  for (ir::Node* n : e.nodes()) {
    e.resolve_operands(n);
    if (split_wide_join(e, n)) continue;
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
