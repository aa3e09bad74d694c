# Detection-style anchor matching as torchvision's box_iou and Matcher write
# it: pairwise IoU, best ground truth per anchor, thresholds to labels.
from typing import Tuple

import torch
from torch import Tensor


def box_area(boxes: Tensor) -> Tensor:
    return (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])


def box_iou(boxes1: Tensor, boxes2: Tensor) -> Tensor:
    area1 = box_area(boxes1)
    area2 = box_area(boxes2)
    lt = torch.max(boxes1[:, None, :2], boxes2[:, :2])
    rb = torch.min(boxes1[:, None, 2:], boxes2[:, 2:])
    wh = (rb - lt).clamp(min=0)
    inter = wh[:, :, 0] * wh[:, :, 1]
    union = area1[:, None] + area2 - inter
    return inter / union


def match(gt: Tensor, anchors: Tensor, high: float, low: float) -> Tuple[Tensor, Tensor, Tensor]:
    iou = box_iou(gt, anchors)
    matched_vals, matches = iou.max(dim=0)
    labels = torch.where(matched_vals >= high, torch.ones_like(matches), torch.zeros_like(matches))
    labels = torch.where((matched_vals < high) & (matched_vals >= low), -torch.ones_like(labels), labels)
    return iou, matches, labels
