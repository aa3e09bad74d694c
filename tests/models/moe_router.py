# A mixture-of-experts router as Mixtral / Switch write it: softmax gating,
# top-k experts per token, renormalized weights, a one-hot expert mask and the
# load-balancing auxiliary loss.
from typing import Tuple

import torch
import torch.nn.functional as F
from torch import Tensor


def moe_router(x: Tensor, w_gate: Tensor, top_k: int) -> Tuple[Tensor, Tensor, Tensor]:
    num_experts = w_gate.shape[0]
    router_logits = F.linear(x.view(-1, x.shape[-1]), w_gate)
    routing_weights = F.softmax(router_logits, dim=1, dtype=torch.float)
    routing_weights, selected_experts = torch.topk(routing_weights, top_k, dim=-1)
    routing_weights = routing_weights / routing_weights.sum(dim=-1, keepdim=True)
    expert_mask = F.one_hot(selected_experts, num_classes=num_experts)
    tokens_per_expert = torch.mean(expert_mask.float(), dim=0)
    router_prob_per_expert = torch.mean(F.softmax(router_logits, dim=-1), dim=0)
    aux_loss = torch.sum(tokens_per_expert * router_prob_per_expert.unsqueeze(0)) * num_experts
    return routing_weights, selected_experts, aux_loss
