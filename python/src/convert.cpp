#include "python/src/convert.h"

#include <cstring>

#include "python/src/errors.h"

namespace kiln::python {

namespace {

DType dtype_from(nb::dlpack::dtype t, const ArgName& what) {
  using Code = nb::dlpack::dtype_code;
  const auto code = static_cast<Code>(t.code);
  if (t.lanes == 1) {
    if (code == Code::Bool && t.bits == 8) return DType::Bool;
    if (code == Code::Int) {
      switch (t.bits) {
        case 8: return DType::I8;
        case 16: return DType::I16;
        case 32: return DType::I32;
        case 64: return DType::I64;
      }
    }
    if (code == Code::UInt && t.bits == 8) return DType::U8;
    if (code == Code::Float) {
      switch (t.bits) {
        case 16: return DType::F16;
        case 32: return DType::F32;
        case 64: return DType::F64;
      }
    }
    if (code == Code::Bfloat && t.bits == 16) return DType::BF16;
  }
  static const char* names[] = {"int", "uint", "float", "opaque", "bfloat", "complex", "bool"};
  const std::string name = t.code < 7 ? names[t.code] : "code " + std::to_string(t.code);
  throw PyError(ErrorKind::DType, what.str() + ": Kiln has no element type for " + name +
                                      std::to_string(t.bits) +
                                      " (it has bool, int8/16/32/64, uint8, float16/32/64, bfloat16)");
}

nb::dlpack::dtype dlpack_from(DType t) {
  using Code = nb::dlpack::dtype_code;
  auto make = [](Code c, int bits) {
    return nb::dlpack::dtype{static_cast<uint8_t>(c), static_cast<uint8_t>(bits), 1};
  };
  switch (t) {
    case DType::Bool: return make(Code::Bool, 8);
    case DType::I8: return make(Code::Int, 8);
    case DType::U8: return make(Code::UInt, 8);
    case DType::I16: return make(Code::Int, 16);
    case DType::I32: return make(Code::Int, 32);
    case DType::I64: return make(Code::Int, 64);
    case DType::F16: return make(Code::Float, 16);
    case DType::BF16: return make(Code::Bfloat, 16);
    case DType::F32: return make(Code::Float, 32);
    case DType::F64: return make(Code::Float, 64);
  }
  return make(Code::Float, 32);
}

// Packs an array with some negative strides into Kiln-owned memory.
Tensor packed_copy(const nb::ndarray<>& a, DType dt, const Shape& sizes) {
  Tensor out = Tensor::empty(sizes, dt);
  const size_t es = dtype_size(dt);
  const int64_t n = out.numel(), rank = int64_t(sizes.size());
  char* dst = static_cast<char*>(out.data_ptr());
  const char* base = static_cast<const char*>(a.data());
  std::vector<int64_t> idx(size_t(rank), 0);
  for (int64_t i = 0; i < n; ++i) {
    int64_t off = 0;
    for (int64_t d = 0; d < rank; ++d) off += idx[size_t(d)] * a.stride(size_t(d));
    std::memcpy(dst + i * int64_t(es), base + off * int64_t(es), es);
    for (int64_t d = rank - 1; d >= 0; --d) {
      if (++idx[size_t(d)] < sizes[size_t(d)]) break;
      idx[size_t(d)] = 0;
    }
  }
  return out;
}

// An interned attribute name, made once. CPython's type attribute cache only
// serves interned names: a name made per call (nb::attr("dtype"),
// PyObject_GetAttrString) walks the type's MRO every time, which made a
// torch input cost ~1 us.
PyObject* interned(const char* name) {
  PyObject* s = PyUnicode_InternFromString(name);
  if (!s) throw nb::python_error();
  return s;  // leaked: lives as long as the interpreter
}

nb::object get_attr(nb::handle obj, PyObject* name) {
  PyObject* r = PyObject_GetAttr(obj.ptr(), name);
  if (!r) throw nb::python_error();
  return nb::steal(r);
}

nb::object call_method(nb::handle obj, PyObject* name) {
  PyObject* r = PyObject_CallMethodNoArgs(obj.ptr(), name);
  if (!r) throw nb::python_error();
  return nb::steal(r);
}

// torch's module-level objects and the tensor attributes read per call,
// looked up once (torch is imported by then: the caller passed a torch tensor).
struct TorchApi {
  nb::object from_numpy;
  std::vector<std::pair<nb::object, DType>> dtypes;
  PyObject *dtype, *is_cpu, *shape, *stride, *data_ptr;
};

const TorchApi& torch_api() {
  static TorchApi* api = [] {
    auto* a = new TorchApi();  // leaked: lives as long as the interpreter
    nb::module_ torch = nb::module_::import_("torch");
    a->from_numpy = torch.attr("from_numpy");
    const std::pair<const char*, DType> names[] = {
        {"float32", DType::F32}, {"float64", DType::F64}, {"float16", DType::F16},
        {"bfloat16", DType::BF16}, {"int64", DType::I64}, {"int32", DType::I32},
        {"int16", DType::I16},   {"int8", DType::I8},     {"uint8", DType::U8},
        {"bool", DType::Bool}};
    for (auto [n, t] : names) a->dtypes.emplace_back(torch.attr(n), t);
    a->dtype = interned("dtype");
    a->is_cpu = interned("is_cpu");
    a->shape = interned("shape");
    a->stride = interned("stride");
    a->data_ptr = interned("data_ptr");
    return a;
  }();
  return *api;
}

// numpy.asarray, looked up once: outputs are NumPy arrays over a memoryview
// of Kiln's memory (nanobind's own NumPy export imports numpy and calls
// numpy.array with keywords on every call).
const nb::object& numpy_asarray() {
  static nb::object* f = new nb::object(nb::module_::import_("numpy").attr("asarray"));
  return *f;
}

}  // namespace

std::string ArgName::str() const {
  if (!param) return "input " + std::to_string(input);
  return "argument '" + *param + (item >= 0 ? "[" + std::to_string(item) + "]" : "") + "'";
}

std::optional<Tensor> tensor_from_numpy(nb::handle obj, HeldBuffer& hold, const ArgName& what) {
  PyTypeObject* type = Py_TYPE(obj.ptr());
  if (std::strcmp(type->tp_name, "numpy.ndarray") != 0) return std::nullopt;
  if (PyObject_GetBuffer(obj.ptr(), &hold.view, PyBUF_RECORDS_RO) != 0) {
    PyErr_Clear();
    return std::nullopt;
  }
  hold.held = true;
  const Py_buffer& v = hold.view;
  const char* f = v.format ? v.format : "B";
  if (*f == '<' || *f == '=' || *f == '@') ++f;  // native order on the little-endian hosts Kiln runs on
  std::optional<DType> dt;
  if (f[0] != '\0' && f[1] == '\0') {
    switch (f[0]) {
      case '?': dt = DType::Bool; break;
      case 'b': dt = DType::I8; break;
      case 'B': dt = DType::U8; break;
      case 'h': dt = DType::I16; break;
      case 'i': dt = DType::I32; break;
      case 'l':
      case 'q': dt = v.itemsize == 8 ? std::optional<DType>(DType::I64) : std::nullopt; break;
      case 'e': dt = DType::F16; break;
      case 'f': dt = DType::F32; break;
      case 'd': dt = DType::F64; break;
      default: break;
    }
  }
  if (!dt || size_t(v.itemsize) != dtype_size(*dt)) return std::nullopt;  // the DLPack path decides
  const size_t rank = size_t(v.ndim);
  check_rank(int64_t(rank));
  Shape sizes(rank), strides(rank);
  int64_t extent = 1;
  bool empty = false;
  for (size_t d = 0; d < rank; ++d) {
    sizes[d] = v.shape[d];
    const Py_ssize_t bytes = v.strides ? v.strides[d] : 0;
    if (bytes < 0 || bytes % v.itemsize != 0) return std::nullopt;  // negative or odd strides
    strides[d] = bytes / v.itemsize;
    empty |= sizes[d] == 0;
    extent += (sizes[d] - 1) * strides[d];
  }
  if (!v.strides) strides = contiguous_strides(sizes);
  if (empty) extent = 0;
  (void)what;
  auto storage = Storage::wrap(v.buf, size_t(extent) * dtype_size(*dt), Device::cpu(), nullptr);
  return Tensor(std::move(storage), *dt, std::move(sizes), std::move(strides), 0);
}

std::optional<Tensor> tensor_from_torch(nb::handle obj, const ArgName& what) {
  if (array_kind(obj) != ArrayKind::Torch) return std::nullopt;
  const TorchApi& api = torch_api();
  // data_ptr() first: it is also the test that this is a torch tensor (a
  // class merely named Tensor has none; the generic paths then decide).
  PyObject* ptr = PyObject_CallMethodNoArgs(obj.ptr(), api.data_ptr);
  if (!ptr) {
    PyErr_Clear();
    return std::nullopt;
  }
  const uintptr_t address = PyLong_AsUnsignedLongLong(ptr);
  Py_DECREF(ptr);
  if (PyErr_Occurred()) throw nb::python_error();
  nb::object dtype = get_attr(obj, api.dtype);
  std::optional<DType> dt;
  for (const auto& [o, t] : api.dtypes) {
    if (o.is(dtype)) {
      dt = t;
      break;
    }
  }
  if (!dt) return std::nullopt;  // __dlpack__ then says what is wrong (complex, ...)
  if (!nb::cast<bool>(get_attr(obj, api.is_cpu))) {
    throw PyError(ErrorKind::Device, what.str() + ": the tensor is on " +
                                         nb::cast<std::string>(nb::str(obj.attr("device"))) +
                                         "; Kiln's Python calls take host tensors: .cpu() it first");
  }
  // torch.Size and stride() are tuples (Size a subclass): read in place.
  nb::object shape = get_attr(obj, api.shape), stride = call_method(obj, api.stride);
  if (!PyTuple_Check(shape.ptr()) || !PyTuple_Check(stride.ptr())) return std::nullopt;
  const size_t rank = size_t(PyTuple_GET_SIZE(shape.ptr()));
  if (size_t(PyTuple_GET_SIZE(stride.ptr())) != rank) return std::nullopt;
  check_rank(int64_t(rank));
  Shape sizes(rank), strides(rank);
  int64_t extent = 1;
  bool empty = false;
  for (size_t d = 0; d < rank; ++d) {
    sizes[d] = nb::cast<int64_t>(nb::handle(PyTuple_GET_ITEM(shape.ptr(), Py_ssize_t(d))));
    strides[d] = nb::cast<int64_t>(nb::handle(PyTuple_GET_ITEM(stride.ptr(), Py_ssize_t(d))));
    empty |= sizes[d] == 0;
    extent += (sizes[d] - 1) * strides[d];
  }
  if (empty) extent = 0;
  auto storage = Storage::wrap(reinterpret_cast<void*>(address), size_t(extent) * dtype_size(*dt),
                               Device::cpu(), nullptr);
  return Tensor(std::move(storage), *dt, std::move(sizes), std::move(strides), 0);
}

ArrayKind array_kind(nb::handle obj) {
  // torch.Tensor and its subclasses (nn.Parameter) come from the torch module;
  // everything else gets NumPy arrays back.
  nb::handle type = obj.type();
  for (;;) {
    PyTypeObject* t = reinterpret_cast<PyTypeObject*>(type.ptr());
    const char* name = t->tp_name;
    if (std::strcmp(name, "Tensor") == 0 || std::strncmp(name, "torch.", 6) == 0) {
      return ArrayKind::Torch;
    }
    if (std::strcmp(name, "numpy.ndarray") == 0 || t->tp_base == nullptr ||
        t->tp_base == &PyBaseObject_Type)
      return ArrayKind::NumPy;
    type = nb::handle(reinterpret_cast<PyObject*>(t->tp_base));
  }
}

Tensor tensor_from_array(const nb::ndarray<>& a, const ArgName& what) {
  if (a.device_type() != nb::device::cpu::value) {
    throw PyError(ErrorKind::Device,
                  what.str() + ": the array is in device memory (DLPack device type " +
                      std::to_string(a.device_type()) +
                      "); Kiln's Python calls take host arrays: move it to the CPU first");
  }
  const DType dt = dtype_from(a.dtype(), what);
  const size_t rank = a.ndim();
  check_rank(int64_t(rank));
  Shape sizes(rank), strides(rank);
  bool negative = false, empty = false;
  int64_t extent = 1;  // elements from the first to one past the last
  for (size_t d = 0; d < rank; ++d) {
    sizes[d] = int64_t(a.shape(d));
    strides[d] = a.stride(d);
    if (strides[d] < 0) negative = true;
    if (sizes[d] == 0) empty = true;
  }
  if (negative && !empty) return packed_copy(a, dt, sizes);
  for (size_t d = 0; d < rank; ++d) {
    if (empty) break;
    if (strides[d] < 0) strides[d] = 0;
    extent += (sizes[d] - 1) * strides[d];
  }
  if (empty) {
    extent = 0;
    for (size_t d = 0; d < rank; ++d) strides[d] = std::max<int64_t>(strides[d], 0);
  }
  // The caller's object owns the memory and outlives the call: no deleter.
  auto storage = Storage::wrap(a.data(), size_t(extent) * dtype_size(dt), Device::cpu(), nullptr);
  return Tensor(std::move(storage), dt, std::move(sizes), std::move(strides), 0);
}

namespace {

// A NumPy array over `data` (kept alive by `owner`): numpy.asarray of a
// memoryview of nanobind's buffer-protocol array, which carries the shape,
// strides and element format.
nb::object numpy_view(void* data, const std::vector<size_t>& shape, const std::vector<int64_t>& strides,
                      nb::capsule owner, nb::dlpack::dtype dt) {
  nb::object view = nb::cast(nb::ndarray<nb::memview>(data, shape.size(), shape.data(), owner,
                                                      strides.data(), dt),
                             nb::rv_policy::reference);
  return numpy_asarray()(view);
}

}  // namespace

nb::object array_from_tensor(const Tensor& t, ArrayKind kind) {
  if (!t.device().is_cpu()) {
    throw PyError(ErrorKind::Device, "an output is on " + t.device().str() + ", not the host");
  }
  std::vector<size_t> shape(t.sizes().begin(), t.sizes().end());
  std::vector<int64_t> strides(t.strides().begin(), t.strides().end());
  auto* keep = new Tensor(t);
  nb::capsule owner(keep, [](void* p) noexcept { delete static_cast<Tensor*>(p); });
  void* data = t.data_ptr();
  const nb::dlpack::dtype dt = dlpack_from(t.dtype());
  if (kind == ArrayKind::Torch) {
    if (t.dtype() == DType::BF16) {  // no NumPy dtype to pass through
      return nb::cast(nb::ndarray<nb::pytorch>(data, shape.size(), shape.data(), owner,
                                                strides.data(), dt),
                      nb::rv_policy::reference);
    }
    // torch.from_numpy over a NumPy view of Kiln's memory: much cheaper than
    // a DLPack capsule through torch.utils.dlpack.
    return torch_api().from_numpy(numpy_view(data, shape, strides, owner, dt));
  }
  if (t.dtype() == DType::BF16) {
    throw PyError(ErrorKind::DType,
                  "a bfloat16 output cannot be a NumPy array (NumPy has no bfloat16): pass torch "
                  "tensors, or convert to float32 in the script (.float())");
  }
  return numpy_view(data, shape, strides, owner, dt);
}

}  // namespace kiln::python
