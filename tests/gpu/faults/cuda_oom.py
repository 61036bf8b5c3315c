"""CUDA fault: every call asks for 400 GiB of device memory (issue 32). Expected verdict: `oom`,
naming the allocation and the shape; the judge and the next candidate in the slot unharmed."""

import torch


def kernel(x: torch.Tensor) -> torch.Tensor:
    scratch = torch.empty(400 << 30, dtype=torch.uint8, device=x.device)
    return torch.softmax(x, dim=-1) + scratch[:1].float() * 0
