#include "python/src/scripted.h"

#include <nanobind/ndarray.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>

#include <array>
#include <cstring>
#include <deque>
#include <optional>

#include "python/src/convert.h"
#include "python/src/errors.h"

namespace kiln::python {

namespace {

[[noreturn]] void argument_error(const std::string& msg);
void argument_error(const std::string& msg) {
  throw PyError(ErrorKind::Argument, msg);
}

std::string py_type_name(nb::handle h) {
  return nb::cast<std::string>(nb::handle(h.type()).attr("__name__"));
}

// A Python number, string, None or list of numbers as a script constant.
Attr to_attr(nb::handle v, const ScriptParam& p) {
  if (v.is_none()) return Attr();
  if (PyBool_Check(v.ptr())) return Attr(v.ptr() == Py_True);
  if (PyLong_Check(v.ptr())) {
    int overflow = 0;
    const long long i = PyLong_AsLongLongAndOverflow(v.ptr(), &overflow);
    if (overflow) argument_error("argument '" + p.name + "': integer does not fit in int64");
    return Attr(int64_t(i));
  }
  if (PyFloat_Check(v.ptr())) return Attr(PyFloat_AsDouble(v.ptr()));
  if (PyUnicode_Check(v.ptr())) return Attr(nb::cast<std::string>(v));
  if (PyList_Check(v.ptr()) || PyTuple_Check(v.ptr())) {
    std::vector<int64_t> ints;
    std::vector<double> floats;
    bool all_int = true;
    for (nb::handle item : v) {
      if (PyLong_Check(item.ptr()) && !PyBool_Check(item.ptr())) {
        ints.push_back(nb::cast<int64_t>(item));
        floats.push_back(double(ints.back()));
      } else if (PyFloat_Check(item.ptr())) {
        all_int = false;
        floats.push_back(PyFloat_AsDouble(item.ptr()));
      } else {
        argument_error("argument '" + p.name + "': a list of numbers was expected, got an item of type " +
                       py_type_name(item));
      }
    }
    return all_int ? Attr(std::move(ints)) : Attr(std::move(floats));
  }
  // Hand a numpy/torch scalar (np.float32(2), a 0-d tensor) for a number over as its value.
  if (nb::hasattr(v, "item") && nb::hasattr(v, "ndim") && nb::cast<int64_t>(v.attr("ndim")) == 0) {
    return to_attr(v.attr("item")(), p);
  }
  argument_error("argument '" + p.name + "' (" + p.annotation + "): cannot pass a " + py_type_name(v));
}

void append_key(std::string& key, const void* p, size_t n) {
  key.append(static_cast<const char*>(p), n);
}

}  // namespace

std::atomic<bool>& trace_inputs() {
  static std::atomic<bool> on{false};
  return on;
}

std::vector<uintptr_t>& last_input_pointers() {
  thread_local std::vector<uintptr_t> ptrs;
  return ptrs;
}

struct ScriptedFunction::Prepared {
  bool with_bindings = false;  // build Bindings too (only to compile a new signature)
  std::vector<nb::handle> given;  // the argument of each parameter (invalid: default)
  // NumPy buffers held for the call: the first few inline (a std::deque
  // allocates even when empty, twice per call), the rest in `more`.
  std::array<HeldBuffer, 4> few;
  size_t few_used = 0;
  std::optional<std::deque<HeldBuffer>> more;
  HeldBuffer& next_buffer() {
    if (few_used < few.size()) return few[few_used++];
    if (!more) more.emplace();
    return more->emplace_back();
  }
  std::string key;
  std::vector<Binding> bindings;
  std::vector<Tensor> inputs;
  std::vector<nb::handle> input_objects;  // the Python object behind each input
  std::vector<nb::object> keep;           // arrays made here for NumPy scalars
  ArrayKind kind = ArrayKind::NumPy;
  bool kind_set = false;
};

ScriptedFunction::ScriptedFunction(std::string fn, CompileOptions options, DynamicDims dynamic)
    : fn_(std::move(fn)),
      options_(std::move(options)),
      dynamic_given_(std::move(dynamic)) {}

void ScriptedFunction::load() {
  if (loaded_) return;
  // Another thread may be loading: the GIL serializes the callback, mu_ the state.
  nb::object text = nb::find(this).attr("_source_text")();
  auto [source, filename] = nb::cast<std::pair<std::string, std::string>>(text);
  Script script;
  {
    nb::gil_scoped_release release;
    script = Script::from_source(source, filename);
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (loaded_) return;
  script_ = std::move(script);
  def_ = script_.function(fn_);
  fn_ = def_.name;
  dynamic_.assign(def_.params.size(), {});
  for (auto& [name, dims] : dynamic_given_) {
    size_t i = 0;
    while (i < def_.params.size() && def_.params[i].name != name) ++i;
    if (i == def_.params.size()) {
      argument_error("dynamic=: '" + fn_ + "' has no parameter '" + name + "'");
    }
    dynamic_[i] = dims;
  }
  loaded_ = true;
}

const std::string& ScriptedFunction::filename() {
  load();
  return script_.filename();
}

std::vector<std::string> ScriptedFunction::param_names() {
  load();
  std::vector<std::string> out;
  for (const ScriptParam& p : def_.params) out.push_back(p.name);
  return out;
}

void ScriptedFunction::prepare(nb::args& args, nb::kwargs& kwargs, Prepared& p) const {
  const size_t n = def_.params.size();
  if (args.size() > n) {
    argument_error(fn_ + "() takes " + std::to_string(n) + " argument" + (n == 1 ? "" : "s") +
                   " but " + std::to_string(args.size()) + " were given");
  }
  p.given.assign(n, nb::handle());
  for (size_t i = 0; i < args.size(); ++i) p.given[i] = args[i];
  if (kwargs.size() > 0) {
    for (auto [k, v] : kwargs) {
      const std::string name = nb::cast<std::string>(k);
      size_t i = 0;
      while (i < n && def_.params[i].name != name) ++i;
      if (i == n) argument_error(fn_ + "() got an unexpected keyword argument '" + name + "'");
      if (p.given[i].is_valid()) {
        argument_error(fn_ + "() got multiple values for argument '" + name + "'");
      }
      p.given[i] = v;
    }
  }
  p.key.reserve(16 + 24 * n);
  p.inputs.reserve(n);
  p.input_objects.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    const ScriptParam& param = def_.params[i];
    nb::handle v = p.given[i];
    if (!v.is_valid()) {
      if (!param.has_default) argument_error(fn_ + "() missing required argument '" + param.name + "'");
      p.key += 'd';
      continue;
    }
    auto add_tensor = [&](nb::handle obj, int64_t item) {
      const ArgName what{&param.name, item};
      std::optional<Tensor> t = tensor_from_torch(obj, what);
      if (!t) t = tensor_from_numpy(obj, p.next_buffer(), what);
      if (!t) {
        nb::ndarray<> a;
        if (!nb::try_cast(obj, a, false)) {
          // NumPy scalars (np.float32(2), a[0]) are 0-d arrays to PyTorch users.
          if (nb::hasattr(obj, "dtype") && nb::hasattr(obj, "ndim") &&
              !nb::hasattr(obj, "__dlpack__") && nb::hasattr(obj, "__array__")) {
            nb::object arr = obj.attr("__array__")();
            p.keep.push_back(arr);
            obj = arr;
          }
          if (!nb::try_cast(obj, a, false)) {
            argument_error(what.str() + " must be a NumPy array, a PyTorch tensor or another array "
                           "with __dlpack__ or the buffer protocol; got " + py_type_name(obj));
          }
        }
        t = tensor_from_array(a, what);
      }
      const int64_t rank = t->dim();
      if (param.declared) {
        // The script's own annotation (Tensor[f32, N, 784]) is a contract.
        const TensorSpec& want = *param.declared;
        if (want.dtype != t->dtype()) {
          throw PyError(ErrorKind::DType, what.str() + ": expected dtype " + dtype_name(want.dtype) +
                                              " (" + want.str() + "), got " + dtype_name(t->dtype()));
        }
        bool fits = int64_t(want.dims.size()) == rank;
        for (int64_t d = 0; fits && d < rank; ++d) {
          fits = !want.dims[size_t(d)].is_static() || want.dims[size_t(d)].value == t->size(d);
        }
        if (!fits) {
          throw PyError(ErrorKind::Shape, what.str() + ": expected shape " + want.str() + ", got " +
                                              shape_str(t->sizes()));
        }
      }
      const uint8_t dt = uint8_t(t->dtype()), r = uint8_t(rank);
      p.key += 'T';
      append_key(p.key, &dt, 1);
      append_key(p.key, &r, 1);
      TensorSpec spec{t->dtype(), {}};
      for (int64_t d = 0; d < rank; ++d) {
        const std::string symbol = symbol_of(i, d, rank);
        if (symbol.empty()) {
          const int64_t s = t->size(d);
          append_key(p.key, &s, sizeof s);
          if (p.with_bindings) spec.dims.push_back(Dim(s));
        } else {
          p.key += '?';
          if (p.with_bindings) spec.dims.push_back(sym(symbol));
        }
      }
      if (!p.kind_set) {
        p.kind = array_kind(obj);
        p.kind_set = true;
      }
      p.inputs.push_back(std::move(*t));
      p.input_objects.push_back(obj);
      return spec;
    };
    if (param.kind == ParamKind::Tensor) {
      if (v.is_none()) {
        p.key += 'n';
        if (p.with_bindings) p.bindings.push_back(bind_value(param.name, Attr()));
        continue;
      }
      TensorSpec spec = add_tensor(v, -1);
      if (p.with_bindings) p.bindings.push_back(bind_tensor(param.name, spec.dtype, spec.dims));
    } else if (param.kind == ParamKind::TensorList) {
      if (!PyList_Check(v.ptr()) && !PyTuple_Check(v.ptr())) {
        argument_error("argument '" + param.name + "' (List[Tensor]) must be a list or tuple of "
                       "arrays, got " + py_type_name(v));
      }
      std::vector<TensorSpec> items;
      int64_t k = 0;
      p.key += 'L';
      for (nb::handle item : v) items.push_back(add_tensor(item, k++));
      p.key += 'l';
      if (p.with_bindings) p.bindings.push_back(bind_tensors(param.name, std::move(items)));
    } else {
      Attr a = to_attr(v, param);
      p.key += 'V';
      p.key += a.str();
      p.key += '\0';
      if (p.with_bindings) p.bindings.push_back(bind_value(param.name, std::move(a)));
    }
  }
}

// The symbol of dim d (of `rank`) of parameter i: declared in the script or
// named by dynamic=; empty when the dim is static.
std::string ScriptedFunction::symbol_of(size_t i, int64_t d, int64_t rank) const {
  const std::map<int64_t, std::string>& dyn = dynamic_[i];
  if (!dyn.empty()) {
    auto it = dyn.find(d);
    if (it == dyn.end()) it = dyn.find(d - rank);
    if (it != dyn.end()) return it->second;
  }
  const ScriptParam& param = def_.params[i];
  if (param.declared && int64_t(param.declared->dims.size()) == rank &&
      !param.declared->dims[size_t(d)].is_static())
    return param.declared->dims[size_t(d)].symbol;
  return {};
}

std::shared_ptr<const Specialization> ScriptedFunction::lookup_or_compile(nb::args& args,
                                                                          nb::kwargs& kwargs,
                                                                          const Prepared& hot) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = cache_.find(hot.key);
    if (it != cache_.end()) {
      last_ = it->second;
      return it->second;
    }
  }
  // A new signature: walk the arguments again, building the bindings.
  Prepared p;
  p.with_bindings = true;
  prepare(args, kwargs, p);
  auto spec = std::make_shared<Specialization>();
  {
    nb::gil_scoped_release release;
    spec->function = script_.lower(fn_, p.bindings);
    spec->compiled = compile(spec->function, options_);
    spec->outputs = spec->compiled.outputs();
  }
  std::lock_guard<std::mutex> lock(mu_);
  auto [it, inserted] = cache_.emplace(p.key, spec);
  last_ = it->second;
  return it->second;
}

