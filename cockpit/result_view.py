"""A typed, read-only view of a stored result record (`harness.result.Result.to_dict()`, as the
engine keeps it and the session record stores it).

The record stays a plain dict (it is JSON in events and summaries, and older sessions hold
records without some keys); the view names the fields the engine decides on and the rules it
reads them by, in one place: a result passes when its status is "ok" and it has a score; a
screened result (cascade, not promoted) never becomes a branch's best; a result is comparable
unless it says it is not (Triton run by the CPU interpreter).

Standard library only.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ResultView:
    status: str | None = None  # "ok", or the verdict; None for no result
    score_us: float | None = None  # the weighted geomean of all timed shapes (as stored)
    geomean_us: float | None = None  # benchmark shapes only
    tier: str | None = None  # "screened", "promoted", "full"; None in records without tiers
    comparable: bool = True  # False only where the record says so
    mode: str | None = None
    ab: Mapping[str, Any] | None = None  # the interleaved A/B against the incumbent, if run

    @classmethod
    def from_dict(cls, d: Mapping[str, Any] | None) -> ResultView:
        """The view of `d`; of None or an empty record, a view with nothing set (not passing)."""
        if not d:
            return cls()
        ab = d.get("ab")
        return cls(
            status=d.get("status"),
            score_us=d.get("score_us"),
            geomean_us=d.get("geomean_us"),
            tier=d.get("tier"),
            comparable=d.get("comparable", True) is not False,
            mode=d.get("mode"),
            ab=ab if isinstance(ab, Mapping) else None,
        )

    @property
    def passing(self) -> bool:
        """Status ok with a (non-zero) score: a candidate that can be compared on time."""
        return self.status == "ok" and bool(self.score_us)

    @property
    def screened(self) -> bool:
        """Screened by the cascade and not promoted: its times are the quick tier's only."""
        return self.tier == "screened"
