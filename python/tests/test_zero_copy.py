"""Inputs are read in place and outputs wrap Kiln's memory: no copies."""
import gc

import numpy as np
from conftest import needs_torch, torch

import kiln

from kiln import _C

identity = kiln.script("def same(x: Tensor) -> Tensor:\n    return x\n")
scale = kiln.script("def scale(x: Tensor) -> Tensor:\n    return x * 2\n")
add = kiln.script("def add(x: Tensor, y: Tensor) -> Tensor:\n    return x + y\n")


def pointers_passed(f, *args):
    """The data pointers the call handed to the compiled function."""
    _C._trace_inputs(True)
    try:
        out = f(*args)
        return out, _C._last_input_pointers()
    finally:
        _C._trace_inputs(False)


def test_numpy_inputs_are_not_copied():
    a = np.arange(1024, dtype=np.float32)
    b = np.ones(1024, np.float32)
    out, ptrs = pointers_passed(add, a, b)
    assert ptrs == [a.ctypes.data, b.ctypes.data]
    np.testing.assert_array_equal(out, a + 1)


@needs_torch
def test_torch_inputs_are_not_copied():
    a, b = torch.arange(1024, dtype=torch.float32), torch.ones(1024)
    out, ptrs = pointers_passed(add, a, b)
    assert ptrs == [a.data_ptr(), b.data_ptr()]
    torch.testing.assert_close(out, a + 1)


def test_an_output_that_is_an_input_is_the_callers_object():
    a = np.zeros(7, np.float32)
    assert identity(a) is a
    if torch is not None:
        t = torch.zeros(7)
        assert identity(t) is t


def test_strided_views_are_read_in_place():
    base = np.arange(60, dtype=np.float32).reshape(6, 10)
    for view in [base.T, base[::2, 1::3], base[:, 3], base[1:4, 2:]]:
        out, ptrs = pointers_passed(scale, view)
        assert ptrs == [view.ctypes.data]  # the view's own first element: no packed copy
        np.testing.assert_array_equal(out, view * 2)
    # Negative strides (Kiln views have none) are packed into a copy.
    for view in [base[::-1], base[1:4, ::-2]]:
        np.testing.assert_array_equal(scale(view), view * 2)


@needs_torch
def test_torch_strided_views():
    t = torch.arange(60, dtype=torch.float32).reshape(6, 10)
    for view in [t.t(), t[::2, 1::3], t[:, 3], t.expand(2, 6, 10)]:
        out, ptrs = pointers_passed(scale, view)
        assert ptrs == [view.data_ptr()]
        torch.testing.assert_close(out, view * 2)


def test_outputs_own_their_memory():
    x = np.arange(8, dtype=np.float32)
    y = scale(x)
    assert not np.shares_memory(x, y)
    del x
    gc.collect()
    # The output keeps Kiln's buffer alive after everything else is gone.
    np.testing.assert_array_equal(y, np.arange(8) * 2)
    z = y.copy()
    y2 = scale(np.ones(8, np.float32))
    np.testing.assert_array_equal(z, np.arange(8) * 2)
    assert y2.base is not None  # a view over Kiln's storage, not a NumPy-owned copy


@needs_torch
def test_torch_output_is_a_torch_tensor_over_kiln_memory():
    y = scale(torch.ones(5))
    assert isinstance(y, torch.Tensor) and y.is_contiguous()
    y.add_(1)  # writable, and stays valid
    assert y.tolist() == [3.0] * 5
