// Entry points of the lowering: lower_group turns a group of nodes into one
// kernel, lower_graph makes one group per node. See lower_graph.h for what is
// assumed and guaranteed; per-op lowerings live in lower_<family>.cpp and are
// found by op name in one table.
#include "passes/lower/lower_graph.h"

#include <algorithm>
#include <optional>
#include <set>
#include <unordered_map>
#include <utility>

#include "ir/loop/simplify.h"
#include "ir/loop/visitor.h"
#include "passes/algorithms.h"
#include "passes/attention_pattern.h"
#include "passes/fuse.h"
#include "passes/lower/cpu/attention.h"
#include "passes/lower/lower_internal.h"
#include "passes/schedule/schedule.h"

namespace kiln::passes {

const char* buffer_role_name(BufferRole r) {
  switch (r) {
    case BufferRole::Input:
      return "input";
    case BufferRole::Output:
      return "output";
    case BufferRole::Intermediate:
      return "intermediate";
    case BufferRole::Constant:
      return "constant";
  }
  return "?";
}

namespace lower {

const LoweringTable& lowering_table() {
  static const LoweringTable table = [] {
    LoweringTable t;
    register_elementwise_lowerings(t);
    register_activation_lowerings(t);
    register_indexing_lowerings(t);
    register_compare_lowerings(t);
    register_layout_lowerings(t);
    register_layout_stride_lowerings(t);
    register_reduction_lowerings(t);
    register_normalization_lowerings(t);
    register_contraction_lowerings(t);
    register_matmul_lowerings(t);
    register_conv_lowerings(t);
    register_math_lowerings(t);
    register_scan_lowerings(t);
    register_selection_lowerings(t);
    for (const auto& [op, l] : t) {
      for (const AlgorithmLowering& a : l.algorithms) {
        KILN_INTERNAL_CHECK(!a.targets.empty(), "lower: " << op << ": candidate " << a.name
                                                          << " serves no target kind");
      }
    }
    return t;
  }();
  return table;
}

bool AlgorithmLowering::serves(TargetKind k) const {
  return std::find(targets.begin(), targets.end(), k) != targets.end();
}

namespace {

using namespace kiln::loop;  // NOLINT

// A buffer name from the printed value name: "%x" -> "x", "%3" -> "v3".
std::string buffer_name(const ir::ValueNames& names, const ir::Value* v) {
  std::string s = names(v);
  if (!s.empty() && s[0] == '%') s.erase(0, 1);
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) s = "v" + s;
  std::replace(s.begin(), s.end(), '.', '_');
  for (char& c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') c = '_';
  }
  return s;
}

// Reads buffer `index` of the context as a tensor operand.
Operand buffer_operand(LowerContext& ctx, int index, const ir::Type& type) {
  const BufferParam& p = ctx.buffers()[size_t(index)];
  std::vector<Expr> strides;
  if (p.strided) {
    for (size_t d = 0; d < p.shape.size(); ++d) {
      const bool inner = d + 1 == p.shape.size();
      strides.push_back(inner && p.unit_inner ? make_int(1) : ctx.stride_param(index, int(d)));
    }
  } else {
    strides = packed_strides(p.shape);
  }
  Buf buf = p.buf;
  return tensor_operand(
      buf->dtype, p.shape,
      [buf, strides](const Index& idx) { return Load::make(buf, offset_of(idx, strides)); }, type);
}

class GroupLowering {
 public:
  GroupLowering(const GraphLowerInfo& info, std::span<const ir::Node* const> nodes,
                std::span<const ir::Node* const> recomputed, const LowerOptions& o)
      : info_(info), g_(info.graph()), nodes_(nodes.begin(), nodes.end()), ctx_(o),
        names_(info.names()) {
    in_group_.insert(nodes.begin(), nodes.end());
    recomputed_.insert(recomputed.begin(), recomputed.end());
    in_group_.insert(recomputed.begin(), recomputed.end());
    // Starts that become arguments: those of a family with one member here.
    std::unordered_map<int, int> members;
    for (const ir::Node* n : in_group_) {
      if (int f = info.offset_family(n); f >= 0) ++members[f];
    }
    std::set<const ir::Node*> offsets;
    for (const ir::Node* n : in_group_) {
      if (int f = info.offset_family(n); f >= 0 && members[f] == 1) offsets.insert(n);
    }
    ctx_.set_offset_arguments(std::move(offsets));
    // Lowering order: graph order over both lists.
    order_.assign(in_group_.begin(), in_group_.end());
    std::sort(order_.begin(), order_.end(), [&](const ir::Node* a, const ir::Node* b) {
      return info.position(a) < info.position(b);
    });
  }

