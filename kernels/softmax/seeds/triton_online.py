"""Row-wise softmax in Triton, one program per row.

Algorithm: if the row fits in one block (cols <= BLOCK_COLS), load it once, subtract the max,
exponentiate, normalize, store: one read and one write of x, the roofline minimum. Longer rows use
the online softmax (running max and rescaled running sum) in a first pass and a second pass that
re-reads x to write y: 1.5x the minimum traffic, still bandwidth-bound.

Cost model: bytes = 2 * rows * cols * itemsize (single pass); memory-bound at every shape.
"""

import torch
import triton
import triton.language as tl

FAMILY = "triton-rowwise"
TUNABLES = {"MAX_BLOCK": [1024, 2048, 4096, 8192, 16384], "NUM_WARPS": [4, 8, 16]}
MAX_BLOCK = 8192
NUM_WARPS = 8


@triton.jit
def _softmax_single(x_ptr, y_ptr, cols, stride_x, stride_y, BLOCK_COLS: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK_COLS)
    mask = offs < cols
    x = tl.load(x_ptr + row * stride_x + offs, mask=mask, other=-float("inf")).to(tl.float32)
    x = x - tl.max(x, axis=0)
    e = tl.exp(x)
    y = e / tl.sum(e, axis=0)
    tl.store(y_ptr + row * stride_y + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _softmax_online(x_ptr, y_ptr, cols, stride_x, stride_y, BLOCK_COLS: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK_COLS)
    m = tl.full([BLOCK_COLS], -float("inf"), tl.float32)
    s = tl.zeros([BLOCK_COLS], tl.float32)
    for start in range(0, cols, BLOCK_COLS):
        mask = start + offs < cols
        x = tl.load(x_ptr + row * stride_x + start + offs, mask=mask, other=-float("inf"))
        x = x.to(tl.float32)
        m_new = tl.maximum(m, x)
        # lanes that have seen only -inf keep a zero sum instead of exp(nan)
        alpha = tl.where(m_new == -float("inf"), 0.0, tl.exp(m - m_new))
        s = s * alpha + tl.where(mask, tl.exp(x - m_new), 0.0)
        m = m_new
    row_max = tl.max(m, axis=0)
    row_sum = tl.sum(tl.where(m == -float("inf"), 0.0, s * tl.exp(m - row_max)), axis=0)
    for start in range(0, cols, BLOCK_COLS):
        mask = start + offs < cols
        x = tl.load(x_ptr + row * stride_x + start + offs, mask=mask, other=0.0).to(tl.float32)
        y = tl.exp(x - row_max) / row_sum
        tl.store(y_ptr + row * stride_y + start + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


def kernel(x: torch.Tensor) -> torch.Tensor:
    x = x.contiguous()
    rows, cols = x.shape
    y = torch.empty_like(x)
    block = triton.next_power_of_2(cols)
    if block <= MAX_BLOCK:
        _softmax_single[(rows,)](
            x, y, cols, x.stride(0), y.stride(0), BLOCK_COLS=block, num_warps=NUM_WARPS
        )
    else:
        _softmax_online[(rows,)](
            x, y, cols, x.stride(0), y.stride(0), BLOCK_COLS=MAX_BLOCK, num_warps=NUM_WARPS
        )
    return y
