"""Hold every SM of the GPU for a set time: the launch slack before a timed call's start event.

Why (docs/decisions/0016-launch-slack-is-a-gpu-hold.md, with the spread over five processes
with and without it): the arena gives the host time to enqueue a candidate's first launch before
the clock starts, or host launch latency leaks into the timed interval. But an idle GPU in that
window is a gift to a candidate that launches its real work on a side stream *without* waiting
on the timed stream: the inputs are ready (the judge synchronized), so the work runs in the
window, finishes before the start event, and the timed stream shows only what the candidate
chose to leave there. A sleep kernel
(`torch.cuda._sleep`) occupies one thread of one SM, so it does not stop that.

The hold fills every thread slot of every SM with a spinning program (programs of 512 threads,
max_threads_per_multi_processor / 512 of them per SM, ~10 registers each), so nothing else can
become resident until it ends; the arena calls the candidate only once the flush before it has
completed (the hold is running), so any side-stream kernel queues behind the hold and runs after
the start event: inside the timed interval, or after it where the host clock catches it
(`hidden_work`).

Importable without a GPU; `Hold(device)` compiles and calibrates on one (raises if it cannot; the
arena then falls back to the sleep and says so in `protections`).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

THREADS = 512  # per program: 16 warps
CALIBRATE_ITERS = 20_000
MAX_US = 2000.0  # the longest hold `retarget` sets


@triton.jit
def _spin(out_ptr, iters, seed):
    x = seed
    for _ in range(iters):
        x = x * 0.999969 + 0.000031  # a dependent FMA chain: time proportional to iters
    if x == -1.0:  # never true; keeps the loop from being removed
        tl.store(out_ptr, x)


def aim(target_us: float, per_iter: float) -> int:
    """Spin iterations for a hold of `target_us` (at most MAX_US) at `per_iter` us each: a
    multiple of 16, as CALIBRATE_ITERS (Triton specializes integer arguments on it, so every
    length reuses the compiled kernel)."""
    return max(16, int(min(target_us, MAX_US) / per_iter) // 16 * 16)


class Hold:
    def __init__(self, device: torch.device, target_us: float) -> None:
        props = torch.cuda.get_device_properties(device)
        per_sm = int(getattr(props, "max_threads_per_multi_processor", 2048) or 2048)
        self.device = device
        self.grid = props.multi_processor_count * max(1, per_sm // THREADS)
        self.out = torch.zeros(1, dtype=torch.float32, device=device)
        self.iters = CALIBRATE_ITERS
        self.launch()  # compile
        self.per_iter = self.time_us() / CALIBRATE_ITERS
        self.iters = aim(target_us, self.per_iter)
        self.us = self.time_us()
        if not 0.5 * target_us <= self.us <= 2.0 * target_us:
            raise RuntimeError(f"hold calibrated to {self.us:.0f} us, wanted {target_us:.0f} us")
        self.per_iter = self.us / self.iters
        self.target_us = target_us

    def retarget(self, target_us: float) -> None:
        """Aim the next holds at `target_us` (at most MAX_US)."""
        self.target_us = min(target_us, MAX_US)
        self.iters = aim(self.target_us, self.per_iter)

    def recalibrate(self) -> None:
        """Re-measure the time per iteration at the GPU's clocks now (a warmed-up shape's),
        which the first calibration's need not be."""
        self.per_iter = self.time_us() / self.iters

    def launch(self) -> None:
        _spin[(self.grid,)](self.out, self.iters, 1.0, num_warps=THREADS // 32)

    def time_us(self) -> float:
        times = []
        for _ in range(5):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            self.launch()  # the GPU is busy while the timed launch is enqueued: no idle gap in it
            a.record()
            self.launch()
            b.record()
            b.synchronize()
            times.append(a.elapsed_time(b) * 1000.0)
        return sorted(times)[2]

    def describe(self) -> str:
        return f"hold: {self.grid} programs x {THREADS} threads, {self.us:.0f} us"
