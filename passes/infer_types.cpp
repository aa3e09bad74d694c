// infer-types: re-runs each op's dtype and shape inference, in graph order, and
// records the result on the node's outputs.
//
// Assumes: a graph in topological order whose ops are registered (types may be
// stale: an input's type was specialized, or a rewrite changed an operand).
// Guarantees: every node's attributes are complete (defaults filled in) and
// every output's type is exactly what inference gives from its operands'
// (possibly just updated) types — static dims stay static, symbolic dims
// (`N`) flow through as the ops' shape rules say. Returns whether any type or
// attribute changed. An op that no longer accepts its operands is a
// kiln::Error naming the node, as the verifier would word it.
#include "ir/op_registry.h"
#include "kiln/error.h"
#include "passes/pipeline.h"

namespace kiln::passes {

bool infer_types(ir::Graph& g) {
  bool changed = false;
  ir::ValueNames names(g);
  for (const auto& np : g.nodes()) {
    ir::Node& n = *np;
    auto where = [&] {
      std::string w = "infer-types: " + ir::node_summary(n, names);
      return n.loc().known() ? w + " at " + n.loc().str() : w;
    };
    KILN_USER_CHECK(n.def(), where() << ": unknown op '" << n.op() << "'");
    std::vector<ir::Type> in_types;
    for (const ir::Value* v : n.inputs()) {
      KILN_USER_CHECK(v, where() << ": an operand is null");
      in_types.push_back(v->type());
    }
    ir::Attrs full;
    std::vector<ir::Type> types;
    try {
      full = ir::complete_attrs(*n.def(), n.attrs());
      types = ir::infer_types(*n.def(), in_types, full);
    } catch (const InternalError&) {
      throw;
    } catch (const Error& e) {
      KILN_USER_ERROR(where() << ": " << e.what());
    }
    KILN_USER_CHECK(types.size() == n.num_outputs(), where() << ": records " << n.num_outputs()
                                                             << " output(s), but " << n.op()
                                                             << " produces " << types.size());
    if (!(full == n.attrs())) {
      n.mutable_attrs() = std::move(full);
      changed = true;
    }
    for (size_t i = 0; i < types.size(); ++i) {
      if (n.output(i)->type() == types[i]) continue;
      n.output(i)->set_type(types[i]);
      changed = true;
    }
  }
  return changed;
}

}  // namespace kiln::passes
