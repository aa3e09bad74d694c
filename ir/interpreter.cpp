// The reference interpreter: binds the graph's inputs (checking dtype, rank and
// dims, fixing symbolic dims from the actual sizes), then runs each node's
// reference implementation in program order on concrete types.
//
// Expects a graph that verify() accepts; on one it does not, it still throws a
// kiln::Error rather than crashing. Values are dropped after their last use so
// the peak memory is that of the live set, not of the whole graph.
#include "ir/interpreter.h"

#include <map>
#include <unordered_map>

#include "ir/op_registry.h"
#include "kiln/error.h"

namespace kiln::ir {

namespace {

std::string input_name(const Value* v) {
  return v->name().empty() ? "#" + std::to_string(v->index()) : v->name();
}

class Interpreter {
 public:
  explicit Interpreter(const Graph& g) : g_(g), names_(g) {}

  std::vector<Tensor> run(const std::vector<Tensor>& inputs) {
    bind_inputs(inputs);
    compute_last_uses();
    for (size_t i = 0; i < g_.nodes().size(); ++i) {
      run_node(*g_.nodes()[i]);
      release_after(i);
    }
    std::vector<Tensor> out;
    for (const Value* v : g_.outputs()) out.push_back(lookup(v, "graph output"));
    return out;
  }

 private:
  // --- inputs ---------------------------------------------------------------------
  void bind_inputs(const std::vector<Tensor>& inputs) {
    size_t expected = g_.inputs().size();
    if (inputs.size() < expected) {
      KILN_USER_ERROR("interpret @" << g_.name() << ": missing input '"
                                    << input_name(g_.input(inputs.size())) << "' (" << inputs.size()
                                    << " given, " << expected << " expected)");
    }
    KILN_USER_CHECK(inputs.size() == expected, "interpret @" << g_.name() << ": too many inputs ("
                                                             << inputs.size() << " given, "
                                                             << expected << " expected)");
    for (size_t i = 0; i < expected; ++i) {
      const Value* v = g_.input(i);
      values_[v] = Entry{bind_input(v, inputs[i]), concrete_type(v->type(), inputs[i])};
    }
  }

  Tensor bind_input(const Value* v, const Tensor& t) {
    std::string what = "interpret @" + g_.name() + ": input '" + input_name(v) + "'";
    const Type& type = v->type();
    if (type.is_none()) return Tensor();
    KILN_USER_CHECK(t.defined(), what << " expects " << type.str() << ", got an undefined tensor");
    KILN_USER_CHECK(t.device().is_cpu(),
                    what << " must be a CPU tensor, got one on " << t.device().str());
    if (type.is_scalar()) {
      KILN_USER_CHECK(t.dim() == 0, what << " is a scalar (" << type.str()
                                         << ") and takes a 0-dim tensor, got shape "
                                         << shape_str(t.sizes()));
      bool ok = type.kind() == TypeKind::Bool  ? t.dtype() == DType::Bool
                : type.kind() == TypeKind::Int ? is_integral(t.dtype())
                                               : t.dtype() != DType::Bool;
      KILN_USER_CHECK(
          ok, what << " is a scalar (" << type.str() << "), got dtype " << dtype_name(t.dtype()));
      // Reference implementations get scalars in their canonical dtype.
      return t.to(type.dtype());
    }
    const TensorType& tt = type.tensor_type();
    KILN_USER_CHECK(t.dtype() == tt.dtype, what << ": expected dtype " << dtype_name(tt.dtype)
                                                << " (" << tt.str() << "), got "
                                                << dtype_name(t.dtype()));
    KILN_USER_CHECK(t.dim() == tt.rank(), what << ": expected rank " << tt.rank() << " ("
                                               << tt.str() << "), got rank " << t.dim()
                                               << " (shape " << shape_str(t.sizes()) << ")");
    for (size_t d = 0; d < tt.dims.size(); ++d) {
      const Dim& dim = tt.dims[d];
      int64_t actual = t.sizes()[d];
      if (dim.is_static()) {
        KILN_USER_CHECK(dim.value == actual, what << ": expected shape " << dims_str(tt.dims)
                                                  << ", got " << shape_str(t.sizes()) << " (dim "
                                                  << d << " differs)");
        continue;
      }
      auto [it, fresh] = symbols_.emplace(dim.symbol, Binding{actual, input_name(v)});
      KILN_USER_CHECK(fresh || it->second.size == actual,
                      "interpret @" << g_.name() << ": dim " << dim.symbol << " bound to "
                                    << it->second.size << " by input '" << it->second.by << "' but "
                                    << actual << " by input '" << input_name(v) << "'");
    }
    return t;
  }

