// Kernel grouping by vertical elementwise fusion (see fuse_elementwise.h).
//
// Nodes are visited in graph order. A pointwise node joins the kernel of one
// of its pointwise producers when that cannot form a cycle between kernels
// (no producer kernel of the node reaches the chosen kernel through another
// kernel); other pointwise producer kernels of the same node are merged in
// when that is safe too. Safety is checked on the kernel-level dependence
// graph by a search each time: graphs are small and the answer stays exact
// as kernels grow.
#include "passes/fuse_elementwise.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>

#include "kiln/error.h"

namespace kiln::passes {

namespace {

bool is_pointwise(const ir::Node& n) {
  if (n.op() == "constant") return false;
  for (const ir::Value* v : n.outputs()) {
    if (!v->type().is_tensor()) return false;
  }
  return has_pointwise_lowering(n.op());
}

class Grouper {
 public:
  explicit Grouper(const ir::Graph& g) : g_(g) {}

  std::vector<KernelGroup> run(bool fuse) {
    const auto& outs = g_.outputs();
    for (const auto& np : g_.nodes()) {
      const ir::Node* n = np.get();
      if (n->op() == "constant") {
        bool returned = n->num_outputs() == 1 && n->output()->type().is_tensor() &&
                        std::find(outs.begin(), outs.end(), n->output()) != outs.end();
        if (returned) new_group(n, "a returned constant is copied out");
        continue;
      }
      if (!fuse) {
        new_group(n, "fusion off");
      } else if (!is_pointwise(*n)) {
        new_group(n, std::string(n->def() ? ir::category_name(n->def()->category) : "unknown") +
                         " op '" + n->op() + "' starts its own kernel");
      } else {
        place_pointwise(n);
      }
    }
    // Kernels run in a topological order of the kernel dependence graph
    // (creation order is not one: a kernel may absorb a node that reads a
    // kernel created after it); ties go to the earliest created.
    std::vector<KernelGroup> out;
    std::vector<bool> done(groups_.size(), false);
    for (size_t emitted = 0, alive = std::count(alive_.begin(), alive_.end(), true);
         emitted < alive; ++emitted) {
      size_t pick = groups_.size();
      for (size_t i = 0; i < groups_.size() && pick == groups_.size(); ++i) {
        if (!alive_[i] || done[i]) continue;
        bool ready =
            std::all_of(deps_[i].begin(), deps_[i].end(), [&](int d) { return done[size_t(d)]; });
        if (ready) pick = i;
      }
      KILN_INTERNAL_CHECK(pick < groups_.size(), "fusion: kernel dependence cycle");
      done[pick] = true;
      KernelGroup& grp = groups_[pick];
      std::sort(grp.nodes.begin(), grp.nodes.end(),
                [&](const ir::Node* a, const ir::Node* b) { return pos_.at(a) < pos_.at(b); });
      out.push_back(std::move(grp));
    }
    return out;
  }

 private:
  int new_group(const ir::Node* n, std::string reason) {
    int id = int(groups_.size());
    groups_.push_back({{n}, std::move(reason), {}});
    alive_.push_back(true);
    pointwise_.push_back(is_pointwise(*n));
    deps_.emplace_back();
    assign(n, id);
    return id;
  }

  void assign(const ir::Node* n, int id) {
    group_of_[n] = id;
    int pos = int(pos_.size());
    pos_[n] = pos;
    for (const ir::Value* v : n->inputs()) {
      const ir::Node* p = v->producer();
      if (!p || p->op() == "constant") continue;
      int q = group_of_.at(p);
      if (q != id) deps_[size_t(id)].insert(q);
    }
  }

  // Whether group `from` depends on group `to`, directly or through others,
  // ignoring the direct edges listed in `skip_direct`.
  bool reaches(int from, int to, const std::set<int>& skip_direct = {}) const {
    std::set<int> seen;
    std::function<bool(int, bool)> dfs = [&](int g, bool first) {
      for (int d : deps_[size_t(g)]) {
        if (first && skip_direct.count(d)) continue;
        if (d == to) return true;
        if (seen.insert(d).second && dfs(d, false)) return true;
      }
      return false;
    };
    return dfs(from, true);
  }

