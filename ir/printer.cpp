// Graph IR text printer (the form is specified in docs/ir.md) and the value
// naming shared with diagnostics.
//
// Guarantees print_graph(*parse_graph(print_graph(g))) == print_graph(g): every
// name printed is either an identifier kept from a name hint or a number that
// the parser stores as the hint "3", which is not an identifier and so gets
// renumbered to the same number on the next print.
#include <unordered_set>

#include "ir/graph.h"

namespace kiln::ir {

namespace {

// Node lines pad to this column before a location comment, so locations line
// up in a column a reader can skim.
constexpr size_t kLocColumn = 47;

bool ident_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
bool ident_char(char c) {
  return ident_start(c) || (c >= '0' && c <= '9') || c == '.';
}

// A graph name prints bare when it is an identifier, quoted otherwise.
std::string graph_name_str(const std::string& name) {
  if (is_ir_identifier(name)) return name;
  return attr_str(AttrValue(name));
}

}  // namespace

bool is_ir_identifier(std::string_view s) {
  if (s.empty() || !ident_start(s[0])) return false;
  for (char c : s) {
    if (!ident_char(c)) return false;
  }
  return true;
}

ValueNames::ValueNames(const Graph& g) {
  std::unordered_set<std::string> taken;
  int next = 0;
  auto name = [&](const Value* v) {
    const std::string& hint = v->name();
    if (is_ir_identifier(hint) && taken.insert(hint).second) {
      names_[v] = "%" + hint;
    } else {
      names_[v] = "%" + std::to_string(next++);
    }
  };
  for (const auto& in : g.inputs()) name(in.get());
  for (const auto& node : g.nodes()) {
    for (size_t i = 0; i < node->num_outputs(); ++i) name(node->output(i));
  }
}

std::string ValueNames::operator()(const Value* v) const {
  if (!v) return "%<null>";
  auto it = names_.find(v);
  return it == names_.end() ? "%<undefined>" : it->second;
}

namespace {

std::string operands_str(const Node& n, const ValueNames& names) {
  std::string s = n.op() + "(";
  for (size_t i = 0; i < n.inputs().size(); ++i) s += (i ? ", " : "") + names(n.input(i));
  return s + ")";
}

}  // namespace

std::string node_summary(const Node& n, const ValueNames& names) {
  std::string s;
  for (size_t i = 0; i < n.num_outputs(); ++i) s += (i ? ", " : "") + names(n.output(i));
  if (n.num_outputs() > 0) s += " = ";
  return s + operands_str(n, names);
}

std::string print_graph(const Graph& g) {
  ValueNames names(g);
  std::string out = "graph @" + graph_name_str(g.name()) + "(";
  for (size_t i = 0; i < g.inputs().size(); ++i) {
    const Value* in = g.input(i);
    out += (i ? ", " : "") + names(in) + ": " + in->type().str();
  }
  out += ") {\n";
  for (const auto& node : g.nodes()) {
    std::string line = "  ";
    for (size_t i = 0; i < node->num_outputs(); ++i) {
      const Value* v = node->output(i);
      line += (i ? ", " : "") + names(v) + ": " + v->type().str();
    }
    // A node without outputs prints as a bare call; the parser accepts that form.
    if (node->num_outputs() > 0) line += " = ";
    line += operands_str(*node, names);
    if (!node->attrs().empty()) line += " " + node->attrs().str();
    if (node->loc().known()) {
      line += std::string(line.size() + 2 <= kLocColumn ? kLocColumn - line.size() : 2, ' ');
      line += "# " + node->loc().str();
    }
    out += line + "\n";
  }
  out += "  return";
  for (size_t i = 0; i < g.outputs().size(); ++i) out += (i ? ", " : " ") + names(g.outputs()[i]);
  out += "\n}\n";
  return out;
}

}  // namespace kiln::ir
