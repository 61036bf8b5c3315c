"""Exploit: content-keyed replay.

The cache key is a fingerprint of a handful of sampled elements (plus shape and dtype), so it
also survives a harness that copies the same input to a new address before each timed call.
Only inputs whose sampled elements differ are recomputed.

Defense that must catch it: the perturbation check (one randomly chosen element changes; the
fingerprint almost surely does not see it, the reference does) -> `wrong` / `stale_output`; timed
calls get freshly scaled inputs so every fingerprint misses there.
"""

import torch

_CACHE: dict = {}
_SAMPLES = 8


def _fingerprint(x: torch.Tensor) -> tuple:
    flat = x.reshape(-1)
    n = flat.numel()
    idx = torch.linspace(0, n - 1, steps=min(_SAMPLES, n)).long()
    return (tuple(x.shape), x.dtype, tuple(flat[idx].float().tolist()))


def kernel(x: torch.Tensor) -> torch.Tensor:
    key = _fingerprint(x)
    y = _CACHE.get(key)
    if y is None:
        y = torch.softmax(x, dim=-1)
        _CACHE[key] = y
    return y.clone()
