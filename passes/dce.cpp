// dce: dead-code elimination.
//
// Assumes: a graph in topological order. Guarantees: every node left has an
// output that a later node reads or the graph returns; nothing else changes
// (graph inputs stay, even unused ones: they are the function's signature).
// Ops have no side effects today, so any unused node may go; a random op that
// nobody reads may go too (its draw is unobservable).
//
// One backward sweep with use counts: removing a node releases its operands,
// so a whole dead chain goes in one run.
#include <unordered_map>

#include "passes/graph_rewrite.h"
#include "passes/pipeline.h"

namespace kiln::passes {

bool dce(ir::Graph& g) {
  std::unordered_map<const ir::Value*, int> uses;
  for (const auto& n : g.nodes()) {
    for (const ir::Value* v : n->inputs()) ++uses[v];
  }
  for (const ir::Value* v : g.outputs()) ++uses[v];
  GraphEditor e(g);
  const std::vector<ir::Node*>& nodes = e.nodes();
  for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
    ir::Node* n = *it;
    bool used = false;
    for (const ir::Value* v : n->outputs()) used = used || uses[v] > 0;
    if (used) continue;
    for (const ir::Value* v : n->inputs()) --uses[v];
    e.erase(n);
  }
  return e.commit();
}

}  // namespace kiln::passes
