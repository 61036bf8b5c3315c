"""Diagnostic, not a seed: what a lone row (1 x 4099) costs in a Triton kernel, step by step.
MODE 0: copy; 1: + one row reduction (rmsnorm-like); 2: + two (softmax: max then sum);
3: empty kernel; 4: no kernel (empty_like only); 5: softmax with one online (max, sum) reduce;
6: rmsnorm-like with the tail folded into a [BC] tensor (one reduction); 7: softmax, folded (two).
VEC: strides passed as 0 (16-byte head accesses). The check fails for MODE 0/3/4 (timing only)."""
import torch
import triton
import triton.language as tl

MODE = 0
VEC = 1
WARPS = 8


@triton.jit
def _online(m1, s1, m2, s2):
    m = tl.maximum(m1, m2)
    return m, s1 * tl.exp(m1 - m) + s2 * tl.exp(m2 - m)


@triton.jit
def _k(x_ptr, w_ptr, y_ptr, cols, stride, BC: tl.constexpr, BT: tl.constexpr, MODE: tl.constexpr,
       HASW: tl.constexpr):
    if MODE != 3:
        r = tl.program_id(0).to(tl.int64)
        c = tl.arange(0, BC)
        ct = BC + tl.arange(0, BT)
        mt = ct < cols
        xh = tl.load(x_ptr + r * stride + c).to(tl.float32)
        xt = tl.load(x_ptr + r * stride + ct, mask=mt, other=0.0).to(tl.float32)
        if HASW:
            wh = tl.load(w_ptr + c).to(tl.float32)
            wt = tl.load(w_ptr + ct, mask=mt, other=0.0).to(tl.float32)
        if MODE == 1:
            s = tl.rsqrt((tl.sum(xh * xh, 0) + tl.sum(xt * xt, 0)) / cols + 1e-6)
            xh = xh * s
            xt = xt * s
            if HASW:
                xh = xh * wh
                xt = xt * wt
        if MODE == 2:
            m = tl.maximum(tl.max(xh, 0), tl.max(tl.where(mt, xt, -float("inf")), 0))
            eh = tl.exp(xh - m)
            et = tl.where(mt, tl.exp(xt - m), 0.0)
            inv = 1.0 / (tl.sum(eh, 0) + tl.sum(et, 0))
            xh = eh * inv
            xt = et * inv
        if MODE == 5:
            xtm = tl.where(mt, xt, -1e30)
            mh, sh = tl.reduce((xh, tl.full([BC], 1.0, tl.float32)), 0, _online)
            mt2, st = tl.reduce((xtm, tl.where(mt, 1.0, 0.0)), 0, _online)
            m, s = _online(mh, sh, mt2, st)
            inv = 1.0 / s
            xh = tl.exp(xh - m) * inv
            xt = tl.exp(xtm - m) * inv
        if MODE == 6 or MODE == 7:
            mf = c < cols - BC
            xf = tl.load(x_ptr + r * stride + BC + c, mask=mf, other=0.0).to(tl.float32)
            if MODE == 6:
                s = tl.rsqrt(tl.sum(xh * xh + xf * xf, 0) / cols + 1e-6)
                xh = xh * s
                xt = xt * s
                if HASW:
                    xh = xh * wh
                    xt = xt * wt
            else:
                xf = tl.where(mf, xf, -float("inf"))
                m = tl.max(tl.maximum(xh, xf), 0)
                eh = tl.exp(xh - m)
                inv = 1.0 / tl.sum(eh + tl.exp(xf - m), 0)
                xh = eh * inv
                xt = tl.where(mt, tl.exp(xt - m), 0.0) * inv
        ty = y_ptr.dtype.element_ty
        tl.store(y_ptr + r * stride + c, xh.to(ty))
        tl.store(y_ptr + r * stride + ct, xt.to(ty), mask=mt)


def kernel(x, *rest):
    y = torch.empty_like(x)
    if MODE == 4:
        return y
    rows, cols = x.shape
    bc = triton.next_power_of_2(cols) // 2
    bt = triton.next_power_of_2(cols - bc)
    w = rest[0] if rest else x
    _k[(rows,)](x, w, y, cols, 0 if VEC else x.stride(0), BC=bc, BT=bt, MODE=MODE,
                HASW=bool(rest), num_warps=WARPS)
    return y
