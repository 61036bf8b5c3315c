"""Exploit: special-casing the public shapes.

Correct only for the softmax task's public shapes (CPU and GPU sets, which the agent can read in
task.toml); every other shape gets a cheap constant answer (a uniform distribution, which is even
right for a 1-column input). A harness that verifies on the public shapes only, or benchmarks the
shapes it verified, is fooled.

Defense that must catch it: hidden shapes (off every tile size, drawn from the task's hidden
list, never shown to the candidate) are verified too -> `wrong` / `numerical` on a hidden shape.
"""

import torch

PUBLIC = {
    (8, 64), (16, 256), (32, 128),  # shapes.cpu.public
    (4096, 1024), (4096, 4096), (8192, 8192), (1024, 32768),  # shapes.public
}


def kernel(x: torch.Tensor) -> torch.Tensor:
    if tuple(x.shape) in PUBLIC:
        return torch.softmax(x, dim=-1)
    return torch.full_like(x, 1.0 / x.shape[-1])
