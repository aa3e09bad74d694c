# Inputs of selection.test (issue 13): sort / argsort / msort / topk /
# kthvalue / median as model code writes them, and their located errors.
import torch


def sort_rows(x):
    v, i = torch.sort(x, dim=1, descending=True)
    return v, i, x.argsort(0), torch.msort(x)


def select(x):
    t = torch.topk(x, 2)
    k = x.kthvalue(2, dim=0, keepdim=True)
    return t.values, t.indices, k.values, k.indices, torch.median(x), x.median(1)[1]


def topk_too_big(x):
    return torch.topk(x, 9)


def kth_zero(x):
    return torch.kthvalue(x, 0)


def topk_float_k(x):
    return torch.topk(x, 2.5)


def sort_bad_dim(x):
    return torch.sort(x, 2)


def median_empty(x):
    return torch.median(x, 1)


def topk_run_time(x: Tensor[f32, N, 7]):
    return torch.topk(x, 2, 0)


def sort_run_time(x: Tensor[f32, N, 7]):
    return torch.sort(x, 0)
