// Kernel fusion (see fuse.h for the rules and guarantees).
//
// Nodes are visited in graph order and each one either joins an existing
// group (as a pointwise chain link, an epilogue, a reduction's producer or
// consumer) or starts one. A join is refused when it would form a cycle
// between kernels: no other producer kernel of the node may reach the chosen
// kernel through a third one. Safety is checked on the kernel-level
// dependence graph by a search each time; graphs are small and the answer
// stays exact as kernels grow. After the walk, layout kernels (and cheap ones
// over graph inputs and constants) whose every reader recomputes them are
// dropped, sibling kernels merge (horizontal
// fusion), and the groups are ordered topologically.
#include "passes/fuse.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>

#include "kiln/error.h"
#include "passes/attention_pattern.h"
#include "passes/lower/gpu/vendor_candidates.h"

namespace kiln::passes {

namespace {

enum class NodeClass : uint8_t { Elementwise, Layout, Reduction, Contraction, Opaque };

NodeClass classify(const ir::Node& n) {
  for (const ir::Value* v : n.outputs()) {
    if (!v->type().is_tensor()) return NodeClass::Opaque;
  }
  ir::OpCategory c = n.def() ? n.def()->category : ir::OpCategory::Other;
  if (has_pointwise_lowering(n.op())) {
    return c == ir::OpCategory::Layout ? NodeClass::Layout : NodeClass::Elementwise;
  }
  if (c == ir::OpCategory::Reduction) return NodeClass::Reduction;
  if (c == ir::OpCategory::Contraction) return NodeClass::Contraction;
  return NodeClass::Opaque;
}

// At most this many cheap nodes (cheap_to_recompute, fuse.h) are recomputed
// for one operand.
constexpr size_t kMaxRecomputedChain = 8;

enum class GroupKind : uint8_t {
  Pointwise,    // elementwise and layout nodes only
  Reduction,    // reduction roots with their producers and consumers
  Contraction,  // one contraction (or pool) root with its epilogue
  Opaque,       // a node that fuses with nothing
};

bool same_dims(const ir::Value* a, const ir::Value* b) {
  return a->type().is_tensor() && b->type().is_tensor() &&
         a->type().tensor_type().dims == b->type().tensor_type().dims;
}

std::string category_of(const ir::Node& n) {
  return n.def() ? ir::category_name(n.def()->category) : "unknown";
}

class Grouper {
 public:
  Grouper(const ir::Graph& g, const FusionOptions& o) : g_(g), o_(o) {
    for (const auto& n : g.nodes()) {
      for (const ir::Value* v : n->inputs()) users_[v].push_back(n.get());
    }
    for (const ir::Value* v : g.outputs()) returned_.insert(v);
  }

  std::vector<KernelGroup> run() {
    for (const auto& np : g_.nodes()) {
      const ir::Node* n = np.get();
      pos_[n] = int(pos_.size());
      if (n->op() == "constant") {
        bool returned = n->num_outputs() == 1 && n->output()->type().is_tensor() &&
                        returned_.count(n->output());
        if (returned) new_group(n, GroupKind::Opaque, "a returned constant is copied out");
        continue;
      }
      if (!o_.fuse) {
        new_group(n, GroupKind::Opaque, "fusion off");
        continue;
      }
      switch (classify(*n)) {
        case NodeClass::Elementwise:
        case NodeClass::Layout:
          place_pointwise(n);
          break;
        case NodeClass::Reduction:
          place_reduction(n);
          break;
        case NodeClass::Contraction:
          place_contraction(n);
          break;
        case NodeClass::Opaque:
          new_group(n, GroupKind::Opaque,
                    category_of(*n) + " op '" + n->op() + "' has no fusable lowering");
          break;
      }
    }
    if (o_.fuse) {
      drop_recomputed_groups();
      merge_siblings();
    }
    return ordered();
  }

 private:
  struct Group {
    std::vector<const ir::Node*> nodes, recomputed;
    GroupKind kind = GroupKind::Pointwise;
    std::string reason;              // why the kernel starts
    std::vector<std::string> fused;  // what joined it, in order
    std::set<int> deps;              // groups it reads from
    bool alive = true;
    bool attention = false;  // a fused attention (place_attention)
    const ir::Node* folded_pool = nullptr;  // fold_pool
    std::string fold_note;
    // Epilogue frontier: values an epilogue may read, each at its root's index.
    std::map<const ir::Value*, const ir::Node*> frontier;
  };

