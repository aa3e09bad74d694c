# Inputs of tests/cli/indexing.test: indexing with index tensors (issue 13).
import torch
import torch.nn.functional as F


def rows(x: Tensor, i: Tensor) -> Tensor:
    return x[i] * 2.0


def pick(x: Tensor, i: Tensor, j: Tensor) -> Tensor:
    return x[i, j]


def put(x: Tensor, i: Tensor) -> Tensor:
    x[:, i] += 10.0
    return x


def mask(x: Tensor) -> Tensor:
    return x[x > 0]


def float_index(x: Tensor, i: Tensor) -> Tensor:
    return x[i.float()]


def onehot_dynamic(i: Tensor) -> Tensor:
    return F.one_hot(i)


def embed_norm(w: Tensor, i: Tensor) -> Tensor:
    return F.embedding(i, w, max_norm=1.0)


def put_mixed(x: Tensor, i: Tensor) -> Tensor:
    x[0, i] = 1.0
    return x


def put_shape(x: Tensor, i: Tensor) -> Tensor:
    x[i] = torch.ones(5)
    return x


def scatter_dtype(x: Tensor, i: Tensor) -> Tensor:
    return x.scatter(0, i, i)


def gather_dim(x: Tensor, i: Tensor) -> Tensor:
    return torch.gather(x, 2, i)


def mscatter(x: Tensor, v: Tensor) -> Tensor:
    m = torch.arange(12).reshape(3, 4) % 3 == 0
    return x.masked_scatter(m, v)


def ireduce(x: Tensor, v: Tensor):
    i = torch.arange(5) % 2
    return (x.index_reduce(0, i, v, "prod"), x.index_reduce(0, i, v, "mean", include_self=False),
            x.index_reduce(0, i, v, "amax"), x.index_reduce(0, i, v, "amin", include_self=False))
