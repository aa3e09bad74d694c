// Graph verifier: the invariants every pass may assume and must keep.
//
// For each node, in order: the op is registered; every operand is defined by a
// graph input or an earlier node (SSA dominance is program order here, since a
// graph has no control flow); the attributes are complete and of the right
// kinds; the operands fit the op; and the recorded output count and types are
// exactly what inference gives. Finally each graph output is defined.
//
// All problems are collected (one per node, since later checks on a broken node
// only echo the first) and thrown together as one kiln::Error, each line naming
// the node as printed and its source location when known.
#include <algorithm>
#include <unordered_set>

#include "ir/graph.h"
#include "ir/op_registry.h"
#include "kiln/error.h"

namespace kiln::ir {

namespace {

// Problems past this many are counted, not listed: a broken pass usually
// breaks every node after it the same way.
constexpr size_t kMaxListed = 20;

std::string did_you_mean(const std::string& op) {
  std::vector<std::string> near = OpRegistry::global().nearest(op);
  if (near.empty()) return "";
  std::string s = " (did you mean ";
  for (size_t i = 0; i < near.size(); ++i) {
    if (i) s += i + 1 == near.size() ? " or " : ", ";
    s += "'" + near[i] + "'";
  }
  return s + "?)";
}

// Returns the first problem with `node`, or "" when it is well formed.
std::string check_node(const Node& node, const ValueNames& names,
                       const std::unordered_set<const Value*>& defined) {
  for (size_t i = 0; i < node.inputs().size(); ++i) {
    const Value* v = node.input(i);
    if (!v) return "operand " + std::to_string(i) + " is null";
    if (!defined.count(v)) {
      bool later = v->producer() != nullptr && names(v) != "%<undefined>";
      return "operand " + std::to_string(i) + " (" + names(v) + ") is " +
             (later ? "used before its definition" : "not defined in this graph");
    }
  }
  const OpDef* def = node.def();
  if (!def) return "unknown op '" + node.op() + "'" + did_you_mean(node.op());
  for (const AttrSpec& spec : def->attrs) {
    if (!node.attrs().has(spec.name)) {
      std::string msg = "missing attribute '" + spec.name + "'";
      if (spec.default_value) msg += " (its default is " + attr_str(*spec.default_value) + ")";
      return msg;
    }
  }
  std::vector<Type> in_types;
  for (const Value* v : node.inputs()) in_types.push_back(v->type());
  std::vector<Type> inferred;
  try {
    // Unknown attributes and wrong kinds are reported by completion.
    Attrs full = complete_attrs(*def, node.attrs());
    inferred = infer_types(*def, in_types, full);
  } catch (const InternalError&) {
    throw;
  } catch (const Error& e) {
    return e.what();
  }
  if (inferred.size() != node.num_outputs()) {
    return "records " + std::to_string(node.num_outputs()) + " output(s), but " + node.op() +
           " produces " + std::to_string(inferred.size());
  }
  for (size_t i = 0; i < inferred.size(); ++i) {
    const Value* out = node.output(i);
    if (out->producer() != &node || out->index() != static_cast<int>(i)) {
      return "output " + std::to_string(i) + " does not link back to its node";
    }
    if (!(out->type() == inferred[i])) {
      return "output " + names(out) + " is recorded as " + out->type().str() +
             " but inference gives " + inferred[i].str();
    }
  }
  return "";
}

}  // namespace

void verify(const Graph& g) {
  ValueNames names(g);
  std::unordered_set<const Value*> defined;
  std::vector<std::string> problems;
  for (const auto& in : g.inputs()) defined.insert(in.get());
  for (const auto& node : g.nodes()) {
    std::string problem = check_node(*node, names, defined);
    if (!problem.empty()) {
      std::string where = node->loc().known() ? " at " + node->loc().str() : "";
      problems.push_back(node_summary(*node, names) + where + ": " + problem);
    }
    // Define the outputs even when the node is broken, so its users are not
    // reported as well.
    for (size_t i = 0; i < node->num_outputs(); ++i) defined.insert(node->output(i));
  }
  for (size_t i = 0; i < g.outputs().size(); ++i) {
    const Value* v = g.outputs()[i];
    if (!defined.count(v)) {
      problems.push_back("return: output " + std::to_string(i) + " (" + names(v) +
                         ") is not defined in the graph");
    }
  }
  if (problems.empty()) return;
  std::string msg = "verify: graph @" + g.name() + " is invalid:";
  for (size_t i = 0; i < problems.size() && i < kMaxListed; ++i) msg += "\n  " + problems[i];
  if (problems.size() > kMaxListed) {
    msg += "\n  ... and " + std::to_string(problems.size() - kMaxListed) + " more";
  }
  throw Error(msg);
}

}  // namespace kiln::ir
