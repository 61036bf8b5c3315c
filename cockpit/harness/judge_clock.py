"""The judge's own clock over bursts of calls: a bound on the real time per call that the
candidate's process cannot rewrite (docs/decisions/0004-time-cross-check-on-the-judges-clock.md).

Every time the arena reports comes from the candidate's own process, where native code can
rewrite any reply. What it cannot change is what the judge measures from outside. So after a
benchmark shape is timed, the judge asks for *bursts*: K calls back to back, each on a fresh
input mixed from the shape's pool by a recipe only the judge's seed fixes, each call's outputs
folded into a commitment (`wire.commitment`) as it returns, one synchronize, one reply. The
judge's clock is the wall time of the request on a GPU, and on the CPU the CPU time the
operating system accounts to the arena's processes (`cpu_us`: wall time there measures the
share of a shared machine the arena got). Before the candidate was imported the same arena ran
*null bursts* of every length of the shape's ladder (a kernel that only allocates outputs): what
a burst costs besides the calls. A reading is (burst - null burst of the same length) / K, the
fastest of `BURSTS` (`NULL_BURSTS` for the null) each; a reported median far below it
(`Reading.allowance_us`) is forged.

The commitments put the work inside the burst: after each reply the judge picks one call, asks
for its outputs, checks them against the reference and against the commitment made for them.

What is enforced: a shape whose reading is implausible `READINGS` times in a row is rejected
(`integrity`), on the CPU and on a GPU; every reading is recorded on the shape's timing
(`judge_us`, `judge_ratio`, `judge_k`).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass

TARGET_US = 4000.0  # a burst's candidate work, by the reported median: long enough to read
MIN_K, MAX_K = 3, 256
# a burst holds every call's outputs until the judge picks one: at most this many bytes of them
BURST_BYTES = {"cpu": 256 << 20, "cuda": 4 << 30}
# reject above FACTOR times the reported median + slack per call (Reading.allowance_us). On the
# CPU the median and the bursts are taken moments apart on a shared machine, whose contention
# (a busy sibling thread, memory bandwidth) raises CPU time per call by up to ~4x between them.
# On a GPU honest bursts read 0.2-0.95x the median (no L2 flush between calls), forges ~0.85x
# their divisor
FACTOR = {"cpu": 4.0, "cuda": 1.25}
READINGS = 3  # an implausible reading is read again, up to this many: a forge is implausible in all
# a candidate call's own cost beside the null kernel's that its timing does not see: a Python
# call or two on the CPU; on a GPU, launching it on the host (a Triton launch, several torch ops)
SLACK_US = {"cpu": 2.0, "cuda": 20.0}
# of the null burst's cost per call: how far two bursts' costs beside the calls differ. On a GPU
# two walls on a shared machine differ by ~10%; on the CPU a burst's own cost (fresh inputs,
# commitments: tensor ops of a few microseconds each) is 50-100 us a call on small shapes and
# moves by as much again between a null burst and the candidate's, so there a forge shows only
# once the time it hides is above about one null call
NOISE = {"cpu": 1.0, "cuda": 0.1}
MIN_SPAN_US = 1000.0  # below this much time beyond the null model, a burst says nothing
# null bursts per length, taken in rounds over the whole ladder so that one moment of load does
# not slow them all; the fastest counts (load only ever slows a burst, and a slowed null would
# excuse the candidate's calls by as much). On the CPU a burst's cost beside the calls (fresh
# inputs, commitments) is several times a small shape's call and varies by ~25% between bursts
# taken moments apart, so the floor of both sides needs more bursts than a GPU's
NULL_BURSTS = {"cpu": 4, "cuda": 2}
# the candidate's bursts per reading; the fastest counts. Load only slows them, which can only
# make an honest reading implausible, and that is read again (READINGS)
BURSTS = {"cpu": 3, "cuda": 2}


def kind(device: str) -> str:
    """The key of the per-device settings above: "cpu", or "cuda" for any GPU."""
    return "cpu" if device == "cpu" else "cuda"


def cpu_us(pid: int) -> float:
    """CPU time (us) that the kernel has accounted to process `pid`, its threads and the
    processes it started (their own threads and children, recursively): the clock of a burst on
    the CPU. Wall time there measures the share of a shared machine the arena got; this does not,
    and a candidate cannot lower it (the scheduler keeps it, outside the process). 0 where
    /proc does not tell (not Linux)."""
    total, todo, seen = 0, [pid], set()
    while todo:
        p = todo.pop()
        if p in seen:
            continue
        seen.add(p)
        try:
            tasks = os.listdir(f"/proc/{p}/task")
        except OSError:
            continue
        for t in tasks:
            base = f"/proc/{p}/task/{t}"
            try:
                with open(f"{base}/schedstat") as f:
                    total += int(f.read().split()[0])
                with open(f"{base}/children") as f:
                    todo.extend(int(c) for c in f.read().split())
            except (OSError, ValueError, IndexError):
                continue
    return total / 1e3


def max_calls(nbytes: int, device: str) -> int:
    """The most calls a burst makes on a shape whose call returns `nbytes` of outputs."""
    budget = BURST_BYTES[kind(device)]
    return max(MIN_K, min(MAX_K, budget // max(nbytes, 1)))


def ladder(nbytes: int, device: str) -> list[int]:
    """The burst lengths a shape may use: 1 (for calls that alone are long enough to read, so a
    slow candidate pays for one more call, not three), MIN_K, then x4 steps up to `max_calls`.
    The null bursts are run at every one of them, so a reading subtracts the null cost measured
    at its own length (a burst's cost besides the calls is not linear in K: allocations,
    caches)."""
    top = max_calls(nbytes, device)
    ks = [1, MIN_K]
    while ks[-1] * 4 < top:
        ks.append(ks[-1] * 4)
    if ks[-1] != top:
        ks.append(top)
    return ks


def burst_calls(median_us: float, ks: list[int]) -> int:
    """K for a shape whose reported median is `median_us`: the shortest length of the ladder
    that holds about `TARGET_US` of calls by that median (a forged, smaller median only makes
    the burst longer), the longest where none does."""
    want = TARGET_US / max(median_us, 0.5)
    return next((k for k in ks if k >= want), ks[-1])


@dataclass(frozen=True)
class Reading:
    k: int
    burst_us: float  # the fastest burst on the judge's clock
    null_us: float  # the fastest null burst of the same length
    median_us: float  # what the arena reported for the shape
    device: str = "cpu"
    host_us: float = 0.0  # the reported host time per call beyond the GPU's (`host_excess`)

    @property
    def per_call_us(self) -> float:
        """The burst's time beyond the null burst's, per call: the candidate's calls."""
        return (self.burst_us - self.null_us) / self.k

    @property
    def allowance_us(self) -> float:
        """How far above the reported median an honest reading may land: FACTOR times it, a
        call's own overhead (SLACK_US), the host work per call beyond the GPU's that the timing
        reported (a host-bound call's burst runs at its host's pace; more than the judge's
        `hidden_work` bound is rejected there), and a share of the null burst's cost per call
        (the subtraction of two noisy clocks)."""
        dev = kind(self.device)
        return (
            FACTOR[dev] * self.median_us
            + SLACK_US[dev]
            + max(0.0, self.host_us)
            + NOISE[dev] * self.null_us / self.k
        )

    @property
    def readable(self) -> bool:
        return self.per_call_us * self.k >= MIN_SPAN_US

    @property
    def ratio(self) -> float:
        return self.per_call_us / self.median_us if self.median_us > 0 else math.inf

    @property
    def implausible(self) -> bool:
        """The reported median is too far below what the judge's clock saw to be true."""
        return self.readable and self.per_call_us > self.allowance_us


def read(
    null_us: float, k: int, bursts_us: list[float], median_us: float, device: str, host_us: float
) -> Reading:
    """The fastest burst of `k` calls against the fastest null burst of the same length."""
    return Reading(k, min(bursts_us), null_us, median_us, device, host_us)


def message(r: Reading) -> str:
    return (
        f"reported times are {r.ratio:.1f}x below what the judge's clock saw: "
        f"{r.median_us:.1f} us per call reported, {r.per_call_us:.1f} us per call in bursts of "
        f"{r.k} calls back to back (beyond the arena's own cost, measured before the candidate "
        "was imported)"
    )
