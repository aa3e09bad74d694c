import torch
from torch import Tensor


def square(x: Tensor) -> Tensor:
    return x.pow(2) + torch.exp(x) ** 2


def other(x: Tensor) -> Tensor:
    return x ** 2.5


def sq(x: Tensor) -> Tensor:
    return x.pow(2) - 1.0


def forms(x: Tensor) -> Tensor:
    return x ** 3 + x ** 0.5 + x ** -0.5 + x.pow(-1) + x ** -2.0


def edges(x: Tensor) -> Tensor:
    # -0.0, +-inf and nan from x; 1 / (z ** 0.5) shows a zero's sign.
    z = torch.cat([x * 0.0, torch.log(x * 0.0), -torch.log(x * 0.0), torch.log(x)])
    return torch.cat([1.0 / z ** 0.5, 1.0 / z ** -0.5, 1.0 / z ** 3, z ** -1, z ** -2.0])


def ints(x: Tensor) -> Tensor:
    return x ** 3 + x ** 2