  LoweredKernel run(const std::string& name);

 private:
  bool escapes(const ir::Value* v) const {
    if (v->producer() && recomputed_.count(v->producer())) return false;
    if (info_.is_output(v)) return true;
    const std::vector<const ir::Node*>& users = info_.users(v);
    if (users.empty()) return true;
    for (const ir::Node* u : users) {
      if (!in_group_.count(u)) return true;
    }
    return false;
  }

  // In-group readers of v, each counted once, or twice when it is a root that
  // passes over its operand several times.
  int inline_uses(const ir::Value* v) const {
    int uses = 0;
    const LoweringTable& table = lowering_table();
    for (const ir::Node* u : info_.users(v)) {
      if (!in_group_.count(u)) continue;
      auto l = table.find(u->op());
      bool root = l != table.end() && !l->second.pointwise;
      uses += root && !l->second.reads_once ? 2 : 1;
    }
    return uses;
  }

  Operand constant_operand(const ir::Value* v, const ir::Node& producer) {
    const ir::AttrValue* a = producer.attrs().find("value");
    KILN_INTERNAL_CHECK(a, "constant without value");
    if (const int64_t* i = std::get_if<int64_t>(a)) return scalar_operand(make_int(*i), v->type());
    if (const double* d = std::get_if<double>(a)) {
      return scalar_operand(FloatImm::make({DType::F64, 1}, *d), v->type());
    }
    if (const bool* b = std::get_if<bool>(a)) {
      return scalar_operand(IntImm::make(bool_t(), *b), v->type());
    }
    if (const Tensor* t = std::get_if<Tensor>(a)) {
      int idx = ctx_.add_constant(*t, buffer_name(names_, v));
      return buffer_operand(ctx_, idx, v->type());
    }
    return Operand{};  // none
  }

  Operand operand_for(const ir::Value* v) {
    if (auto it = values_.find(v); it != values_.end()) return it->second;
    Operand o;
    const ir::Node* producer = v->producer();
    if (v->type().is_none()) {
      o = Operand{};
    } else if (producer && producer->op() == "constant") {
      o = constant_operand(v, *producer);
    } else if (v->type().is_scalar()) {
      o = scalar_operand(ctx_.scalar_param(v, buffer_name(names_, v), v->type().dtype()),
                         v->type());
    } else {
      bool strided = ctx_.options().strided_inputs && producer == nullptr;
      int idx = ctx_.add_buffer(v, BufferRole::Input, buffer_name(names_, v), v->type().dtype(),
                                ctx_.dims(v->type().dims()), strided);
      ctx_.buffers()[size_t(idx)].unit_inner = strided && ctx_.options().unit_inner_stride;
      o = buffer_operand(ctx_, idx, v->type());
    }
    values_[v] = o;
    return o;
  }

  // A buffer for group value v (Output when it escapes, else Intermediate).
  OutBuf value_buffer(const ir::Value* v, int* index = nullptr) {
    BufferRole role = escapes(v) ? BufferRole::Output : BufferRole::Intermediate;
    int idx = ctx_.add_buffer(v, role, buffer_name(names_, v), v->type().dtype(),
                              ctx_.dims(v->type().dims()), false);
    if (index) *index = idx;
    return OutBuf(ctx_.buffers()[size_t(idx)].buf, ctx_.buffers()[size_t(idx)].shape);
  }

