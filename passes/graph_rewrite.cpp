// Shared helpers of the graph passes (see graph_rewrite.h).
#include "passes/graph_rewrite.h"

#include <array>
#include <cmath>
#include <cstring>
#include <functional>

#include "ir/op_registry.h"
#include "kiln/element.h"
#include "kiln/error.h"

namespace kiln::passes {

const ir::Node* constant_producer(const ir::Value* v) {
  const ir::Node* p = v ? v->producer() : nullptr;
  return p && p->op() == "constant" && p->num_outputs() == 1 ? p : nullptr;
}

std::optional<Tensor> constant_value(const ir::Value* v) {
  const ir::Node* p = constant_producer(v);
  if (!p) return std::nullopt;
  const ir::AttrValue* a = p->attrs().find("value");
  if (!a) return std::nullopt;
  if (std::holds_alternative<ir::NoneAttr>(*a)) return Tensor();
  if (const int64_t* i = std::get_if<int64_t>(a)) {
    Tensor t = Tensor::empty({}, DType::I64);
    *t.data<int64_t>() = *i;  // exact beyond 2^53
    return t;
  }
  if (const double* d = std::get_if<double>(a)) return Tensor::scalar(*d, DType::F64);
  if (const bool* b = std::get_if<bool>(a)) return Tensor::scalar(*b ? 1 : 0, DType::Bool);
  if (const Tensor* t = std::get_if<Tensor>(a)) return *t;
  return std::nullopt;
}

bool constant_all_equal(const ir::Value* v, double x) {
  std::optional<Tensor> t = constant_value(v);
  if (!t || !t->defined()) return false;
  if (x != std::trunc(x) || std::fabs(x) > 1e15) return false;  // only small integral x are asked
  Tensor c = t->contiguous();
  const auto* p = static_cast<const char*>(c.data_ptr());
  size_t es = c.element_size();
  for (int64_t i = 0; i < c.numel(); ++i) {
    if (is_floating(c.dtype())) {
      if (load_as_double(c.dtype(), p + i * es) != x) return false;
    } else if (load_as_int(c.dtype(), p + i * es) != static_cast<int64_t>(x)) {
      return false;  // integers compare exactly: 2^53 + 1 must not pass for 2^53
    }
  }
  return true;
}

bool is_random_op(std::string_view op) {
  static constexpr std::array<std::string_view, 14> kRandom = {
      "rand",      "randn",  "rand_like", "randn_like", "randint", "randint_like", "randperm",
      "bernoulli", "normal", "uniform",   "dropout",    "poisson", "multinomial",  "rrelu"};
  for (std::string_view r : kRandom) {
    if (op == r) return true;
  }
  return false;
}

bool is_pure(const ir::Node& n) {
  return n.def() != nullptr && !is_random_op(n.op());
}

bool is_commutative(const ir::Node& n) {
  static constexpr std::array<std::string_view, 12> kCommutative = {
      "add",         "mul",        "maximum",     "minimum",     "eq",         "ne",
      "logical_and", "logical_or", "logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor"};
  if (n.inputs().size() != 2 || n.num_outputs() != 1) return false;
  bool listed = false;
  for (std::string_view op : kCommutative) listed = listed || n.op() == op;
  if (!listed) return false;
  if (n.op() == "add") {
    const ir::AttrValue* alpha = n.attrs().find("alpha");
    if (alpha) {
      const double* d = std::get_if<double>(alpha);
      const int64_t* i = std::get_if<int64_t>(alpha);
      if (!(d && *d == 1.0) && !(i && *i == 1)) return false;
    }
  }
  return true;
}

std::string mirrored_comparison(std::string_view op) {
  if (op == "lt") return "gt";
  if (op == "gt") return "lt";
  if (op == "le") return "ge";
  if (op == "ge") return "le";
  return "";
}

namespace {

bool tensors_identical(const Tensor& a, const Tensor& b) {
  if (a.defined() != b.defined()) return false;
  if (!a.defined()) return true;
  if (a.dtype() != b.dtype() || a.sizes() != b.sizes()) return false;
  Tensor ca = a.contiguous(), cb = b.contiguous();
  size_t bytes = static_cast<size_t>(ca.numel()) * ca.element_size();
  return bytes == 0 || std::memcmp(ca.data_ptr(), cb.data_ptr(), bytes) == 0;
}

bool attr_identical(const ir::AttrValue& a, const ir::AttrValue& b) {
  if (!ir::attr_equal(a, b)) return false;
  if (const double* da = std::get_if<double>(&a)) {
    return std::signbit(*da) == std::signbit(std::get<double>(b));
  }
  if (const auto* fa = std::get_if<std::vector<double>>(&a)) {
    const auto& fb = std::get<std::vector<double>>(b);
    for (size_t i = 0; i < fa->size(); ++i) {
      if (std::signbit((*fa)[i]) != std::signbit(fb[i])) return false;
    }
  }
  if (const Tensor* ta = std::get_if<Tensor>(&a))
    return tensors_identical(*ta, std::get<Tensor>(b));
  return true;
}

}  // namespace

bool attrs_identical(const ir::Attrs& a, const ir::Attrs& b) {
  if (a.items().size() != b.items().size()) return false;
  for (size_t i = 0; i < a.items().size(); ++i) {
    if (a.items()[i].first != b.items()[i].first) return false;
    if (!attr_identical(a.items()[i].second, b.items()[i].second)) return false;
  }
  return true;
}

GraphEditor::GraphEditor(ir::Graph& g) : g_(g) {
  nodes_.reserve(g.nodes().size());
  for (const auto& n : g.nodes()) nodes_.push_back(n.get());
}

ir::Value* GraphEditor::resolve(ir::Value* v) const {
  for (auto it = replaced_.find(v); it != replaced_.end(); it = replaced_.find(v)) v = it->second;
  return v;
}

void GraphEditor::resolve_operands(ir::Node* n) {
  if (replaced_.empty()) return;
  for (size_t i = 0; i < n->inputs().size(); ++i) {
    ir::Value* v = resolve(n->input(i));
    if (v != n->input(i)) n->set_input(i, v);
  }
}

ir::Node* GraphEditor::insert_before(ir::Node* before, const std::string& op,
                                     std::vector<ir::Value*> inputs, const ir::Attrs& attrs,
                                     const std::vector<ir::Type>& expected) {
  const ir::OpDef* def = ir::OpRegistry::global().find(op);
  KILN_INTERNAL_CHECK(def, "insert_before: unknown op '" << op << "'");
  std::vector<ir::Type> in_types;
  for (const ir::Value* v : inputs) in_types.push_back(v->type());
  ir::Attrs full;
  std::vector<ir::Type> types;
  try {
    full = ir::complete_attrs(*def, attrs);
    types = ir::infer_types(*def, in_types, full);
  } catch (const InternalError&) {
    throw;
  } catch (const Error&) {
    return nullptr;  // the rewrite does not apply; the caller keeps the original
  }
  if (types != expected) return nullptr;
  // Appended now (so it has outputs to use), placed before `before` at commit.
  ir::Node* n = g_.add_node(op, std::move(inputs), std::move(full), types, before->loc());
  inserted_[before].push_back(n);
  changed_ = true;
  return n;
}

void GraphEditor::replace(ir::Node* from, const std::vector<ir::Value*>& to) {
  KILN_INTERNAL_CHECK(to.size() == from->num_outputs(),
                      "replace: " << to.size() << " replacements for " << from->num_outputs()
                                  << " outputs of " << from->op());
  for (size_t i = 0; i < to.size(); ++i) {
    ir::Value* old = from->output(i);
    if (to[i]->name().empty() && to[i]->producer()) to[i]->set_name(old->name());
    replaced_[old] = to[i];
  }
  erase(from);
}

void GraphEditor::erase(ir::Node* n) {
  erased_.insert(n);
  changed_ = true;
}

bool GraphEditor::commit() {
  if (!changed_) return false;
  std::vector<ir::Value*> outs = g_.outputs();
  for (ir::Value*& v : outs) v = resolve(v);
  g_.set_outputs(std::move(outs));
  // A node inserted before one that is itself inserted is placed with it.
  std::vector<ir::Node*> order;
  order.reserve(g_.nodes().size());
  std::function<void(ir::Node*)> place = [&](ir::Node* n) {
    if (auto it = inserted_.find(n); it != inserted_.end()) {
      for (ir::Node* m : it->second) place(m);
    }
    if (!erased_.count(n)) order.push_back(n);
  };
  for (ir::Node* n : nodes_) place(n);
  g_.rebuild_nodes(order);
  return true;
}

}  // namespace kiln::passes
