# A ConvNeXt block as the reference implementation writes it: 7x7 depthwise
# conv, channels-last LayerNorm, pointwise MLP with GELU, layer scale, residual.
import torch
import torch.nn.functional as F
from torch import Tensor


def convnext_block(x: Tensor, dw_w: Tensor, dw_b: Tensor, ln_w: Tensor, ln_b: Tensor,
                   pw1_w: Tensor, pw1_b: Tensor, pw2_w: Tensor, pw2_b: Tensor, gamma: Tensor) -> Tensor:
    shortcut = x
    x = F.conv2d(x, dw_w, dw_b, padding=3, groups=x.shape[1])
    x = x.permute(0, 2, 3, 1)
    x = F.layer_norm(x, (x.shape[-1],), ln_w, ln_b, 1e-6)
    x = F.linear(x, pw1_w, pw1_b)
    x = F.gelu(x)
    x = F.linear(x, pw2_w, pw2_b)
    x = gamma * x
    x = x.permute(0, 3, 1, 2)
    return shortcut + x
