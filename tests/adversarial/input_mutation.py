"""Exploit: input mutation (the input as scratch space).

The kernel stores exp(x - max) into the caller's `x` in place (saving the temporary and its
memory traffic) and returns a correct, freshly allocated output. The returned values are right, so
a harness that only compares outputs accepts it, while the caller's input is destroyed (and a
timing loop that reuses one input keeps feeding it already-exponentiated data).

Defense that must catch it: inputs are compared with a pristine copy after the call ->
`rejected` / `input_mutated`.
"""

import torch


def kernel(x: torch.Tensor) -> torch.Tensor:
    m = x.amax(dim=-1, keepdim=True)
    x.sub_(m).exp_()  # x now holds exp(x - max): the input is the scratch buffer
    s = x.sum(dim=-1, keepdim=True, dtype=torch.float32)
    return (x.float() / s).to(x.dtype)
