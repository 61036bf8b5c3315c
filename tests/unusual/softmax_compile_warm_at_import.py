"""Unusual but correct: a `torch.compile`d softmax (log-sum-exp form) that is compiled and warmed
up once at import time, the usual way to keep compilation out of the first measured call."""

import torch


def _softmax(x: torch.Tensor) -> torch.Tensor:
    xf = x.float()
    return torch.exp(xf - torch.logsumexp(xf, dim=-1, keepdim=True)).to(x.dtype)


_compiled = torch.compile(_softmax, dynamic=True)
_compiled(torch.randn(4, 8))  # compile now, not inside the first timed call


def kernel(x: torch.Tensor) -> torch.Tensor:
    return _compiled(x)
