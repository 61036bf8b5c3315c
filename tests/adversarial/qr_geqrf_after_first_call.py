"""Exploit (QR task): the forbidden routine only on calls the recorder does not watch.

The aten dispatch recorder is active for the first verification call of each shape only. The
perturbed second call, warm-up, timed calls and profiling run without it. So the kernel factors
with its own (slow, honest) Householder loop on the first call of each shape and with geqrf,
reached through a computed name, on every later call: it passes verification and is *timed as
geqrf*.

Defense that must catch it: expected `rejected` / `forbidden_call` "aten::geqrf". (Not caught:
the recorder only wraps `_recorded_call`.)
"""

import torch

_NAME = "geq" + "rf"
_seen: set = set()


def _householder(a: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    h = a.to(torch.float32, copy=True).contiguous()
    batch, n, _ = h.shape
    tau = torch.zeros(batch, n, dtype=h.dtype, device=h.device)
    for j in range(n):
        alpha = h[:, j, j]
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
            w = (v[:, None, :] @ c).squeeze(1)
            c.sub_(tau[:, j, None, None] * v[:, :, None] * w[:, None, :])
    return h, tau


def kernel(A: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    key = tuple(A.shape)
    if key not in _seen:
        _seen.add(key)
        return _householder(A)
    h, tau = getattr(torch, _NAME)(A)
    return h.contiguous(), tau
