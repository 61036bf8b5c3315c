"""Unusual but correct: a Python loop over chunks of 7 rows, written into a preallocated output."""

import torch

CHUNK = 7


def kernel(x: torch.Tensor) -> torch.Tensor:
    y = torch.empty_like(x)
    for lo in range(0, x.shape[0], CHUNK):
        y[lo : lo + CHUNK] = torch.softmax(x[lo : lo + CHUNK].float(), dim=-1).to(x.dtype)
    return y
