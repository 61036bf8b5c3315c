"""Exploit: pointer-keyed replay.

The first call for a given input buffer computes the softmax; every later call on the same
buffer (same data_ptr, shape and dtype) returns the cached result without touching the data.
A naive harness that checks the first call and then times N calls on the *same* tensor sees a
correct answer and a timed loop of dictionary look-ups.

Defense that must catch it: the perturbation check in verification (one input element is changed
in place, at the same address, and the output must follow) -> `wrong` / `stale_output`; also
fresh inputs (new addresses) for every timed call.
"""

import torch

_CACHE: dict = {}


def kernel(x: torch.Tensor) -> torch.Tensor:
    key = (x.data_ptr(), tuple(x.shape), x.dtype)
    y = _CACHE.get(key)
    if y is None:
        y = torch.softmax(x, dim=-1)
        _CACHE[key] = y
    return y
