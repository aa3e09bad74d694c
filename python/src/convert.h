// Arrays in and out of the Python module without copies.
//
// In: anything nanobind's ndarray caster takes (NumPy arrays and everything
// with __dlpack__ or the buffer protocol: PyTorch tensors, JAX, CuPy on the
// host) becomes a kiln::Tensor over the caller's memory, strides included;
// the caller's object keeps that memory alive for the call. Out: a Kiln
// tensor becomes a NumPy array or a PyTorch tensor over Kiln's memory, which
// a capsule holding the kiln::Tensor keeps alive.
#pragma once

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
// Every file that casts to std::string must see nanobind's string caster: a
// file without it instantiates nb::cast<std::string> as a bound-class cast,
// and the linker may keep that instance for all of them (std::bad_cast).
#include <nanobind/stl/string.h>

#include <optional>
#include <string>

#include "kiln/tensor.h"

namespace kiln::python {

namespace nb = nanobind;

// Names an argument in messages ("argument 'x'", "argument 'xs[2]'"); the
// text is made only when an error is raised.
struct ArgName {
  const std::string* param = nullptr;  // null: "input N" of a compiled function
  int64_t item = -1;                   // index in a List[Tensor], or -1
  int64_t input = -1;
  std::string str() const;
};

// A host buffer held for the length of a call (PyBuffer_Release at the end).
struct HeldBuffer {
  Py_buffer view{};
  bool held = false;
  HeldBuffer() = default;
  HeldBuffer(const HeldBuffer&) = delete;
  HeldBuffer& operator=(const HeldBuffer&) = delete;
  ~HeldBuffer() {
    if (held) PyBuffer_Release(&view);
  }
};

// What kind of array the caller passed; outputs follow the first tensor
// argument's kind (NumPy in, NumPy out; torch in, torch out).
enum class ArrayKind : uint8_t { NumPy, Torch };

// The kind of `obj` (an object nanobind's ndarray caster accepted).
ArrayKind array_kind(nb::handle obj);

// A kiln::Tensor viewing `a`'s memory (no copy). Negative strides (NumPy's
// a[::-1]) are packed into a Kiln-owned copy, since Kiln views have
// non-negative strides. Throws ArgumentError-kind errors (see errors.h) for
// device memory and dtypes Kiln does not have.
Tensor tensor_from_array(const nb::ndarray<>& a, const ArgName& what);

// A NumPy array read through the buffer protocol (the fast path: no DLPack
// capsule); nullopt when `obj` is not a NumPy array with a native-order
// dtype Kiln has. `hold` keeps the buffer until the call ends.
std::optional<Tensor> tensor_from_numpy(nb::handle obj, HeldBuffer& hold, const ArgName& what);

// A torch.Tensor read through its own attributes (data_ptr, shape, stride,
// dtype, device): several times cheaper than __dlpack__ in PyTorch 1.x/2.x.
// nullopt when `obj` is not a torch tensor.
std::optional<Tensor> tensor_from_torch(nb::handle obj, const ArgName& what);

// A NumPy array or PyTorch tensor over `t`'s memory (kept alive by the
// result). bf16 has no NumPy dtype: a NumPy output of bf16 is an error
// naming the fix.
nb::object array_from_tensor(const Tensor& t, ArrayKind kind);

}  // namespace kiln::python
