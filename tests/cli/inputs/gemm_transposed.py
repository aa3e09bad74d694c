import torch
import torch.nn.functional as F
from torch import Tensor


def mmt(x: Tensor, w: Tensor) -> Tensor:
    return torch.mm(x, w.t())


def mmt2(x: Tensor, w: Tensor) -> Tensor:
    return x @ w.transpose(-2, -1)


def lin(x: Tensor, w: Tensor) -> Tensor:
    return F.linear(x, w)


def bmmt(x: Tensor, w: Tensor) -> Tensor:
    return torch.bmm(x, w.transpose(1, 2))


def perm(x: Tensor, w: Tensor) -> Tensor:
    return torch.matmul(x, w.permute(0, 2, 1))


def at(x: Tensor, w: Tensor) -> Tensor:
    return x.t() @ w


def both(x: Tensor, w: Tensor) -> Tensor:
    return torch.relu(x.t() @ w.t())
