"""PROTOTYPE (session 22, not a seed): RMSNorm rows of odd bf16 length as aligned spans."""

import torch
import triton
import triton.language as tl

R = 8  # rows a program (a multiple of 16 // itemsize, so a span starts on 16 bytes)
WARPS = 1
GATHER_W = 0  # 0: w by scalar loads (L1); 1: tl.gather from a register copy
EPS = 1e-6


@triton.jit
def _seg_add(fa, va, fb, vb):
    return fa | fb, tl.where(fb, vb, va + vb)


@triton.jit
def _span(
    x_ptr, w_ptr, y_ptr, rows, cols, eps,
    R: tl.constexpr, H: tl.constexpr, T: tl.constexpr, BW: tl.constexpr, V: tl.constexpr,
    GW: tl.constexpr,
):  # fmt: skip
    t = tl.program_id(0)
    n = R * cols
    n = n // V * V  # R is a multiple of V: a span is whole vectors (tells the compiler)
    base = t.to(tl.int64) * n
    inv = 1.0 / cols.to(tl.float32)
    e = tl.arange(0, H)
    et = H + tl.arange(0, T)
    full = (t + 1) * R <= rows
    if full:
        x = tl.load(x_ptr + base + e).to(tl.float32)
        xt = tl.load(x_ptr + base + et, mask=et < n, other=0.0).to(tl.float32)
    else:
        x = tl.load(x_ptr + base + e, mask=e < (rows - t * R) * cols, other=0.0).to(tl.float32)
        xt = tl.load(x_ptr + base + et, mask=et < (rows - t * R) * cols, other=0.0).to(tl.float32)
    re = ((e.to(tl.float32) + 0.5) * inv).to(tl.int32)
    rt = ((et.to(tl.float32) + 0.5) * inv).to(tl.int32)
    first = e == re * cols  # a row's first element: the scan restarts there
    _, cs = tl.associative_scan((first, x * x), 0, _seg_add)
    k = tl.arange(0, R)
    end = tl.minimum((k + 1) * cols, H) - 1
    s_end = tl.where(k * cols < H, tl.gather(cs, end, 0), 0.0)
    xt2 = xt * xt
    ss = s_end
    for j in tl.static_range(R):
        ss += tl.where(k == j, tl.sum(tl.where(rt == j, xt2, 0.0), 0), 0.0)
    rstd = tl.rsqrt(ss / cols + eps)
    rs = tl.gather(rstd, re, 0)
    rst = tl.gather(rstd, tl.minimum(rt, R - 1), 0)
    ce = e - re * cols
    ct = et - rt * cols
    if GW:
        c = tl.arange(0, BW)
        wr = tl.load(w_ptr + c, mask=c < cols, other=0.0).to(tl.float32)
        w = tl.gather(wr, ce, 0)
        wt = tl.gather(wr, tl.minimum(ct, BW - 1), 0)
    else:
        w = tl.load(w_ptr + ce).to(tl.float32)
        wt = tl.load(w_ptr + ct, mask=et < n, other=0.0).to(tl.float32)
    ty = y_ptr.dtype.element_ty
    if full:
        tl.store(y_ptr + base + e, (x * rs * w).to(ty))
        tl.store(y_ptr + base + et, (xt * rst * wt).to(ty), mask=et < n)
    else:
        left = (rows - t * R) * cols
        tl.store(y_ptr + base + e, (x * rs * w).to(ty), mask=e < left)
        tl.store(y_ptr + base + et, (xt * rst * wt).to(ty), mask=et < left)


def kernel(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    x = x.contiguous()
    weight = weight.contiguous()
    rows, cols = x.shape
    y = torch.empty_like(x)
    v = 16 // x.element_size()
    n = R * cols
    h = 1 << (n.bit_length() - 1)
    tt = max(v, triton.next_power_of_2(n - h)) if n > h else v
    assert R % v == 0 and tt <= h // 4, (n, h, tt)
    _span[(triton.cdiv(rows, R),)](
        x, weight, y, rows, cols, EPS, R=R, H=h, T=tt, BW=triton.next_power_of_2(cols), V=v,
        GW=GATHER_W, num_warps=WARPS,
    )  # fmt: skip
    return y
