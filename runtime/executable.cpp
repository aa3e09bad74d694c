// Executable: input checking and symbol binding, the per-call buffer plan
// (planned slots are allocated at their first launch and their memory goes
// back to a per-call free list after their last one, so later buffers reuse
// it), scalar recipes, and the launch loop. See executable.h.
#include "runtime/executable.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <sstream>

#include "kiln/element.h"
#include "kiln/error.h"
#include "runtime/allocator.h"

namespace kiln::runtime {

// ------------------------------------------------------------------------------- SizeExpr

namespace {

int64_t floor_div(int64_t a, int64_t b) {
  if (b == 0) return 0;
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

int64_t floor_mod(int64_t a, int64_t b) {
  if (b == 0) return 0;
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

int arity(SizeExpr::Op op) {
  switch (op) {
    case SizeExpr::Op::Const:
    case SizeExpr::Op::Symbol:
      return 0;
    case SizeExpr::Op::Select:
      return 3;
    default:
      return 2;
  }
}

const char* op_text(SizeExpr::Op op) {
  switch (op) {
    case SizeExpr::Op::Add:
      return "+";
    case SizeExpr::Op::Sub:
      return "-";
    case SizeExpr::Op::Mul:
      return "*";
    case SizeExpr::Op::Div:
      return "/";
    case SizeExpr::Op::Mod:
      return "%";
    case SizeExpr::Op::Min:
      return "min";
    case SizeExpr::Op::Max:
      return "max";
    case SizeExpr::Op::LT:
      return "<";
    case SizeExpr::Op::LE:
      return "<=";
    case SizeExpr::Op::EQ:
      return "==";
    default:
      return "?";
  }
}

}  // namespace

void SizeExpr::validate(size_t num_symbols) const {
  int64_t depth = 0;
  for (const Term& t : terms) {
    if (t.op == Op::Symbol) {
      KILN_INTERNAL_CHECK(
          t.value >= 0 && size_t(t.value) < num_symbols,
          "size expression refers to symbol slot " << t.value << " of " << num_symbols);
    }
    int n = arity(t.op);
    KILN_INTERNAL_CHECK(depth >= n, "size expression: operator without operands");
    depth += 1 - n;
  }
  KILN_INTERNAL_CHECK(depth == 1, "size expression leaves " << depth << " values");
}

int64_t SizeExpr::eval(std::span<const int64_t> symbols) const {
  // Sizes are shallow (a few terms); a small fixed stack avoids allocating per call.
  int64_t stack[32];
  int top = 0;
  for (const Term& t : terms) {
    KILN_INTERNAL_CHECK(top < 32, "size expression deeper than 32");
    switch (t.op) {
      case Op::Const:
        stack[top++] = t.value;
        continue;
      case Op::Symbol:
        stack[top++] = symbols[size_t(t.value)];
        continue;
      case Op::Select: {
        int64_t f = stack[--top], tv = stack[--top], c = stack[--top];
        stack[top++] = c ? tv : f;
        continue;
      }
      default:
        break;
    }
    int64_t b = stack[--top], a = stack[--top];
    int64_t r = 0;
    switch (t.op) {
      case Op::Add:
        r = a + b;
        break;
      case Op::Sub:
        r = a - b;
        break;
      case Op::Mul:
        r = a * b;
        break;
      case Op::Div:
        r = floor_div(a, b);
        break;
      case Op::Mod:
        r = floor_mod(a, b);
        break;
      case Op::Min:
        r = std::min(a, b);
        break;
      case Op::Max:
        r = std::max(a, b);
        break;
      case Op::LT:
        r = a < b;
        break;
      case Op::LE:
        r = a <= b;
        break;
      case Op::EQ:
        r = a == b;
        break;
      default:
        KILN_INTERNAL_CHECK(false, "size expression: bad operator");
    }
    stack[top++] = r;
  }
  KILN_INTERNAL_CHECK(top == 1, "size expression leaves " << top << " values");
  return stack[0];
}

std::string SizeExpr::str(std::span<const std::string> symbol_names) const {
  std::vector<std::string> stack;
  for (const Term& t : terms) {
    if (t.op == Op::Const) {
      stack.push_back(std::to_string(t.value));
    } else if (t.op == Op::Symbol) {
      stack.push_back(size_t(t.value) < symbol_names.size() ? symbol_names[size_t(t.value)]
                                                            : "$" + std::to_string(t.value));
    } else if (t.op == Op::Select && stack.size() >= 3) {
      std::string f = stack.back();
      stack.pop_back();
      std::string tv = stack.back();
      stack.pop_back();
      stack.back() = "select(" + stack.back() + ", " + tv + ", " + f + ")";
    } else if (stack.size() >= 2) {
      std::string b = stack.back();
      stack.pop_back();
      std::string& a = stack.back();
      if (t.op == Op::Min || t.op == Op::Max) {
        a = std::string(op_text(t.op)) + "(" + a + ", " + b + ")";
      } else {
        a = "(" + a + " " + op_text(t.op) + " " + b + ")";
      }
    } else {
      return "<malformed>";
    }
  }
  return stack.size() == 1 ? stack[0] : "<malformed>";
}

// ------------------------------------------------------------------------------- building

int Executable::add_symbol(std::string name) {
  KILN_INTERNAL_CHECK(find_symbol(name) < 0, "symbol " << name << " added twice");
  symbols_.push_back(std::move(name));
  return int(symbols_.size()) - 1;
}

int Executable::find_symbol(const std::string& name) const {
  auto it = std::find(symbols_.begin(), symbols_.end(), name);
  return it == symbols_.end() ? -1 : int(it - symbols_.begin());
}

void Executable::add_input(InputSpec spec) {
  KILN_INTERNAL_CHECK(slots_.size() == inputs_.size(), "inputs must be added before other slots");
  Slot s;
  s.kind = Slot::Kind::Input;
  s.name = spec.name;
  s.input = int(inputs_.size());
  s.dtype = spec.dtype;
  inputs_.push_back(std::move(spec));
  slots_.push_back(std::move(s));
  finalized_ = false;
}

int Executable::add_slot(Slot slot) {
  KILN_INTERNAL_CHECK(slot.kind != Slot::Kind::Input, "input slots come from add_input");
  slots_.push_back(std::move(slot));
  finalized_ = false;
  return int(slots_.size()) - 1;
}

void Executable::add_launch(Launch launch) {
  launches_.push_back(std::move(launch));
  finalized_ = false;
}

void Executable::set_outputs(std::vector<int> slots) {
  outputs_ = std::move(slots);
  finalized_ = false;
}

void Executable::finalize() {
  const int n = int(slots_.size());
  const int never = -1, forever = std::numeric_limits<int>::max();
  first_use_.assign(size_t(n), never);
  last_use_.assign(size_t(n), never);
  defs_at_.assign(launches_.size(), {});
  frees_at_.assign(launches_.size(), {});
  for (const InputSpec& in : inputs_) {
    for (const InputSpec::DimSpec& d : in.dims) {
      KILN_INTERNAL_CHECK(d.symbol < int(symbols_.size()), "input " << in.name << " symbol slot");
    }
  }
  for (const Slot& s : slots_) {
    for (const SizeExpr& e : s.shape) e.validate(symbols_.size());
  }
  for (size_t k = 0; k < launches_.size(); ++k) {
    const Launch& l = launches_[k];
    KILN_INTERNAL_CHECK(l.entry || l.launcher, "launch " << l.name << " has no kernel");
    for (const Launch::Arg& a : l.args) {
      KILN_INTERNAL_CHECK(a.slot >= 0 && a.slot < n, "launch " << l.name << " slot " << a.slot);
      const Slot& s = slots_[size_t(a.slot)];
      KILN_INTERNAL_CHECK(
          !a.written || s.kind == Slot::Kind::Planned,
          "launch " << l.name << " writes slot " << s.name << ", which the plan does not own");
      if (first_use_[size_t(a.slot)] == never) {
        KILN_INTERNAL_CHECK(
            s.kind != Slot::Kind::Planned || a.written,
            "launch " << l.name << " reads " << s.name << " before any launch writes it");
        first_use_[size_t(a.slot)] = int(k);
      }
      last_use_[size_t(a.slot)] = int(k);
    }
    for (const ScalarRecipe& r : l.scalars) {
      switch (r.kind) {
        case ScalarRecipe::Kind::Symbol:
          KILN_INTERNAL_CHECK(r.index >= 0 && r.index < int(symbols_.size()),
                              "launch " << l.name << " symbol slot " << r.index);
          break;
        case ScalarRecipe::Kind::Stride:
          KILN_INTERNAL_CHECK(r.index >= 0 && r.index < int(l.args.size()) && r.dim >= 0,
                              "launch " << l.name << " stride of argument " << r.index);
          break;
        case ScalarRecipe::Kind::InputValue:
          KILN_INTERNAL_CHECK(r.index >= 0 && r.index < int(inputs_.size()) &&
                                  inputs_[size_t(r.index)].kind != InputSpec::Kind::Tensor &&
                                  inputs_[size_t(r.index)].kind != InputSpec::Kind::None,
                              "launch " << l.name << " scalar input " << r.index);
          break;
      }
    }
  }
  for (int o : outputs_) {
    KILN_INTERNAL_CHECK(o >= -1 && o < n, "output slot " << o);
    if (o < 0 || slots_[size_t(o)].kind != Slot::Kind::Planned) continue;
    KILN_INTERNAL_CHECK(first_use_[size_t(o)] != never,
                        "output " << slots_[size_t(o)].name << " is never written");
    last_use_[size_t(o)] = forever;
  }
  for (int s = 0; s < n; ++s) {
    if (slots_[size_t(s)].kind != Slot::Kind::Planned || first_use_[size_t(s)] == never) continue;
    defs_at_[size_t(first_use_[size_t(s)])].push_back(s);
    if (last_use_[size_t(s)] != forever) frees_at_[size_t(last_use_[size_t(s)])].push_back(s);
  }
  finalized_ = true;
}

// ------------------------------------------------------------------------------- running

namespace {

const char* kind_name(InputSpec::Kind k) {
  switch (k) {
    case InputSpec::Kind::Int:
      return "int";
    case InputSpec::Kind::Float:
      return "float";
    case InputSpec::Kind::Bool:
      return "bool";
    case InputSpec::Kind::None:
      return "none";
    default:
      return "tensor";
  }
}

std::string dims_text(const InputSpec& in, std::span<const std::string> symbols) {
  std::string s = "[";
  for (size_t d = 0; d < in.dims.size(); ++d) {
    if (d) s += ", ";
    s += in.dims[d].symbol >= 0 ? symbols[size_t(in.dims[d].symbol)]
                                : std::to_string(in.dims[d].value);
  }
  return s + "]";
}

int64_t pack_value(const Tensor& t, DType as) {
  if (!is_floating(as))
    return t.dtype() == DType::Bool || !is_floating(t.dtype())
               ? t.get_int(std::span<const int64_t>{})
               : int64_t(t.item());
  int64_t slot = 0;
  store_double(as, &slot, t.item());
  return slot;
}

}  // namespace

std::vector<int64_t> Executable::bind_inputs(const std::vector<Tensor>& inputs) const {
  const size_t expected = inputs_.size();
  if (inputs.size() < expected) {
    KILN_USER_ERROR(name_ << ": missing input '" << inputs_[inputs.size()].name << "' ("
                          << inputs.size() << " given, " << expected << " expected)");
  }
  KILN_USER_CHECK(inputs.size() == expected, name_ << ": too many inputs (" << inputs.size()
                                                   << " given, " << expected << " expected)");
  std::vector<int64_t> sym(symbols_.size(), -1);
  std::vector<int> bound_by(symbols_.size(), -1);
  for (size_t i = 0; i < expected; ++i) {
    const InputSpec& in = inputs_[i];
    const Tensor& t = inputs[i];
    std::string what = name_ + ": input '" + in.name + "'";
    if (in.kind == InputSpec::Kind::None) continue;
    KILN_USER_CHECK(t.defined(), what << " expects " << in.type_str << ", got an undefined tensor");
    KILN_USER_CHECK(t.device().is_cpu(),
                    what << " must be a CPU tensor, got one on " << t.device().str());
    if (in.kind != InputSpec::Kind::Tensor) {
      KILN_USER_CHECK(t.dim() == 0, what << " is a scalar (" << in.type_str
                                         << ") and takes a 0-dim tensor, got shape "
                                         << shape_str(t.sizes()));
      bool ok = in.kind == InputSpec::Kind::Bool  ? t.dtype() == DType::Bool
                : in.kind == InputSpec::Kind::Int ? is_integral(t.dtype())
                                                  : t.dtype() != DType::Bool;
      KILN_USER_CHECK(
          ok, what << " is a scalar (" << in.type_str << "), got dtype " << dtype_name(t.dtype()));
      continue;
    }
    KILN_USER_CHECK(t.dtype() == in.dtype, what << ": expected dtype " << dtype_name(in.dtype)
                                                << " (" << in.type_str << "), got "
                                                << dtype_name(t.dtype()));
    KILN_USER_CHECK(t.dim() == int64_t(in.dims.size()),
                    what << ": expected rank " << in.dims.size() << " (" << in.type_str
                         << "), got rank " << t.dim() << " (shape " << shape_str(t.sizes()) << ")");
    for (size_t d = 0; d < in.dims.size(); ++d) {
      const InputSpec::DimSpec& dim = in.dims[d];
      int64_t actual = t.sizes()[d];
      if (dim.symbol < 0) {
        KILN_USER_CHECK(dim.value == actual, what << ": expected shape " << dims_text(in, symbols_)
                                                  << ", got " << shape_str(t.sizes()) << " (dim "
                                                  << d << " differs)");
        continue;
      }
      size_t s = size_t(dim.symbol);
      if (bound_by[s] < 0) {
        sym[s] = actual;
        bound_by[s] = int(i);
        continue;
      }
      KILN_USER_CHECK(sym[s] == actual, name_ << ": dim " << symbols_[s] << " bound to " << sym[s]
                                              << " by input '" << inputs_[size_t(bound_by[s])].name
                                              << "' but " << actual << " by input '" << in.name
                                              << "'");
    }
  }
  for (size_t s = 0; s < sym.size(); ++s) {
    KILN_INTERNAL_CHECK(bound_by[s] >= 0, "symbol " << symbols_[s] << " is bound by no input");
  }
  return sym;
}

std::vector<Tensor> Executable::run(const std::vector<Tensor>& inputs,
                                    ExecutableStats* stats) const {
  KILN_INTERNAL_CHECK(finalized_, "Executable::run before finalize()");
  std::vector<int64_t> sym = bind_inputs(inputs);
  ExecutableStats local;

  std::vector<Tensor> slot_values(slots_.size());
  for (size_t i = 0; i < slots_.size(); ++i) {
    const Slot& s = slots_[i];
    if (s.kind == Slot::Kind::Input) slot_values[i] = inputs[size_t(s.input)];
    if (s.kind == Slot::Kind::Constant) slot_values[i] = s.constant;
  }
  // Memory of buffers that died earlier in this call, for later buffers to reuse.
  std::vector<std::shared_ptr<Storage>> free_list;
  auto allocate = [&](const Slot& s) {
    Shape shape;
    for (const SizeExpr& e : s.shape) {
      int64_t v = e.eval(sym);
      KILN_INTERNAL_CHECK(
          v >= 0, "buffer " << s.name << " gets negative dim " << v << " from " << e.str(symbols_));
      shape.push_back(v);
    }
    size_t nbytes = size_t(shape_numel(shape)) * dtype_size(s.dtype);
    // Best fit among dead buffers: the smallest that is large enough.
    auto best = free_list.end();
    for (auto it = free_list.begin(); it != free_list.end(); ++it) {
      if ((*it)->nbytes() >= nbytes &&
          (best == free_list.end() || (*it)->nbytes() < (*best)->nbytes()))
        best = it;
    }
    std::shared_ptr<Storage> storage;
    if (best != free_list.end()) {
      storage = std::move(*best);
      free_list.erase(best);
      ++local.reused_buffers;
    } else {
      storage = CachingAllocator::global().allocate(nbytes);
      ++local.allocated_buffers;
      local.allocated_bytes += int64_t(nbytes);
    }
    return Tensor(std::move(storage), s.dtype, shape, contiguous_strides(shape));
  };

  std::vector<void*> ptrs;
  std::vector<Tensor> args;
  std::vector<int64_t> scalars;
  std::vector<bool> is_output(slots_.size(), false);
  for (int o : outputs_) {
    if (o >= 0) is_output[size_t(o)] = true;
  }
  int64_t live_intermediates = 0;
  auto intermediate_bytes = [&](int s) -> int64_t {
    const Tensor& t = slot_values[size_t(s)];
    return is_output[size_t(s)] || !t.defined() ? 0 : t.numel() * int64_t(dtype_size(t.dtype()));
  };
  for (size_t k = 0; k < launches_.size(); ++k) {
    const Launch& l = launches_[k];
    for (int s : defs_at_[k]) {
      slot_values[size_t(s)] = allocate(slots_[size_t(s)]);
      live_intermediates += intermediate_bytes(s);
    }
    local.peak_intermediate_bytes = std::max(local.peak_intermediate_bytes, live_intermediates);
    bool all_empty = true, any_written = false;
    args.clear();
    ptrs.clear();
    for (const Launch::Arg& a : l.args) {
      const Tensor& t = slot_values[size_t(a.slot)];
      if (a.written) {
        any_written = true;
        all_empty = all_empty && t.numel() == 0;
      }
      args.push_back(a.packed && !t.is_contiguous() ? t.contiguous() : t);
      ptrs.push_back(args.back().data_ptr());
    }
    if (any_written && all_empty) {
      ++local.skipped;
    } else {
      scalars.clear();
      for (const ScalarRecipe& r : l.scalars) {
        switch (r.kind) {
          case ScalarRecipe::Kind::Symbol:
            scalars.push_back(sym[size_t(r.index)]);
            break;
          case ScalarRecipe::Kind::Stride: {
            const Tensor& t = args[size_t(r.index)];
            // A 0-dim view of a higher-rank kernel shape cannot happen; a dim beyond the
            // tensor's rank means the lowering and the plan disagree.
            KILN_INTERNAL_CHECK(r.dim < t.dim(), "launch " << l.name << " stride of dim " << r.dim
                                                           << " of a rank-" << t.dim()
                                                           << " buffer");
            scalars.push_back(t.strides()[size_t(r.dim)]);
            break;
          }
          case ScalarRecipe::Kind::InputValue:
            scalars.push_back(pack_value(inputs[size_t(r.index)], r.dtype));
            break;
        }
      }
      if (l.entry) {
        l.entry(ptrs.data(), scalars.data());
      } else {
        l.launcher(args, scalars);
      }
      ++local.launches;
    }
    args.clear();  // drop this launch's references so dead buffers are free to reuse
    for (int s : frees_at_[k]) {
      live_intermediates -= intermediate_bytes(s);
      Tensor& t = slot_values[size_t(s)];
      if (t.storage() && t.storage().use_count() == 1) free_list.push_back(t.storage());
      t = Tensor();
    }
  }

  std::vector<Tensor> out;
  out.reserve(outputs_.size());
  for (int o : outputs_) out.push_back(o < 0 ? Tensor() : slot_values[size_t(o)]);
  if (stats) *stats = local;
  return out;
}

// ------------------------------------------------------------------------------- describe

std::string Executable::describe() const {
  std::ostringstream os;
  os << "executable " << name_ << "\n";
  for (size_t i = 0; i < slots_.size(); ++i) {
    const Slot& s = slots_[i];
    os << "  slot " << i << " " << s.name << ": ";
    switch (s.kind) {
      case Slot::Kind::Input: {
        const InputSpec& in = inputs_[size_t(s.input)];
        os << "input " << s.input << " "
           << (in.kind == InputSpec::Kind::Tensor ? in.type_str : std::string(kind_name(in.kind)));
        break;
      }
      case Slot::Kind::Constant:
        os << "constant " << dtype_name(s.constant.dtype()) << shape_str(s.constant.sizes());
        break;
      case Slot::Kind::Planned: {
        os << dtype_name(s.dtype) << "[";
        for (size_t d = 0; d < s.shape.size(); ++d) {
          os << (d ? ", " : "") << s.shape[d].str(symbols_);
        }
        os << "]";
        if (finalized_ && first_use_[i] >= 0) {
          os << " live " << first_use_[i] << "..";
          if (last_use_[i] == std::numeric_limits<int>::max()) {
            os << "end";
          } else {
            os << last_use_[i];
          }
        }
        break;
      }
    }
    os << "\n";
  }
  for (size_t k = 0; k < launches_.size(); ++k) {
    const Launch& l = launches_[k];
    os << "  launch " << k << " " << l.name << "(";
    for (size_t a = 0; a < l.args.size(); ++a) {
      os << (a ? ", " : "") << (l.args[a].written ? "out " : "") << "slot " << l.args[a].slot;
    }
    os << "; ";
    for (size_t r = 0; r < l.scalars.size(); ++r) {
      const ScalarRecipe& s = l.scalars[r];
      os << (r ? ", " : "");
      switch (s.kind) {
        case ScalarRecipe::Kind::Symbol:
          os << symbols_[size_t(s.index)];
          break;
        case ScalarRecipe::Kind::Stride:
          os << "stride(arg " << s.index << ", " << s.dim << ")";
          break;
        case ScalarRecipe::Kind::InputValue:
          os << "value(input " << s.index << " as " << dtype_name(s.dtype) << ")";
          break;
      }
    }
    os << ")\n";
  }
  os << "  outputs:";
  for (int o : outputs_) os << " " << (o < 0 ? std::string("none") : "slot " + std::to_string(o));
  os << "\n";
  return os.str();
}

}  // namespace kiln::runtime
