"""Baseline: LAPACK (CPU) / cuSOLVER (GPU) geqrf through `torch.geqrf`.

Algorithm: blocked Householder QR, one library call per batch (cuSOLVER loops over the matrices
of a batch). Cost model: batch * 4/3 * n**3 flops. This seed is listed in `baseline_seeds` in
task.toml, so it alone may call geqrf; it is what every candidate's speed-up is measured against.
"""

import torch

FAMILY = "baseline"


def kernel(A: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    return torch.geqrf(A)