  std::vector<const ir::Node*> epilogue_of(const ir::Node& root, const OpLowering& l) const;
  // Whether a node of the group after `root` reads its value (directly or
  // through others) other than as one of `epilogue`.
  bool has_non_epilogue_reader(const ir::Node& root,
                               const std::vector<const ir::Node*>& epilogue) const;
  void lower_pointwise(const ir::Node& n, const OpLowering& l, NodeLowering& nl);
  void lower_root(const ir::Node& n, const RootFn& root, NodeLowering& nl,
                  const std::vector<const ir::Node*>& epilogue, const ir::Node* pool = nullptr);
  void lower_node(const ir::Node& n);
  // Lowers the recomputed (layout) producers of n's operands not lowered
  // yet, in graph order: an epilogue node may read one that comes after the
  // root in graph order.
  // Whether recomputed node n reads (through other recomputed nodes) a value
  // a node of the group computes.
  bool reads_own_value(const ir::Node& n) const {
    for (const ir::Value* in : n.inputs()) {
      const ir::Node* p = in->producer();
      if (!p || !in_group_.count(p)) continue;
      if (!recomputed_.count(p) || reads_own_value(*p)) return true;
    }
    return false;
  }
  void lower_recomputed_operands(const ir::Node& n) {
    for (const ir::Value* in : n.inputs()) {
      const ir::Node* p = in->producer();
      if (!p || !recomputed_.count(p) || done_.count(p)) continue;
      lower_recomputed_operands(*p);
      lower_node(*p);
      done_.insert(p);
    }
  }
  RootFn algorithm_root(const ir::Node& n, const OpLowering& l) const;
  // The max_pool2d of the group that conv2d `n` (run by conv.winograd) can
  // fold into its store: it reads the end of n's epilogue chain, which
  // nothing else reads (OutBuf::pool).
  const ir::Node* foldable_pool(const ir::Node& n,
                                const std::vector<const ir::Node*>& epilogue) const;
  void find_attention();
  void lower_attention(const ir::Node& n, const OpLowering& l);
  LoweredKernel finish(const std::string& name);

