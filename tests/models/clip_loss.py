# CLIP's contrastive loss as open_clip writes it: L2-normalized features,
# a learned temperature, symmetric cross entropy against the diagonal.
import torch
import torch.nn.functional as F
from torch import Tensor


def clip_loss(image_features: Tensor, text_features: Tensor, logit_scale: Tensor) -> Tensor:
    image_features = F.normalize(image_features, dim=-1)
    text_features = F.normalize(text_features, dim=-1)
    logits_per_image = logit_scale.exp() * image_features @ text_features.T
    logits_per_text = logits_per_image.T
    labels = torch.arange(logits_per_image.shape[0], dtype=torch.long)
    return (F.cross_entropy(logits_per_image, labels) + F.cross_entropy(logits_per_text, labels)) / 2
