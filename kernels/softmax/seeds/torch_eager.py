"""Baseline: PyTorch's own softmax kernel (one fused aten kernel per call)."""

import torch

FAMILY = "baseline"


def kernel(x: torch.Tensor) -> torch.Tensor:
    return torch.softmax(x, dim=-1)
