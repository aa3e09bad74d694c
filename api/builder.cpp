// The builder: Vars point into a graph owned by a shared BuilderState, and each
// operation appends one node through ir::Graph::apply, which runs the op's type
// inference; its errors name the op and the operand types, and a failed call
// leaves the graph as it was.
#include "api/builder_state.h"

#include <sstream>

#include "api/convert.h"
#include "kiln/builder.h"

namespace kiln {

namespace detail {

ir::AttrValue scalar_attr(const Scalar& s) {
  switch (s.kind()) {
    case Scalar::Kind::Int:
      return s.to_int();
    case Scalar::Kind::Float:
      return s.to_double();
    case Scalar::Kind::Bool:
      return s.to_int() != 0;
  }
  return ir::NoneAttr{};
}

std::vector<Var> apply_op(const std::shared_ptr<BuilderState>& state, const std::string& name,
                          const std::vector<Operand>& operands, const AttrList& attrs) {
  ir::Graph& g = *state->graph;
  // Check every Var belongs here before adding anything to the graph.
  for (size_t i = 0; i < operands.size(); ++i) {
    const Operand& o = operands[i];
    if (o.is_scalar() || !o.var().defined()) continue;
    KILN_USER_CHECK(o.var().state() == state,
                    name << ": operand " << i << " (" << o.var().type_str()
                         << ") belongs to builder '" << o.var().state()->graph->name()
                         << "', not to builder '" << g.name()
                         << "'; Vars from different builders cannot be combined");
  }
  ir::Attrs ir_attrs;
  for (const auto& [key, value] : attrs) ir_attrs.set(key, api::to_ir_attr(value));

  // Scalars and absent operands become constant nodes; they are removed again
  // if the op is rejected, so a failed call leaves the graph as it was.
  std::vector<ir::Value*> inputs;
  std::vector<ir::Node*> made;
  for (const Operand& o : operands) {
    if (o.is_scalar() || !o.var().defined()) {
      ir::AttrValue v = o.is_scalar() ? scalar_attr(o.scalar()) : ir::AttrValue(ir::NoneAttr{});
      ir::Value* c = g.constant(v);
      made.push_back(c->producer());
      inputs.push_back(c);
    } else {
      inputs.push_back(o.var().value());
    }
  }
  std::vector<ir::Value*> outs;
  try {
    outs = g.apply(name, inputs, ir_attrs);
  } catch (const Error&) {
    // Graph::apply's message already names the op and the operand types.
    for (auto it = made.rbegin(); it != made.rend(); ++it) g.erase_node(*it);
    throw;
  }
  std::vector<Var> result;
  result.reserve(outs.size());
  for (ir::Value* v : outs) result.emplace_back(state, v);
  return result;
}

std::shared_ptr<BuilderState> common_state(const std::string& name,
                                           const std::vector<Operand>& operands) {
  for (const Operand& o : operands) {
    if (!o.is_scalar() && o.var().defined()) return o.var().state();
  }
  throw Error(name +
              ": needs at least one Var operand to know its builder; use "
              "Builder::op() for ops without tensor operands");
}

}  // namespace detail

// --- Var ------------------------------------------------------------------------------

namespace {
const ir::Value& checked(const Var& v, const char* what) {
  KILN_USER_CHECK(v.defined(), "kiln::Var::" << what << ": the Var is none (default-constructed)");
  return *v.value();
}
}  // namespace

ValueKind Var::kind() const {
  return defined() ? api::value_kind(value_->type()) : ValueKind::None;
}

DType Var::dtype() const {
  return checked(*this, "dtype").type().dtype();
}

std::vector<Dim> Var::dims() const {
  const ir::Value& v = checked(*this, "dims");
  KILN_USER_CHECK(v.type().is_tensor(),
                  "kiln::Var::dims: value is a " << v.type().str() << ", not a tensor");
  return api::from_ir_dims(v.type().dims());
}

int64_t Var::rank() const {
  return static_cast<int64_t>(dims().size());
}

std::string Var::type_str() const {
  return defined() ? value_->type().str() : "none";
}

const std::string& Var::name() const {
  static const std::string kEmpty;
  return defined() ? value_->name() : kEmpty;
}

void Var::set_name(const std::string& name) {
  KILN_USER_CHECK(defined(), "kiln::Var::set_name: the Var is none");
  value_->set_name(name);
}

// --- Builder --------------------------------------------------------------------------

Builder::Builder(std::string name) : state_(std::make_shared<detail::BuilderState>()) {
  KILN_USER_CHECK(!name.empty(), "kiln::Builder: the graph needs a name");
  state_->graph = std::make_unique<ir::Graph>(std::move(name));
}

const std::string& Builder::name() const {
  return state_->graph->name();
}

std::string Builder::str() const {
  return ir::print_graph(*state_->graph);
}

namespace {
void check_new_input(const ir::Graph& g, const std::string& name) {
  KILN_USER_CHECK(!name.empty(), "Builder::input: an input needs a name");
  for (const auto& v : g.inputs()) {
    KILN_USER_CHECK(v->name() != name, "Builder::input: builder '"
                                           << g.name() << "' already has an input '" << name
                                           << "' (" << v->type().str() << ")");
  }
}
}  // namespace

Var Builder::input(const std::string& name, DType dtype, std::vector<Dim> dims) {
  check_new_input(*state_->graph, name);
  for (const Dim& d : dims) {
    KILN_USER_CHECK(!d.is_static() || d.value >= 0,
                    "Builder::input: input '" << name << "' has negative dim " << d.value);
  }
  ir::Type t = ir::Type::tensor(dtype, api::to_ir_dims(dims));
  return Var(state_, state_->graph->add_input(name, std::move(t)));
}

Var Builder::scalar_input(const std::string& name, Scalar::Kind kind) {
  check_new_input(*state_->graph, name);
  ir::Type t = kind == Scalar::Kind::Int     ? ir::Type::int_()
               : kind == Scalar::Kind::Float ? ir::Type::float_()
                                             : ir::Type::bool_();
  return Var(state_, state_->graph->add_input(name, std::move(t)));
}

Var Builder::constant(const Tensor& value) {
  KILN_USER_CHECK(value.defined(), "Builder::constant: the tensor is undefined");
  return Var(state_, state_->graph->constant(ir::AttrValue(value.contiguous().clone())));
}

Var Builder::constant(Scalar value) {
  return Var(state_, state_->graph->constant(detail::scalar_attr(value)));
}

std::vector<Var> Builder::op(const std::string& name, const std::vector<Operand>& operands,
                             const AttrList& attrs) {
  return detail::apply_op(state_, name, operands, attrs);
}

Function Builder::build(const std::vector<Var>& outputs) {
  ir::Graph& g = *state_->graph;
  KILN_USER_CHECK(!outputs.empty(),
                  "Builder::build: builder '" << g.name() << "' needs at least one output");
  std::vector<ir::Value*> values;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const Var& v = outputs[i];
    KILN_USER_CHECK(v.defined(), "Builder::build: output " << i << " is none");
    KILN_USER_CHECK(v.state() == state_, "Builder::build: output " << i << " belongs to builder '"
                                                                   << v.state()->graph->name()
                                                                   << "', not '" << g.name()
                                                                   << "'");
    values.push_back(v.value());
  }
  g.set_outputs(values);
  // The Function gets its own copy so later building cannot change it.
  std::shared_ptr<ir::Graph> copy(g.clone());
  ir::verify(*copy);
  return Function::from_graph(std::move(copy));
}

// --- generic op ------------------------------------------------------------------------

std::vector<Var> op(const std::string& name, const std::vector<Operand>& operands,
                    const AttrList& attrs) {
  return detail::apply_op(detail::common_state(name, operands), name, operands, attrs);
}

Var op1(const std::string& name, const std::vector<Operand>& operands, const AttrList& attrs) {
  std::vector<Var> outs = op(name, operands, attrs);
  KILN_USER_CHECK(outs.size() == 1, "kiln::op1: op '" << name << "' has " << outs.size()
                                                      << " outputs; use kiln::op()");
  return outs[0];
}

}  // namespace kiln
