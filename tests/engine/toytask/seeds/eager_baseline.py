"""Baseline: two eager torch ops."""

import torch

FAMILY = "baseline"


def kernel(x: torch.Tensor) -> torch.Tensor:
    return torch.add(x * 2, 1)
