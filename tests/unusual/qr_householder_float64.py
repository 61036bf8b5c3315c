"""Unusual but correct (QR task): unblocked Householder QR computed in float64 internally and
cast back to float32 at the end. The reflector convention (beta = -sign(alpha) * norm,
tau = (beta - alpha) / beta, v[0] = 1) matches the task's (H, tau) format."""

import torch


def kernel(A: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    h = A.to(torch.float64, copy=True).contiguous()
    batch, n, _ = h.shape
    tau = torch.zeros(batch, n, dtype=torch.float64, device=h.device)
    for j in range(n):
        alpha = h[:, j, j].clone()
        x = h[:, j + 1 :, j]
        xnorm = torch.linalg.vector_norm(x, dim=1)
        reflect = xnorm > 0
        beta = -torch.copysign(torch.hypot(alpha, xnorm), alpha)
        tau[:, j] = torch.where(reflect, (beta - alpha) / beta, 0.0)
        x.div_(torch.where(reflect, alpha - beta, 1.0)[:, None])
        h[:, j, j] = torch.where(reflect, beta, alpha)
        if j + 1 < n:
            v = torch.cat([torch.ones_like(alpha)[:, None], x], dim=1)
            c = h[:, j:, j + 1 :]
            w = torch.einsum("bi,bij->bj", v, c)
            c.sub_(tau[:, j, None, None] * v[:, :, None] * w[:, None, :])
    return h.float().contiguous(), tau.float()