  // --- bookkeeping -------------------------------------------------------------------------

  int new_group(const ir::Node* n, GroupKind kind, std::string reason) {
    int id = int(groups_.size());
    groups_.emplace_back();
    groups_.back().kind = kind;
    groups_.back().reason = std::move(reason);
    add_node(id, n);
    return id;
  }

  // The group that computes the value `v` reads (-1: graph input or constant).
  int group_of_value(const ir::Value* v) const {
    const ir::Node* p = v->producer();
    if (!p || p->op() == "constant") return -1;
    auto it = group_of_.find(p);
    return it == group_of_.end() ? -1 : it->second;
  }

  // Groups whose values `n` reads, except through nodes `id` recomputes.
  std::set<int> producer_groups(const ir::Node* n, int id = -1) const {
    std::set<int> out;
    for (const ir::Value* v : n->inputs()) {
      const ir::Node* p = v->producer();
      if (id >= 0 && p && recomputes(id, p)) continue;
      int q = group_of_value(v);
      if (q >= 0 && q != id) out.insert(q);
    }
    return out;
  }

  size_t grp_recomputed(int id) const { return groups_[size_t(id)].recomputed.size(); }

  bool recomputes(int id, const ir::Node* p) const {
    const auto& r = groups_[size_t(id)].recomputed;
    return std::find(r.begin(), r.end(), p) != r.end();
  }

  void add_node(int id, const ir::Node* n) {
    Group& grp = groups_[size_t(id)];
    grp.nodes.push_back(n);
    group_of_[n] = id;
    for (int q : producer_groups(n, id)) grp.deps.insert(q);
  }

  // Whether group `from` depends on group `to`, directly or through others,
  // ignoring the direct edges listed in `skip_direct`.
  bool reaches(int from, int to, const std::set<int>& skip_direct = {}) const {
    std::set<int> seen;
    std::function<bool(int, bool)> dfs = [&](int g, bool first) {
      for (int d : groups_[size_t(g)].deps) {
        if (first && skip_direct.count(d)) continue;
        if (d == to) return true;
        if (seen.insert(d).second && dfs(d, false)) return true;
      }
      return false;
    };
    return dfs(from, true);
  }

  // Joining group `target` with node n is a cycle when another producer group
  // of n depends on the target.
  bool join_is_acyclic(const ir::Node* n, int target) const {
    for (int q : producer_groups(n)) {
      if (q != target && reaches(q, target)) return false;
    }
    return true;
  }

  // Buffers a group would touch with `extra` more nodes: a bound, counting
  // every tensor input and output value once.
  bool within_limits(int id, const std::vector<const ir::Node*>& extra) const {
    const Group& grp = groups_[size_t(id)];
    std::set<const ir::Value*> values;
    size_t count = grp.nodes.size() + extra.size();
    auto add = [&](const ir::Node* n) {
      for (const ir::Value* v : n->inputs()) {
        if (v->type().is_tensor()) values.insert(v);
      }
      for (const ir::Value* v : n->outputs()) values.insert(v);
    };
    for (const ir::Node* n : grp.nodes) add(n);
    for (const ir::Node* n : extra) add(n);
    return int(count) <= o_.max_nodes && int(values.size()) <= o_.max_buffers;
  }

  void join(int id, const ir::Node* n, const std::string& how) {
    recompute_inputs(n, id);
    add_node(id, n);
    groups_[size_t(id)].fused.push_back(how + " " + n->op());
  }

