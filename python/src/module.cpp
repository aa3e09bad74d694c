// kiln._C: the C++ API for Python. python/kiln/__init__.py is the public
// face (decorator, errors, options); this module holds what must be fast or
// must touch Kiln's objects: scripted functions with their per-signature
// cache, compiled functions, the graph builder, the op list.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/variant.h>
#include <nanobind/stl/vector.h>

#include "kiln/kiln.h"
#include "python/src/convert.h"
#include "python/src/errors.h"
#include "python/src/scripted.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace kiln::python {
namespace {

// kiln.errors.make(kind, message) -> exception instance; set at import.
nb::object& error_factory() {
  static nb::object* f = new nb::object();  // leaked: outlives interpreter teardown order
  return *f;
}

void raise(ErrorKind kind, const char* message) {
  nb::object& make = error_factory();
  if (!make.is_valid()) {
    PyErr_SetString(PyExc_RuntimeError, message);
    return;
  }
  nb::object exc = make(error_kind_name(kind), message);
  PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(exc.ptr())), exc.ptr());
}

void translate(const std::exception_ptr& p, void*) {
  try {
    std::rethrow_exception(p);
  } catch (const PyError& e) {
    raise(e.kind, e.what());
  } catch (const InternalError& e) {
    raise(ErrorKind::Internal, e.what());
  } catch (const Error& e) {
    raise(classify(e.what(), false), e.what());
  } catch (const std::bad_alloc&) {
    raise(ErrorKind::Other, "out of memory");
  }
}

// ScriptedFunction's tp_call: a C slot, which kiln.ScriptFunction (a Python
// subclass) inherits as is. A __call__ defined as a method made the subclass's
// calls go through CPython's generic slot_tp_call (an attribute lookup and a
// bound call each time, ~0.2 us of a ~2.5 us call).
PyObject* scripted_call(PyObject* self, PyObject* args, PyObject* kwargs) noexcept {
  try {
    ScriptedFunction* f = nb::inst_ptr<ScriptedFunction>(self);
    nb::kwargs kw = kwargs ? nb::borrow<nb::kwargs>(kwargs) : nb::kwargs();
    return f->call(nb::borrow<nb::args>(args), std::move(kw)).release().ptr();
  } catch (nb::python_error& e) {
    e.restore();
  } catch (const nb::cast_error& e) {
    PyErr_SetString(PyExc_TypeError, e.what());
  } catch (...) {
    try {
      translate(std::current_exception(), nullptr);  // sets the error for Kiln's own exceptions
    } catch (const std::exception& e) {
      PyErr_SetString(PyExc_RuntimeError, e.what());
    } catch (...) {
      PyErr_SetString(PyExc_RuntimeError, "unknown C++ exception");
    }
  }
  return nullptr;
}

PyType_Slot scripted_slots[] = {{Py_tp_call, reinterpret_cast<void*>(scripted_call)}, {0, nullptr}};

DType dtype_arg(nb::handle h) {
  // "float32", "f32", torch.float32, numpy.float32 / np.dtype('float32').
  std::string s;
  if (PyUnicode_Check(h.ptr())) {
    s = nb::cast<std::string>(h);
  } else if (nb::hasattr(h, "is_floating_point")) {  // torch.dtype
    s = nb::cast<std::string>(nb::str(h));
    if (s.rfind("torch.", 0) == 0) s = s.substr(6);
  } else {
    nb::object name = nb::hasattr(h, "name") ? h.attr("name") : nb::str(h);
    if (nb::hasattr(h, "dtype")) name = h.attr("dtype").attr("name");  // numpy scalar types
    s = nb::cast<std::string>(nb::str(name));
  }
  std::optional<DType> t = parse_dtype(s);
  if (!t) throw PyError(ErrorKind::DType, "unknown dtype '" + s + "'");
  return *t;
}

std::vector<Dim> dims_arg(const std::vector<std::variant<int64_t, std::string>>& dims) {
  std::vector<Dim> out;
  for (const auto& d : dims) {
    if (std::holds_alternative<int64_t>(d)) {
      out.push_back(Dim(std::get<int64_t>(d)));
    } else {
      out.push_back(sym(std::get<std::string>(d)));
    }
  }
  return out;
}

