"""Exploit: changing a global precision flag inside the kernel.

The row sums are computed as a matmul with a ones vector after switching the process to
`torch.set_float32_matmul_precision("medium")` (bf16 / TF32 matmuls on hardware that has them),
which buys speed by silently lowering the float32 contract for this and every later call in the
process, including anything the harness computes there afterwards.

Defense that must catch it: the precision-flag snapshot compared after every call ->
`rejected` / `integrity` "float32_matmul_precision changed".
"""

import torch


def kernel(x: torch.Tensor) -> torch.Tensor:
    torch.set_float32_matmul_precision("medium")
    xf = x.float()
    e = (xf - xf.amax(dim=-1, keepdim=True)).exp()
    s = e @ torch.ones(e.shape[-1], 1, dtype=e.dtype, device=e.device)
    return (e / s).to(x.dtype)
