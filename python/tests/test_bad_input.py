"""Bad input raises a kiln.Error, never crashes the interpreter."""
import numpy as np
import pytest
from conftest import torch

import kiln

f = kiln.script("def f(x: Tensor, w: Tensor, k: int = 1) -> Tensor:\n    return (x @ w) * k\n")

BAD = [
    (np.ones((2, 3), np.float32), np.ones((3,), np.int8)),
    (np.ones((2, 3), np.float32), np.ones((4, 2), np.float32)),
    (np.ones((2, 3, 4, 5), np.float32), np.ones((2,), np.float32)),
    (np.ones((), np.float32), np.ones((), np.float32)),
    (None, np.ones(3, np.float32)),
    (object(), object()),
    ({"a": 1}, [1, 2]),
    (np.array(["a", "b"]), np.array(["c"])),
    (np.ones(3, dtype=object), np.ones(3)),
    (np.ones((2, 2), np.float16), np.ones((2, 2), np.float64)),
]


@pytest.mark.parametrize("args", BAD, ids=range(len(BAD)))
def test_bad_arguments_raise_kiln_errors(args):
    with pytest.raises(kiln.Error):
        f(*args)


def test_bad_scalar_arguments():
    x = np.ones((2, 2), np.float32)
    for k in [2 ** 70, [1, "a"], object(), np.ones(3)]:
        with pytest.raises(kiln.Error):
            f(x, x, k)


def test_torch_bad_input():
    if torch is None:
        pytest.skip("PyTorch is not installed")
    with pytest.raises(kiln.Error):
        f(torch.ones(2, 3, dtype=torch.complex64), torch.ones(3, 2))
    with pytest.raises(kiln.Error):
        f(torch.ones(2, 3), torch.ones(2, 3))
    # bfloat16 works with torch in and out; a NumPy output of bf16 cannot exist.
    g = kiln.script("def g(x: Tensor) -> Tensor:\n    return x * 2\n")
    assert g(torch.ones(3, dtype=torch.bfloat16)).dtype == torch.bfloat16