CompileOptions options_arg(const nb::dict& o) {
  CompileOptions opt;
  for (auto [k, v] : o) {
    const std::string key = nb::cast<std::string>(k);
    if (key == "device") {
      std::string s = nb::cast<std::string>(nb::str(v));
      std::optional<Device> d = Device::parse(s);
      if (!d) throw PyError(ErrorKind::Device, "unknown device '" + s + "' (cpu, cuda[:N], sim[:N])");
      opt.device = *d;
    } else if (key == "backend") {
      opt.backend = nb::cast<std::string>(v);
    } else if (key == "opt_level") {
      opt.opt_level = nb::cast<int>(v);
    } else if (key == "num_threads") {
      opt.num_threads = nb::cast<int>(v);
    } else if (key == "fuse") {
      opt.fuse = nb::cast<bool>(v);
    } else if (key == "optimize") {
      opt.optimize = nb::cast<bool>(v);
    } else if (key == "fast_math") {
      opt.fast_math = nb::cast<bool>(v);
    } else if (key == "schedule") {
      opt.schedule = nb::cast<bool>(v);
    } else if (key == "disk_cache") {
      opt.disk_cache = nb::cast<bool>(v);
    } else if (key == "autotune") {
      opt.autotune = nb::cast<bool>(v);
    } else if (key == "autotune_budget_s") {
      opt.autotune_budget_s = nb::cast<double>(v);
    } else if (key == "cpu") {
      opt.cpu = nb::cast<std::string>(v);
    } else if (key == "cuda_arch") {
      opt.cuda_arch = nb::cast<std::string>(v);
    } else {
      throw PyError(ErrorKind::Argument,
                    "unknown compile option '" + key +
                        "' (device, backend, opt_level, num_threads, fuse, optimize, fast_math, "
                        "schedule, disk_cache, autotune, autotune_budget_s, cpu, cuda_arch)");
    }
  }
  return opt;
}

// Calls a compiled function on arrays; outputs follow the first input's kind.
nb::object call_compiled(const CompiledFunction& cf, nb::args args) {
  std::vector<Tensor> inputs;
  ArrayKind kind = ArrayKind::NumPy;
  for (size_t i = 0; i < args.size(); ++i) {
    nb::ndarray<> a;
    const ArgName what{nullptr, -1, int64_t(i)};
    if (PyFloat_Check(args[i].ptr()) || PyLong_Check(args[i].ptr())) {
      // A scalar input (Builder.scalar_input) is a 0-dim tensor.
      const bool is_int = PyLong_Check(args[i].ptr()) && !PyBool_Check(args[i].ptr());
      inputs.push_back(is_int ? Tensor::scalar(double(nb::cast<int64_t>(args[i])), DType::I64)
                              : Tensor::scalar(nb::cast<double>(args[i]), DType::F64));
      continue;
    }
    if (!nb::try_cast(args[i], a, false)) {
      throw PyError(ErrorKind::Argument, what.str() + " must be an array or tensor, got " +
                                             nb::cast<std::string>(nb::handle(args[i].type()).attr("__name__")));
    }
    if (inputs.empty()) kind = array_kind(args[i]);
    inputs.push_back(tensor_from_array(a, what));
  }
  std::vector<Tensor> outs;
  {
    nb::gil_scoped_release release;
    outs = cf(inputs);
  }
  if (outs.size() == 1) return array_from_tensor(outs[0], kind);
  nb::list l;
  for (const Tensor& t : outs) l.append(array_from_tensor(t, kind));
  return nb::tuple(l);
}

std::vector<Operand> operands_arg(nb::handle ops) {
  std::vector<Operand> out;
  for (nb::handle h : ops) {
    if (h.is_none()) {
      out.emplace_back(Var());
    } else if (PyBool_Check(h.ptr())) {
      out.emplace_back(Scalar(h.ptr() == Py_True));
    } else if (PyLong_Check(h.ptr())) {
      out.emplace_back(Scalar(nb::cast<int64_t>(h)));
    } else if (PyFloat_Check(h.ptr())) {
      out.emplace_back(Scalar(nb::cast<double>(h)));
    } else {
      out.emplace_back(nb::cast<Var>(h));
    }
  }
  return out;
}

Attr attr_arg(nb::handle v) {
  if (v.is_none()) return Attr();
  if (PyBool_Check(v.ptr())) return Attr(v.ptr() == Py_True);
  if (PyLong_Check(v.ptr())) return Attr(nb::cast<int64_t>(v));
  if (PyFloat_Check(v.ptr())) return Attr(nb::cast<double>(v));
  if (PyUnicode_Check(v.ptr())) return Attr(nb::cast<std::string>(v));
  if (PyList_Check(v.ptr()) || PyTuple_Check(v.ptr())) {
    std::vector<int64_t> ints;
    std::vector<double> floats;
    bool all_int = true;
    for (nb::handle i : v) {
      if (PyFloat_Check(i.ptr())) all_int = false;
      floats.push_back(nb::cast<double>(i));
      if (all_int) ints.push_back(nb::cast<int64_t>(i));
    }
    return all_int ? Attr(ints) : Attr(floats);
  }
  return Attr(dtype_arg(v));
}

AttrList attrs_arg(const nb::dict& d) {
  AttrList out;
  for (auto [k, v] : d) out.emplace_back(nb::cast<std::string>(k), attr_arg(v));
  return out;
}

}  // namespace
}  // namespace kiln::python