  // Operands of n that another kernel computes with layout ops only (a
  // transpose, a select of a packed parameter, the split of a fused
  // projection) are recomputed in group `id` as indexing, so no copy is made;
  // so are operands computed by cheap ops from graph inputs and constants
  // alone (a causal mask `arange(t) > arange(t)[:, None]`), a few instructions
  // per element instead of a kernel and a buffer.
  void recompute_inputs(const ir::Node* n, int id) {
    std::vector<const ir::Node*> added;
    bool computed = false;
    // Only an elementwise reader takes computed operands: it reads each
    // element once per output, where a contraction or a reduction reads its
    // operands many times (the work would be repeated as often).
    const bool computed_ok = classify(*n) == NodeClass::Elementwise;
    for (const ir::Value* v : n->inputs()) {
      int q = group_of_value(v);
      if (q < 0 || q == id || groups_[size_t(q)].kind != GroupKind::Pointwise) continue;
      std::vector<const ir::Node*> chain;
      if (!recompute_chain(v, q, false, &chain)) {
        chain.clear();
        if (!computed_ok || !recompute_chain(v, q, true, &chain)) continue;
        computed = true;
      }
      if (chain.empty()) continue;
      // A kernel recomputing more nodes than it may take buffers reads this
      // operand instead: without the bound, a join of thousands of slices
      // grows one chain node by node, each step scanning it (quadratic).
      if (grp_recomputed(id) + added.size() + chain.size() > size_t(o_.max_buffers)) continue;
      for (const ir::Node* c : chain) {
        if (!recomputes(id, c) && std::find(added.begin(), added.end(), c) == added.end()) {
          added.push_back(c);
        }
      }
    }
    if (added.empty()) return;
    Group& grp = groups_[size_t(id)];
    grp.recomputed.insert(grp.recomputed.end(), added.begin(), added.end());
    for (const ir::Node* r : added) {
      for (int q : producer_groups(r, id)) grp.deps.insert(q);
    }
    std::sort(added.begin(), added.end(),
              [&](const ir::Node* a, const ir::Node* b) { return pos_.at(a) < pos_.at(b); });
    std::string ops;
    for (const ir::Node* r : added) ops += (ops.empty() ? "" : " -> ") + r->op();
    grp.fused.push_back(computed ? "operand recomputed from graph inputs and constants: " + ops
                                 : "operand indexing recomputed: " + ops);
  }

  // Moves group `from` into group `into`.
  void merge(int from, int into, const std::string& how) {
    Group& src = groups_[size_t(from)];
    Group& dst = groups_[size_t(into)];
    for (const ir::Node* m : src.nodes) {
      dst.nodes.push_back(m);
      group_of_[m] = into;
    }
    for (const ir::Node* m : src.recomputed) {
      if (!recomputes(into, m)) dst.recomputed.push_back(m);
    }
    // What the merged kernel now computes itself it no longer recomputes.
    std::erase_if(dst.recomputed, [&](const ir::Node* m) {
      auto it = group_of_.find(m);
      return it != group_of_.end() && it->second == into;
    });
    dst.frontier.insert(src.frontier.begin(), src.frontier.end());
    std::string what = src.nodes.empty() ? std::string("?") : src.nodes.front()->op();
    if (src.nodes.size() > 1) what += " +" + std::to_string(src.nodes.size() - 1);
    dst.fused.push_back(how + " (" + what + ")");
    if (src.kind == GroupKind::Reduction) dst.kind = GroupKind::Reduction;
    src.nodes.clear();
    src.recomputed.clear();
    src.alive = false;
    dst.deps.insert(src.deps.begin(), src.deps.end());
    dst.deps.erase(into);
    dst.deps.erase(from);
    src.deps.clear();
    for (size_t g = 0; g < groups_.size(); ++g) {
      if (groups_[g].deps.erase(from) && int(g) != into) groups_[g].deps.insert(into);
    }
  }

  // --- placement -----------------------------------------------------------------------

  // The root whose frontier holds every in-group input of n, when n can run
  // as that root's epilogue in group `id`; nullptr otherwise.
  const ir::Node* epilogue_root(const ir::Node* n, int id) const {
    const Group& grp = groups_[size_t(id)];
    const ir::Node* root = nullptr;
    for (const ir::Value* v : n->inputs()) {
      if (group_of_value(v) != id) continue;
      auto it = grp.frontier.find(v);
      if (it == grp.frontier.end()) return nullptr;  // an in-group value at another index
      if (root && root != it->second) return nullptr;
      root = it->second;
    }
    if (!root || !same_dims(n->output(), root->output())) return nullptr;
    return root;
  }