std::shared_ptr<const Specialization> ScriptedFunction::specialize(nb::args args, nb::kwargs kwargs) {
  load();
  Prepared p;
  prepare(args, kwargs, p);
  return lookup_or_compile(args, kwargs, p);
}

std::shared_ptr<const Specialization> ScriptedFunction::last() const {
  std::lock_guard<std::mutex> lock(mu_);
  return last_;
}

size_t ScriptedFunction::num_compiled() const {
  std::lock_guard<std::mutex> lock(mu_);
  return cache_.size();
}

nb::object ScriptedFunction::call(nb::args args, nb::kwargs kwargs) {
  if (!loaded_) load();
  Prepared p;
  prepare(args, kwargs, p);
  std::shared_ptr<const Specialization> spec = lookup_or_compile(args, kwargs, p);
  if (trace_inputs().load(std::memory_order_relaxed)) {
    std::vector<uintptr_t>& ptrs = last_input_pointers();
    ptrs.clear();
    for (const Tensor& t : p.inputs) ptrs.push_back(reinterpret_cast<uintptr_t>(t.data_ptr()));
  }
  std::vector<Tensor> outs;
  {
    nb::gil_scoped_release release;
    outs = spec->compiled(p.inputs);
  }
  auto wrap = [&](size_t i) -> nb::object {
    const Tensor& t = outs[i];
    // An output that is an input comes back as the caller's own object.
    for (size_t k = 0; k < p.inputs.size(); ++k) {
      const Tensor& in = p.inputs[k];
      if (t.storage() == in.storage() && t.data_ptr() == in.data_ptr() &&
          t.sizes() == in.sizes() && t.strides() == in.strides() && t.dtype() == in.dtype()) {
        return nb::borrow(p.input_objects[k]);
      }
    }
    if (i < spec->outputs.size() && spec->outputs[i].kind != ValueKind::Tensor &&
        p.kind == ArrayKind::NumPy) {
      switch (spec->outputs[i].kind) {
        case ValueKind::Int: return nb::int_(int64_t(t.get_int({})));
        case ValueKind::Bool: return nb::bool_(t.get_int({}) != 0);
        case ValueKind::Float: return nb::float_(t.item());
        default: break;
      }
    }
    return array_from_tensor(t, p.kind);
  };
  if (outs.size() == 1) return wrap(0);
  nb::list out;
  for (size_t i = 0; i < outs.size(); ++i) out.append(wrap(i));
  return nb::tuple(out);
}

}  // namespace kiln::python
