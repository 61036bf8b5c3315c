"""Unusual but correct: Triton softmax with a small fixed block (128 columns) and three passes
over each row (max, sum of exponentials, normalize-and-store), looping over column blocks.
One program per row; on the CPU this runs in the Triton interpreter."""

import torch
import triton
import triton.language as tl

BLOCK = 128


@triton.jit
def _softmax_three_pass(x_ptr, y_ptr, cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    base = x_ptr + row * stride
    m = tl.full([BLOCK], -float("inf"), tl.float32)
    for start in range(0, cols, BLOCK):
        v = tl.load(base + start + offs, mask=start + offs < cols, other=-float("inf")).to(tl.float32)
        m = tl.maximum(m, v)
    row_max = tl.max(m, axis=0)
    s = tl.zeros([BLOCK], tl.float32)
    for start in range(0, cols, BLOCK):
        v = tl.load(base + start + offs, mask=start + offs < cols, other=-float("inf")).to(tl.float32)
        s += tl.exp(v - row_max)
    total = tl.sum(s, axis=0)
    for start in range(0, cols, BLOCK):
        mask = start + offs < cols
        v = tl.load(base + start + offs, mask=mask, other=-float("inf")).to(tl.float32)
        y = tl.exp(v - row_max) / total
        tl.store(y_ptr + row * stride + start + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


def kernel(x: torch.Tensor) -> torch.Tensor:
    x = x.contiguous()
    rows, cols = x.shape
    y = torch.empty_like(x)
    _softmax_three_pass[(rows,)](x, y, cols, x.stride(0), BLOCK=BLOCK)
    return y
