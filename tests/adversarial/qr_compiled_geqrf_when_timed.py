"""Exploit (QR task): the forbidden routine on timed calls, in a candidate that uses torch.compile.

A forbidden-call watch written as a Python dispatch mode makes dynamo give up on a function, so
such a watch would have to exempt compile candidates (any file whose text contains
`torch.compile`) from the timing audits. This candidate compiles a trivial helper to claim that
exemption, factors honestly (its own Householder loop) on the two
verification calls of each shape (the plain and the perturbed input), and calls the routine,
named through string concatenation, on every later call: warm-up, audits and timed calls.

Defense that must catch it: the forbidden ops are replaced in the dispatcher, so the routine
never runs in the arena, and timing audits watch compile candidates too: expected `rejected` /
`forbidden_call` "aten::geqrf".
"""

import torch

_NAME = "geq" + "rf"
_calls: dict = {}
_contig = torch.compile(lambda h: h.contiguous(), backend="eager")


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
    _calls[key] = _calls.get(key, 0) + 1
    if _calls[key] <= 2:
        return _householder(A)
    h, tau = getattr(torch, _NAME)(A)
    return _contig(h), tau
