# Whisper's audio encoder stem: two conv1d layers with GELU (the second with
# stride 2), a transpose to (batch, time, channels) and sinusoidal positions.
import math

import torch
import torch.nn.functional as F
from torch import Tensor


def sinusoids(length: int, channels: int, max_timescale: float = 10000.0) -> Tensor:
    log_timescale_increment = math.log(max_timescale) / (channels // 2 - 1)
    inv_timescales = torch.exp(-log_timescale_increment * torch.arange(channels // 2))
    scaled_time = torch.arange(length)[:, None] * inv_timescales[None, :]
    return torch.cat([torch.sin(scaled_time), torch.cos(scaled_time)], dim=1)


def audio_encoder_stem(mel: Tensor, conv1_w: Tensor, conv1_b: Tensor, conv2_w: Tensor,
                       conv2_b: Tensor) -> Tensor:
    x = F.gelu(F.conv1d(mel, conv1_w, conv1_b, padding=1))
    x = F.gelu(F.conv1d(x, conv2_w, conv2_b, stride=2, padding=1))
    x = x.permute(0, 2, 1)
    return x + sinusoids(x.shape[1], x.shape[2])
