"""Timing statistics and the stopping rule of docs/harness-protocol.md (pure functions).

The measurement loop itself runs in the candidate's process (`arena.py`); everything that turns
samples into a verdict lives here so it can be unit-tested without a GPU.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

from cockpit.harness.result import TimingStats

# The shortest launch slack the arena gives a timed call (arena.py, `_before_timed`): every SM
# held this long at least before the start event. The judge reads a host time past it as work
# the clock did not see (`judge.host_bound`).
LAUNCH_SLACK_US = 200.0


@dataclass(frozen=True)
class Policy:
    """When to stop sampling. Defaults follow the protocol for iterating."""

    min_samples: int = 10
    min_total_ms: float = 100.0
    target_sem: float = 0.005  # standard error / mean
    max_total_ms: float = 10_000.0
    max_wall_s: float = 120.0
    max_samples: int = 1000
    warmup_calls: int = 3
    warmup_ms: float = 25.0
    check_calls: int = 2  # timed calls whose outputs are also verified
    # input sets per timed shape on a GPU: 2-8 of them within this many bytes (each timed call
    # takes a fresh mix of two, so two already give every call new inputs)
    pool_bytes: int = 1 << 30

    @classmethod
    def preset(cls, name: str) -> Policy:
        return PRESETS[name]


PRESETS = {
    "iterate": Policy(),
    "final": Policy(target_sem=0.001),
    # CI and smoke tests on a 2-core CPU: a handful of samples, labelled as such in the result
    "quick": Policy(
        min_samples=5,
        min_total_ms=5.0,
        target_sem=0.05,
        max_total_ms=300.0,
        max_wall_s=20.0,
        max_samples=50,
        warmup_calls=1,
        warmup_ms=0.0,
        check_calls=1,
        pool_bytes=256 << 20,
    ),
}


def should_stop(samples_us: list[float], wall_s: float, policy: Policy) -> str:
    """Return the name of the rule that ends sampling, or '' to keep going."""
    n = len(samples_us)
    total_ms = sum(samples_us) / 1000.0
    if n >= policy.max_samples:
        return "max_samples"
    if total_ms >= policy.max_total_ms:
        return "max_total"
    if wall_s >= policy.max_wall_s:
        return "max_wall"
    if (
        n >= policy.min_samples
        and total_ms >= policy.min_total_ms
        and sem_ratio(samples_us) < policy.target_sem
    ):
        return "converged"
    return ""


def sem_ratio(samples: list[float]) -> float:
    if len(samples) < 2:
        return math.inf
    mean = statistics.fmean(samples)
    return statistics.stdev(samples) / math.sqrt(len(samples)) / mean if mean > 0 else math.inf


def percentile(sorted_samples: list[float], q: float) -> float:
    if not sorted_samples:
        return math.nan
    k = (len(sorted_samples) - 1) * q
    lo, hi = math.floor(k), math.ceil(k)
    return sorted_samples[lo] + (sorted_samples[hi] - sorted_samples[lo]) * (k - lo)


def summarize(
    samples_us: list[float],
    host_us: list[float] | None = None,
    stop: str = "",
    submit_us: list[float] | None = None,
) -> TimingStats:
    s = sorted(samples_us)
    mean = statistics.fmean(s)
    return TimingStats(
        n=len(s),
        mean_us=mean,
        sem_pct=sem_ratio(s) * 100 if len(s) > 1 else math.nan,
        median_us=statistics.median(s),
        p10_us=percentile(s, 0.10),
        p90_us=percentile(s, 0.90),
        min_us=s[0],
        max_us=s[-1],
        total_ms=sum(s) / 1000.0,
        host_median_us=statistics.median(host_us) if host_us else 0.0,
        submit_median_us=statistics.median(submit_us) if submit_us else None,
        stop=stop,
    )


@dataclass(frozen=True)
class Comparison:
    ratio: float  # the median of b_i / a_i over the rounds: > 1 means A is faster
    ci_low: float
    ci_high: float
    faster: bool  # A beats B by the protocol's rule


def compare_interleaved(a_us: list[float], b_us: list[float], min_gain: float = 0.03) -> Comparison:
    """Is A faster than B? Needs a gain of at least `min_gain` *and* a 95% confidence interval on
    the ratio that excludes 1. Back-to-back runs differ by ~2% on an H200, so less is noise.

    The samples are paired: round i timed a_i and b_i on the same input, one right after the
    other in a random order (`arena.compare`). The ratio is the median of the per-round ratios
    b_i / a_i, and its interval is the sign test's (order statistics of those ratios: no
    assumption about their distribution). A load spike on a shared machine hits one call of one
    round and moves one ratio; with the ratio of means and an interval from the two variances,
    a few such spikes can make a candidate "significantly faster" than itself
    (docs/decisions/0020-paired-sign-test-for-ab.md). With fewer than 6 rounds the interval is
    the whole range of ratios."""
    n = min(len(a_us), len(b_us))
    if n == 0:
        return Comparison(math.nan, math.nan, math.nan, faster=False)
    ratios = sorted(b / a for a, b in zip(a_us, b_us))  # zip stops at n
    ratio = statistics.median(ratios)
    # 95% two-sided: ranks k and n - 1 - k (0-based), k from the normal approximation of
    # Binomial(n, 1/2), rounded down (conservative)
    k = max(0, math.floor((n - 1.96 * math.sqrt(n)) / 2)) if n >= 6 else 0
    lo, hi = ratios[k], ratios[n - 1 - k]
    return Comparison(ratio, lo, hi, faster=ratio >= 1 + min_gain and lo > 1.0)


def geomean(values: list[float], weights: list[float] | None = None) -> float:
    if not values:
        return math.nan
    weights = weights or [1.0] * len(values)
    return math.exp(sum(w * math.log(v) for v, w in zip(values, weights)) / sum(weights))
