// Lowered kernels and their plans -> runtime::Executable. Graph inputs become
// the first slots (with dtype/shape specs and symbol slots for symbolic dims);
// each kernel's Output and Intermediate buffers become planned slots whose
// dims are SizeExprs of the symbols; scalar params become recipes.
//
// Assumes plans from passes::lower_graph / lower_group in graph order, so a
// kernel's Input buffers are graph inputs or values an earlier kernel wrote.
#include <unordered_map>

#include "api/compile_internal.h"
#include "ir/loop/visitor.h"
#include "kiln/error.h"

namespace kiln::compile_detail {

using runtime::SizeExpr;

namespace {

void append(SizeExpr& out, const SizeExpr& in) {
  out.terms.insert(out.terms.end(), in.terms.begin(), in.terms.end());
}

SizeExpr combine(SizeExpr::Op op, std::initializer_list<SizeExpr> operands) {
  SizeExpr e;
  for (const SizeExpr& o : operands) append(e, o);
  e.terms.push_back({op, 0});
  return e;
}

std::string input_name(const ir::Value* v) {
  return v->name().empty() ? "#" + std::to_string(v->index()) : v->name();
}

runtime::InputSpec::Kind input_kind(const ir::Type& t) {
  switch (t.kind()) {
    case ir::TypeKind::Int:
      return runtime::InputSpec::Kind::Int;
    case ir::TypeKind::Float:
      return runtime::InputSpec::Kind::Float;
    case ir::TypeKind::Bool:
      return runtime::InputSpec::Kind::Bool;
    case ir::TypeKind::None:
      return runtime::InputSpec::Kind::None;
    default:
      return runtime::InputSpec::Kind::Tensor;
  }
}

}  // namespace

SizeExpr to_size_expr(const loop::Expr& e, const runtime::Executable& exec,
                      const std::string& context) {
  auto fail = [&]() -> SizeExpr {
    KILN_USER_ERROR("compile: " << context << ": size " << loop::to_string(e)
                                << " cannot be computed at call time");
  };
  if (const auto* imm = e.as<loop::IntImm>()) return SizeExpr::constant(imm->value);
  if (const auto* var = e.as<loop::Var>()) {
    int slot = exec.find_symbol(var->name);
    KILN_USER_CHECK(
        slot >= 0, "compile: " << context << ": dim " << var->name << " is not bound by any input");
    return SizeExpr::symbol(slot);
  }
  if (const auto* cast = e.as<loop::Cast>()) {
    if (is_integral(cast->value.type().dtype) || cast->value.type().dtype == DType::Bool) {
      return to_size_expr(cast->value, exec, context);
    }
    return fail();
  }
  if (const auto* b = e.as<loop::Binary>()) {
    SizeExpr::Op op;
    switch (b->op) {
      case loop::BinOp::Add:
        op = SizeExpr::Op::Add;
        break;
      case loop::BinOp::Sub:
        op = SizeExpr::Op::Sub;
        break;
      case loop::BinOp::Mul:
        op = SizeExpr::Op::Mul;
        break;
      case loop::BinOp::Div:
        op = SizeExpr::Op::Div;
        break;
      case loop::BinOp::Mod:
        op = SizeExpr::Op::Mod;
        break;
      case loop::BinOp::Min:
        op = SizeExpr::Op::Min;
        break;
      case loop::BinOp::Max:
        op = SizeExpr::Op::Max;
        break;
      default:
        return fail();
    }
    return combine(op, {to_size_expr(b->a, exec, context), to_size_expr(b->b, exec, context)});
  }
  if (const auto* c = e.as<loop::Compare>()) {
    SizeExpr a = to_size_expr(c->a, exec, context), b = to_size_expr(c->b, exec, context);
    switch (c->op) {
      case loop::CmpOp::LT:
        return combine(SizeExpr::Op::LT, {a, b});
      case loop::CmpOp::LE:
        return combine(SizeExpr::Op::LE, {a, b});
      case loop::CmpOp::GT:
        return combine(SizeExpr::Op::LT, {b, a});
      case loop::CmpOp::GE:
        return combine(SizeExpr::Op::LE, {b, a});
      case loop::CmpOp::EQ:
        return combine(SizeExpr::Op::EQ, {a, b});
      case loop::CmpOp::NE:
        return combine(SizeExpr::Op::Sub,
                       {SizeExpr::constant(1), combine(SizeExpr::Op::EQ, {a, b})});
    }
  }
  if (const auto* s = e.as<loop::Select>()) {
    return combine(SizeExpr::Op::Select, {to_size_expr(s->cond, exec, context),
                                          to_size_expr(s->true_value, exec, context),
                                          to_size_expr(s->false_value, exec, context)});
  }
  return fail();
}

std::unique_ptr<runtime::Executable> build_executable(const ir::Graph& g,
                                                      const std::vector<passes::KernelPlan>& plans,
                                                      const KernelEntries& kernels) {
  auto exec = std::make_unique<runtime::Executable>("compiled @" + g.name());
  ir::ValueNames names(g);

  // --- inputs: slot i is input i
  for (size_t i = 0; i < g.inputs().size(); ++i) {
    const ir::Value* v = g.input(i);
    runtime::InputSpec spec;
    spec.name = input_name(v);
    spec.kind = input_kind(v->type());
    spec.type_str = v->type().str();
    if (v->type().is_tensor()) {
      const ir::TensorType& tt = v->type().tensor_type();
      spec.dtype = tt.dtype;
      for (const ir::Dim& d : tt.dims) {
        runtime::InputSpec::DimSpec ds;
        ds.value = d.value;
        if (!d.is_static()) {
          ds.symbol = exec->find_symbol(d.symbol);
          if (ds.symbol < 0) ds.symbol = exec->add_symbol(d.symbol);
        }
        spec.dims.push_back(ds);
      }
    } else if (v->type().is_scalar()) {
      spec.dtype = v->type().dtype();
    }
    exec->add_input(std::move(spec));
  }
  auto input_slot = [&](const ir::Value* v) {
    return v->producer() == nullptr && size_t(v->index()) < g.inputs().size() &&
                   g.input(size_t(v->index())) == v
               ? v->index()
               : -1;
  };

  // --- kernels
  KILN_INTERNAL_CHECK(kernels.kernels.size() == plans.size(), "one kernel per plan");
  std::unordered_map<const ir::Value*, int> value_slot;
  for (size_t k = 0; k < plans.size(); ++k) {
    const passes::KernelPlan& plan = plans[k];
    runtime::Launch launch;
    launch.name = plan.name;
    launch.kernel = kernels.kernels[k];
    launch.device = kernels.device;
    if (!kernels.shapes.empty()) {
      // A GPU launch: one thread block per grid index, sized at call time.
      std::string context = "kernel " + plan.name + " launch";
      launch.grid[0] = to_size_expr(kernels.shapes[k].grid, *exec, context);
      launch.block[0] = to_size_expr(kernels.shapes[k].block, *exec, context);
    }
    for (const passes::BufferParam& b : plan.buffers) {
      runtime::Launch::Arg arg;
      std::string context = "kernel " + plan.name + " buffer " + b.buf->name;
      switch (b.role) {
        case passes::BufferRole::Input: {
          int in = input_slot(b.value);
          if (in >= 0) {
            arg.slot = in;
            arg.packed = !b.strided;
            arg.unit_inner = b.strided && b.unit_inner;
          } else {
            auto it = value_slot.find(b.value);
            KILN_INTERNAL_CHECK(it != value_slot.end(), context
                                                            << " reads " << names(b.value)
                                                            << ", which no earlier kernel writes");
            arg.slot = it->second;
          }
          break;
        }
        case passes::BufferRole::Constant: {
          runtime::Slot s;
          s.kind = runtime::Slot::Kind::Constant;
          s.name = b.buf->name;
          s.dtype = b.constant.dtype();
          s.constant = b.constant.contiguous();  // the kernel indexes it row-major
          arg.slot = exec->add_slot(std::move(s));
          break;
        }
        case passes::BufferRole::Output:
        case passes::BufferRole::Intermediate: {
          runtime::Slot s;
          s.kind = runtime::Slot::Kind::Planned;
          s.name = b.buf->name;
          s.dtype = b.buf->dtype;
          s.device = kernels.device;  // written by a kernel running there
          for (const loop::Expr& d : b.shape) s.shape.push_back(to_size_expr(d, *exec, context));
          arg.slot = exec->add_slot(std::move(s));
          arg.written = true;
          if (b.role == passes::BufferRole::Output) value_slot[b.value] = arg.slot;
          break;
        }
      }
      launch.args.push_back(arg);
    }
    for (const passes::ScalarParam& p : plan.scalars) {
      runtime::ScalarRecipe r;
      switch (p.role) {
        case passes::ScalarRole::SymbolicDim:
          r.kind = runtime::ScalarRecipe::Kind::Symbol;
          r.index = exec->find_symbol(p.symbol);
          KILN_USER_CHECK(r.index >= 0, "compile @" << g.name() << ": kernel " << plan.name
                                                    << " needs dim " << p.symbol
                                                    << ", which no input binds");
          break;
        case passes::ScalarRole::Stride:
          r.kind = runtime::ScalarRecipe::Kind::Stride;
          r.index = p.buffer;
          r.dim = p.dim;
          break;
        case passes::ScalarRole::Value:
          r.kind = runtime::ScalarRecipe::Kind::InputValue;
          r.index = input_slot(p.value);
          r.dtype = p.var.type().dtype;
          KILN_USER_CHECK(r.index >= 0, "compile @" << g.name() << ": kernel " << plan.name
                                                    << " needs scalar " << names(p.value)
                                                    << " computed inside the graph; only scalar"
                                                       " inputs and constants are supported");
          break;
        case passes::ScalarRole::Offset:
          r.kind = runtime::ScalarRecipe::Kind::Constant;
          r.value = p.offset;
          break;
      }
      launch.scalars.push_back(r);
    }
    exec->add_launch(std::move(launch));
  }

  // --- outputs
  std::vector<int> outs;
  for (const ir::Value* v : g.outputs()) {
    if (int in = input_slot(v); in >= 0) {
      outs.push_back(in);
    } else if (v->type().is_none()) {
      outs.push_back(-1);
    } else {
      auto it = value_slot.find(v);
      KILN_USER_CHECK(it != value_slot.end(),
                      "compile @" << g.name() << ": output " << names(v) << " (" << v->type().str()
                                  << ") is not a tensor a kernel writes; the compiled path "
                                     "returns tensors only");
      outs.push_back(it->second);
    }
  }
  exec->set_outputs(std::move(outs));
  exec->finalize();
  return exec;
}

}  // namespace kiln::compile_detail
