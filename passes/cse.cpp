// cse: common-subexpression elimination.
//
// Assumes: a graph in topological order with exact types (infer-types ran);
// canonicalize ran, so a constant operand of a commutative op is second.
// Guarantees: no two pure nodes compute the same thing — same op, the same
// operand values (in either order for commutative ops: a*b and b*a), bit-for-
// bit identical attributes (0.0 and -0.0 differ; see attrs_identical) and the
// same output types. The first such node (in graph order) stays and every use
// of a later one, graph outputs included, reads it instead; the later node is
// erased. Constants with identical values merge too. Random ops and unknown
// ops are never merged: two draws are two different values.
//
// Values are numbered by identity; one forward sweep suffices because a
// merge rewrites later users' operands before they are looked at.
#include <cstdio>
#include <unordered_map>

#include "passes/graph_rewrite.h"
#include "passes/pipeline.h"

namespace kiln::passes {

namespace {

// The part of a node's identity that hashes cheaply: op and operand identities.
std::string node_key(const ir::Node& n) {
  std::vector<const ir::Value*> ins(n.inputs().begin(), n.inputs().end());
  if (is_commutative(n) && std::less<const ir::Value*>()(ins[1], ins[0])) {
    std::swap(ins[0], ins[1]);
  }
  std::string key = n.op();
  char buf[32];
  for (const ir::Value* v : ins) {
    std::snprintf(buf, sizeof buf, "|%p", static_cast<const void*>(v));
    key += buf;
  }
  return key;
}

bool same_operands(const ir::Node& a, const ir::Node& b) {
  if (a.inputs() == b.inputs()) return true;
  return is_commutative(a) && is_commutative(b) && a.input(0) == b.input(1) &&
         a.input(1) == b.input(0);
}

bool same_computation(const ir::Node& a, const ir::Node& b) {
  if (a.op() != b.op() || a.num_outputs() != b.num_outputs() || !same_operands(a, b)) {
    return false;
  }
  for (size_t i = 0; i < a.num_outputs(); ++i) {
    if (!(a.output(i)->type() == b.output(i)->type())) return false;
  }
  return attrs_identical(a.attrs(), b.attrs());
}

}  // namespace

bool cse(ir::Graph& g) {
  GraphEditor e(g);
  std::unordered_map<std::string, std::vector<ir::Node*>> seen;
  for (ir::Node* n : e.nodes()) {
    e.resolve_operands(n);
    if (!is_pure(*n)) continue;
    std::vector<ir::Node*>& candidates = seen[node_key(*n)];
    ir::Node* same = nullptr;
    for (ir::Node* c : candidates) {
      if (same_computation(*c, *n)) {
        same = c;
        break;
      }
    }
    if (same) {
      e.replace(n, same->outputs());
    } else {
      candidates.push_back(n);
    }
  }
  return e.commit();
}

}  // namespace kiln::passes
