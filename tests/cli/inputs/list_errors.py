import torch


def pop_empty(x: torch.Tensor) -> torch.Tensor:
    xs = []
    xs.pop()
    return x


def extend_tensor(x: torch.Tensor) -> torch.Tensor:
    xs = [x]
    xs.extend(x)
    return x


def append_two(x: torch.Tensor) -> torch.Tensor:
    xs = [x]
    xs.append(x, x)
    return x


def pop_range(x: torch.Tensor) -> torch.Tensor:
    xs = [x]
    return xs.pop(3)


def sort_list(x: torch.Tensor) -> torch.Tensor:
    xs = [x]
    xs.sort()
    return x


def assign_range(x: torch.Tensor) -> torch.Tensor:
    xs = [x]
    xs[2] = x
    return x


def view_in_list(x: torch.Tensor) -> torch.Tensor:
    x = x * 1
    parts = [x[0:1]]
    x.add_(1)
    return x
