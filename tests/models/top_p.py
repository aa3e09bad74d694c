# Top-k and nucleus (top-p) filtering of next-token logits as Hugging Face's
# TopKLogitsWarper / TopPLogitsWarper write them, then the sampling
# distribution.
import torch
import torch.nn.functional as F
from torch import Tensor


def top_k_top_p(logits: Tensor, top_k: int, top_p: float, temperature: float) -> Tensor:
    logits = logits / temperature
    indices_to_remove = logits < torch.topk(logits, top_k)[0][..., -1, None]
    logits = logits.masked_fill(indices_to_remove, -float("Inf"))
    sorted_logits, sorted_indices = torch.sort(logits, descending=False)
    cumulative_probs = sorted_logits.softmax(dim=-1).cumsum(dim=-1)
    sorted_indices_to_remove = cumulative_probs <= (1 - top_p)
    sorted_indices_to_remove[..., -1:] = 0
    indices_to_remove = sorted_indices_to_remove.scatter(1, sorted_indices, sorted_indices_to_remove)
    logits = logits.masked_fill(indices_to_remove, -float("Inf"))
    return F.softmax(logits, dim=-1)
