// constant-fold: evaluates, at compile time, nodes whose operands are all
// constants, with the same reference implementations the interpreter runs.
//
// Assumes: a graph in topological order with exact types (infer-types ran).
// Guarantees: every pure node (registered, not random) whose operands all come
// from `constant` nodes — and factories with no operands (full, arange) — is
// replaced by a `constant` of its value, placed where it was, when each output
// is a scalar or a static tensor of at most kMaxFoldElements elements on the
// CPU. Larger results stay computed (materializing them would bloat the IR,
// the compiled module and the dumps for no gain). Chains fold in one run,
// since folded values are constants to the nodes after them. Values equal
// what the interpreter computes (the reference implementations, bit for
// bit); a node whose evaluation fails (kiln::Error) is left alone, so the
// error still surfaces, at run time, where it did. The folded node is erased;
// constants it read may become unused and are left for dce.
#include "ir/op_registry.h"
#include "kiln/error.h"
#include "passes/graph_rewrite.h"
#include "passes/pipeline.h"

namespace kiln::passes {

namespace {

// The attribute value a constant needs to produce `t` as a value of `type`;
// nullopt when it cannot be expressed exactly.
std::optional<ir::AttrValue> as_constant(const Tensor& t, const ir::Type& type) {
  switch (type.kind()) {
    case ir::TypeKind::None:
      return ir::AttrValue(ir::NoneAttr{});
    case ir::TypeKind::Int:
      if (!t.defined() || t.numel() != 1 || t.dtype() != DType::I64) return std::nullopt;
      return ir::AttrValue(*t.contiguous().data<int64_t>());
    case ir::TypeKind::Float:
      if (!t.defined() || t.numel() != 1 || t.dtype() != DType::F64) return std::nullopt;
      return ir::AttrValue(*t.contiguous().data<double>());
    case ir::TypeKind::Bool:
      if (!t.defined() || t.numel() != 1 || t.dtype() != DType::Bool) return std::nullopt;
      return ir::AttrValue(*t.contiguous().data<bool>());
    case ir::TypeKind::Tensor: {
      const ir::TensorType& tt = type.tensor_type();
      if (!t.defined() || !tt.device.is_cpu() || !ir::dims_are_static(tt.dims)) return std::nullopt;
      if (t.dtype() != tt.dtype || t.sizes() != ir::static_shape(tt.dims)) return std::nullopt;
      // A private packed copy: the attribute must not alias a reference's scratch.
      return ir::AttrValue(t.contiguous().clone());
    }
  }
  return std::nullopt;
}

// Whether the outputs are small enough to materialize.
bool small_outputs(const ir::Node& n) {
  for (const ir::Value* v : n.outputs()) {
    if (!v->type().is_tensor()) continue;
    const ir::Dims& dims = v->type().dims();
    if (!ir::dims_are_static(dims)) return false;
    int64_t numel = 1;
    for (const ir::Dim& d : dims) {
      if (__builtin_mul_overflow(numel, d.value, &numel) || numel > kMaxFoldElements) return false;
    }
  }
  return true;
}

bool foldable(const ir::Node& n) {
  if (n.op() == "constant" || !is_pure(n) || n.num_outputs() == 0) return false;
  for (const ir::Value* v : n.inputs()) {
    if (!constant_producer(v)) return false;
  }
  return small_outputs(n);
}

// The node's outputs evaluated, or empty when evaluation fails.
std::vector<Tensor> evaluate(const ir::Node& n) {
  std::vector<ir::Type> in_types, out_types;
  std::vector<Tensor> in_values;
  for (const ir::Value* v : n.inputs()) {
    in_types.push_back(v->type());
    in_values.push_back(*constant_value(v));
  }
  for (const ir::Value* v : n.outputs()) out_types.push_back(v->type());
  try {
    ir::Attrs attrs = ir::complete_attrs(*n.def(), n.attrs());
    std::vector<Tensor> outs =
        n.def()->reference(ir::RefContext{*n.def(), in_types, in_values, attrs, out_types});
    if (outs.size() != n.num_outputs()) return {};
    return outs;
  } catch (const InternalError&) {
    throw;
  } catch (const Error&) {
    return {};  // e.g. an integer division by zero: the run reports it
  }
}

}  // namespace

bool constant_fold(ir::Graph& g) {
  GraphEditor e(g);
  for (ir::Node* n : e.nodes()) {
    e.resolve_operands(n);
    if (!foldable(*n)) continue;
    std::vector<Tensor> values = evaluate(*n);
    if (values.empty()) continue;
    std::vector<ir::AttrValue> attrs;
    for (size_t i = 0; i < values.size(); ++i) {
      std::optional<ir::AttrValue> a = as_constant(values[i], n->output(i)->type());
      if (!a) break;
      attrs.push_back(std::move(*a));
    }
    if (attrs.size() != values.size()) continue;
    std::vector<ir::Value*> outs;
    for (size_t i = 0; i < attrs.size(); ++i) {
      ir::Node* c = e.insert_before(n, "constant", {}, ir::Attrs{{"value", attrs[i]}},
                                    {n->output(i)->type()});
      // as_constant checked kind, dtype, shape and device against the type.
      KILN_INTERNAL_CHECK(c, "constant-fold: a constant cannot hold output "
                                 << i << " of " << n->op() << " (" << n->output(i)->type().str()
                                 << ")");
      outs.push_back(c->output());
    }
    e.replace(n, outs);
  }
  return e.commit();
}

}  // namespace kiln::passes