NB_MODULE(_C, m) {
  using namespace kiln;
  using namespace kiln::python;
  m.doc() = "Kiln's C++ API (use the kiln package, not this module)";
  nb::register_exception_translator(translate);
  m.def("_set_error_factory", [](nb::object f) { error_factory() = std::move(f); });
  m.def("version", [] { return std::string(kiln::version()); });
  m.def("_trace_inputs", [](bool on) { trace_inputs().store(on); });
  m.def("_last_input_pointers", [] { return last_input_pointers(); });

  nb::class_<Specialization>(m, "Specialization")
      .def_prop_ro("graph", [](const Specialization& s) { return s.function.str(); })
      .def("explain", [](const Specialization& s) { return s.compiled.explain(); })
      .def("dump",
           [](const Specialization& s, const std::string& stage) {
             if (stage == "graph") return s.function.str();
             nb::gil_scoped_release release;
             return s.compiled.dump(stage);
           })
      .def_prop_ro("num_kernels", [](const Specialization& s) { return s.compiled.num_kernels(); })
      .def_prop_ro("backend", [](const Specialization& s) { return s.compiled.backend(); })
      .def_prop_ro("input_types", [](const Specialization& s) {
        std::vector<std::string> out;
        for (const ValueInfo& v : s.compiled.inputs()) out.push_back(v.name + ": " + v.type);
        return out;
      });

  // Subclassed by kiln.ScriptFunction (python/kiln/__init__.py): calls go
  // straight to C++, with no Python frame in between.
  nb::class_<ScriptedFunction>(m, "ScriptedFunction", nb::dynamic_attr(), nb::type_slots(scripted_slots))
      .def(
          "__init__",
          [](ScriptedFunction* self, const std::string& fn, const nb::dict& options,
             ScriptedFunction::DynamicDims dynamic) {
            new (self) ScriptedFunction(fn, options_arg(options), std::move(dynamic));
          },
          "fn"_a, "options"_a, "dynamic"_a)
      .def("specialize", &ScriptedFunction::specialize)
      .def("last", &ScriptedFunction::last)
      .def("_load", &ScriptedFunction::load)
      .def_prop_ro("num_compiled", &ScriptedFunction::num_compiled)
      .def_prop_ro("fn_name", &ScriptedFunction::name)
      .def_prop_ro("param_names", &ScriptedFunction::param_names)
      .def_prop_ro("script_filename", &ScriptedFunction::filename);

  m.def("script_functions", [](const std::string& source, const std::string& filename) {
    std::vector<std::string> out;
    const Script s = Script::from_source(source, filename);
    for (const ScriptFunction& f : s.functions()) {
      out.push_back(f.name);
    }
    return out;
  });

  nb::class_<Function>(m, "Function")
      .def_prop_ro("name", &Function::name)
      .def("__str__", &Function::str)
      .def_prop_ro("graph", &Function::str)
      .def_prop_ro("input_types", [](const Function& f) {
        std::vector<std::string> out;
        for (const ValueInfo& v : f.inputs()) out.push_back(v.name + ": " + v.type);
        return out;
      });

  nb::class_<CompiledFunction>(m, "CompiledFunction")
      .def("__call__", &call_compiled)
      .def("explain", &CompiledFunction::explain)
      .def("dump",
           [](const CompiledFunction& c, const std::string& stage) {
             nb::gil_scoped_release release;
             return c.dump(stage);
           })
      .def_prop_ro("num_kernels", &CompiledFunction::num_kernels)
      .def_prop_ro("backend", &CompiledFunction::backend);

  m.def("compile", [](const Function& f, const nb::dict& options) {
    CompileOptions opt = options_arg(options);
    nb::gil_scoped_release release;
    return compile(f, opt);
  });
  m.def("parse_ir", [](const std::string& text) { return parse_ir(text); });

  nb::class_<Var>(m, "Var")
      .def_prop_ro("type", &Var::type_str)
      .def_prop_ro("rank", &Var::rank)
      .def_prop_ro("dtype", [](const Var& v) { return std::string(dtype_name(v.dtype())); })
      .def("__repr__", [](const Var& v) { return "<kiln.Var " + v.type_str() + ">"; });

  nb::class_<Builder>(m, "Builder")
      .def(nb::init<std::string>(), "name"_a = "main")
      .def("input",
           [](Builder& b, const std::string& name, nb::handle dtype,
              const std::vector<std::variant<int64_t, std::string>>& dims) {
             return b.input(name, dtype_arg(dtype), dims_arg(dims));
           })
      .def("op",
           [](Builder& b, const std::string& name, nb::handle operands, const nb::dict& attrs) {
             std::vector<Operand> ops = operands_arg(operands);
             bool any_var = false;
             for (const Operand& o : ops) any_var |= !o.is_scalar() && o.var().defined();
             return any_var ? op(name, ops, attrs_arg(attrs)) : b.op(name, ops, attrs_arg(attrs));
           })
      .def("build", &Builder::build)
      .def("__str__", &Builder::str);

  m.def("ops", [] {
    nb::list out;
    for (const OpInfo& o : list_ops()) {
      nb::dict d;
      d["name"] = o.name;
      d["signature"] = o.signature;
      d["category"] = o.category;
      d["doc"] = o.doc;
      out.append(d);
    }
    return out;
  });
}