  const GraphLowerInfo& info_;
  const ir::Graph& g_;
  std::vector<const ir::Node*> nodes_;  // the group's own nodes (graph order)
  std::vector<const ir::Node*> order_;  // own and recomputed nodes, graph order
  LowerContext ctx_;
  const ir::ValueNames& names_;
  std::set<const ir::Node*> in_group_, recomputed_, done_;
  std::unordered_map<const ir::Value*, Operand> values_;
  std::vector<Stmt> stmts_;
  std::optional<AttentionMatch> attention_;  // the group is one fused attention
};

// Whether `e` is worth storing rather than recomputing at each use: it calls
// an intrinsic (exp, tanh, ...) or is long.
bool expensive(const Expr& e) {
  struct Counter : IRVisitor {
    using IRVisitor::visit_node;
    int nodes = 0, calls = 0;
    void visit_node(const Binary* op) override {
      ++nodes;
      IRVisitor::visit_node(op);
    }
    void visit_node(const Select* op) override {
      ++nodes;
      IRVisitor::visit_node(op);
    }
    void visit_node(const Load* op) override {
      ++nodes;
      IRVisitor::visit_node(op);
    }
    void visit_node(const Call* op) override {
      ++calls;
      IRVisitor::visit_node(op);
    }
  } c;
  c.visit(e);
  return c.calls > 0 || c.nodes > 48;
}

// The same-shape elementwise readers of root's single output that can be
// applied as it stores each element: every in-group operand of each is the
// root's value or the value of an earlier one (graph order, after the root).
std::vector<const ir::Node*> GroupLowering::epilogue_of(const ir::Node& root,
                                                        const OpLowering& l) const {
  std::vector<const ir::Node*> out;
  if (!l.stores_once || root.num_outputs() != 1 || !root.output()->type().is_tensor()) return out;
  const ir::Value* v = root.output();
  std::set<const ir::Value*> frontier{v};
  const LoweringTable& table = lowering_table();
  auto at = std::find(order_.begin(), order_.end(), &root);
  for (auto it = at + 1; it != order_.end(); ++it) {
    const ir::Node* m = *it;
    if (recomputed_.count(m) || done_.count(m) || m->num_outputs() != 1) continue;
    auto lm = table.find(m->op());
    if (lm == table.end() || !lm->second.pointwise) continue;
    if (m->def() && m->def()->category == ir::OpCategory::Layout) continue;
    const ir::Value* w = m->output();
    if (!w->type().is_tensor() || w->type().tensor_type().dims != v->type().tensor_type().dims) {
      continue;
    }
    bool reads_frontier = false, ok = true;
    for (const ir::Value* in : m->inputs()) {
      const ir::Node* p = in->producer();
      // A recomputed layout operand (the `bn[2]` select of a packed
      // parameter) is indexing of values outside the group: lower_root
      // lowers it before the epilogue reads it.
      bool inside = p && p->op() != "constant" && in_group_.count(p) &&
                    !(recomputed_.count(p) && !reads_own_value(*p));
      if (!inside) continue;
      if (frontier.count(in)) {
        reads_frontier = true;
      } else {
        ok = false;
      }
    }
    if (!ok || !reads_frontier) continue;
    out.push_back(m);
    frontier.insert(w);
  }
  return out;
}

void GroupLowering::lower_pointwise(const ir::Node& n, const OpLowering& l, NodeLowering& nl) {
  std::vector<Operand> outs = l.pointwise(nl);
  KILN_INTERNAL_CHECK(outs.size() == n.num_outputs(),
                      n.op() << ": lowering gave " << outs.size() << " outputs");
  for (size_t i = 0; i < outs.size(); ++i) {
    const ir::Value* v = n.output(i);
    values_[v] = outs[i];
    bool escape = escapes(v);
    bool store_once = false;
    if (outs[i].is_tensor() && !recomputed_.count(&n)) {
      int uses = inline_uses(v);
      if (uses > 0 && (escape || uses > 1)) {
        Index probe;
        for (size_t d = 0; d < outs[i].dims.size(); ++d) probe.push_back(ctx_.loop_var("probe"));
        store_once = expensive(outs[i].at(probe));
      }
    }
    if (!escape && !store_once) continue;
    KILN_USER_CHECK(outs[i].is_tensor(), "lower: " << n.op() << ": a scalar or none value "
                                                   << names_(v) << " cannot be a kernel output");
    int idx = 0;
    OutBuf out = value_buffer(v, &idx);
    Operand value = outs[i];
    stmts_.push_back(store_all(ctx_, out, [&](const Index& ix) { return value.at(ix); }));
    // Readers in the group load the stored value instead of recomputing it.
    if (store_once) values_[v] = buffer_operand(ctx_, idx, v->type());
  }
}

void GroupLowering::lower_root(const ir::Node& n, const RootFn& root, NodeLowering& nl,
                               const std::vector<const ir::Node*>& epilogue,
                               const ir::Node* pool) {
  std::vector<OutBuf> outs;
  std::vector<int> indices;
  for (const ir::Value* v : n.outputs()) {
    KILN_USER_CHECK(v->type().is_tensor(),
                    "lower: " << n.op() << ": output " << names_(v) << " is not a tensor");
  }
  if (epilogue.empty() && !pool) {
    for (const ir::Value* v : n.outputs()) {
      int idx = 0;
      outs.push_back(value_buffer(v, &idx));
      indices.push_back(idx);
    }
    stmts_.push_back(root(nl, outs));
    for (size_t i = 0; i < outs.size(); ++i) {
      values_[n.output(i)] = buffer_operand(ctx_, indices[i], n.output(i)->type());
    }
    return;
  }
  // The root's value at an index is a placeholder while the epilogue nodes
  // are lowered; each stored value is then that expression with the
  // placeholder bound to the element the root computed.
  const ir::Value* v = n.output();
  const DType vt = v->type().dtype();
  Expr ph = Var::make({vt, 1}, ctx_.fresh("epi"));
  std::vector<Expr> dims = ctx_.dims(v->type().dims());
  values_[v] = tensor_operand(
      vt, dims, [ph](const Index&) { return ph; }, v->type());
  const LoweringTable& table = lowering_table();
  for (const ir::Node* m : epilogue) lower_recomputed_operands(*m);
  for (const ir::Node* m : epilogue) {
    NodeLowering ml{*m, {}, ctx_};
    for (const ir::Value* in : m->inputs()) ml.inputs.push_back(operand_for(in));
    std::vector<Operand> mo = table.at(m->op()).pointwise(ml);
    KILN_INTERNAL_CHECK(mo.size() == 1 && mo[0].is_tensor(), m->op() << ": epilogue output");
    values_[m->output()] = mo[0];
    done_.insert(m);
  }
  std::set<const ir::Node*> fused(epilogue.begin(), epilogue.end());
  fused.insert(&n);
  // Which of the values are stored: those read outside the kernel, or inside
  // it by nodes that are not part of this epilogue.
  std::vector<const ir::Value*> chain{v};
  for (const ir::Node* m : epilogue) chain.push_back(m->output());
  if (pool) {
    // Folded only when no value of the chain is stored: the root then
    // computes whole pool windows and stores only their max.
    fused.insert(pool);
    for (const ir::Value* w : chain) {
      bool needed = escapes(w);
      for (const ir::Node* u : info_.users(w)) {
        needed = needed || (in_group_.count(u) && !fused.count(u));
      }
      if (needed) {
        fused.erase(pool);
        pool = nullptr;
        break;
      }
    }
  }
  if (pool) {
    int idx = 0;
    auto po = std::make_shared<PooledOut>();
    po->out = value_buffer(pool->output(), &idx);
    const Operand end = values_[chain.back()];
    const std::string ph_name = ph.as<Var>()->name;
    po->value = [end, ph_name, vt](const Index& at, const Expr& value) {
      return substitute(end.at(at), ph_name, cast_to(value, vt));
    };
    OutBuf out(make_buf(buffer_name(names_, v) + "_root", vt), dims);
    out.pool = po;
    stmts_.push_back(root(nl, {out}));
    for (const ir::Value* w : chain) values_.erase(w);
    values_[pool->output()] = buffer_operand(ctx_, idx, pool->output()->type());
    done_.insert(pool);
    return;
  }
  struct Stored {
    const ir::Value* value;
    OutBuf buf;
    int index;
    Operand expr;
  };
  std::vector<Stored> stored;
  for (const ir::Value* w : chain) {
    bool needed = escapes(w);
    for (const ir::Node* u : info_.users(w)) needed = needed || (in_group_.count(u) && !fused.count(u));
    if (!needed) continue;
    int idx = 0;
    OutBuf ob = value_buffer(w, &idx);
    stored.push_back({w, ob, idx, values_[w]});
  }
  // A root with nothing to store still computes (a dead value is an output).
  if (stored.empty()) {
    int idx = 0;
    stored.push_back({chain.back(), value_buffer(chain.back(), &idx), idx, values_[chain.back()]});
  }
  OutBuf out(make_buf(buffer_name(names_, v) + "_root", vt), dims,
             [ph, vt, stored](const Index& idx, const Expr& value) {
               std::vector<Stmt> st;
               for (const Stored& s : stored) st.push_back(store_at(s.buf, idx, s.expr.at(idx)));
               return LetStmt::make(ph, cast_to(value, vt), Block::make(st));
             });
  stmts_.push_back(root(nl, {out}));
  for (const ir::Value* w : chain) values_.erase(w);
  for (const Stored& s : stored) values_[s.value] = buffer_operand(ctx_, s.index, s.value->type());
}

// The candidate LowerOptions::algorithm names, or the heuristic's pick.
RootFn GroupLowering::algorithm_root(const ir::Node& n, const OpLowering& l) const {
  const Target& target = ctx_.options().target;
  std::string name = ctx_.options().algorithm;
  if (name.empty()) name = choose_algorithm(n, target).name;
  for (const AlgorithmLowering& a : l.algorithms) {
    if (a.name != name) continue;
    KILN_USER_CHECK(a.serves(target.kind), "lower: " << n.op() << ": algorithm '" << name
                                                     << "' does not generate code for a "
                                                     << target_kind_name(target.kind) << " target");
    std::string why;
    KILN_USER_CHECK(!a.applies || a.applies(n, target, &why),
                    "lower: " << n.op() << ": algorithm '" << name << "' does not apply: " << why);
    return a.root;
  }
  std::string known;
  for (const AlgorithmLowering& a : l.algorithms) known += (known.empty() ? "" : ", ") + a.name;
  KILN_USER_ERROR("lower: " << n.op() << ": unknown algorithm '" << name
                            << "' (candidates: " << known << ")");
}

void GroupLowering::lower_node(const ir::Node& n) {
  if (n.op() == "constant") {
    // Constants are operands, not computations; a returned one is copied out.
    const ir::Value* v = n.output();
    Operand o = constant_operand(v, n);
    values_[v] = o;
    if (escapes(v) && o.is_tensor()) {
      int idx = ctx_.add_buffer(v, BufferRole::Output, buffer_name(names_, v) + "_out",
                                v->type().dtype(), ctx_.dims(v->type().dims()), false);
      OutBuf out{ctx_.buffers()[size_t(idx)].buf, ctx_.buffers()[size_t(idx)].shape};
      stmts_.push_back(store_all(ctx_, out, [&](const Index& ix) { return o.at(ix); }));
    }
    return;
  }
  const LoweringTable& table = lowering_table();
  auto it = table.find(n.op());
  KILN_USER_CHECK(it != table.end(), "lower: op '" << n.op() << "' has no lowering to loop IR");
  const OpLowering& l = it->second;
  if (attention_ && &n == attention_->pv) return lower_attention(n, l);
  NodeLowering nl{n, {}, ctx_};
  for (const ir::Value* v : n.inputs()) nl.inputs.push_back(operand_for(v));

  bool any_escape = false;
  for (const ir::Value* v : n.outputs()) any_escape = any_escape || escapes(v);
  if (l.pointwise && !(any_escape && l.root)) return lower_pointwise(n, l, nl);
  RootFn root = l.root;
  std::vector<const ir::Node*> epilogue = epilogue_of(n, l);
  const ir::Node* pool = nullptr;
  if (!l.algorithms.empty()) {
    root = algorithm_root(n, l);
    std::string name = ctx_.options().algorithm;
    if (name.empty()) name = choose_algorithm(n, ctx_.options().target).name;
    if (name == "conv.winograd") pool = foldable_pool(n, epilogue);
  }
  // On a GPU the generated candidates write their nest already mapped to
  // blocks and threads, which a later nest of the same kernel reading the
  // root's value (a consumer that is not an epilogue) cannot follow without
  // a grid-wide barrier: the plain nest then, which gpu_map maps with the rest.
  if (!l.algorithms.empty() && !ctx_.options().target.is_cpu() && l.root &&
      has_non_epilogue_reader(n, epilogue)) {
    root = l.root;
  }
  KILN_INTERNAL_CHECK(root, n.op() << ": no root lowering");
  lower_root(n, root, nl, epilogue, pool);
}

const ir::Node* GroupLowering::foldable_pool(const ir::Node& n,
                                             const std::vector<const ir::Node*>& epilogue) const {
  const ir::Value* end = epilogue.empty() ? n.output() : epilogue.back()->output();
  const std::vector<const ir::Node*>& users = info_.users(end);
  if (users.size() != 1 || escapes(end)) return nullptr;
  const ir::Node* pool = users[0];
  if (!in_group_.count(pool) || recomputed_.count(pool) || done_.count(pool)) return nullptr;
  return pool_fold_blocker(*pool).empty() ? pool : nullptr;
}

bool GroupLowering::has_non_epilogue_reader(const ir::Node& root,
                                            const std::vector<const ir::Node*>& epilogue) const {
  std::set<const ir::Value*> reached;
  for (const ir::Value* v : root.outputs()) reached.insert(v);
  auto at = std::find(order_.begin(), order_.end(), &root);
  for (auto it = at + 1; it != order_.end(); ++it) {
    const ir::Node* m = *it;
    bool reads = false;
    for (const ir::Value* in : m->inputs()) reads = reads || reached.count(in);
    if (!reads) continue;
    if (std::find(epilogue.begin(), epilogue.end(), m) == epilogue.end()) return true;
    for (const ir::Value* v : m->outputs()) reached.insert(v);
  }
  return false;
}

LoweredKernel GroupLowering::finish(const std::string& name) {
  // The nests of a multi-node kernel run as one loop over the rows where they
  // can, and intermediates only one loop touches shrink to one row of it.
  Stmt body = fuse_loops(simplify(Block::make(stmts_)));
  std::vector<Buf> intermediates, folded;
  for (const BufferParam& b : ctx_.buffers()) {
    if (b.role == BufferRole::Intermediate) intermediates.push_back(b.buf);
  }
  if (!intermediates.empty()) body = fold_storage(body, intermediates, &folded);
  std::set<const BufferNode*> gone;
  for (const Buf& b : folded) gone.insert(b.get());
  // Kernel::buffers lists inputs (and constants), then outputs, then scratch.
  std::vector<BufferParam>& bufs = ctx_.buffers();
  auto rank = [](BufferRole r) {
    return r == BufferRole::Input || r == BufferRole::Constant ? 0
           : r == BufferRole::Output                           ? 1
                                                               : 2;
  };
  std::vector<int> order;
  for (size_t i = 0; i < bufs.size(); ++i) {
    if (!gone.count(bufs[i].buf.get())) order.push_back(int(i));
  }
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return rank(bufs[size_t(a)].role) < rank(bufs[size_t(b)].role);
  });
  std::vector<int> new_index(bufs.size(), -1);
  LoweredKernel out;
  for (size_t i = 0; i < order.size(); ++i) {
    new_index[size_t(order[i])] = int(i);
    out.plan.buffers.push_back(bufs[size_t(order[i])]);
  }
  out.plan.scalars = ctx_.scalars();
  for (ScalarParam& s : out.plan.scalars) {
    if (s.role == ScalarRole::Stride) s.buffer = new_index[size_t(s.buffer)];
  }
  out.plan.name = name;
  out.plan.nodes = nodes_;
  out.plan.category = ir::OpCategory::Elementwise;
  for (const ir::Node* n : nodes_) {
    // An "other" op with loops of its own (sort) keeps its category: the schedule
    // then leaves its inner loops serial.
    if (n->def() && n->def()->category == ir::OpCategory::Other &&
        !has_pointwise_lowering(n->op())) {
      out.plan.category = ir::OpCategory::Other;
      break;
    }
    if (n->def() && n->def()->category != ir::OpCategory::Elementwise &&
        n->def()->category != ir::OpCategory::Other) {
      out.plan.category = n->def()->category;
      if (n->def()->category != ir::OpCategory::Layout) break;
    }
  }
  out.kernel.name = name;
  for (const BufferParam& b : out.plan.buffers) out.kernel.buffers.push_back(b.buf);
  for (const ScalarParam& s : out.plan.scalars) out.kernel.scalars.push_back(s.var);
  out.kernel.body = simplify(body);
  if (!out.kernel.body.defined()) out.kernel.body = Block::make({});
  return out;
}

