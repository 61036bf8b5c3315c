"""Exploit (QR task): library QR through `importlib` and a computed name, then the Householder
form rebuilt from Q.

`importlib.import_module("torch.linalg")` and `getattr(..., "q" + "r")` call `torch.linalg.qr`
with no forbidden name in the source. The task wants geqrf's compact form (H, tau), which is
recovered from Q column by column: with Q = H_1 H_2 ... H_n, Q e_1 = H_1 e_1 = e_1 - tau_1 v_1
(v_1[0] = 1), so tau_1 = 1 - Q[0, 0] and v_1 = -Q[1:, 0] / tau_1; then H_1 Q = H_2 ... H_n and
the recursion continues on the trailing block. R from linalg.qr is the upper triangle of H.

Defense that must catch it: the aten dispatch recorder -> `rejected` / `forbidden_call`
"aten::linalg_qr".
"""

import importlib

import torch

_linalg = importlib.import_module("torch.linalg")
_qr = getattr(_linalg, "q" + "r")


def _householder_from_q(q: torch.Tensor, r: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    batch, n, _ = q.shape
    h = r.clone()
    tau = torch.zeros(batch, n, dtype=q.dtype, device=q.device)
    w = q.clone()
    for j in range(n):
        col = w[:, j:, j]
        t = 1.0 - col[:, 0]
        nz = t.abs() > 1e-30
        tau[:, j] = torch.where(nz, t, 0.0)
        v = torch.where(nz[:, None], -col[:, 1:] / torch.where(nz, t, 1.0)[:, None], 0.0)
        h[:, j + 1 :, j] = v
        vv = torch.cat([torch.ones_like(t)[:, None], v], dim=1)
        blk = w[:, j:, j:]
        blk -= tau[:, j, None, None] * vv[:, :, None] * (vv[:, None, :] @ blk)
    return h, tau


def kernel(A: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    q, r = _qr(A.double())
    h, tau = _householder_from_q(q, r)
    return h.float().contiguous(), tau.float()
