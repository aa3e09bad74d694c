# A UNet encoder/decoder level pair as the Pytorch-UNet project writes it:
# DoubleConv (conv-BN-ReLU twice), Down (max pool + DoubleConv), Up (bilinear
# upsampling, pad to the skip's size, concatenate, DoubleConv), OutConv.
from typing import List

import torch
import torch.nn.functional as F
from torch import Tensor


def double_conv(x: Tensor, p: List[Tensor], i: int) -> Tensor:
    for j in range(2):
        x = F.conv2d(x, p[i + 5 * j], None, padding=1)
        x = F.batch_norm(x, p[i + 5 * j + 3], p[i + 5 * j + 4], p[i + 5 * j + 1],
                         p[i + 5 * j + 2], False, 0.1, 1e-5)
        x = F.relu(x, inplace=True)
    return x


def up(x1: Tensor, x2: Tensor, p: List[Tensor], i: int) -> Tensor:
    x1 = F.interpolate(x1, scale_factor=2, mode='bilinear', align_corners=True)
    diffY = x2.size()[2] - x1.size()[2]
    diffX = x2.size()[3] - x1.size()[3]
    x1 = F.pad(x1, [diffX // 2, diffX - diffX // 2, diffY // 2, diffY - diffY // 2])
    x = torch.cat([x2, x1], dim=1)
    return double_conv(x, p, i)


def unet(x: Tensor, p: List[Tensor]) -> Tensor:
    x1 = double_conv(x, p, 0)
    x2 = double_conv(F.max_pool2d(x1, 2), p, 10)
    x3 = double_conv(F.max_pool2d(x2, 2), p, 20)
    y = up(x3, x2, p, 30)
    y = up(y, x1, p, 40)
    return F.conv2d(y, p[50], p[51])
