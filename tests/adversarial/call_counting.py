"""Exploit: call counting.

Correct for the first N calls of each (shape, dtype) and a replay of the last honest output
afterwards. N = 2 is what verification spends per shape (the call and the perturbed call), so
every verification passes while warm-up and timed calls cost nothing. A naive harness that
verifies only the first calls and then times the rest is fooled.

Defense that must catch it: spot-checked timed calls (the judge asks for the inputs and outputs
of randomly chosen timed calls and checks them itself) -> `wrong` / `stale_output` "timed call".
"""

import torch

N_HONEST = 2
_COUNT: dict = {}
_LAST: dict = {}


def kernel(x: torch.Tensor) -> torch.Tensor:
    key = (tuple(x.shape), x.dtype)
    k = _COUNT.get(key, 0)
    _COUNT[key] = k + 1
    if k < N_HONEST:
        _LAST[key] = torch.softmax(x, dim=-1)
        return _LAST[key]
    return _LAST[key]  # replayed: no work at all
