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

#include <optional>
#include <string>

#include "kiln/tensor.h"

namespace kiln::python {

namespace nb = nanobind;

// What kind of array the caller passed; outputs follow the first tensor
// argument's kind (NumPy in, NumPy out; torch in, torch out).
enum class ArrayKind : uint8_t { NumPy, Torch };

// The kind of `obj` (an object nanobind's ndarray caster accepted).
ArrayKind array_kind(nb::handle obj);

// A kiln::Tensor viewing `a`'s memory (no copy). Negative strides (NumPy's
// a[::-1]) are packed into a Kiln-owned copy, since Kiln views have
// non-negative strides. Throws ArgumentError-kind errors (see errors.h) for
// device memory and dtypes Kiln does not have.
Tensor tensor_from_array(const nb::ndarray<>& a, const std::string& what);

// A torch.Tensor read through its own attributes (data_ptr, shape, stride,
// dtype, device): several times cheaper than __dlpack__ in PyTorch 1.x/2.x.
// nullopt when `obj` is not a torch tensor.
std::optional<Tensor> tensor_from_torch(nb::handle obj, const std::string& what);

// A NumPy array or PyTorch tensor over `t`'s memory (kept alive by the
// result). bf16 has no NumPy dtype: a NumPy output of bf16 is an error
// naming the fix.
nb::object array_from_tensor(const Tensor& t, ArrayKind kind);

}  // namespace kiln::python
