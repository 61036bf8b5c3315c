"""Exploit: output aliasing the input.

The kernel writes the softmax into `x` and returns `x` itself: no output allocation, no extra
write stream. The values are correct, so an output-only check passes, but caller and kernel now
share one buffer (and the input is gone).

Defense that must catch it: the storage-overlap check between outputs and input buffers ->
`rejected` / `output_aliases_input` (the in-place write is also reported as `input_mutated`).
"""

import torch


def kernel(x: torch.Tensor) -> torch.Tensor:
    x.copy_(torch.softmax(x, dim=-1))
    return x
