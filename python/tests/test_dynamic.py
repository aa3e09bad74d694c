"""Symbolic dims: one compilation serves every size."""
import numpy as np
import pytest

import kiln


@kiln.script(dynamic={"x": [0]})
def rowsum_relu(x: "Tensor", w: "Tensor") -> "Tensor":
    return torch.relu(x @ w).sum(-1)


def test_batch_sizes_reuse_one_compilation(rng):
    w = rng.standard_normal((16, 8)).astype(np.float32)
    for n in [1, 7, 1023, 0, 64]:
        x = rng.standard_normal((n, 16)).astype(np.float32)
        np.testing.assert_allclose(rowsum_relu(x, w), np.maximum(x @ w, 0).sum(-1), rtol=1e-4,
                                   atol=1e-4)
    assert rowsum_relu.num_compiled == 1
    assert "x_0" in rowsum_relu.graph


def test_static_shapes_compile_per_shape(rng):
    f = kiln.script("def f(x: Tensor) -> Tensor:\n    return x + 1\n")
    for n in [1, 2, 3, 2, 1]:
        f(np.zeros(n, np.float32))
    assert f.num_compiled == 3


def test_named_symbols_and_script_annotations(rng):
    # Equal names must have equal sizes; a declared Kiln annotation is symbolic too.
    f = kiln.script("def f(a: Tensor, b: Tensor[f32, N, 3]) -> Tensor:\n    return a + b\n",
                    dynamic={"a": {0: "N"}})
    for n in [2, 5]:
        a = np.ones((n, 3), np.float32)
        np.testing.assert_array_equal(f(a, a), a * 2)
    assert f.num_compiled == 1
    with pytest.raises(kiln.ShapeError):
        f(np.ones((2, 3), np.float32), np.ones((4, 3), np.float32))
