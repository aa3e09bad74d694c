"""Kiln from Python: a fused MLP on PyTorch tensors (and the same function on
NumPy arrays), compared with PyTorch, with the explain output.

    scripts/demo                 # runs this among the examples
    PYTHONPATH=build/python build/pyenv/bin/python examples/python_mlp.py
"""
import time

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor

import kiln


def gelu_tanh(x: Tensor) -> Tensor:
    return 0.5 * x * (1.0 + torch.tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)))


@kiln.script(dynamic={"x": [0]})  # one compilation for every batch size
def mlp(x: Tensor, w1: Tensor, b1: Tensor, w2: Tensor, b2: Tensor) -> Tensor:
    return F.linear(gelu_tanh(F.linear(x, w1, b1)), w2, b2)


def torch_mlp(x, w1, b1, w2, b2):
    return F.linear(F.gelu(F.linear(x, w1, b1), approximate="tanh"), w2, b2)


def best_us(fn, *args, reps=200):
    fn(*args)
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(reps):
            fn(*args)
        best = min(best, (time.perf_counter() - t0) / reps)
    return best * 1e6


def main():
    torch.manual_seed(0)
    torch.set_num_threads(2)
    w1, b1 = torch.randn(1024, 256) / 16, torch.randn(1024) / 4
    w2, b2 = torch.randn(256, 1024) / 32, torch.randn(256) / 4
    for batch in (1, 7, 32):
        x = torch.randn(batch, 256)
        y = mlp(x, w1, b1, w2, b2)
        want = torch_mlp(x, w1, b1, w2, b2)
        print(f"batch {batch:3d}: kiln {tuple(y.shape)} {type(y).__name__}, "
              f"max |kiln - torch| = {(y - want).abs().max().item():.2e}")
    print(f"compilations: {mlp.num_compiled} (x's dim 0 is symbolic)")
    # NumPy in, NumPy out: the same compiled function.
    y_np = mlp(x.numpy(), w1.numpy(), b1.numpy(), w2.numpy(), b2.numpy())
    print(f"numpy: {type(y_np).__name__} {y_np.shape} {y_np.dtype}")
    # Timing against PyTorch belongs to bench/ (quiet machine, peers side by side).
    print(f"time per call at batch 32: {best_us(mlp, x, w1, b1, w2, b2):.1f} us")
    print()
    print(mlp.explain())
    try:
        mlp(x, w2, b1, w2, b2)
    except kiln.ShapeError as e:
        print(f"a wrong weight gives kiln.ShapeError at {e.filename.split('/')[-1]}:{e.lineno}:")
        print(str(e).split("\n")[0].split(": error: ")[1])


if __name__ == "__main__":
    main()
