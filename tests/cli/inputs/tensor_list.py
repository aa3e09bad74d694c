import torch
from typing import List


def cat(xs: List[torch.Tensor]) -> torch.Tensor:
    return torch.cat(xs)


def mix(xs: List[torch.Tensor], w: torch.Tensor, k: int = 2) -> torch.Tensor:
    acc = w * k
    for x in xs:
        acc = acc + x
    xs.append(acc)
    return torch.stack(xs).sum(0)


def one(x: torch.Tensor) -> torch.Tensor:
    return x
