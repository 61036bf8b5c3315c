"""Blocked Householder QR with the compact WY representation (dlarft + dlarfb, batched).

Algorithm: split the columns into panels of NB. Factor each panel (n - k rows by NB columns) with
the unblocked column-by-column Householder algorithm (dlarfg convention, see
householder_torch.py), then accumulate its NB reflectors into Q_panel = I - V T V^T, with V the
unit lower-trapezoidal reflector block and T an NB x NB upper-triangular factor (dlarft:
T[:i, i] = -tau_i * T[:i, :i] (V[:, :i]^T v_i)), and apply Q_panel^T = I - V T^T V^T to the
trailing columns C with three batched matmuls: W = V^T C, W = T^T W, C -= V W.

Cost model: batch * 4/3 * n**3 flops, of which a fraction ~ 1 - NB / n runs as matmuls
(compute-bound) and the rest in the panels as matrix-vector products (memory-bound); about
10 launches per column in the panels plus ~NB + 5 per panel. Larger NB moves work into matmuls
but lengthens the launch-bound panel.
"""

import torch

FAMILY = "blocked-wy"
TUNABLES = {"NB": [16, 32, 64, 128]}
NB = 32  # panel width: columns factored by rank-1 updates before one blocked trailing update


def _factor_panel(p: torch.Tensor, tau: torch.Tensor) -> None:
    """Householder QR of the (batch, m, nb) panel view `p` in place (m >= nb); taus into `tau`."""
    nb = p.shape[2]
    for j in range(nb):
        alpha = p[:, j, j]
        x = p[:, j + 1 :, j]
        xnorm = torch.linalg.vector_norm(x, dim=1)
        reflect = xnorm > 0  # zero below the diagonal: identity reflector, tau = 0
        beta = -torch.copysign(torch.hypot(alpha, xnorm), alpha)
        tau[:, j] = torch.where(reflect, (beta - alpha) / beta, 0.0)
        x.div_(torch.where(reflect, alpha - beta, 1.0)[:, None])
        p[:, j, j] = torch.where(reflect, beta, alpha)
        if j + 1 < nb:
            v = torch.cat([torch.ones_like(alpha)[:, None], x], dim=1)
            c = p[:, j:, j + 1 :]
            w = (v[:, None, :] @ c).squeeze(1)
            c.sub_(tau[:, j, None, None] * v[:, :, None] * w[:, None, :])


def _t_factor(v: torch.Tensor, tau: torch.Tensor) -> torch.Tensor:
    """dlarft (forward, columnwise): T with H_1 ... H_nb = I - V T V^T; tau = 0 gives a zero
    column, so identity reflectors need no special case."""
    batch, _, nb = v.shape
    g = v.mT @ v  # Gram matrix V^T V, (batch, nb, nb)
    t = torch.zeros(batch, nb, nb, dtype=v.dtype, device=v.device)
    for i in range(nb):
        if i:
            t[:, :i, i] = -tau[:, i, None] * (t[:, :i, :i] @ g[:, :i, i, None]).squeeze(2)
        t[:, i, i] = tau[:, i]
    return t


def kernel(A: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    h = A.to(torch.float32, copy=True).contiguous()
    batch, n, _ = h.shape
    tau = torch.zeros(batch, n, dtype=h.dtype, device=h.device)
    for k in range(0, n, NB):
        kb = min(NB, n - k)
        _factor_panel(h[:, k:, k : k + kb], tau[:, k : k + kb])
        if k + kb < n:
            eye = torch.eye(n - k, kb, dtype=h.dtype, device=h.device)
            v = h[:, k:, k : k + kb].tril(-1) + eye  # unit lower-trapezoidal reflectors
            t = _t_factor(v, tau[:, k : k + kb])
            c = h[:, k:, k + kb :]
            w = t.mT @ (v.mT @ c)
            c.sub_(v @ w)
    return h, tau
