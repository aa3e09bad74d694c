"""Errors are Python exceptions of Kiln's classes, located in the user's file."""
import inspect
import os

import numpy as np
import pytest

import kiln

HERE = os.path.abspath(__file__)


@kiln.script
def bad_matmul(x: "Tensor", w: "Tensor") -> "Tensor":
    y = x * 2
    return y @ w  # line checked below


@kiln.script
def unknown_op(x: "Tensor") -> "Tensor":
    return torch.frobnicate(x)


@kiln.script
def syntax_error(x: "Tensor") -> "Tensor":
    return x * (n := 2)  # Python, but not Kiln's subset


def line_of(fn, text):
    src, start = inspect.getsourcelines(fn)
    for i, line in enumerate(src):
        if text in line:
            return start + i
    raise AssertionError(text)


def test_shape_error_points_at_the_line_in_this_file():
    with pytest.raises(kiln.ShapeError) as e:
        bad_matmul(np.ones((2, 3), np.float32), np.ones((4, 5), np.float32))
    assert isinstance(e.value, ValueError) and isinstance(e.value, kiln.Error)
    assert e.value.filename == HERE
    assert e.value.lineno == line_of(bad_matmul.__wrapped__, "return y @ w")
    assert e.value.offset == 14
    assert "inner dims differ" in str(e.value)


def test_script_error_is_a_syntax_error_with_location():
    with pytest.raises(kiln.ScriptError) as e:
        unknown_op(np.ones(3, np.float32))
    err = e.value
    assert isinstance(err, SyntaxError)
    assert err.filename == HERE and err.lineno == line_of(unknown_op.__wrapped__, "frobnicate")
    assert err.offset > 0 and "frobnicate" in err.text
    with pytest.raises(kiln.ScriptError) as e:
        syntax_error(np.ones(3, np.float32))
    assert e.value.lineno == line_of(syntax_error.__wrapped__, "n := 2")


def test_dtype_errors():
    f = kiln.script("def f(x: Tensor, w: Tensor) -> Tensor:\n    return x @ w\n")
    with pytest.raises(kiln.DTypeError) as e:
        f(np.ones((2, 2), np.float32), np.ones((2, 2), np.int64))
    assert isinstance(e.value, TypeError) and e.value.lineno == 2
    with pytest.raises(kiln.DTypeError, match="no element type"):
        f(np.ones((2, 2), np.complex64), np.ones((2, 2), np.complex64))
    with pytest.raises(kiln.DTypeError, match="no element type"):
        f(np.ones((2, 2), np.uint32), np.ones((2, 2), np.uint32))


def test_argument_errors():
    f = kiln.script("def f(x: Tensor, n: int = 2) -> Tensor:\n    return x * n\n")
    x = np.ones(3, np.float32)
    cases = [((), {}, "missing required argument 'x'"),
             ((x, 2, 3), {}, "takes 2 arguments but 3 were given"),
             ((x,), {"m": 1}, "unexpected keyword argument 'm'"),
             ((x,), {"x": x}, "multiple values for argument 'x'"),
             (("str",), {}, "must be a NumPy array"),
             (([1.0, 2.0],), {}, "must be a NumPy array"),
             ((x, "three"), {}, "unknown")]
    for args, kwargs, text in cases[:-1]:
        with pytest.raises(kiln.ArgumentError, match=text):
            f(*args, **kwargs)
        with pytest.raises(TypeError):
            f(*args, **kwargs)
    with pytest.raises(kiln.Error):
        f(x, "three")


def test_call_time_shape_and_rank_errors():
    f = kiln.script("def f(x: Tensor[f32, N, 3]) -> Tensor:\n    return x * 2\n")
    with pytest.raises(kiln.ShapeError):
        f(np.ones((2, 4), np.float32))
    with pytest.raises(kiln.ShapeError):
        f(np.ones(3, np.float32))


def test_unavailable_device_and_unknown_options():
    f = kiln.script("def f(x: Tensor) -> Tensor:\n    return x + 1\n", device="cuda")
    with pytest.raises(kiln.Error) as e:
        f(np.ones(3, np.float32))
    assert "cuda" in str(e.value).lower()
    with pytest.raises(kiln.ArgumentError, match="unknown compile option"):
        kiln.script("def f(x: Tensor) -> Tensor:\n    return x\n", colour="blue")
    with pytest.raises(kiln.DeviceError):
        kiln.script("def f(x: Tensor) -> Tensor:\n    return x\n", device="tpu")


def test_source_that_is_not_available():
    ns = {}
    exec("def g(x):\n    return x\n", ns)
    with pytest.raises(kiln.ScriptError, match="source of 'g' is not available"):
        kiln.script(ns["g"])(np.ones(1, np.float32))
