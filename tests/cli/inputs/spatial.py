# Inputs for tests/cli/spatial.test (issue 13 spatial ops).
import torch
import torch.nn.functional as F
from torch import Tensor


def upsample(x: Tensor):
    return (F.interpolate(x, scale_factor=2, mode="bilinear", align_corners=True),
            F.pad(x, [1, 2, 0, 1], mode="reflect"),
            F.pixel_shuffle(x, 1))


def bad_mode(x: Tensor) -> Tensor:
    return F.interpolate(x, size=4, mode="bilinearr")


def bad_reflect(x: Tensor) -> Tensor:
    return F.pad(x, [0, 3], mode="reflect")


def bad_rank(x: Tensor) -> Tensor:
    return F.interpolate(x, size=4, mode="bicubic")


def bad_pad_mode(x: Tensor) -> Tensor:
    return F.pad(x, [1, 1], mode="symmetric")


def bad_conv_t(x: Tensor, w: Tensor) -> Tensor:
    return F.conv_transpose2d(x, w, stride=2, output_padding=2)


def bad_shuffle(x: Tensor) -> Tensor:
    return F.pixel_shuffle(x, 2)


def int_bilinear(x: Tensor) -> Tensor:
    return F.interpolate(x, size=4, mode="bilinear")
