import torch
from torch import Tensor
from typing import Tuple


def scans(x: Tensor) -> Tuple[Tensor, Tensor, Tensor, Tensor, Tensor]:
    v, i = torch.cummax(x, 1)
    return torch.cumsum(x, 1), x.cumprod(0), torch.logcumsumexp(x, -1), v, i


def int_cumsum(x: Tensor) -> Tensor:
    return x.cumsum(0)


def bad_dim(x: Tensor) -> Tensor:
    return torch.cumsum(x, 2)


def int_logcumsumexp(x: Tensor) -> Tensor:
    return torch.logcumsumexp(x, 0)


def int_norm(x: Tensor) -> Tensor:
    return torch.linalg.vector_norm(x)


def nuc(x: Tensor) -> Tensor:
    return torch.norm(x, 'nuc')


def norm_3d(x: Tensor) -> Tensor:
    return torch.linalg.norm(x, 1)


def missing_linalg(x: Tensor) -> Tensor:
    return torch.linalg.svdvals(x)


def norms(x: Tensor) -> Tuple[Tensor, Tensor, Tensor]:
    return torch.norm(x), torch.linalg.vector_norm(x, 1, dim=-1), torch.linalg.matrix_norm(x, 1)
