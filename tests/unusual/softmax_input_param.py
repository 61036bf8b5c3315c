"""Unusual but correct: the parameter is called `input`, as in torch.nn.functional's own
signatures (`F.softmax(input, dim)`), and the softmax is torch's."""

import torch


def kernel(input: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.softmax(input, dim=-1)
