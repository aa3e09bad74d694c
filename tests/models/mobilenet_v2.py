# MobileNetV2's inverted residual blocks as torchvision writes them (1x1
# expand, 3x3 depthwise, 1x1 linear projection; ReLU6; residual when the
# shape is kept), eval-mode BatchNorm, and the classifier head.
from typing import List

import torch
import torch.nn.functional as F
from torch import Tensor


def conv_bn_act(x: Tensor, p: List[Tensor], i: int, stride: int, groups: int, act: bool) -> Tensor:
    k = p[i].shape[-1]
    x = F.conv2d(x, p[i], None, stride, (k - 1) // 2, 1, groups)
    x = F.batch_norm(x, p[i + 3], p[i + 4], p[i + 1], p[i + 2], False, 0.1, 1e-5)
    return F.relu6(x) if act else x


def inverted_residual(x: Tensor, p: List[Tensor], i: int, stride: int) -> Tensor:
    hidden = p[i].shape[0]
    h = conv_bn_act(x, p, i, 1, 1, True)
    h = conv_bn_act(h, p, i + 5, stride, hidden, True)
    h = conv_bn_act(h, p, i + 10, 1, 1, False)
    if stride == 1 and x.shape[1] == h.shape[1]:
        return x + h
    return h


def mobilenet_v2(x: Tensor, params: List[Tensor], strides: List[int]) -> Tensor:
    x = conv_bn_act(x, params, 0, 2, 1, True)
    i = 5
    for s in strides:
        x = inverted_residual(x, params, i, s)
        i += 15
    x = conv_bn_act(x, params, i, 1, 1, True)
    x = F.adaptive_avg_pool2d(x, (1, 1))
    x = torch.flatten(x, 1)
    x = F.dropout(x, p=0.2, training=False)
    return F.linear(x, params[i + 5], params[i + 6])
