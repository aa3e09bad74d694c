// Graph IR containers: Values, Nodes, Graphs, and the editing operations passes
// use (apply with type inference, use replacement, erasure, reordering, clone).
//
// Assumes the op registry is filled (OpRegistry::global()); `apply` is the only
// entry that consults it for types — add_node trusts the caller (the parser uses
// it so that written types survive and verify() can judge them).
#include <algorithm>

#include "ir/graph.h"
#include "ir/op_registry.h"
#include "kiln/error.h"

namespace kiln::ir {

std::string SourceLoc::str() const {
  if (!known()) return "";
  return file + ":" + std::to_string(line) + ":" + std::to_string(col);
}

// --- Node ----------------------------------------------------------------------------

Node::Node(std::string op, std::vector<Value*> inputs, Attrs attrs, SourceLoc loc)
    : op_(std::move(op)),
      def_(OpRegistry::global().find(op_)),
      inputs_(std::move(inputs)),
      attrs_(std::move(attrs)),
      loc_(std::move(loc)) {}

std::vector<Value*> Node::outputs() const {
  std::vector<Value*> out;
  out.reserve(outputs_.size());
  for (const auto& v : outputs_) out.push_back(v.get());
  return out;
}

Value* Node::add_output(Type type, std::string name) {
  int index = static_cast<int>(outputs_.size());
  outputs_.push_back(std::make_unique<Value>(std::move(type), std::move(name), this, index));
  return outputs_.back().get();
}

// --- Graph: building -------------------------------------------------------------------

Value* Graph::add_input(std::string name, Type type) {
  int index = static_cast<int>(inputs_.size());
  inputs_.push_back(std::make_unique<Value>(std::move(type), std::move(name), nullptr, index));
  return inputs_.back().get();
}

Node* Graph::add_node(std::string op, std::vector<Value*> inputs, Attrs attrs,
                      const std::vector<Type>& output_types, SourceLoc loc) {
  auto node =
      std::make_unique<Node>(std::move(op), std::move(inputs), std::move(attrs), std::move(loc));
  for (const Type& t : output_types) node->add_output(t);
  nodes_.push_back(std::move(node));
  return nodes_.back().get();
}

namespace {

std::string operand_types_str(const std::string& op, const std::vector<Type>& types) {
  std::string s = op + "(";
  for (size_t i = 0; i < types.size(); ++i) s += (i ? ", " : "") + types[i].str();
  return s + ")";
}

std::string suggestion(std::string_view op) {
  std::vector<std::string> near = OpRegistry::global().nearest(op);
  if (near.empty()) return "";
  std::string s = " (did you mean ";
  for (size_t i = 0; i < near.size(); ++i) {
    if (i) s += i + 1 == near.size() ? " or " : ", ";
    s += "'" + near[i] + "'";
  }
  return s + "?)";
}

std::string loc_prefix(const SourceLoc& loc) {
  return loc.known() ? loc.str() + ": " : "";
}

}  // namespace

std::vector<Value*> Graph::apply(const std::string& op, std::vector<Value*> inputs, Attrs attrs,
                                 SourceLoc loc) {
  const OpDef* def = OpRegistry::global().find(op);
  KILN_USER_CHECK(def, loc_prefix(loc) << "unknown op '" << op << "'" << suggestion(op));
  std::vector<Type> types;
  types.reserve(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    KILN_USER_CHECK(inputs[i], loc_prefix(loc) << op << ": operand " << i << " is null");
    types.push_back(inputs[i]->type());
  }
  Attrs full;
  std::vector<Type> out_types;
  try {
    full = complete_attrs(*def, attrs);
    out_types = infer_types(*def, types, full);
  } catch (const InternalError&) {
    throw;
  } catch (const Error& e) {
    // Inference messages name the op and operand; add where and what it was called with.
    std::string msg = e.what();
    if (msg.rfind(op + ":", 0) != 0) msg = op + ": " + msg;
    throw Error(loc_prefix(loc) + msg + " [in " + operand_types_str(op, types) + "]");
  }
  Node* node = add_node(op, std::move(inputs), std::move(full), out_types, std::move(loc));
  return node->outputs();
}

Value* Graph::apply1(const std::string& op, std::vector<Value*> inputs, Attrs attrs,
                     SourceLoc loc) {
  SourceLoc where = loc;
  std::vector<Value*> outs = apply(op, std::move(inputs), std::move(attrs), std::move(loc));
  if (outs.size() != 1) {
    // Keep the promise that a failed call leaves the graph unchanged.
    nodes_.pop_back();
    KILN_USER_ERROR(loc_prefix(where)
                    << op << ": has " << outs.size() << " outputs; use apply() to get all of them");
  }
  return outs[0];
}

Value* Graph::constant(const AttrValue& value, SourceLoc loc) {
  return apply1("constant", {}, Attrs{{"value", value}}, std::move(loc));
}

// --- Graph: editing ---------------------------------------------------------------------

void Graph::replace_all_uses(Value* from, Value* to) {
  for (auto& node : nodes_) {
    for (size_t i = 0; i < node->inputs().size(); ++i) {
      if (node->input(i) == from) node->set_input(i, to);
    }
  }
  for (Value*& out : outputs_) {
    if (out == from) out = to;
  }
}

std::vector<Node*> Graph::users(const Value* v) const {
  std::vector<Node*> out;
  for (const auto& node : nodes_) {
    const auto& ins = node->inputs();
    if (std::find(ins.begin(), ins.end(), v) != ins.end()) out.push_back(node.get());
  }
  return out;
}

namespace {
template <typename Nodes>
auto find_node(Nodes& nodes, const Node* n) {
  return std::find_if(nodes.begin(), nodes.end(), [&](const auto& p) { return p.get() == n; });
}
}  // namespace

void Graph::erase_node(Node* node) {
  auto it = find_node(nodes_, node);
  KILN_INTERNAL_CHECK(it != nodes_.end(), "erase_node: node is not in graph @" << name_);
  for (const Value* out : node->outputs()) {
    std::vector<Node*> us = users(out);
    bool is_graph_output = std::find(outputs_.begin(), outputs_.end(), out) != outputs_.end();
    if (us.empty() && !is_graph_output) continue;
    ValueNames names(*this);
    std::string why = is_graph_output ? "a graph output" : "used by " + node_summary(*us[0], names);
    KILN_USER_ERROR("erase_node: cannot erase " << node_summary(*node, names) << ": " << names(out)
                                                << " is still " << why);
  }
  nodes_.erase(it);
}

void Graph::move_before(Node* node, Node* before) {
  if (node == before) return;
  auto from = find_node(nodes_, node);
  KILN_INTERNAL_CHECK(from != nodes_.end(), "move_before: node is not in graph @" << name_);
  KILN_INTERNAL_CHECK(find_node(nodes_, before) != nodes_.end(),
                      "move_before: target node is not in graph @" << name_);
  std::unique_ptr<Node> owned = std::move(*from);
  nodes_.erase(from);
  nodes_.insert(find_node(nodes_, before), std::move(owned));
}

void Graph::rebuild_nodes(const std::vector<Node*>& order) {
  // Check everything first, so a refused rebuild leaves the graph as it was.
  std::unordered_map<const Node*, size_t> position;
  position.reserve(nodes_.size());
  for (size_t i = 0; i < nodes_.size(); ++i) position[nodes_[i].get()] = i;
  std::vector<bool> listed(nodes_.size(), false);
  for (const Node* n : order) {
    auto it = position.find(n);
    KILN_INTERNAL_CHECK(it != position.end() && !listed[it->second],
                        "rebuild_nodes: a node is not in graph @" << name_ << " or listed twice");
    listed[it->second] = true;
  }
  std::unordered_map<const Value*, const Node*> dying;
  for (size_t i = 0; i < nodes_.size(); ++i) {
    if (listed[i]) continue;
    for (const Value* v : nodes_[i]->outputs()) dying[v] = nodes_[i].get();
  }
  if (!dying.empty()) {
    auto check = [&](const Value* v, const std::string& who) {
      auto it = dying.find(v);
      KILN_INTERNAL_CHECK(it == dying.end(), "rebuild_nodes: " << who << " reads an output of a "
                                                               << it->second->op()
                                                               << " node being removed");
    };
    for (const Node* n : order) {
      for (const Value* v : n->inputs()) check(v, "a kept " + n->op() + " node");
    }
    for (const Value* v : outputs_) check(v, "a graph output");
  }
  std::vector<std::unique_ptr<Node>> kept;
  kept.reserve(order.size());
  for (const Node* n : order) kept.push_back(std::move(nodes_[position[n]]));
  nodes_ = std::move(kept);  // destroys the nodes not listed
}

std::unique_ptr<Graph> Graph::clone() const {
  auto g = std::make_unique<Graph>(name_);
  std::unordered_map<const Value*, Value*> map;
  // A value from outside this graph (an invalid graph) stays as it is.
  auto mapped = [&](Value* v) {
    auto it = map.find(v);
    return it == map.end() ? v : it->second;
  };
  for (const auto& in : inputs_) map[in.get()] = g->add_input(in->name(), in->type());
  for (const auto& node : nodes_) {
    std::vector<Value*> ins;
    ins.reserve(node->inputs().size());
    for (Value* v : node->inputs()) ins.push_back(mapped(v));
    // Attribute tensors are immutable constants, so the copy shares their storage.
    std::vector<Type> types;
    for (const Value* out : node->outputs()) types.push_back(out->type());
    Node* copy = g->add_node(node->op(), std::move(ins), node->attrs(), types, node->loc());
    for (size_t i = 0; i < node->num_outputs(); ++i) {
      copy->output(i)->set_name(node->output(i)->name());
      map[node->output(i)] = copy->output(i);
    }
  }
  std::vector<Value*> outs;
  for (Value* v : outputs_) outs.push_back(mapped(v));
  g->set_outputs(std::move(outs));
  return g;
}

}  // namespace kiln::ir
