# The language-model loss of nanoGPT / Hugging Face: final norm, tied
# embedding head, shift by one, cross entropy ignoring padding (-100).
import torch
import torch.nn.functional as F
from torch import Tensor


def lm_loss(hidden: Tensor, ln_w: Tensor, ln_b: Tensor, wte: Tensor, labels: Tensor) -> Tensor:
    h = F.layer_norm(hidden, (hidden.size(-1),), ln_w, ln_b)
    logits = F.linear(h, wte)
    shift_logits = logits[..., :-1, :].contiguous()
    shift_labels = labels[..., 1:].contiguous()
    return F.cross_entropy(shift_logits.view(-1, shift_logits.size(-1)), shift_labels.view(-1),
                           ignore_index=-100)