  // The newest of `candidates` (producer groups of n, sorted newest first
  // here) that n can join without a cycle or passing the limits; -1 when none
  // can.
  int first_joinable(const ir::Node* n, std::vector<int>& candidates) const {
    std::sort(candidates.begin(), candidates.end(), std::greater<int>());
    for (int c : candidates) {
      if (join_is_acyclic(n, c) && within_limits(c, {n})) return c;
    }
    return -1;
  }

  // After a node joined `target`: merges its other producer groups (only
  // pointwise ones when `pointwise_only`) into target when no path between
  // the two runs through a third kernel.
  void merge_producers(int target, const std::vector<int>& candidates, bool pointwise_only) {
    for (int c : candidates) {
      if (c == target || !groups_[size_t(c)].alive) continue;
      if (pointwise_only && groups_[size_t(c)].kind != GroupKind::Pointwise) continue;
      if (reaches(target, c, {c}) || reaches(c, target, {target})) continue;
      if (!within_limits(target, groups_[size_t(c)].nodes)) continue;
      merge(c, target, "sibling producer kernel merged");
    }
  }

  void place_pointwise(const ir::Node* n) {
    const bool layout = classify(*n) == NodeClass::Layout;
    std::set<int> producers = producer_groups(n);
    // 1. An epilogue of a contraction or reduction root.
    if (!layout && n->num_outputs() == 1) {
      for (auto it = producers.rbegin(); it != producers.rend(); ++it) {
        const Group& grp = groups_[size_t(*it)];
        if (grp.kind != GroupKind::Contraction && grp.kind != GroupKind::Reduction) continue;
        const ir::Node* root = epilogue_root(n, *it);
        if (!root || !join_is_acyclic(n, *it) || !within_limits(*it, {n})) continue;
        groups_[size_t(*it)].frontier[n->output()] = root;
        join(*it, n, "epilogue of " + root->op() + ":");
        return;
      }
    }
    // 2. A link of a pointwise chain, or a consumer of a reduction's rows.
    std::vector<int> candidates;
    for (int q : producers) {
      GroupKind k = groups_[size_t(q)].kind;
      if (k == GroupKind::Pointwise || (k == GroupKind::Reduction && !layout)) {
        candidates.push_back(q);
      }
    }
    const int target = first_joinable(n, candidates);
    if (target < 0) {
      std::string why;
      if (!candidates.empty()) {
        why = "fusing into a producer kernel would form a cycle through another kernel";
      } else if (!producers.empty()) {
        const Group& p = groups_[size_t(*producers.rbegin())];
        std::string root = p.nodes.front()->op();
        why = layout ? "a layout op changes the index, so it cannot be the epilogue of the " +
                           root + "-rooted kernel it reads"
                     : "it reads the " + root +
                           "-rooted kernel's result at other indices than that kernel stores "
                           "them (an epilogue must have the root's shape)";
      } else {
        why = "reads only graph inputs and constants: starts a kernel";
      }
      new_group(n, GroupKind::Pointwise, why);
      return;
    }
    const bool rows = groups_[size_t(target)].kind == GroupKind::Reduction;
    join(target, n, rows ? "consumer of the rows:" : "chain:");
    merge_producers(target, candidates, /*pointwise_only=*/true);
  }

  void place_reduction(const ir::Node* n) {
    std::set<int> producers = producer_groups(n);
    std::vector<int> candidates;
    for (int q : producers) {
      GroupKind k = groups_[size_t(q)].kind;
      if (k == GroupKind::Pointwise || k == GroupKind::Reduction) candidates.push_back(q);
    }
    const int target = first_joinable(n, candidates);
    if (target < 0) {
      std::string why = "reduction op '" + n->op() + "' starts its own kernel";
      if (!producers.empty()) {
        why += candidates.empty() ? ": its operand comes from a contraction's kernel"
                                  : ": joining its producer's kernel would form a cycle";
      }
      int id = new_group(n, GroupKind::Reduction, why);
      note_root(id, n);
      return;
    }
    Group& grp = groups_[size_t(target)];
    const bool was_pointwise = grp.kind == GroupKind::Pointwise;
    grp.kind = GroupKind::Reduction;
    join(target, n, was_pointwise ? "reduction over its producers' values:" : "another reduction:");
    note_root(target, n);
    merge_producers(target, candidates, /*pointwise_only=*/false);
  }

