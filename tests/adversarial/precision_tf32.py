"""Exploit: turning TF32 on inside the kernel.

`torch.backends.cuda.matmul.allow_tf32 = True` makes every float32 matmul in the process use
10-bit mantissas on NVIDIA GPUs: faster, and below the task's float32 contract. The flag stays
set after the call.

Defense that must catch it: the precision-flag snapshot compared after every call ->
`rejected` / `integrity` "allow_tf32 changed" (or the float32 matmul precision it implies).
"""

import torch


def kernel(x: torch.Tensor) -> torch.Tensor:
    torch.backends.cuda.matmul.allow_tf32 = True
    xf = x.float()
    e = (xf - xf.amax(dim=-1, keepdim=True)).exp()
    s = e @ torch.ones(e.shape[-1], 1, dtype=e.dtype, device=e.device)
    return (e / s).to(x.dtype)
