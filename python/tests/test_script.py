"""@kiln.script on NumPy and PyTorch inputs: values equal to PyTorch's."""
from typing import List, Optional, Tuple

import numpy as np
import pytest
from conftest import needs_torch, torch

import kiln

if torch is not None:
    import torch.nn.functional as F
    from torch import Tensor
else:  # the annotations only need a name
    Tensor = object

EPS = 1e-5
WIDTH = 4


def gelu_tanh(x: Tensor) -> Tensor:
    return 0.5 * x * (1.0 + torch.tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)))


@kiln.script
def mlp(x: Tensor, w1: Tensor, b1: Tensor, w2: Tensor, b2: Tensor) -> Tensor:
    return F.linear(gelu_tanh(F.linear(x, w1, b1)), w2, b2)


@kiln.script
def norm_scale(x: Tensor, scale: float = 2.0) -> Tensor:
    return (x - x.mean(-1, keepdim=True)) / torch.sqrt(x.var(-1, keepdim=True, unbiased=False) + EPS) * scale


@kiln.script
def two_outputs(x: Tensor) -> Tuple[Tensor, Tensor]:
    return x.sum(0), x.amax(-1)


@kiln.script
def with_mask(x: Tensor, mask: Optional[Tensor] = None) -> Tensor:
    if mask is not None:
        x = x.masked_fill(mask, 0.0)
    return x * WIDTH


@kiln.script
def cat_all(xs: List[Tensor]) -> Tensor:
    return torch.cat(xs, dim=0)


def mlp_ref(x, w1, b1, w2, b2):
    h = F.linear(x, w1, b1)
    return F.linear(0.5 * h * (1.0 + torch.tanh(0.7978845608028654 * (h + 0.044715 * h ** 3))), w2, b2)


def weights(rng):
    return [rng.standard_normal(s).astype(np.float32) for s in [(7, 16), (32, 16), (32,), (8, 32), (8,)]]


@needs_torch
def test_mlp_numpy_in_numpy_out(rng):
    args = weights(rng)
    y = mlp(*args)
    assert isinstance(y, np.ndarray) and y.dtype == np.float32 and y.shape == (7, 8)
    want = mlp_ref(*[torch.from_numpy(a) for a in args]).numpy()
    np.testing.assert_allclose(y, want, rtol=1e-4, atol=1e-4)


@needs_torch
def test_mlp_torch_in_torch_out(rng):
    args = [torch.from_numpy(a) for a in weights(rng)]
    y = mlp(*args)
    assert isinstance(y, torch.Tensor) and y.dtype == torch.float32
    torch.testing.assert_close(y, mlp_ref(*args), rtol=1e-4, atol=1e-4)


@needs_torch
def test_keywords_defaults_and_module_constants(rng):
    x = rng.standard_normal((5, 9)).astype(np.float32)
    t = torch.from_numpy(x)
    ref = (t - t.mean(-1, keepdim=True)) / torch.sqrt(t.var(-1, keepdim=True, unbiased=False) + EPS)
    np.testing.assert_allclose(norm_scale(x), (ref * 2).numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(norm_scale(x, scale=0.5), (ref * 0.5).numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(norm_scale(scale=3.0, x=x), (ref * 3).numpy(), rtol=1e-5, atol=1e-5)
    assert norm_scale.num_compiled == 3  # a float parameter is a constant of the graph


@needs_torch
def test_tuple_outputs_and_dtypes(rng):
    for dtype in [np.float32, np.float64, np.int32, np.int64]:
        x = (rng.standard_normal((4, 6)) * 10).astype(dtype)
        s, m = two_outputs(x)
        want_s = torch.from_numpy(x).sum(0).numpy()  # PyTorch: integer sums are int64
        np.testing.assert_allclose(s, want_s, rtol=1e-6)
        np.testing.assert_array_equal(m, x.max(-1))
        assert s.dtype == want_s.dtype and m.dtype == x.dtype


@needs_torch
def test_optional_tensor_and_tensor_lists(rng):
    x = rng.standard_normal((3, 4)).astype(np.float32)
    mask = rng.random((3, 4)) < 0.5
    np.testing.assert_allclose(with_mask(x), x * WIDTH)
    np.testing.assert_allclose(with_mask(x, mask), np.where(mask, 0, x) * WIDTH)
    np.testing.assert_allclose(with_mask(x, None), x * WIDTH)
    parts = [rng.standard_normal((n, 2)).astype(np.float32) for n in (1, 3, 2)]
    np.testing.assert_array_equal(cat_all(parts), np.concatenate(parts))
    np.testing.assert_array_equal(cat_all(tuple(parts[:2])), np.concatenate(parts[:2]))


def test_source_text_and_files(tmp_path):
    f = kiln.script("def double(x: Tensor) -> Tensor:\n    return x * 2\n", fn="double")
    np.testing.assert_array_equal(f(np.arange(5, dtype=np.float32)), np.arange(5) * 2)
    p = tmp_path / "model.kiln"
    p.write_text("def a(x: Tensor) -> Tensor:\n    return x + 1\n\ndef b(x: Tensor) -> Tensor:\n"
                 "    return a(x) * 3\n")
    g = kiln.load(str(p))  # the last def by default
    np.testing.assert_array_equal(g(np.zeros(3, np.int64)), np.full(3, 3))
    assert kiln.load(str(p), fn="a")(np.zeros(2, np.float32)).tolist() == [1.0, 1.0]


def test_zero_dim_and_empty_inputs():
    f = kiln.script("def f(x: Tensor) -> Tensor:\n    return x * 3\n")
    assert f(np.float32(2.0) * np.ones((), np.float32)).shape == ()
    assert float(f(np.array(2.0, np.float32))) == 6.0
    for shape in [(0,), (0, 5), (3, 0)]:
        assert f(np.zeros(shape, np.float32)).shape == shape


def test_introspection():
    f = kiln.script("def f(x: Tensor, y: Tensor) -> Tensor:\n    return torch.relu(x * y + 1)\n")
    a = np.ones((2, 3), np.float32)
    f(a, a)
    assert "relu" in f.graph and "f32[2, 3]" in f.graph
    assert f.explain().startswith("kernels: 1")
    assert "for" in f.code
    assert "define" in f.dump("llvm")
    assert f.explain(np.ones(4, np.float32), np.ones(4, np.float32)).startswith("kernels: 1")
    assert f.num_compiled == 2
    assert f.source.startswith("def f")


def test_builder_and_ops():
    b = kiln.Builder("axpy")
    x = b.input("x", "f32", ["N"])
    y = b.input("y", "f32", ["N"])
    out = b.op("add", [b.op("mul", [x, 2.0]), y])
    fn = b.build(out)
    assert "f32[N]" in fn.graph
    cf = kiln.compile(fn)
    np.testing.assert_array_equal(cf(np.ones(7, np.float32), np.ones(7, np.float32)), np.full(7, 3.0))
    names = {o["name"] for o in kiln.ops()}
    assert {"add", "matmul", "softmax"} <= names


def test_sim_device_gives_the_same_values(rng):
    x = rng.standard_normal((33, 17)).astype(np.float32)
    src = "def f(x: Tensor) -> Tensor:\n    return torch.softmax(x * 2, dim=-1)\n"
    cpu = kiln.script(src)(x)
    with kiln.compile_options(device="sim"):
        sim = kiln.script(src)
    np.testing.assert_allclose(sim(x), cpu, rtol=1e-5, atol=1e-6)
    assert kiln.compile_options() == {}