  // A single-output root that stores each element once may take epilogues.
  void note_root(int id, const ir::Node* n) {
    if (n->num_outputs() == 1 && root_stores_once(n->op())) {
      groups_[size_t(id)].frontier[n->output()] = n;
    }
  }

  // The nodes in group `q` that compute `v`, when a reader may compute them
  // again itself: layout nodes only, reading anything outside `q` (`computed`
  // false: the chain is indexing), or cheap nodes reading nothing but graph
  // inputs and constants, at most kMaxRecomputedChain of them (`computed`).
  bool recompute_chain(const ir::Value* v, int q, bool computed,
                       std::vector<const ir::Node*>* chain) const {
    const ir::Node* p = v->producer();
    if (!p || p->op() == "constant") return true;
    if (group_of_value(v) != q) return !computed;
    if (computed ? !cheap_to_recompute(*p) : classify(*p) != NodeClass::Layout) return false;
    if (std::find(chain->begin(), chain->end(), p) != chain->end()) return true;
    for (const ir::Value* in : p->inputs()) {
      if (!recompute_chain(in, q, computed, chain)) return false;
    }
    chain->push_back(p);
    return !computed || chain->size() <= kMaxRecomputedChain;
  }

  // matmul(softmax(f(matmul(q, kt))), v) as one kernel (attention_pattern.h):
  // the scores kernel (the product with its elementwise ops as epilogue) and
  // the softmax kernel merge into the kernel of the product by the values.
  // False (and `why_not` set when it looks like attention) otherwise.
  bool place_attention(const ir::Node* n, std::string* why_not) {
    std::optional<AttentionMatch> m = match_attention(g_, *n, why_not);
    if (!m) return false;
    const int g1 = group_of_value(m->qk->output()), g2 = group_of_value(m->softmax->output());
    std::vector<const ir::Node*> scores{m->qk};
    scores.insert(scores.end(), m->chain.begin(), m->chain.end());
    auto holds = [&](int id, std::vector<const ir::Node*> want) {
      if (id < 0) return false;
      std::vector<const ir::Node*> have = groups_[size_t(id)].nodes;
      std::sort(have.begin(), have.end());
      std::sort(want.begin(), want.end());
      return have == want;
    };
    if (g1 == g2 || !holds(g1, scores) || !holds(g2, {m->softmax})) {
      *why_not = "not fused as attention: the scores or the softmax share a kernel with other ops";
      return false;
    }
    int id = int(groups_.size());
    groups_.emplace_back();
    std::string ops = "matmul";
    for (const ir::Node* c : m->chain) ops += " -> " + c->op();
    groups_.back().reason = "attention fused: " + ops +
                            " -> softmax -> matmul in one kernel (online softmax over key "
                            "blocks; the scores never reach memory)";
    if (m->causal) groups_.back().reason += "; causal mask: key blocks above the diagonal skipped";
    merge(g1, id, "scores kernel merged");
    merge(g2, id, "softmax kernel merged");
    Group& grp = groups_[size_t(id)];
    grp.kind = GroupKind::Contraction;
    grp.attention = true;
    grp.frontier.clear();
    recompute_inputs(n, id);
    add_node(id, n);
    note_root(id, n);
    return true;
  }

