# Python numbers from tensor data (issue 13): t.item(), int(t), float(t), bool(t).
import torch
from torch import Tensor


def arith(x: Tensor, t: Tensor) -> Tensor:
    m = t.max().item()
    n = int(t.sum())
    return x * m + n / 2 - float(t[0])


def half_times_float(x: Tensor, t: Tensor) -> Tensor:
    return x * t.item()


def int_plus_float(x: Tensor, t: Tensor) -> Tensor:
    return x + float(t)


def clamp_by(x: Tensor, t: Tensor) -> Tensor:
    return torch.clamp(x, max=float(t.max()))


def numbers(t: Tensor):
    n = t.sum().item()
    return n, -n, not (n > 1), n // 2, n / 2, int(n) % 3, bool(t.sum())


def shape_from_data(x: Tensor) -> Tensor:
    n = int(x.sum())
    return torch.zeros(n)


def cond_on_data(x: Tensor) -> Tensor:
    if x.sum().item() > 0:
        return x
    return -x


def range_on_data(x: Tensor) -> Tensor:
    for i in range(int(x[0])):
        x = x + 1
    return x


def dim_from_data(x: Tensor) -> Tensor:
    return x.sum(dim=int(x[0]))


def many_elements(x: Tensor) -> Tensor:
    return x * x.item()


def list_index(x: Tensor) -> Tensor:
    xs = [x, x]
    return xs[int(x[0])]


def number_attribute(x: Tensor) -> Tensor:
    v = x.sum().item()
    return x * v.abs()


def symbolic_item(x: Tensor[f32, N]) -> Tensor:
    return x * x.item()


def python_max(x: Tensor) -> Tensor:
    return x * max(x.sum().item(), 1.0)


def in_tuple(x: Tensor) -> Tensor:
    if 3 in (int(x.sum()), 2):
        return x
    return -x
