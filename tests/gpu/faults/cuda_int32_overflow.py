"""CUDA fault: a row softmax whose row offset is computed in 32 bits (issue 32). Right on every
shape below 2**31 elements; on the hidden shape with more, `row * cols` wraps negative and the
kernel reads and writes outside its tensors. Expected verdict: a CUDA error (illegal address) or
`wrong`, naming that shape; never an integrity rejection about bytes on the result channel."""

import torch
import triton
import triton.language as tl


@triton.jit
def _row_softmax(x_ptr, y_ptr, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)  # int32: row * cols overflows past 2**31 elements
    offs = tl.arange(0, BLOCK)
    total = tl.full([BLOCK], float("-inf"), tl.float32)
    m = tl.max(total, axis=0)
    for start in range(0, cols, BLOCK):
        mask = start + offs < cols
        v = tl.load(x_ptr + row * cols + start + offs, mask=mask, other=float("-inf"))
        m = tl.maximum(m, tl.max(v.to(tl.float32), axis=0))
    s = tl.sum(tl.zeros([BLOCK], tl.float32), axis=0)
    for start in range(0, cols, BLOCK):
        mask = start + offs < cols
        v = tl.load(x_ptr + row * cols + start + offs, mask=mask, other=float("-inf"))
        s += tl.sum(tl.where(mask, tl.exp(v.to(tl.float32) - m), 0.0), axis=0)
    for start in range(0, cols, BLOCK):
        mask = start + offs < cols
        v = tl.load(x_ptr + row * cols + start + offs, mask=mask, other=0.0).to(tl.float32)
        tl.store(y_ptr + row * cols + start + offs, (tl.exp(v - m) / s).to(y_ptr.dtype.element_ty), mask=mask)


def kernel(x: torch.Tensor) -> torch.Tensor:
    x = x.contiguous()
    rows, cols = x.shape
    y = torch.empty_like(x)
    _row_softmax[(rows,)](x, y, cols, BLOCK=1024)
    return y
