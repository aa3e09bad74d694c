# Optional[Tensor] parameters, the way attention and linear layers take masks
# and biases (tests/cli/optional_tensor.test).
from typing import Optional

import torch
from torch import Tensor


def f(x: Tensor, mask: Optional[Tensor] = None, bias: Optional[Tensor] = None) -> Tensor:
    if mask is not None:
        x = x + mask
    if bias is None:
        x = x * 2
    y = x if mask is None else x - 1
    if None is not bias and bias is not None:
        y = y + bias
    return y


def g(x: Tensor, mask: Tensor) -> Tensor:
    return x + mask


def h(x: Tensor, other: Tensor) -> Tensor:
    if x is other:
        return x
    return other