  // A 2x2 stride-2 max_pool2d reading the end of a conv2d kernel's epilogue
  // chain joins that kernel, folded into its store (pool_fold_blocker), when
  // nothing else reads the conv's values. False (and `why_not` set when the
  // operand is a conv's) otherwise.
  bool fold_pool(const ir::Node* n, std::string* why_not) {
    if (n->op() != "max_pool2d") return false;
    const ir::Value* x = n->input(0);
    const int q = group_of_value(x);
    if (q < 0) return false;
    Group& grp = groups_[size_t(q)];
    if (grp.kind != GroupKind::Contraction || grp.attention || grp.nodes.front()->op() != "conv2d") {
      return false;
    }
    std::string blocker = pool_fold_blocker(*n);
    if (blocker.empty() && !grp.frontier.count(x)) {
      blocker = "it reads a value of the conv2d kernel other than its epilogue's result";
    }
    for (const ir::Node* m : grp.nodes) {
      for (const ir::Value* v : m->outputs()) {
        bool elsewhere = returned_.count(v) > 0;
        for (const ir::Node* u : users_[v]) {
          auto it = group_of_.find(u);
          elsewhere = elsewhere || (u != n && (it == group_of_.end() || it->second != q));
        }
        if (elsewhere && blocker.empty()) {
          blocker = "the conv2d kernel's values are also read elsewhere or returned";
        }
      }
    }
    if (blocker.empty() && !(join_is_acyclic(n, q) && within_limits(q, {n}))) {
      blocker = "joining the conv2d kernel would form a cycle or pass its limits";
    }
    if (!blocker.empty()) {
      *why_not = "max_pool2d not folded into the conv2d kernel: " + blocker;
      return false;
    }
    add_node(q, n);
    grp.frontier.clear();  // the conv's values are no longer stored
    grp.folded_pool = n;
    grp.fold_note =
        "max_pool2d 2x2 stride 2 folded into the store (each conv.winograd F(2x2, 3x3) output "
        "tile is one pool window: only its max is written, the full-size result never is)";
    grp.fused.push_back(grp.fold_note);
    return true;
  }

  void place_contraction(const ir::Node* n) {
    std::string attention_note;
    if (o_.attention && place_attention(n, &attention_note)) return;
    if (fold_pool(n, &attention_note)) return;
    int id = int(groups_.size());
    groups_.emplace_back();
    Group& grp = groups_.back();
    grp.kind = GroupKind::Contraction;
    grp.reason = category_of(*n) + " op '" + n->op() +
                 "' starts its own kernel (its operands are read many times, so computing "
                 "producers are not fused into it)";
    if (!attention_note.empty()) grp.reason += "; " + attention_note;
    recompute_inputs(n, id);
    add_node(id, n);
    note_root(id, n);
  }

  bool root_stores_once(const std::string& op) const { return lowering_stores_once(op); }

  // --- after the walk ------------------------------------------------------------------

  // Whether some reader outside group `id` needs the value `v` stored.
  bool needed_outside(const ir::Value* v, int id) const {
    // A value nobody reads is still computed and stored (as lower_group does).
    if (returned_.count(v)) return true;
    auto it = users_.find(v);
    if (it == users_.end() || it->second.empty()) return true;
    for (const ir::Node* u : it->second) {
      for (size_t h = 0; h < groups_.size(); ++h) {
        const Group& grp = groups_[h];
        if (!grp.alive || int(h) == id) continue;
        bool reads = std::find(grp.nodes.begin(), grp.nodes.end(), u) != grp.nodes.end() ||
                     recomputes(int(h), u);
        if (reads && !recomputes(int(h), v->producer())) return true;
      }
    }
    return false;
  }

  // A pointwise group none of whose values is needed outside it: every reader
  // recomputes it (as indexing, or from graph inputs and constants).
  void drop_recomputed_groups() {
    for (size_t id = 0; id < groups_.size(); ++id) {
      Group& grp = groups_[id];
      if (!grp.alive || grp.kind != GroupKind::Pointwise) continue;
      bool needed = false;
      bool layout_only = true, cheap_leaves = grp.deps.empty();
      for (const ir::Node* n : grp.nodes) {
        layout_only = layout_only && classify(*n) == NodeClass::Layout;
        cheap_leaves = cheap_leaves && cheap_to_recompute(*n);
        for (const ir::Value* v : n->outputs()) needed = needed || needed_outside(v, int(id));
      }
      if (needed || !(layout_only || cheap_leaves)) continue;
      for (const ir::Node* n : grp.nodes) group_of_.erase(n);
      grp.nodes.clear();
      grp.alive = false;
      for (Group& other : groups_) other.deps.erase(int(id));
    }
  }

  // The iteration space a group's loops run over: the dims of its first
  // reduction root's input, or of its first node's output.
  const ir::Value* space_of(const Group& grp) const {
    for (const ir::Node* n : grp.nodes) {
      if (classify(*n) == NodeClass::Reduction && !n->inputs().empty()) return n->input(0);
    }
    return grp.nodes.empty() ? nullptr : grp.nodes.front()->output(0);
  }