  void place_pointwise(const ir::Node* n) {
    // Pointwise producer groups of n, most recent first.
    std::set<int> producers;
    std::vector<int> candidates;
    for (const ir::Value* v : n->inputs()) {
      const ir::Node* p = v->producer();
      if (!p || p->op() == "constant") continue;
      int q = group_of_.at(p);
      producers.insert(q);
      if (pointwise_[size_t(q)]) candidates.push_back(q);
    }
    std::sort(candidates.begin(), candidates.end(), std::greater<int>());
    candidates.erase(std::unique(candidates.begin(), candidates.end()), candidates.end());
    int target = -1;
    for (int c : candidates) {
      // Joining c is a cycle when another producer group of n depends on c.
      bool cycle = false;
      for (int q : producers) {
        if (q != c && reaches(q, c)) cycle = true;
      }
      if (!cycle) {
        target = c;
        break;
      }
    }
    if (target < 0) {
      std::string why;
      if (!candidates.empty()) {
        why = "fusing into a producer kernel would form a cycle through another kernel";
      } else if (!producers.empty()) {
        why = "its producers run in " + groups_[size_t(*producers.rbegin())].nodes.front()->op() +
              "-rooted kernels; epilogues are not fused into reductions or contractions yet";
      } else {
        why = "reads only graph inputs and constants: starts a kernel";
      }
      new_group(n, why);
      return;
    }
    append(target, n);
    // Merge the other pointwise producer groups of n into target when no path
    // between the two runs through a third kernel.
    for (int c : candidates) {
      if (c == target || !alive_[size_t(c)]) continue;
      if (reaches(target, c, {c}) || reaches(c, target, {target})) continue;
      merge(c, target);
    }
  }

  void append(int id, const ir::Node* n) {
    KernelGroup& grp = groups_[size_t(id)];
    grp.nodes.push_back(n);
    if (grp.nodes.size() == 2) grp.reason = "elementwise/layout chain fused: " + grp.nodes[0]->op();
    grp.reason += " -> " + n->op();
    assign(n, id);
  }

  // Moves group `from` into group `into`.
  void merge(int from, int into) {
    KernelGroup& src = groups_[size_t(from)];
    KernelGroup& dst = groups_[size_t(into)];
    for (const ir::Node* m : src.nodes) {
      dst.nodes.push_back(m);
      group_of_[m] = into;
    }
    dst.reason += " (+ sibling kernel of " + src.nodes.front()->op() + " merged)";
    src.nodes.clear();
    alive_[size_t(from)] = false;
    deps_[size_t(into)].insert(deps_[size_t(from)].begin(), deps_[size_t(from)].end());
    deps_[size_t(into)].erase(into);
    deps_[size_t(into)].erase(from);
    deps_[size_t(from)].clear();
    for (size_t g = 0; g < deps_.size(); ++g) {
      if (deps_[g].erase(from)) {
        if (int(g) != into) deps_[g].insert(into);
      }
    }
  }

  const ir::Graph& g_;
  std::vector<KernelGroup> groups_;
  std::vector<bool> alive_, pointwise_;
  std::vector<std::set<int>> deps_;  // group -> groups it reads from
  std::map<const ir::Node*, int> group_of_, pos_;
};

std::string kernel_name(const ir::Graph& g, size_t k, const KernelGroup& grp) {
  std::string name = g.name() + "_" + std::to_string(k);
  size_t shown = std::min<size_t>(grp.nodes.size(), 4);
  for (size_t i = 0; i < shown; ++i) name += "_" + grp.nodes[i]->op();
  if (grp.nodes.size() > shown) name += "_n" + std::to_string(grp.nodes.size());
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') c = '_';
  }
  return name;
}

}  // namespace

std::vector<KernelGroup> group_kernels(const ir::Graph& g, const FusionOptions& options) {
  return Grouper(g).run(options.fuse);
}

void choose_algorithms(std::vector<KernelGroup>& groups, const CpuTarget& target) {
  for (KernelGroup& grp : groups) {
    for (const ir::Node* n : grp.nodes) {
      if (has_algorithms(n->op())) grp.algorithm = choose_algorithm(*n, target);
    }
  }
}

std::vector<loop::Kernel> lower_groups(const ir::Graph& g, const std::vector<KernelGroup>& groups,
                                       const LowerOptions& options,
                                       std::vector<KernelPlan>* plans) {
  std::vector<loop::Kernel> kernels;
  for (size_t k = 0; k < groups.size(); ++k) {
    LowerOptions o = options;
    if (!groups[k].algorithm.name.empty()) o.algorithm = groups[k].algorithm.name;
    LoweredKernel lk = lower_group(g, groups[k].nodes, kernel_name(g, k, groups[k]), o);
    kernels.push_back(std::move(lk.kernel));
    if (plans) plans->push_back(std::move(lk.plan));
  }
  return kernels;
}

}  // namespace kiln::passes
