"""One fused multiply-add over the whole tensor, nothing to tune."""

import torch

FAMILY = "vectorized"


def kernel(x: torch.Tensor) -> torch.Tensor:
    return torch.addcmul(torch.ones_like(x), x, torch.full_like(x, 2.0))
