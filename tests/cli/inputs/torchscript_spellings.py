# Spellings found in TorchScript code (issue 13): aten names, jit decorators,
# typing annotations, assert and raise.
from typing import Dict, List, Optional, Tuple

import torch


@torch.jit.script
def aten_slice(x: torch.Tensor) -> torch.Tensor:
    a = torch.ops.aten.add.Tensor(x, x)
    b = torch.ops.aten.slice(a, 0, -3, 9223372036854775807, 2)
    return torch.ops.aten.relu(b) + x.slice(0, 1, -1)[:2].sum()


@torch.jit.ignore
def ignored(x):
    return x.numpy()


@torch.jit.unused
def unused(x):
    raise RuntimeError("never called")


def typed(x: torch.Tensor, n: int, k: Optional[int] = None) -> Tuple[torch.Tensor, List[int]]:
    assert n > 0, "n must be positive"
    z = torch.zeros(n - 1)  # would fail after the assert failed
    if n > 100:
        raise ValueError("too large")
    if k is None:
        k = 2
    return x * k, [n, k]


def no_binding(x: torch.Tensor) -> torch.Tensor:
    return torch.ops.aten.no_such_op(x)


def other_namespace(x: torch.Tensor) -> torch.Tensor:
    return torch.ops.quantized.add(x, x)


def dict_param(x: torch.Tensor, m: Dict[str, int]) -> torch.Tensor:
    return x


def tensor_assert(x: torch.Tensor) -> torch.Tensor:
    assert (x > 0).all(), "positive"
    return x


def slice_bad_dim(x: torch.Tensor) -> torch.Tensor:
    return x.slice(2, 0, 1)
