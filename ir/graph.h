// Graph IR: an SSA dataflow graph of typed Values produced by Nodes that name
// ops from the registry. Nodes are kept in a valid topological order.
//
//   graph @mlp(%x: f32[N, 784], %w1: f32[784, 256], %b1: f32[256]) {
//     %0: f32[N, 256] = matmul(%x, %w1)            # mlp.kiln:3:9
//     %1: f32[N, 256] = add(%0, %b1)
//     %2: f32[N, 256] = relu(%1)
//     return %2
//   }
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "ir/attributes.h"
#include "ir/type.h"

namespace kiln::ir {

struct SourceLoc {
  std::string file;
  int line = 0;  // 1-based; 0 means unknown
  int col = 0;   // 1-based
  bool known() const { return line > 0; }
  std::string str() const;  // "file:line:col" or "" when unknown
};

class Node;
struct OpDef;

class Value {
 public:
  Value(Type type, std::string name, Node* producer, int index)
      : type_(std::move(type)), name_(std::move(name)), producer_(producer), index_(index) {}

  const Type& type() const { return type_; }
  void set_type(Type t) { type_ = std::move(t); }
  // A name hint (script variable or parameter name); printing keeps graph input
  // names and may number other values.
  const std::string& name() const { return name_; }
  void set_name(std::string n) { name_ = std::move(n); }
  Node* producer() const { return producer_; }  // nullptr for graph inputs
  int index() const { return index_; }          // output index, or input position

 private:
  Type type_;
  std::string name_;
  Node* producer_;
  int index_;
};

class Node {
 public:
  Node(std::string op, std::vector<Value*> inputs, Attrs attrs, SourceLoc loc);

  const std::string& op() const { return op_; }
  const OpDef* def() const { return def_; }  // nullptr when the op is unknown
  const std::vector<Value*>& inputs() const { return inputs_; }
  Value* input(size_t i) const { return inputs_.at(i); }
  void set_input(size_t i, Value* v) { inputs_.at(i) = v; }
  size_t num_outputs() const { return outputs_.size(); }
  Value* output(size_t i = 0) const { return outputs_.at(i).get(); }
  std::vector<Value*> outputs() const;
  const Attrs& attrs() const { return attrs_; }
  Attrs& mutable_attrs() { return attrs_; }
  const SourceLoc& loc() const { return loc_; }
  void set_loc(SourceLoc loc) { loc_ = std::move(loc); }

  Value* add_output(Type type, std::string name = {});

 private:
  std::string op_;
  const OpDef* def_;
  std::vector<Value*> inputs_;
  std::vector<std::unique_ptr<Value>> outputs_;
  Attrs attrs_;
  SourceLoc loc_;
};

class Graph {
 public:
  explicit Graph(std::string name = "main") : name_(std::move(name)) {}
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  const std::string& name() const { return name_; }
  void set_name(std::string n) { name_ = std::move(n); }

  Value* add_input(std::string name, Type type);
  // Appends a node with the given output types, without checking them.
  Node* add_node(std::string op, std::vector<Value*> inputs, Attrs attrs,
                 const std::vector<Type>& output_types, SourceLoc loc = {});
  // Appends a node whose output types come from the op's type inference; fills
  // attribute defaults. Throws kiln::Error (naming op, operands, shapes) when the
  // op is unknown or the operands do not fit; the graph is unchanged then.
  std::vector<Value*> apply(const std::string& op, std::vector<Value*> inputs, Attrs attrs = {},
                            SourceLoc loc = {});
  Value* apply1(const std::string& op, std::vector<Value*> inputs, Attrs attrs = {},
                SourceLoc loc = {});
  // Shorthand for a `constant` node holding a scalar or a tensor.
  Value* constant(const AttrValue& value, SourceLoc loc = {});

  void set_outputs(std::vector<Value*> outputs) { outputs_ = std::move(outputs); }

  const std::vector<std::unique_ptr<Value>>& inputs() const { return inputs_; }
  const std::vector<std::unique_ptr<Node>>& nodes() const { return nodes_; }
  const std::vector<Value*>& outputs() const { return outputs_; }
  Value* input(size_t i) const { return inputs_.at(i).get(); }

  // Rewrites every use of `from` (node inputs and graph outputs) to `to`.
  void replace_all_uses(Value* from, Value* to);
  // Users of a value, in node order (computed by a scan).
  std::vector<Node*> users(const Value* v) const;
  // Removes a node whose outputs have no users.
  void erase_node(Node* node);
  // Moves `node` (already in this graph) to just before `before`.
  void move_before(Node* node, Node* before);
  // Bulk edit for passes, in one sweep instead of one erase or move per node:
  // the node list becomes `order` (nodes of this graph, each at most once) and
  // every node not listed is destroyed. Internal error for a foreign or repeated
  // node, or when a kept node or a graph output still reads a destroyed one.
  void rebuild_nodes(const std::vector<Node*>& order);

  std::unique_ptr<Graph> clone() const;

 private:
  std::string name_;
  std::vector<std::unique_ptr<Value>> inputs_;
  std::vector<std::unique_ptr<Node>> nodes_;
  std::vector<Value*> outputs_;
};

// Text form (docs/ir.md). print_graph(parse_graph(print_graph(g))) == print_graph(g).
std::string print_graph(const Graph& g);
// Throws kiln::Error with "file:line:col: error: ..." plus the source line and a caret.
std::unique_ptr<Graph> parse_graph(std::string_view text, const std::string& filename = "<input>");

// How print_graph spells values: graph inputs and node outputs keep their name
// hint when it is a valid identifier (is_ir_identifier) not taken by an earlier
// value, else they get the next free number. Messages that quote nodes use the
// same spelling, so they match the printed graph.
class ValueNames {
 public:
  explicit ValueNames(const Graph& g);
  // "%x" or "%3"; a value not defined in the graph prints as "%<undefined>"
  // (or "%<null>").
  std::string operator()(const Value* v) const;

 private:
  std::unordered_map<const Value*, std::string> names_;
};
// [A-Za-z_][A-Za-z0-9_.]* — the value names print_graph keeps.
bool is_ir_identifier(std::string_view s);
// One node as messages quote it, without types or attributes: "%3 = add(%1, %2)".
std::string node_summary(const Node& n, const ValueNames& names);

// Checks SSA order, op existence, operand count and kinds, attributes, and that
// each node's recorded output types equal what inference gives. Throws
// kiln::Error naming the node ("%3 = add(...) at f.kir:4:3: ...") and the problem.
void verify(const Graph& g);

}  // namespace kiln::ir
