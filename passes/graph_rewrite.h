// What the graph-to-graph passes share: questions about values (is this a
// constant, and which one?), which ops may be folded or merged, and
// GraphEditor, which applies one sweep's edits together.
//
// Assumes a graph in topological order whose recorded types match inference
// (what ir::verify accepts). Only GraphEditor changes a graph, and only at
// commit().
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "ir/graph.h"
#include "kiln/tensor.h"

namespace kiln::passes {

// The `constant` node producing `v`, or nullptr (graph inputs, other ops).
const ir::Node* constant_producer(const ir::Value* v);

// A constant's value as the interpreter holds it at run time: int -> 0-dim
// i64, float -> 0-dim f64, bool -> 0-dim bool, a tensor as is, none -> an
// undefined Tensor. nullopt when `v` is not produced by a constant.
std::optional<Tensor> constant_value(const ir::Value* v);

// True when `v` is a constant (scalar or tensor) whose every element equals
// `x`; -0.0 counts as equal to 0.0. False for non-constants and none.
bool constant_all_equal(const ir::Value* v, double x);

// Ops whose result depends on hidden state (random number generation): never
// folded, never merged by CSE. None is registered yet; the names are those
// PyTorch uses, so one that is added is covered from the start.
bool is_random_op(std::string_view op);

// A node the value-based passes may evaluate, merge or move: a registered op
// that is not random.
bool is_pure(const ir::Node& n);

// Binary ops whose operands may be swapped without changing the result (add
// only with alpha == 1).
bool is_commutative(const ir::Node& n);
// The comparison with swapped operands (lt <-> gt, le <-> ge), or "".
std::string mirrored_comparison(std::string_view op);

// Attribute lists that are the same bit for bit: like attr_equal, but 0.0 and
// -0.0 differ (1/x tells them apart), also inside tensors.
bool attrs_identical(const ir::Attrs& a, const ir::Attrs& b);

// The edits of one forward sweep over a graph, applied together by commit()
// so a pass stays linear in the graph's size (a Graph::replace_all_uses or
// erase_node per rewrite would make it quadratic).
//
//   GraphEditor e(g);
//   for (ir::Node* n : e.nodes()) {   // graph order, a snapshot
//     e.resolve_operands(n);          // earlier replacements, applied to n
//     ... e.insert_before(n, ...), e.replace(n, ...) ...
//   }
//   return e.commit();
//
// A replacement takes effect on a node's operands when the sweep reaches it
// (resolve_operands) and on the graph outputs at commit. Only the node being
// visited (or an earlier one) may be replaced or erased.
class GraphEditor {
 public:
  explicit GraphEditor(ir::Graph& g);

  const std::vector<ir::Node*>& nodes() const { return nodes_; }
  ir::Graph& graph() { return g_; }

  // Rewrites n's operands through the replacements recorded so far.
  void resolve_operands(ir::Node* n);

  // Creates `op(inputs) {attrs}` (attribute defaults filled in), placed just
  // before `before` at commit, when the op's type inference accepts the
  // operands and gives exactly `expected`; otherwise returns nullptr and
  // nothing changes. Rewrites use it so a replacement never changes a dtype
  // or shape.
  ir::Node* insert_before(ir::Node* before, const std::string& op, std::vector<ir::Value*> inputs,
                          const ir::Attrs& attrs, const std::vector<ir::Type>& expected);

  // Every later use of from's outputs (same index in `to`) reads `to`
  // instead, and `from` is erased at commit. A name hint moves to an unnamed
  // replacement, so the printed graph keeps the script's names.
  void replace(ir::Node* from, const std::vector<ir::Value*>& to);
  // Erases a node nobody reads any more (dce).
  void erase(ir::Node* n);

  // Applies everything: graph outputs follow the replacements, inserted nodes
  // take their places, erased and replaced nodes go. Returns whether anything
  // changed.
  bool commit();

 private:
  ir::Value* resolve(ir::Value* v) const;

  ir::Graph& g_;
  std::vector<ir::Node*> nodes_;
  std::unordered_map<const ir::Value*, ir::Value*> replaced_;
  std::unordered_set<const ir::Node*> erased_;
  std::unordered_map<const ir::Node*, std::vector<ir::Node*>> inserted_;  // before -> new ones
  bool changed_ = false;
};

}  // namespace kiln::passes