  std::set<const ir::Value*> external_inputs(int id) const {
    std::set<const ir::Value*> out;
    for (const ir::Node* n : groups_[size_t(id)].nodes) {
      for (const ir::Value* v : n->inputs()) {
        const ir::Node* p = v->producer();
        if (!v->type().is_tensor() || (p && p->op() == "constant")) continue;
        if (group_of_value(v) != id) out.insert(v);
      }
    }
    return out;
  }

  // Horizontal fusion: kernels of the same kind reading the same tensor over
  // the same space merge (one pass over the shared input instead of two).
  void merge_siblings() {
    for (size_t a = 0; a < groups_.size(); ++a) {
      for (size_t b = a + 1; b < groups_.size(); ++b) {
        Group& ga = groups_[a];
        Group& gb = groups_[b];
        if (!ga.alive || !gb.alive || ga.kind != gb.kind) continue;
        if (ga.kind != GroupKind::Pointwise && ga.kind != GroupKind::Reduction) continue;
        const ir::Value* sa = space_of(ga);
        const ir::Value* sb = space_of(gb);
        if (!sa || !sb || !same_dims(sa, sb)) continue;
        std::set<const ir::Value*> ia = external_inputs(int(a)), ib = external_inputs(int(b));
        bool shared =
            std::any_of(ia.begin(), ia.end(), [&](const ir::Value* v) { return ib.count(v) > 0; });
        if (!shared) continue;
        if (reaches(int(a), int(b)) || reaches(int(b), int(a))) continue;
        if (!within_limits(int(a), gb.nodes)) continue;
        merge(int(b), int(a), "sibling reading the same input merged (horizontal fusion)");
      }
    }
  }

  std::string reason_of(const Group& grp) const {
    std::string s = grp.reason;
    if (grp.kind == GroupKind::Pointwise && !grp.fused.empty() && grp.nodes.size() > 1) {
      // The familiar form for plain chains.
      std::string chain = "elementwise/layout chain fused: " + grp.nodes.front()->op();
      for (const std::string& f : grp.fused) {
        chain += f.rfind("chain: ", 0) == 0 ? " -> " + f.substr(7) : "; " + f;
      }
      // Why the chain could not join the kernel it reads, when it reads one.
      if (grp.reason.rfind("reads only graph inputs", 0) != 0) chain = grp.reason + "; " + chain;
      return chain;
    }
    for (const std::string& f : grp.fused) s += "; " + f;
    return s;
  }

  // Kernels run in a topological order of the kernel dependence graph
  // (creation order is not one: a kernel may absorb a node that reads a
  // kernel created after it); ties go to the earliest created.
  std::vector<KernelGroup> ordered() {
    std::vector<KernelGroup> out;
    std::vector<bool> done(groups_.size(), false);
    size_t alive =
        std::count_if(groups_.begin(), groups_.end(), [](const Group& g) { return g.alive; });
    auto by_pos = [&](const ir::Node* a, const ir::Node* b) { return pos_.at(a) < pos_.at(b); };
    for (size_t emitted = 0; emitted < alive; ++emitted) {
      size_t pick = groups_.size();
      for (size_t i = 0; i < groups_.size() && pick == groups_.size(); ++i) {
        if (!groups_[i].alive || done[i]) continue;
        const std::set<int>& deps = groups_[i].deps;
        if (std::all_of(deps.begin(), deps.end(), [&](int d) { return done[size_t(d)]; })) {
          pick = i;
        }
      }
      KILN_INTERNAL_CHECK(pick < groups_.size(), "fusion: kernel dependence cycle");
      done[pick] = true;
      Group& grp = groups_[pick];
      std::sort(grp.nodes.begin(), grp.nodes.end(), by_pos);
      std::sort(grp.recomputed.begin(), grp.recomputed.end(), by_pos);
      KernelGroup kg;
      kg.nodes = grp.nodes;
      kg.recomputed = grp.recomputed;
      kg.reason = reason_of(grp);
      kg.attention = grp.attention;
      kg.folded_pool = grp.folded_pool;
      kg.fold_note = grp.fold_note;
      out.push_back(std::move(kg));
    }
    return out;
  }