  // The type a run-time value has: tensors get their actual static shape.
  static Type concrete_type(const Type& declared, const Tensor& t) {
    if (!declared.is_tensor()) return declared;
    return Type::tensor(t.dtype(), dims_from_shape(t.sizes()), declared.tensor_type().device);
  }

  // --- liveness -------------------------------------------------------------------
  void compute_last_uses() {
    const auto& nodes = g_.nodes();
    for (size_t i = 0; i < nodes.size(); ++i) {
      for (const Value* v : nodes[i]->inputs()) last_use_[v] = i;
      // An output nobody reads dies right after it is made.
      for (size_t k = 0; k < nodes[i]->num_outputs(); ++k) {
        last_use_.emplace(nodes[i]->output(k), i);
      }
    }
    for (const Value* v : g_.outputs()) last_use_[v] = SIZE_MAX;
  }

  void release_after(size_t i) {
    const Node& node = *g_.nodes()[i];
    auto drop = [&](const Value* v) {
      auto it = last_use_.find(v);
      if (it != last_use_.end() && it->second == i) values_.erase(v);
    };
    for (const Value* v : node.inputs()) drop(v);
    for (size_t k = 0; k < node.num_outputs(); ++k) drop(node.output(k));
  }

  // --- nodes ----------------------------------------------------------------------
  struct Entry {
    Tensor value;
    Type type;  // concrete: static dims
  };

  const Entry& entry(const Value* v, const std::string& context) {
    auto it = values_.find(v);
    KILN_USER_CHECK(it != values_.end(), "interpret @" << g_.name() << ": " << context << " uses "
                                                       << names_(v)
                                                       << ", which is not computed before it");
    return it->second;
  }
  Tensor lookup(const Value* v, const std::string& context) { return entry(v, context).value; }

  void run_node(const Node& node) {
    std::string where = node_summary(node, names_);
    if (node.loc().known()) where += " at " + node.loc().str();
    const OpDef* def = node.def();
    KILN_USER_CHECK(def, "interpret: " << where << ": unknown op '" << node.op() << "'");
    std::vector<Type> in_types;
    std::vector<Tensor> in_values;
    for (const Value* v : node.inputs()) {
      const Entry& e = entry(v, where);
      in_types.push_back(e.type);
      in_values.push_back(e.value);
    }
    Attrs attrs;
    std::vector<Type> out_types;
    try {
      attrs = complete_attrs(*def, node.attrs());
      out_types = infer_types(*def, in_types, attrs);
    } catch (const InternalError&) {
      throw;
    } catch (const Error& e) {
      KILN_USER_ERROR("interpret: " << where << ": " << e.what());
    }
    check_against_recorded(node, out_types, where);
    std::vector<Tensor> outs;
    if (!run_constant(node, attrs, &outs)) {
      outs = def->reference(RefContext{*def, in_types, in_values, attrs, out_types});
    }
    KILN_INTERNAL_CHECK(outs.size() == out_types.size(),
                        node.op() << " reference returned " << outs.size() << " outputs, "
                                  << out_types.size() << " expected, in " << where);
    for (size_t i = 0; i < outs.size(); ++i) {
      const Type& t = out_types[i];
      if (!t.is_none()) {
        Shape want = t.is_tensor() ? static_shape(t.dims()) : Shape{};
        KILN_INTERNAL_CHECK(
            outs[i].defined() && outs[i].dtype() == t.dtype() && outs[i].sizes() == want,
            node.op() << " reference output " << i << " is "
                      << (outs[i].defined() ? std::string(dtype_name(outs[i].dtype())) +
                                                  shape_str(outs[i].sizes())
                                            : std::string("undefined"))
                      << ", but inference gives " << t.str() << ", in " << where);
      }
      values_[node.output(i)] = Entry{outs[i], t};
    }
  }

