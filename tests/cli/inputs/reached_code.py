# A model file as people write them (tests/cli/reached_code.test): only what
# the chosen def reaches has to compile; the rest only has to parse.
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from dataclasses import dataclass
from torch import Tensor

rng = np.random.default_rng(0)
W = rng.normal(size=3)
EPS = 0.5


@dataclass
class Config:
    d: int = 3

    def weird(self, *a, **k) -> "Config":
        return {k: v for k, v in k.items() if (n := v)}


class Block(nn.Module):
    def __init__(self, d: int):
        super().__init__()
        self.lin = nn.Linear(d, d)

    def forward(self, x):
        return F.relu(self.lin(x))


def helper(x, *args, **kwargs):
    return x


@torch.jit.script
def double(x: Tensor, /, *, k: int = 2) -> Tensor:
    return x * k


def f(x: Tensor) -> Tensor:
    return F.relu(double(x, k=3)) + EPS


def uses_numpy(x: Tensor) -> Tensor:
    return x * W


def calls_helper(x: Tensor) -> Tensor:
    return helper(x) + 1


from math import sqrt
from torch import relu
from torch.nn.functional import gelu
from scipy.special import erf


def from_imports(x: Tensor) -> Tensor:
    return relu(x) * sqrt(4.0) + gelu(x) + nn.functional.relu(x)


def uses_scipy(x: Tensor) -> Tensor:
    return erf(x)


if __name__ == "__main__":
    x = torch.randn(3)
    print(f"{f(x)!r}", *[1, 2], sep="")
    with torch.no_grad():
        y = f(x)
    match x:
        case 1:
            pass
