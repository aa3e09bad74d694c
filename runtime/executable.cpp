// Executable: finalize() (live ranges, and the copy slots where a launch
// reads a slot living on another device), input checking and symbol binding,
// the per-call buffer plan (planned and copy slots are filled at their first
// launch and their memory goes back to a per-call free list, per device,
// after their last one, so later buffers reuse it), scalar recipes, the
// launch loop and the output copies. See executable.h.
#include "runtime/executable.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <sstream>

#include "kiln/element.h"
#include "kiln/error.h"
#include "runtime/kernel_status.h"

namespace kiln::runtime {

// ------------------------------------------------------------------------------- kernels

void HostKernel::launch(std::span<const Tensor> buffers, std::span<const int64_t> scalars,
                        const LaunchConfig&) const {
  // Kernels take a handful of buffers: the pointer array stays on the stack.
  // One more slot: the status word (runtime/kernel_status.h), which kernels
  // without checks never read.
  constexpr size_t kInline = 32;
  void* inline_ptrs[kInline];
  std::vector<void*> many;
  void** ptrs = inline_ptrs;
  if (buffers.size() + 1 > kInline) {
    many.resize(buffers.size() + 1);
    ptrs = many.data();
  }
  for (size_t i = 0; i < buffers.size(); ++i) ptrs[i] = buffers[i].data_ptr();
  int32_t status = 0;
  ptrs[buffers.size()] = &status;
  entry_(ptrs, scalars.data());
  if (status != 0) raise_kernel_status(status);
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

void Executable::drop_derived_slots() {
  slots_.resize(declared_slots_);
  finalized_ = false;
}

void Executable::add_input(InputSpec spec) {
  drop_derived_slots();
  KILN_INTERNAL_CHECK(slots_.size() == inputs_.size(), "inputs must be added before other slots");
  Slot s;
  s.kind = Slot::Kind::Input;
  s.name = spec.name;
  s.input = int(inputs_.size());
  s.dtype = spec.dtype;
  inputs_.push_back(std::move(spec));
  slots_.push_back(std::move(s));
  declared_slots_ = slots_.size();
}

int Executable::add_slot(Slot slot) {
  drop_derived_slots();
  KILN_INTERNAL_CHECK(slot.kind != Slot::Kind::Input, "input slots come from add_input");
  KILN_INTERNAL_CHECK(slot.kind != Slot::Kind::Copy, "copy slots are made by finalize()");
  slots_.push_back(std::move(slot));
  declared_slots_ = slots_.size();
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

namespace {
constexpr int kNever = -1, kForever = std::numeric_limits<int>::max();
}  // namespace

// The slot holding `source`'s data on `device` for `launch`, the first reader
// there or a later one: a constant is uploaded now; anything else gets a Copy
// slot that run() fills before the first reader.
int Executable::derived_slot(int source, Device device, int launch) {
  for (size_t s = declared_slots_; s < slots_.size(); ++s) {
    if (slots_[s].source == source && slots_[s].device == device) return int(s);
  }
  const Slot& src = slots_[size_t(source)];
  Slot d;
  d.name = src.name;
  d.device = device;
  d.source = source;
  if (src.kind == Slot::Kind::Constant) {
    d.kind = Slot::Kind::Constant;
    d.dtype = src.constant.dtype();
    d.constant = src.constant.to(device);  // once, for every call
  } else {
    KILN_INTERNAL_CHECK(src.kind != Slot::Kind::Planned || first_use_[size_t(source)] != kNever,
                        "launch " << launches_[size_t(launch)].name << " reads " << src.name
                                  << " before any launch writes it");
    d.kind = Slot::Kind::Copy;
    d.dtype = src.dtype;
    // The copy is made from the source at the first reader's launch.
    last_use_[size_t(source)] = std::max(last_use_[size_t(source)], launch);
  }
  slots_.push_back(std::move(d));
  first_use_.push_back(kNever);
  last_use_.push_back(kNever);
  return int(slots_.size()) - 1;
}

void Executable::finalize() {
  drop_derived_slots();
  const int n = int(slots_.size());
  first_use_.assign(size_t(n), kNever);
  last_use_.assign(size_t(n), kNever);
  arg_slots_.assign(launches_.size(), {});
  host_reads_input_.assign(inputs_.size(), false);
  has_device_launches_ = false;
  for (const InputSpec& in : inputs_) {
    for (const InputSpec::DimSpec& d : in.dims) {
      KILN_INTERNAL_CHECK(d.symbol < int(symbols_.size()), "input " << in.name << " symbol slot");
    }
  }
  for (const Slot& s : slots_) {
    for (const SizeExpr& e : s.shape) e.validate(symbols_.size());
    if (s.kind == Slot::Kind::Constant) {
      KILN_INTERNAL_CHECK(s.device.is_cpu() && s.constant.device().is_cpu(),
                          "constant " << s.name << " must live on the host");
    }
    if (s.kind == Slot::Kind::Planned && !s.device.is_cpu()) device_runtime(s.device);
  }
  for (size_t k = 0; k < launches_.size(); ++k) {
    const Launch& l = launches_[k];
    KILN_INTERNAL_CHECK(l.kernel, "launch " << l.name << " has no kernel");
    if (!l.device.is_cpu()) {
      device_runtime(l.device);  // kiln::Error saying why when it is unavailable
      has_device_launches_ = true;
      for (const SizeExpr& e : l.grid) e.validate(symbols_.size());
      for (const SizeExpr& e : l.block) e.validate(symbols_.size());
      l.shared_bytes.validate(symbols_.size());
    }
    for (const Launch::Arg& a : l.args) {
      KILN_INTERNAL_CHECK(a.slot >= 0 && a.slot < n, "launch " << l.name << " slot " << a.slot);
      const Slot& s = slots_[size_t(a.slot)];
      KILN_INTERNAL_CHECK(
          !a.written || s.kind == Slot::Kind::Planned,
          "launch " << l.name << " writes slot " << s.name << ", which the plan does not own");
      KILN_INTERNAL_CHECK(!a.written || s.device == l.device,
                          "launch " << l.name << " on " << l.device.str() << " writes slot "
                                    << s.name << ", which lives on " << s.device.str());
      int slot = a.slot;
      if (s.device != l.device) {
        slot = derived_slot(a.slot, l.device, int(k));  // may move slots_: `s` is dead
      } else if (s.kind == Slot::Kind::Input) {
        host_reads_input_[size_t(s.input)] = true;
      }
      arg_slots_[k].push_back(slot);
      if (first_use_[size_t(slot)] == kNever) {
        KILN_INTERNAL_CHECK(slots_[size_t(slot)].kind != Slot::Kind::Planned || a.written,
                            "launch " << l.name << " reads " << slots_[size_t(slot)].name
                                      << " before any launch writes it");
        first_use_[size_t(slot)] = int(k);
      }
      last_use_[size_t(slot)] = int(k);
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
          host_reads_input_[size_t(r.index)] = true;  // the host packs its value
          break;
        case ScalarRecipe::Kind::Constant:
          break;
      }
    }
  }
  // A copy is made once, at its first reader: the source must not change after.
  for (size_t c = size_t(n); c < slots_.size(); ++c) {
    if (slots_[c].kind != Slot::Kind::Copy) continue;
    for (size_t k = size_t(first_use_[c]); k < launches_.size(); ++k) {
      for (const Launch::Arg& a : launches_[k].args) {
        KILN_INTERNAL_CHECK(!a.written || a.slot != slots_[c].source,
                            "launch " << launches_[k].name << " writes " << slots_[c].name
                                      << " after its copy to " << slots_[c].device.str());
      }
    }
  }
  const int total = int(slots_.size());
  is_output_.assign(size_t(total), false);
  for (int o : outputs_) {
    KILN_INTERNAL_CHECK(o >= -1 && o < n, "output slot " << o);
    if (o < 0) continue;
    is_output_[size_t(o)] = true;
    if (slots_[size_t(o)].kind != Slot::Kind::Planned) continue;
    KILN_INTERNAL_CHECK(first_use_[size_t(o)] != kNever,
                        "output " << slots_[size_t(o)].name << " is never written");
    last_use_[size_t(o)] = kForever;
  }
  defs_at_.assign(launches_.size(), {});
  frees_at_.assign(launches_.size(), {});
  for (int s = 0; s < total; ++s) {
    Slot::Kind kind = slots_[size_t(s)].kind;
    if ((kind != Slot::Kind::Planned && kind != Slot::Kind::Copy) ||
        first_use_[size_t(s)] == kNever)
      continue;
    defs_at_[size_t(first_use_[size_t(s)])].push_back(s);
    if (last_use_[size_t(s)] != kForever) frees_at_[size_t(last_use_[size_t(s)])].push_back(s);
  }
  max_launch_args_ = max_launch_scalars_ = 0;
  for (const Launch& l : launches_) {
    max_launch_args_ = std::max(max_launch_args_, l.args.size());
    max_launch_scalars_ = std::max(max_launch_scalars_, l.scalars.size());
  }
  finalized_ = true;
}

// ------------------------------------------------------------------------------- running

namespace {

// Whether a launch must get a packed copy of `t` instead of `t` itself: the
// kernel reads it row-major, or through strides with the innermost taken to
// be 1 (an innermost dim of size 1 is never stepped along; an empty view is
// never read).
bool needs_packed_copy(const Launch::Arg& arg, const Tensor& t) {
  if (arg.packed) return !t.is_contiguous();
  if (!arg.unit_inner || t.dim() == 0 || t.numel() == 0) return false;
  return t.sizes().back() > 1 && t.strides().back() != 1;
}

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
    // Built only for an error message: a string per input per call was a
    // measurable part of a small call.
    auto what = [&] { return name_ + ": input '" + in.name + "'"; };
    if (in.kind == InputSpec::Kind::None) continue;
    KILN_USER_CHECK(t.defined(), what() << " expects " << in.type_str << ", got an undefined tensor");
    if (!t.device().is_cpu()) {
      std::string why = device_unavailable_reason(t.device());
      KILN_USER_CHECK(why.empty(), what() << " lives on " << t.device().str()
                                        << ", which is unavailable: " << why);
    }
    if (in.kind != InputSpec::Kind::Tensor) {
      KILN_USER_CHECK(t.dim() == 0, what() << " is a scalar (" << in.type_str
                                         << ") and takes a 0-dim tensor, got shape "
                                         << shape_str(t.sizes()));
      bool ok = in.kind == InputSpec::Kind::Bool  ? t.dtype() == DType::Bool
                : in.kind == InputSpec::Kind::Int ? is_integral(t.dtype())
                                                  : t.dtype() != DType::Bool;
      KILN_USER_CHECK(
          ok, what() << " is a scalar (" << in.type_str << "), got dtype " << dtype_name(t.dtype()));
      continue;
    }
    KILN_USER_CHECK(t.dtype() == in.dtype, what() << ": expected dtype " << dtype_name(in.dtype)
                                                << " (" << in.type_str << "), got "
                                                << dtype_name(t.dtype()));
    KILN_USER_CHECK(t.dim() == int64_t(in.dims.size()),
                    what() << ": expected rank " << in.dims.size() << " (" << in.type_str
                         << "), got rank " << t.dim() << " (shape " << shape_str(t.sizes()) << ")");
    for (size_t d = 0; d < in.dims.size(); ++d) {
      const InputSpec::DimSpec& dim = in.dims[d];
      int64_t actual = t.sizes()[d];
      if (dim.symbol < 0) {
        KILN_USER_CHECK(dim.value == actual, what() << ": expected shape " << dims_text(in, symbols_)
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

std::string Executable::slot_origin(int slot) const {
  const Slot& s = slots_[size_t(slot)];
  if (s.source >= 0) return slot_origin(s.source);
  return s.kind == Slot::Kind::Input ? "input '" + s.name + "'" : "buffer " + s.name;
}

namespace {
// Installs a profile as the pool's chunk observer for one call, and restores
// the previous observer however the call ends.
class ObserverScope {
 public:
  explicit ObserverScope(RunProfile* profile)
      : on_(profile != nullptr), previous_(on_ ? set_chunk_observer(profile) : nullptr) {}
  ~ObserverScope() {
    if (on_) set_chunk_observer(previous_);
  }
  ObserverScope(const ObserverScope&) = delete;
  ObserverScope& operator=(const ObserverScope&) = delete;

 private:
  bool on_;
  ChunkObserver* previous_;
};

int64_t tensor_bytes(const Tensor& t) {
  return t.defined() ? t.numel() * int64_t(dtype_size(t.dtype())) : 0;
}
}  // namespace

std::vector<Tensor> Executable::run(const std::vector<Tensor>& inputs, ExecutableStats* stats,
                                    RunProfile* profile) const {
  KILN_INTERNAL_CHECK(finalized_, "Executable::run before finalize()");
  if (profile) {
    profile->launches.clear();
    profile->chunks.clear();
    profile->launches.reserve(launches_.size());
    profile->begin_ns = now_ns();
  }
  ObserverScope observing(profile);
  std::vector<int64_t> sym = bind_inputs(inputs);
  ExecutableStats local;

  std::vector<Tensor> slot_values(slots_.size());
  for (size_t i = 0; i < slots_.size(); ++i) {
    const Slot& s = slots_[i];
    if (s.kind == Slot::Kind::Input) slot_values[i] = inputs[size_t(s.input)];
    if (s.kind == Slot::Kind::Constant) slot_values[i] = s.constant;
  }
  // Memory of buffers that died earlier in this call, for later buffers (on
  // the same device) to reuse.
  std::vector<std::shared_ptr<Storage>> free_list;
  auto acquire = [&](Device device, size_t nbytes) {
    // Best fit among dead buffers: the smallest that is large enough.
    auto best = free_list.end();
    for (auto it = free_list.begin(); it != free_list.end(); ++it) {
      if ((*it)->device() == device && (*it)->nbytes() >= nbytes &&
          (best == free_list.end() || (*it)->nbytes() < (*best)->nbytes()))
        best = it;
    }
    std::shared_ptr<Storage> storage;
    if (best != free_list.end()) {
      storage = std::move(*best);
      free_list.erase(best);
      ++local.reused_buffers;
    } else {
      storage = device_runtime(device).allocate(nbytes);
      ++local.allocated_buffers;
      local.allocated_bytes += int64_t(nbytes);
    }
    return storage;
  };
  auto allocate = [&](const Slot& s) {
    Shape shape;
    shape.reserve(s.shape.size());
    for (const SizeExpr& e : s.shape) {
      int64_t v = e.eval(sym);
      KILN_INTERNAL_CHECK(
          v >= 0, "buffer " << s.name << " gets negative dim " << v << " from " << e.str(symbols_));
      shape.push_back(v);
    }
    size_t nbytes = 0;
    try {
      nbytes = shape_nbytes(shape, s.dtype);
    } catch (const Error& e) {
      KILN_USER_ERROR(name_ << ": buffer " << s.name << ": " << e.what());
    }
    return Tensor(acquire(s.device, nbytes), s.dtype, shape, contiguous_strides(shape));
  };
  // A packed copy of `t` (the data of `slot`) on `device`. Only the host packs
  // strided views.
  auto copy_to = [&](const Tensor& t, Device device, int slot) {
    Tensor src = t;
    if (!src.is_contiguous()) {
      KILN_USER_CHECK(src.device().is_cpu(),
                      name_ << ": " << slot_origin(slot) << " is a non-contiguous view on "
                            << src.device().str() << ", which Kiln cannot pack there to copy it to "
                            << device.str() << "; pass a contiguous tensor");
      src = src.contiguous();
    }
    size_t nbytes = size_t(src.numel()) * src.element_size();
    Tensor out(acquire(device, nbytes), src.dtype(), src.sizes(), contiguous_strides(src.sizes()));
    // An empty view's offset may lie past its storage: nothing to copy then.
    if (nbytes > 0) {
      copy_bytes(*out.storage(), 0, *src.storage(),
                 size_t(src.storage_offset()) * src.element_size(), nbytes);
    }
    ++local.copies;
    local.copied_bytes += int64_t(nbytes);
    return out;
  };

  // Inputs the host reads in place (host kernels, scalar values) come to the host.
  for (size_t i = 0; i < inputs_.size(); ++i) {
    const Tensor& t = inputs[i];
    if (host_reads_input_[i] && t.defined() && !t.device().is_cpu()) {
      slot_values[i] = copy_to(t, Device::cpu(), int(i));
    }
  }

  // Copies read the caller's input, not a host copy made for host kernels.
  auto copy_source = [&](const Slot& copy) -> const Tensor& {
    const Slot& src = slots_[size_t(copy.source)];
    return src.kind == Slot::Kind::Input ? inputs[size_t(src.input)]
                                         : slot_values[size_t(copy.source)];
  };
  std::vector<Tensor> args;
  std::vector<int64_t> scalars;
  std::vector<Tensor> packed_inputs;  // per slot, sized and made on first need
  args.reserve(max_launch_args_);
  scalars.reserve(max_launch_scalars_);
  int64_t live_intermediates = 0;
  auto intermediate_bytes = [&](int s) -> int64_t {
    const Slot& slot = slots_[size_t(s)];
    const Tensor& t = slot_values[size_t(s)];
    if (is_output_[size_t(s)] || !t.defined()) return 0;
    // A copy that is its source (already on the device) holds no memory of its own.
    if (slot.kind == Slot::Kind::Copy && t.storage() == copy_source(slot).storage()) return 0;
    return t.numel() * int64_t(dtype_size(t.dtype()));
  };
  const LaunchConfig host_config;
  for (size_t k = 0; k < launches_.size(); ++k) {
    const Launch& l = launches_[k];
    for (int s : defs_at_[k]) {
      const Slot& slot = slots_[size_t(s)];
      if (slot.kind == Slot::Kind::Planned) {
        slot_values[size_t(s)] = allocate(slot);
      } else {
        const Tensor& from = copy_source(slot);
        slot_values[size_t(s)] =
            from.device() == slot.device ? from : copy_to(from, slot.device, s);
      }
      live_intermediates += intermediate_bytes(s);
    }
    local.peak_intermediate_bytes = std::max(local.peak_intermediate_bytes, live_intermediates);
    bool all_empty = true, any_written = false;
    args.clear();
    for (size_t a = 0; a < l.args.size(); ++a) {
      const Launch::Arg& arg = l.args[a];
      const int s = arg_slots_[k][a];
      const Tensor& t = slot_values[size_t(s)];
      if (arg.written) {
        any_written = true;
        all_empty = all_empty && t.numel() == 0;
      }
      if (needs_packed_copy(arg, t)) {
        // Only inputs can be strided, and only the host packs.
        KILN_USER_CHECK(l.device.is_cpu(),
                        name_ << ": " << slot_origin(s) << " is a non-contiguous view on "
                              << l.device.str() << ", and kernel " << l.name
                              << " needs it packed, which Kiln cannot do there; pass a "
                                 "contiguous tensor");
        // Packed once per call, however many kernels read it.
        if (packed_inputs.empty()) packed_inputs.resize(slots_.size());
        Tensor& copy = packed_inputs[size_t(s)];
        if (!copy.defined()) {
          copy = t.contiguous();
          ++local.copies;
          local.copied_bytes += copy.numel() * int64_t(dtype_size(copy.dtype()));
        }
        args.push_back(copy);
      } else {
        args.push_back(t);
      }
      KILN_INTERNAL_CHECK(args.back().device() == l.device,
                          "launch " << l.name << " on " << l.device.str() << " gets "
                                    << slots_[size_t(s)].name << " on "
                                    << args.back().device().str());
    }
    LaunchTiming* timing = nullptr;
    if (profile) {
      profile->launches.push_back(LaunchTiming{int(k), any_written && all_empty, 0, 0, 0, 0});
      timing = &profile->launches.back();
      for (size_t a = 0; a < l.args.size(); ++a) {
        (l.args[a].written ? timing->bytes_written : timing->bytes_read) += tensor_bytes(args[a]);
      }
      profile->set_launch(int(k));
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
            scalars.push_back(pack_value(slot_values[size_t(r.index)], r.dtype));
            break;
          case ScalarRecipe::Kind::Constant:
            scalars.push_back(r.value);
            break;
        }
      }
      if (timing) timing->begin_ns = now_ns();
      if (l.device.is_cpu()) {
        l.kernel->launch(args, scalars, host_config);
      } else {
        LaunchConfig config;
        for (int d = 0; d < 3; ++d) {
          config.grid[d] = l.grid[size_t(d)].eval(sym);
          config.block[d] = l.block[size_t(d)].eval(sym);
          KILN_INTERNAL_CHECK(config.grid[d] >= 1 && config.block[d] >= 1,
                              "launch " << l.name << " gets grid " << config.grid[d]
                                        << " and block " << config.block[d] << " in dim " << d);
        }
        config.shared_bytes = l.shared_bytes.eval(sym);
        KILN_INTERNAL_CHECK(config.shared_bytes >= 0, "launch " << l.name << " gets "
                                                                << config.shared_bytes
                                                                << " bytes of shared memory");
        l.kernel->launch(args, scalars, config);
        // Timed to the kernel's end, not to its queueing.
        if (timing) device_runtime(l.device).synchronize(config.stream);
      }
      if (timing) timing->end_ns = now_ns();
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

  // Outputs go where the caller's data lives: the first tensor input's device.
  Device want = Device::cpu();
  for (size_t i = 0; i < inputs_.size(); ++i) {
    if (inputs_[i].kind == InputSpec::Kind::Tensor && inputs[i].defined()) {
      want = inputs[i].device();
      break;
    }
  }
  std::vector<Tensor> out;
  out.reserve(outputs_.size());
  for (size_t i = 0; i < outputs_.size(); ++i) {
    const int o = outputs_[i];
    if (o < 0) {
      out.emplace_back();
      continue;
    }
    const Slot& s = slots_[size_t(o)];
    const Tensor& t =
        s.kind == Slot::Kind::Input ? inputs[size_t(s.input)] : slot_values[size_t(o)];
    if (!t.defined() || t.device() == want) {
      out.push_back(t);
      continue;
    }
    // One copy per slot, so an output listed twice stays one tensor.
    auto same = std::find(outputs_.begin(), outputs_.begin() + ptrdiff_t(i), o);
    out.push_back(same != outputs_.begin() + ptrdiff_t(i) ? out[size_t(same - outputs_.begin())]
                                                          : copy_to(t, want, o));
  }
  if (stats) *stats = local;
  if (profile) profile->end_ns = now_ns();
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
        if (s.source >= 0) os << " on " << s.device.str() << " (upload of slot " << s.source << ")";
        break;
      case Slot::Kind::Planned:
      case Slot::Kind::Copy: {
        if (s.kind == Slot::Kind::Copy) {
          os << "copy of slot " << s.source << " to " << s.device.str();
        } else {
          os << dtype_name(s.dtype) << "[";
          for (size_t d = 0; d < s.shape.size(); ++d) {
            os << (d ? ", " : "") << s.shape[d].str(symbols_);
          }
          os << "]";
          if (!s.device.is_cpu()) os << " on " << s.device.str();
        }
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
      int slot = finalized_ ? arg_slots_[k][a] : l.args[a].slot;
      os << (a ? ", " : "") << (l.args[a].written ? "out " : "") << "slot " << slot;
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
        case ScalarRecipe::Kind::Constant:
          os << s.value;
          break;
      }
    }
    os << ")";
    if (!l.device.is_cpu()) {
      auto extents = [&](const std::array<SizeExpr, 3>& e) {
        return "[" + e[0].str(symbols_) + ", " + e[1].str(symbols_) + ", " + e[2].str(symbols_) +
               "]";
      };
      os << " on " << l.device.str() << " grid " << extents(l.grid) << " block " << extents(l.block)
         << " shared " << l.shared_bytes.str(symbols_);
    }
    os << "\n";
  }
  os << "  outputs:";
  for (int o : outputs_) os << " " << (o < 0 ? std::string("none") : "slot " + std::to_string(o));
  if (has_device_launches_) os << " (returned on the device of the first tensor input)";
  os << "\n";
  return os.str();
}

}  // namespace kiln::runtime
