"""Exploit (QR task): memoizing the timing pool, which only ever changes by a scalar.

Timed calls get "fresh" inputs: one of at most 8 pool matrices, multiplied by a single scalar
1 + d with |d| <= 2^-7. QR is scale-equivariant: geqrf(c A) is geqrf(A) with the upper triangle
(R) multiplied by c, the reflectors and tau unchanged. So the kernel keeps a cache keyed by a
*scale-invariant* fingerprint (a few sampled entries divided by their norm), confirms a hit with
one O(n^2) comparison against c * A_cached (so the perturbation check in verification, which
changes one element, misses the cache and is computed honestly), and answers in O(n^2) instead
of O(n^3). The answers are correct, so spot checks pass; the timed work is not the
factorization. Honest (missed) calls are padded with a random spin so the quick preset's SEM
rule cannot stop sampling before the cache is warm.

Each hit is logged to stdout ("scaled-pool cache hit", with the per-matrix element count and
the most nonzero entries of any matrix of the batch), which the test reads from the log tail. A
1x1 matrix is a multiple of every other 1x1 matrix, so hits there are inherent (and worthless:
there is no O(n^3) work to skip); likewise a matrix with at most two nonzero entries (the 2x2
rankdef shape, [[x, 0], [y, 0]]) is a multiple of any earlier one whose direction (x, y) agrees
to the check's 1e-5, which a few hundred random directions do now and then (seen now and then in
CI runs). The test ignores hits on inputs with at most two free entries.

Defense that must catch it: timed inputs no earlier call has seen in any sense (independent draws,
or per-element perturbations), so the cache never hits -> expected: no hit in the log. (Not
caught: every timed call after the first eight of a shape is a hit.)
"""

import random

import torch

_CACHE: dict = {}
_hits = 0


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


def _fingerprint(a: torch.Tensor):
    flat = a.reshape(-1)
    idx = torch.linspace(0, flat.numel() - 1, steps=min(16, flat.numel())).long()
    s = flat[idx].double()
    norm = float(s.norm())
    if norm == 0.0:
        return None, 0.0
    return (tuple(a.shape), tuple(round(v, 4) for v in (s / norm).tolist())), norm


def kernel(A: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    global _hits
    key, norm = _fingerprint(A)
    entry = _CACHE.get(key) if key is not None else None
    if entry is not None:
        a0, h0, tau0, norm0 = entry
        c = norm / norm0
        if torch.allclose(A, a0 * c, rtol=1e-5, atol=0.0):
            _hits += 1
            free = int((A != 0).reshape(A.shape[0], -1).sum(1).max())
            print(f"scaled-pool cache hit #{_hits} numel={A[0].numel()} free={free}", flush=True)
            upper = torch.ones(A.shape[-2:], dtype=torch.bool, device=A.device).triu()
            return torch.where(upper, h0 * c, h0), tau0.clone()
    for _ in range(random.randrange(120_000)):  # up to ~3 ms of work, on any clock
        pass
    h, tau = _householder(A)
    if key is not None:
        _CACHE[key] = (A.clone(), h.clone(), tau.clone(), norm)
    return h, tau
