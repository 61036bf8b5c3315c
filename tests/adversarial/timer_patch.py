"""Exploit: timer patching.

At import time `time.perf_counter` and `time.perf_counter_ns` are replaced by clocks that run
ten times slower than real time, so any harness that times the kernel with those functions *in
the candidate's process* reports a 10x speed-up. The kernel itself is correct.

Defense that must catch it: the identity snapshot of every timer taken before the candidate is
imported (and the arena's own clock bound before that) -> `rejected` / `integrity`
"time.perf_counter was replaced".
"""

import time

import torch

_real_ns = time.perf_counter_ns
_t0 = _real_ns()


def _slow_ns() -> int:
    return _t0 + (_real_ns() - _t0) // 10


def _slow() -> float:
    return _slow_ns() / 1e9


time.perf_counter_ns = _slow_ns
time.perf_counter = _slow


def kernel(x: torch.Tensor) -> torch.Tensor:
    return torch.softmax(x, dim=-1)
