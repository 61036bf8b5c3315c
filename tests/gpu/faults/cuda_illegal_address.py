"""CUDA fault: a Triton kernel stores far outside its output (an illegal address), the commonest
failure of model-written kernels (issue 32). Expected verdict: a CUDA error that says an illegal
memory access happened and names the shape, not an integrity rejection."""

import torch
import triton
import triton.language as tl


@triton.jit
def _scatter_far(y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    far = offs.to(tl.int64) + (1 << 40)  # a terabyte past the output
    tl.store(y_ptr + far, tl.zeros([BLOCK], tl.float32), mask=offs < n)


def kernel(x: torch.Tensor) -> torch.Tensor:
    y = torch.softmax(x, dim=-1)
    scratch = torch.empty(1024, dtype=torch.float32, device=x.device)
    _scatter_far[(1,)](scratch, 1024, BLOCK=1024)
    return y