  // Constants are produced here so that none, scalars and tensors get exactly
  // the run-time representation the other reference implementations expect.
  bool run_constant(const Node& node, const Attrs& attrs, std::vector<Tensor>* outs) {
    if (node.op() != "constant" || node.num_outputs() != 1) return false;
    const AttrValue* v = attrs.find("value");
    if (!v) return false;
    if (std::holds_alternative<NoneAttr>(*v)) {
      outs->push_back(Tensor());
    } else if (auto* i = std::get_if<int64_t>(v)) {
      Tensor t = Tensor::empty({}, DType::I64);
      *t.data<int64_t>() = *i;  // exact, unlike a trip through double
      outs->push_back(t);
    } else if (auto* d = std::get_if<double>(v)) {
      outs->push_back(Tensor::scalar(*d, DType::F64));
    } else if (auto* b = std::get_if<bool>(v)) {
      outs->push_back(Tensor::scalar(*b ? 1 : 0, DType::Bool));
    } else if (auto* t = std::get_if<Tensor>(v)) {
      outs->push_back(*t);
    } else {
      return false;
    }
    return true;
  }

  // The graph's recorded types must describe the concrete ones: same kinds and
  // dtypes, static dims equal, symbolic dims consistent with their binding.
  void check_against_recorded(const Node& node, const std::vector<Type>& inferred,
                              const std::string& where) {
    KILN_USER_CHECK(inferred.size() == node.num_outputs(),
                    "interpret: " << where << ": records " << node.num_outputs()
                                  << " output(s), but the op produces " << inferred.size());
    for (size_t i = 0; i < inferred.size(); ++i) {
      const Type& rec = node.output(i)->type();
      const Type& got = inferred[i];
      bool ok = rec.kind() == got.kind();
      if (ok && rec.is_tensor()) {
        const TensorType& r = rec.tensor_type();
        const TensorType& c = got.tensor_type();
        ok = r.dtype == c.dtype && r.rank() == c.rank();
        for (size_t d = 0; ok && d < r.dims.size(); ++d) {
          if (!c.dims[d].is_static()) continue;  // an op that keeps a symbol open
          if (r.dims[d].is_static()) {
            ok = r.dims[d].value == c.dims[d].value;
          } else {
            auto [it, fresh] = symbols_.emplace(r.dims[d].symbol,
                                                Binding{c.dims[d].value, names_(node.output(i))});
            ok = fresh || it->second.size == c.dims[d].value;
          }
        }
      }
      KILN_USER_CHECK(ok, "interpret: " << where << ": output " << names_(node.output(i))
                                        << " is recorded as " << rec.str() << " but computes as "
                                        << got.str() << describe_bindings());
    }
  }

  std::string describe_bindings() const {
    if (symbols_.empty()) return "";
    std::string s = " (with";
    bool first = true;
    for (const auto& [sym, b] : symbols_) {
      s += (first ? " " : ", ") + sym + " = " + std::to_string(b.size);
      first = false;
    }
    return s + ")";
  }

  struct Binding {
    int64_t size;
    std::string by;  // the input (or value) that fixed it
  };

  const Graph& g_;
  ValueNames names_;
  std::map<std::string, Binding> symbols_;  // ordered for stable messages
  std::unordered_map<const Value*, Entry> values_;
  std::unordered_map<const Value*, size_t> last_use_;
};

}  // namespace

std::vector<Tensor> interpret(const Graph& g, const std::vector<Tensor>& inputs) {
  return Interpreter(g).run(inputs);
}

}  // namespace kiln::ir