// An attention group (LowerOptions::algorithm "attention.flash"): the scores
// matmul, its elementwise ops and the softmax are computed inside the
// probabilities-times-values root, so they are not lowered on their own.
void GroupLowering::find_attention() {
  if (ctx_.options().algorithm != "attention.flash") return;
  for (const ir::Node* n : nodes_) {
    if (std::optional<AttentionMatch> m = match_attention(g_, *n)) attention_ = m;
  }
  KILN_INTERNAL_CHECK(attention_, "attention.flash: the group holds no attention pattern");
  done_.insert(attention_->qk);
  done_.insert(attention_->chain.begin(), attention_->chain.end());
  done_.insert(attention_->softmax);
}

void GroupLowering::lower_attention(const ir::Node& n, const OpLowering& l) {
  const AttentionMatch& m = *attention_;
  Operand q = operand_for(m.qk->input(0)), kt = operand_for(m.qk->input(1));
  NodeLowering nl{n, {Operand{}, operand_for(n.input(1))}, ctx_};
  // The scores as a placeholder, the elementwise ops over it as expressions.
  const ir::Value* sv = m.qk->output();
  const DType dt = sv->type().dtype();
  Expr ph = Var::make({dt, 1}, ctx_.fresh("score"));
  std::vector<Expr> dims = ctx_.dims(sv->type().dims());
  values_[sv] = tensor_operand(
      dt, dims, [ph](const Index&) { return ph; }, sv->type());
  const LoweringTable& table = lowering_table();
  // A causal fill (the last op) is the kernel's own compare of the key and
  // query indices (AttentionSpec::causal): its mask is not evaluated.
  const size_t ops = m.chain.size() - (m.causal ? 1 : 0);
  for (size_t ci = 0; ci < ops; ++ci) {
    const ir::Node* c = m.chain[ci];
    NodeLowering cl{*c, {}, ctx_};
    for (const ir::Value* in : c->inputs()) cl.inputs.push_back(operand_for(in));
    std::vector<Operand> co = table.at(c->op()).pointwise(cl);
    KILN_INTERNAL_CHECK(co.size() == 1 && co[0].is_tensor(), c->op() << ": attention score op");
    values_[c->output()] = co[0];
  }
  Operand score = values_[ops == 0 ? sv : m.chain[ops - 1]->output()];
  const int64_t dv = n.input(1)->type().tensor_type().dims.back().value;
  lower_root(n, attention_root(q, kt, nl.in(1), ph, score, dims, dv, m.causal), nl,
             epilogue_of(n, l));
}

