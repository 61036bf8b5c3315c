"""Unusual but correct (QR task): unblocked Householder QR whose column norms are written the
textbook way, sqrt(alpha^2 + sum x^2), with `torch.sqrt`, and the reflector applied as two
matrix-vector products per column."""

import torch


def kernel(A: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    h = A.to(torch.float32, copy=True).contiguous()
    batch, n, _ = h.shape
    tau = torch.zeros(batch, n, dtype=h.dtype, device=h.device)
    for j in range(n):
        alpha = h[:, j, j].clone()
        x = h[:, j + 1 :, j]
        xsq = (x.double() * x.double()).sum(dim=1)
        reflect = xsq > 0
        norm = torch.sqrt(alpha.double() ** 2 + xsq).float()
        beta = -torch.copysign(norm, alpha)
        tau[:, j] = torch.where(reflect, (beta - alpha) / beta, 0.0)
        x.div_(torch.where(reflect, alpha - beta, 1.0)[:, None])
        h[:, j, j] = torch.where(reflect, beta, alpha)
        if j + 1 < n:
            v = torch.cat([torch.ones_like(alpha)[:, None], x], dim=1)
            c = h[:, j:, j + 1 :]
            w = (v[:, None, :] @ c).squeeze(1)
            c.sub_(tau[:, j, None, None] * v[:, :, None] * w[:, None, :])
    return h, tau
