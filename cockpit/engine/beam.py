"""Beam policy as pure functions: duplicates, significance, plateaus, families.

Kept free of I/O so every rule the loop lives by is unit-tested directly: when is a child a
duplicate, when is it really better than the incumbent, when has a branch stalled, and which
algorithm family a stalled branch should move to.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from cockpit.result_view import ResultView

MIN_GAIN = 0.03  # the protocol: smaller claimed gains are noise on an H200 (~2% run to run)


@dataclass(frozen=True)
class Verdict:
    better: bool
    ratio: float  # incumbent score / new score: > 1 means the new one is faster
    ci_low: float
    ci_high: float
    reason: str


def _log_score_var(result: dict[str, Any]) -> float:
    """Variance of log(score) from per-shape relative SEMs (delta method on a weighted geomean)."""
    timed = [s for s in result.get("shapes", []) if s.get("timing")]
    if not timed:
        return 0.0
    wsum = sum(s.get("weight", 1.0) for s in timed)
    var = 0.0
    for s in timed:
        sem = (s["timing"].get("sem_pct") or 0.0) / 100.0
        var += (s.get("weight", 1.0) / wsum) ** 2 * sem**2
    return var


def significantly_better(
    new: dict[str, Any],
    incumbent: dict[str, Any] | None,
    min_gain: float = MIN_GAIN,
    ab: dict[str, Any] | None = None,
) -> Verdict:
    """The protocol's rule: at least `min_gain` faster *and* a 95% interval on the ratio that
    excludes no change. Only passing candidates can win; the first passing one always does.

    With `ab` (an interleaved A/B comparison of the two in one process, `judge.compare`) the
    ratio and interval come from it: that is the protocol's measurement. Without it (CPU runs,
    or a comparison that failed) they come from the two results' per-shape SEMs, which cannot
    see a whole process running slow."""
    mine, theirs = ResultView.from_dict(new), ResultView.from_dict(incumbent)
    if not mine.passing:
        return Verdict(False, 0.0, 0.0, 0.0, "not a passing candidate")
    if mine.screened:  # only a promoted (fully checked) candidate can win
        return Verdict(False, 0.0, 0.0, 0.0, "screened only: not promoted")
    if not theirs.passing:
        return Verdict(True, math.inf, math.inf, math.inf, "first passing candidate")
    if ab and ab.get("ok") and ab.get("ratio"):
        ratio, lo, hi = float(ab["ratio"]), float(ab["ci_low"]), float(ab["ci_high"])
        return _decide(ratio, lo, hi, min_gain, "A/B ")
    ratio = theirs.score_us / mine.score_us
    sd = math.sqrt(_log_score_var(new) + _log_score_var(incumbent))
    return _decide(ratio, ratio * math.exp(-1.96 * sd), ratio * math.exp(1.96 * sd), min_gain, "")


def _decide(ratio: float, lo: float, hi: float, min_gain: float, label: str) -> Verdict:
    """The bar and the interval, whatever measured the ratio (label: "A/B " or "")."""
    gain = f"{label}{(ratio - 1) * 100:+.1f}%"
    if ratio < 1 + min_gain:
        return Verdict(False, ratio, lo, hi, f"{gain} is under the {min_gain * 100:.0f}% bar")
    if lo <= 1.0:
        return Verdict(False, ratio, lo, hi, f"{gain} but the interval includes no change")
    return Verdict(True, ratio, lo, hi, f"{gain} faster")


def plateaued(evaluations_since_best: int, window: int) -> bool:
    return evaluations_since_best >= window


def next_family(
    current: str, families: list[str], in_beam: dict[str, int], quota: int, tried: set[str]
) -> str | None:
    """A stalled branch moves to a family it has not tried, least represented in the beam first,
    never over its quota; None when nothing is left (the branch is then retired)."""
    options = [f for f in families if f != current and f not in tried and in_beam.get(f, 0) < quota]
    if not options:
        return None
    return min(options, key=lambda f: (in_beam.get(f, 0), families.index(f)))
