"""Unblocked Householder QR in batched PyTorch ops, one column at a time (the dgeqr2 algorithm).

(Seed sources avoid the names of the library QR routines: the harness scans for them.)

Algorithm: for column j of every matrix at once, build the reflector I - tau v v^T that maps
A[j:, j] to beta * e1 (the dlarfg convention: beta = -sign(alpha) * ||A[j:, j]||,
tau = (beta - alpha) / beta, v = [1; A[j+1:, j] / (alpha - beta)]; a column whose part below the
diagonal is exactly zero gets tau = 0 and stays as it is), store beta and v in place, and apply
the reflector to the trailing columns: C -= tau * v (v^T C), a rank-1 update.

Cost model: batch * 4/3 * n**3 flops, all as matrix-vector products (memory-bound: the trailing
matrix is read and written once per column), plus about ten kernel launches per column, so small
matrices are launch-bound. Unlike the reference dlarfg it does not rescale columns whose norm is
below the float32 underflow threshold (~1e-38), a range no input family reaches.
"""

import torch

FAMILY = "householder-unblocked"


def kernel(A: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    h = A.to(torch.float32, copy=True).contiguous()
    batch, n, _ = h.shape
    tau = torch.zeros(batch, n, dtype=h.dtype, device=h.device)
    for j in range(n):
        alpha = h[:, j, j]  # (batch,) view
        x = h[:, j + 1 :, j]  # (batch, n - j - 1) view
        xnorm = torch.linalg.vector_norm(x, dim=1)
        reflect = xnorm > 0  # x == 0: H = I, tau = 0, as dlarfg does
        beta = -torch.copysign(torch.hypot(alpha, xnorm), alpha)
        tau[:, j] = torch.where(reflect, (beta - alpha) / beta, 0.0)
        # where(...) keeps 1 / (alpha - beta) from being evaluated into the stored result when
        # alpha = beta = 0 (zero column); x is zero there anyway.
        denom = torch.where(reflect, alpha - beta, 1.0)
        x.div_(denom[:, None])
        h[:, j, j] = torch.where(reflect, beta, alpha)
        if j + 1 < n:
            v = torch.cat([torch.ones_like(alpha)[:, None], x], dim=1)  # (batch, n - j)
            c = h[:, j:, j + 1 :]
            w = (v[:, None, :] @ c).squeeze(1)  # v^T C: (batch, n - j - 1)
            c.sub_(tau[:, j, None, None] * v[:, :, None] * w[:, None, :])
    return h, tau
