# ResNet-18 as torchvision builds it (BasicBlock, [2, 2, 2, 2]), in eval mode,
# written as one function over a flat list of parameters: for every conv, its
# weight and then its BatchNorm's weight, bias, running mean and running var;
# the fc weight and bias last. Widths are a parameter (torchvision: 64).
from typing import List

import torch
import torch.nn.functional as F
from torch import Tensor


def conv_bn(x: Tensor, p: List[Tensor], i: int, stride: int, padding: int) -> Tensor:
    x = F.conv2d(x, p[i], None, stride, padding)
    return F.batch_norm(x, p[i + 3], p[i + 4], p[i + 1], p[i + 2], False, 0.1, 1e-5)


def basic_block(x: Tensor, p: List[Tensor], i: int, stride: int, downsample: bool) -> Tensor:
    identity = x
    out = F.relu(conv_bn(x, p, i, stride, 1))
    out = conv_bn(out, p, i + 5, 1, 1)
    if downsample:
        identity = conv_bn(x, p, i + 10, stride, 0)
    out += identity
    return F.relu(out)


def resnet18(x: Tensor, params: List[Tensor]) -> Tensor:
    x = F.relu(conv_bn(x, params, 0, 2, 3))
    x = F.max_pool2d(x, kernel_size=3, stride=2, padding=1)
    i = 5
    for layer in range(4):
        for block in range(2):
            stride = 2 if layer > 0 and block == 0 else 1
            downsample = layer > 0 and block == 0
            x = basic_block(x, params, i, stride, downsample)
            i += 15 if downsample else 10
    x = F.adaptive_avg_pool2d(x, (1, 1))
    x = torch.flatten(x, 1)
    return F.linear(x, params[i], params[i + 1])
