# Inputs for tests/cli/gpu_conv.test: conv2d on GPU targets (passes/lower/gpu/gpu_conv.h).
import torch
import torch.nn.functional as F
from torch import Tensor


def conv_relu(x: Tensor, w: Tensor, b: Tensor, r: Tensor):
    return torch.relu(F.conv2d(x, w, b, padding=1) + r)


def conv1x1(x: Tensor, w: Tensor):
    return F.conv2d(x, w)


def depthwise(x: Tensor, w: Tensor, b: Tensor):
    return F.conv2d(x, w, b, stride=2, padding=1, groups=32)
