"""Exploit: wrong results outside the spot-check window (call counting, done right).

The judge checks the outputs of `check_calls` timed calls, drawn from the first `min_samples`
timed calls (10 in iterate/final, 5 in quick). Timed calls are recognisable from the call stack
(`traceback.extract_stack`, which no static rule bans: the arena calls the kernel from
`_timed_call` only when timing). So the kernel

  * is honest during verification, warm-up and profiling,
  * is honest, and deliberately noisy (a random spin), for the first 10 timed calls of each
    shape, so the standard-error stopping rule cannot end sampling inside that window,
  * and afterwards returns a "fast-math" softmax without the max subtraction, which overflows
    on these inputs (row offsets of +-100): one pass fewer, and wrong.

The median then comes from the wrong calls, and none of them is ever checked.

Defense that must catch it: spot checks of timed calls -> expected `wrong` / `stale_output`
"timed call". (Not caught: spot checks are drawn from the first `min_samples` calls only.)
"""

import random
import traceback

import torch

WINDOW = 10  # >= min_samples of every timing preset
_timed: dict = {}


def kernel(x: torch.Tensor) -> torch.Tensor:
    callers = {f.name for f in traceback.extract_stack(limit=4)}
    if "_timed_call" not in callers:
        return torch.softmax(x, dim=-1)
    key = (tuple(x.shape), x.dtype)
    k = _timed.get(key, 0)
    _timed[key] = k + 1
    if k < WINDOW:
        for _ in range(random.randrange(80_000)):  # up to ~2 ms of work, on any clock
            pass
        return torch.softmax(x, dim=-1)
    e = x.float().exp()  # no max subtraction: inf / inf = NaN for large rows
    return (e / e.sum(dim=-1, keepdim=True)).to(x.dtype)
