// The state behind a kiln::Builder and its Vars: the graph being built. Shared
// by every Var of the builder, so Vars stay valid as long as any holds it.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "kiln/builder.h"

namespace kiln::detail {

struct BuilderState {
  std::unique_ptr<ir::Graph> graph;
};

// Appends op `name` to `state`'s graph (see kiln::op).
std::vector<Var> apply_op(const std::shared_ptr<BuilderState>& state, const std::string& name,
                          const std::vector<Operand>& operands, const AttrList& attrs);
// The builder of the first Var among `operands`; error when there is none.
std::shared_ptr<BuilderState> common_state(const std::string& name,
                                           const std::vector<Operand>& operands);

}  // namespace kiln::detail
