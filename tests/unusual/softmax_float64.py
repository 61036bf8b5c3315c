"""Unusual but correct: softmax via exp/sum in float64, cast back to the input dtype."""

import torch


def kernel(x: torch.Tensor) -> torch.Tensor:
    xd = x.double()
    e = (xd - xd.amax(dim=-1, keepdim=True)).exp()
    return (e / e.sum(dim=-1, keepdim=True)).to(x.dtype)
