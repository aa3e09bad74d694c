// GraphLowerInfo: the facts about a whole graph that lowering each of its
// kernel groups shares (value names, users, graph order, outputs, and the
// select/slice families whose starts become kernel arguments), built once per
// graph so lowering stays linear in the graph's size. See lower_graph.h.
#include <algorithm>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>

#include "passes/lower/lower_graph.h"

namespace kiln::passes {

namespace {

// The key of a select/slice that tells its siblings apart only by the start:
// the input, the op, the dim, the step and the output type.
struct StartKey {
  const ir::Value* input;
  std::string rest;
  bool operator==(const StartKey& o) const { return input == o.input && rest == o.rest; }
};
struct StartKeyHash {
  size_t operator()(const StartKey& k) const {
    return std::hash<const void*>()(k.input) ^ std::hash<std::string>()(k.rest);
  }
};

// The start of select/slice `n` along a static dim, normalised as lowering
// does; nullopt when it is not one (a symbolic dim, another op).
std::optional<std::pair<StartKey, int64_t>> static_start(const ir::Node& n) {
  const bool select = n.op() == "select";
  if ((!select && n.op() != "slice") || n.inputs().size() != 1 || n.num_outputs() != 1) {
    return std::nullopt;
  }
  const ir::Value* x = n.input(0);
  if (!x->type().is_tensor() || !n.output()->type().is_tensor()) return std::nullopt;
  const ir::Dims& dims = x->type().tensor_type().dims;
  const int64_t rank = int64_t(dims.size());
  int64_t d = n.attrs().get_int("dim");
  if (d < 0) d += rank;
  if (d < 0 || d >= rank || !dims[size_t(d)].is_static()) return std::nullopt;
  const int64_t size = dims[size_t(d)].value;
  int64_t start = n.attrs().get_int(select ? "index" : "start");
  if (start < 0) start += size;
  if (select && (start < 0 || start >= size)) return std::nullopt;
  start = std::clamp<int64_t>(start, 0, size);
  std::string rest = n.op() + "/" + std::to_string(d) + "/" + n.output()->type().str();
  if (!select) rest += "/" + std::to_string(n.attrs().get_int("step"));
  return std::make_pair(StartKey{x, rest}, start);
}

}  // namespace

GraphLowerInfo::GraphLowerInfo(const ir::Graph& g) : g_(g), names_(g) {
  std::unordered_map<StartKey, std::vector<std::pair<const ir::Node*, int64_t>>, StartKeyHash>
      starts;
  size_t at = 0;
  for (const auto& n : g.nodes()) {
    position_[n.get()] = at++;
    for (const ir::Value* v : n->inputs()) users_[v].push_back(n.get());
    if (auto s = static_start(*n)) starts[s->first].push_back({n.get(), s->second});
  }
  outputs_.insert(g.outputs().begin(), g.outputs().end());
  int family = 0;
  for (const auto& n : g.nodes()) {
    auto s = static_start(*n);
    if (!s) continue;
    auto it = starts.find(s->first);
    if (it == starts.end()) continue;  // its family was numbered already
    bool differ = false;
    for (const auto& [m, start] : it->second) differ = differ || start != it->second.front().second;
    if (differ) {
      for (const auto& [m, start] : it->second) offset_args_[m] = family;
      ++family;
    }
    starts.erase(it);
  }
}

const std::vector<const ir::Node*>& GraphLowerInfo::users(const ir::Value* v) const {
  static const std::vector<const ir::Node*> none;
  auto it = users_.find(v);
  return it == users_.end() ? none : it->second;
}

}  // namespace kiln::passes