  const ir::Graph& g_;
  const FusionOptions& o_;
  std::vector<Group> groups_;
  std::map<const ir::Node*, int> group_of_, pos_;
  std::map<const ir::Value*, std::vector<const ir::Node*>> users_;
  std::set<const ir::Value*> returned_;
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

bool cheap_to_recompute(const ir::Node& n) {
  NodeClass c = classify(n);
  if (c == NodeClass::Layout) return true;
  if (c != NodeClass::Elementwise) return false;
  static const std::set<std::string> kCheap = {
      "abs",         "add",         "arange",      "bitwise_and", "bitwise_not", "bitwise_or",
      "bitwise_xor", "cast",        "clamp",       "eq",          "full",        "ge",
      "gt",          "le",          "logical_and", "logical_not", "logical_or",  "logical_xor",
      "lt",          "masked_fill", "maximum",     "minimum",     "mul",         "ne",
      "neg",         "relu",        "sign",        "sub",         "where"};
  return kCheap.count(n.op()) > 0;
}

std::vector<KernelGroup> group_kernels(const ir::Graph& g, const FusionOptions& options) {
  return Grouper(g, options).run();
}

namespace {

AlgorithmChoice attention_choice() {
  AlgorithmCandidate c;
  c.name = "attention.flash";
  c.note = "scores, softmax and values in one pass over key blocks per block of query rows";
  c.score = 1;
  AlgorithmChoice a;
  a.name = c.name;
  a.reason = "heuristic: the fused attention's one algorithm";
  a.candidates = {c};
  return a;
}

}  // namespace

void choose_algorithms(std::vector<KernelGroup>& groups, const Target& target) {
  for (KernelGroup& grp : groups) {
    if (grp.attention) {
      grp.algorithm = attention_choice();
      continue;
    }
    for (const ir::Node* n : grp.nodes) {
      if (has_algorithms(n->op())) grp.algorithm = choose_algorithm(*n, target);
    }
  }
  // A folded pool stays only where conv.winograd computes whole windows.
  for (size_t g = 0; g < groups.size(); ++g) {
    KernelGroup& grp = groups[g];
    if (!grp.folded_pool) continue;
    if (target.is_cpu() && grp.algorithm.name == "conv.winograd") continue;
    const ir::Node* pool = grp.folded_pool;
    grp.nodes.erase(std::remove(grp.nodes.begin(), grp.nodes.end(), pool), grp.nodes.end());
    size_t at = grp.reason.find("; " + grp.fold_note);
    if (at != std::string::npos) grp.reason.erase(at, grp.fold_note.size() + 2);
    grp.folded_pool = nullptr;
    grp.fold_note.clear();
    KernelGroup own;
    own.nodes = {pool};
    own.reason = "contraction op 'max_pool2d' starts its own kernel; not folded into the conv2d "
                 "kernel: its algorithm is " +
                 (target.is_cpu() ? grp.algorithm.name : std::string("for a GPU")) +
                 ", and only conv.winograd's 2x2 output tiles are pool windows";
    groups.insert(groups.begin() + ptrdiff_t(g) + 1, std::move(own));
  }
  // A library contraction's consumers run in a kernel after it.
  split_library_groups(groups);
}

std::vector<loop::Kernel> lower_groups(const ir::Graph& g, const std::vector<KernelGroup>& groups,
                                       const LowerOptions& options,
                                       std::vector<KernelPlan>* plans) {
  std::vector<loop::Kernel> kernels;
  const GraphLowerInfo info(g);  // once: each group then costs its own size
  for (size_t k = 0; k < groups.size(); ++k) {
    LowerOptions o = options;
    if (!groups[k].algorithm.name.empty()) o.algorithm = groups[k].algorithm.name;
    LoweredKernel lk =
        lower_group(info, groups[k].nodes, kernel_name(g, k, groups[k]), o, groups[k].recomputed);
    kernels.push_back(std::move(lk.kernel));
    if (plans) plans->push_back(std::move(lk.plan));
  }
  return kernels;
}

}  // namespace kiln::passes
