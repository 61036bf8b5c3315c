"""Unusual but correct: the softmax is computed over dim 0 of the transposed input, and the
result is transposed back and made contiguous."""

import torch


def kernel(x: torch.Tensor) -> torch.Tensor:
    xt = x.t().contiguous()
    yt = torch.softmax(xt, dim=0)
    return yt.t().contiguous()
