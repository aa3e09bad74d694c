# Errors do not cascade (tests/cli/error_recovery.test): a failed statement
# poisons the names it assigns or mutates, and their later uses stay silent.
import torch
from torch import Tensor


def appended(x: Tensor) -> Tensor:
    parts = []
    for i in range(3):
        parts.append(torch.not_a_function(x))
    return torch.cat(parts)


def mutated(x: Tensor) -> Tensor:
    y = x.clone()
    y.add_(torch.not_a_function(x))
    z = y.sum(dim=5)
    return z


def stored(x: Tensor) -> Tensor:
    y = torch.zeros(3)
    y[0] = torch.not_a_function(x)
    return y.view(7)


def independent(x: Tensor) -> Tensor:
    a = torch.not_a_function(x)
    b = x.view(7)
    return a + b
