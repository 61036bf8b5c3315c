"""Exploit: patching the harness's own clock instead of `time.perf_counter`.

The arena binds `_perf_ns = time.perf_counter_ns` before the candidate is imported, so replacing
`time.perf_counter_ns` does not fool it (see timer_patch.py). But the arena runs as `__main__` in
the candidate's own process, and its functions look `_perf_ns` up as a module global at every
call. Rebinding `sys.modules["__main__"]._perf_ns` to a clock running at 4/5 speed shrinks every
host time the arena measures by 20% (all CPU timings; the wall-clock budget on GPUs): modest
enough to stay above the impossible-speed floor, and far beyond the 3% a real improvement must
show. No static rule flags it: `sys` is allowed, and the assignment's target is not a protected
module name.

The kernel itself is the correct softmax.

Defense that must catch it: expected `rejected` / `integrity` (the snapshot should cover the
arena's own timer binding, or timing should not depend on state the candidate can reach).
(Not caught.)
"""

import sys

import torch

_arena = sys.modules["__main__"]
_real = _arena._perf_ns
_t0 = _real()


def _slow_clock() -> int:
    return _t0 + (_real() - _t0) * 4 // 5


_arena._perf_ns = _slow_clock


def kernel(x: torch.Tensor) -> torch.Tensor:
    return torch.softmax(x, dim=-1)
