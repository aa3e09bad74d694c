import torch
import torch.nn as nn
import torch.nn.functional as F
from typing import List


# torch.finfo / torch.iinfo fields are compile-time numbers (x.dtype allowed).
def limits(x: torch.Tensor):
    f = torch.finfo(x.dtype)
    return (f.min, f.max, f.eps, f.tiny, torch.finfo(torch.float16).eps,
            torch.finfo(torch.bfloat16).max, torch.finfo().bits,
            torch.iinfo(torch.int32).max, torch.iinfo(torch.int8).min, torch.iinfo(torch.uint8).max)


# The exact values, as PyTorch has them.
def exact(x: torch.Tensor) -> int:
    checks = [torch.finfo(torch.float32).eps == 2.0 ** -23,
              torch.finfo(torch.float32).tiny == 2.0 ** -126,
              torch.finfo(torch.float32).max == (2 - 2.0 ** -23) * 2.0 ** 127,
              torch.finfo(torch.float64).eps == 2.0 ** -52,
              torch.finfo(torch.float16).max == 65504.0,
              torch.finfo(torch.float16).tiny == 2.0 ** -14,
              torch.finfo(torch.bfloat16).eps == 2.0 ** -7,
              torch.finfo(torch.bfloat16).max == (2 - 2.0 ** -7) * 2.0 ** 127,
              torch.iinfo(torch.int64).min == -2 ** 63,
              torch.iinfo(torch.int16).max == 2 ** 15 - 1]
    n = 0
    for c in checks:
        n += int(c)
    return n


# The usual masking idiom: fill with the dtype's lowest value, not -inf.
def masked_softmax(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    x = x.masked_fill(mask, torch.finfo(x.dtype).min)
    return torch.softmax(x, dim=-1)


# TorchScript code asks whether it is being scripted or traced.
def scripted(x: torch.Tensor) -> torch.Tensor:
    ys = torch.jit.annotate(List[torch.Tensor], [])
    if torch.jit.is_scripting():
        ys.append(x + 1)
    if not torch.jit.is_tracing():
        ys.append(x * 2)
    return torch.stack(ys)


# inplace=True returns the result and updates the input, as in PyTorch;
# dropout in eval mode is the identity (and returns its input itself).
def inplace(x: torch.Tensor) -> torch.Tensor:
    x = x - 2
    F.leaky_relu(x, 0.5, inplace=True)
    before = x * 1
    y = F.relu(x, inplace=True)
    z = nn.functional.dropout(y, p=0.1, training=False, inplace=True)
    z = torch.dropout(z, 0.2, False)
    z = F.dropout2d(z, 0.3, False)
    F.hardtanh(z, -0.5, 0.5, inplace=True)
    return torch.cat([before, x, y, z])
