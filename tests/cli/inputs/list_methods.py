import torch
import torch.nn as nn
from typing import List


# An RNN over a sequence, as written in PyTorch: collect the states, stack them.
def rnn(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    outs = []
    h = torch.zeros(x.shape[1], w.shape[1])
    for t in range(x.shape[0]):
        h = torch.tanh(x[t] @ w + h)
        outs.append(h)
    return torch.stack(outs)


# Lists are shared: a change through one name is seen through every other.
def alias(x: torch.Tensor) -> torch.Tensor:
    a = torch.jit.annotate(List[torch.Tensor], [])
    b = a
    b.append(x)
    a.extend([x * 2, x * 3])
    a.insert(0, x - 1)
    last = a.pop()
    c = a + [last]
    c.append(x)
    a += [x * 10]
    return torch.cat(a + [torch.tensor([float(len(b)), float(len(c))])])


def add_to(xs: List[torch.Tensor], y: torch.Tensor):
    xs.append(y)


# A def that appends to its argument changes the caller's list.
def through_call(x: torch.Tensor) -> torch.Tensor:
    xs = [x]
    add_to(xs, x + 1)
    nested = ([x], 0)
    nested[0].append(x * 5)
    return torch.cat(xs + nested[0])


# The argument is evaluated after `xs` was looked up: the list it sees is the current one.
def pop_in_arg(x: torch.Tensor) -> torch.Tensor:
    xs = [x, x + 1, x + 2]
    xs.append(xs.pop(0))
    xs.insert(-1, x * 0)
    xs.insert(100, x - 1)
    return torch.stack(xs)


# list(xs) and slices are copies.
def copies(x: torch.Tensor) -> torch.Tensor:
    xs = [x]
    ys = list(xs)
    zs = xs[:]
    xs.append(x + 1)
    return torch.tensor([float(len(xs)), float(len(ys)), float(len(zs))])


# Item assignment and in-place updates of items change the shared list.
def items(x: torch.Tensor) -> torch.Tensor:
    xs = [x, x + 1]
    ys = xs
    xs[0] = x * 10
    ys[-1].add_(5)
    xs[1] += 1
    return torch.stack(ys)


# A bound method reads its list's current items when called.
def bound(x: torch.Tensor) -> torch.Tensor:
    xs = [x]
    app = xs.append
    holder = (xs, [xs])
    app(x + 1)
    xs.pop(0)
    holder[1][0].append(x + 2)
    app(x + 3)
    return torch.cat(xs + holder[0] + [torch.tensor([float(len(holder[1][0]))])])


# 128000 appends in unrolled loops: linear time, not quadratic (this took
# minutes when every append copied the list).
def many(x: torch.Tensor) -> torch.Tensor:
    ns = []
    ms = []
    for a in range(64):
        for t in range(1000):
            ns.append(t)
            ms.append(a)
    return x + len(ns) + len(ms) + ns[-1] + ms[-1]


# A tensor held in a list or tuple is the same tensor: in-place updates
# through any holder are seen by all, as in PyTorch.
def held(x: torch.Tensor) -> torch.Tensor:
    x = x * 1
    xs = [x]
    pair = (x, 0)
    x.add_(1)
    a = xs[0]
    xs[0].mul_(10)
    return torch.cat([x, xs[0], pair[0], a])
