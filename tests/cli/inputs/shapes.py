def attn(q: Tensor, k: Tensor) -> Tensor:
    return torch.einsum("bhqd,bhkd->bhqk", q, k)


def bad_char(x: Tensor) -> Tensor:
    return torch.einsum("ij,j1->i", x, x)


def bad_count(x: Tensor) -> Tensor:
    return torch.einsum("ijk->i", x)


def bad_size(a: Tensor, b: Tensor) -> Tensor:
    return torch.einsum("ij,jk->ik", a, b)


def bad_out(x: Tensor) -> Tensor:
    return torch.einsum("ij->ii", x)


def bad_dots(x: Tensor) -> Tensor:
    return torch.einsum("i..j->ij", x)


def bad_operands(x: Tensor) -> Tensor:
    return torch.einsum("ij,jk->ik", x)


def bad_outer(x: Tensor) -> Tensor:
    return torch.outer(x, x)


def bad_repeat(x: Tensor) -> Tensor:
    return x.repeat(2)


def bad_interleave(x: Tensor, r: Tensor) -> Tensor:
    return x.repeat_interleave(r)


def bad_flip(x: Tensor) -> Tensor:
    return torch.flip(x, [0, 2])


def bad_diagonal(x: Tensor) -> Tensor:
    return torch.diagonal(x, 0, 1, -1)


def bad_unfold(x: Tensor) -> Tensor:
    return x.unfold(0, 2, 0)


def bad_roll(x: Tensor) -> Tensor:
    return torch.roll(x, (1, 2), 0)


def bad_linspace(x: Tensor) -> Tensor:
    return torch.linspace(0, x, 5)


def flipped(x: Tensor) -> Tensor:
    return torch.flip(x, [0]).diagonal()