LoweredKernel GroupLowering::run(const std::string& name) {
  find_attention();
  for (const ir::Node* n : order_) {
    if (!done_.count(n)) lower_node(*n);
    done_.insert(n);
  }
  return finish(name);
}

}  // namespace
}  // namespace lower

LoweredKernel lower_group(const GraphLowerInfo& info, std::span<const ir::Node* const> nodes,
                          const std::string& name, const LowerOptions& options,
                          std::span<const ir::Node* const> recomputed) {
  KILN_USER_CHECK(!nodes.empty(), "lower: kernel " << name << " has no nodes");
  lower::GroupLowering gl(info, nodes, recomputed, options);
  return gl.run(name);
}

LoweredKernel lower_group(const ir::Graph& g, std::span<const ir::Node* const> nodes,
                          const std::string& name, const LowerOptions& options,
                          std::span<const ir::Node* const> recomputed) {
  GraphLowerInfo info(g);
  return lower_group(info, nodes, name, options, recomputed);
}

std::vector<loop::Kernel> lower_graph(const ir::Graph& g, const LowerOptions& options,
                                      std::vector<KernelPlan>* plans) {
  std::vector<loop::Kernel> kernels;
  const GraphLowerInfo info(g);
  const auto& outs = g.outputs();
  for (const auto& n : g.nodes()) {
    // Constants are folded into their users; one returned by the graph gets a
    // copy kernel so every graph output is written by some kernel.
    if (n->op() == "constant") {
      bool returned = n->num_outputs() == 1 && n->output()->type().is_tensor() &&
                      std::find(outs.begin(), outs.end(), n->output()) != outs.end();
      if (!returned) continue;
    }
    const ir::Node* node = n.get();
    std::string name = g.name() + "_" + std::to_string(kernels.size()) + "_" + n->op();
    for (char& c : name) {
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') c = '_';
    }
    LoweredKernel k = lower_group(info, std::span<const ir::Node* const>(&node, 1), name, options);
    kernels.push_back(std::move(k.kernel));
    if (plans) plans->push_back(std::move(k.plan));
  }
  return kernels;
}

bool has_lowering(const std::string& name) {
  return name == "constant" || lower::lowering_table().count(name) > 0;
}

bool lowering_stores_once(const std::string& name) {
  auto it = lower::lowering_table().find(name);
  return it != lower::lowering_table().end() && it->second.stores_once;
}

bool has_pointwise_lowering(const std::string& name) {
  auto it = lower::lowering_table().find(name);
  return it != lower::lowering_table().end() && bool(it->second.pointwise);
}

}  // namespace kiln::passes
