"""Model spend and LLM state per branch, from the record: what each branch's proposals cost
(USD and tokens, from the `usage` the engine records with each proposal's outcome) and whether
a proposal is in flight.

Read defensively: the engine's vocabulary grows (`proposal_cancelled`, `proposal_discarded`),
so kinds are matched by name, unknown kinds are ignored, and a missing or malformed `usage` is
no spend. The totals are folded from events, so live, replay and the summary agree.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from cockpit.store import SessionRecord
from cockpit.store import events as ev
from cockpit.store.models import Event

REQUESTED = ev.PROPOSAL_REQUESTED
# Events whose payload may carry `usage` (what the calls behind them cost).
USAGE_KINDS = (
    ev.CANDIDATE_PROPOSED,
    ev.PROPOSAL_FAILED,
    "proposal_cancelled",
    "proposal_discarded",
)
# A request's outcome: the proposal is no longer in flight.
OUTCOME_KINDS = (ev.CANDIDATE_PROPOSED, ev.PROPOSAL_FAILED, "proposal_cancelled")


def _num(value: Any) -> float:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0.0


def usage_of(payload: dict[str, Any]) -> tuple[float, int, int]:
    """(USD, tokens, model calls) of one event's `usage`; zeros when absent or malformed."""
    usage = payload.get("usage")
    if not isinstance(usage, dict):
        return 0.0, 0, 0
    tokens = usage.get("tokens")
    if not isinstance(tokens, int | float):
        tokens = _num(usage.get("prompt_tokens")) + _num(usage.get("completion_tokens"))
    calls = usage.get("calls")
    return _num(usage.get("cost_usd")), int(tokens), int(_num(calls))


@dataclass(frozen=True)
class BranchSpend:
    usd: float = 0.0
    tokens: int = 0
    calls: int = 0
    failures: int = 0  # proposals that failed (no candidate)
    asking_since: float | None = None  # a proposal in flight since (its request's time)
    asking_model: str | None = None


@dataclass(frozen=True)
class Spend:
    branches: dict[str, BranchSpend] = field(default_factory=dict)

    @property
    def usd(self) -> float:
        return sum(b.usd for b in self.branches.values())

    @property
    def tokens(self) -> int:
        return sum(b.tokens for b in self.branches.values())

    @property
    def calls(self) -> int:
        return sum(b.calls for b in self.branches.values())

    @property
    def asking(self) -> list[str]:
        return [k for k, b in self.branches.items() if b.asking_since is not None]

    @property
    def any(self) -> bool:
        return bool(self.usd or self.tokens)

    def of(self, branch: str | None) -> BranchSpend:
        return self.branches.get(branch or "", BranchSpend())

    def fold(self, events: Iterable[Event]) -> Spend:
        """The spend after `events` (in id order); the very same object when none matter."""
        changed: dict[str, BranchSpend] | None = None
        for e in events:
            if e.kind != REQUESTED and e.kind not in USAGE_KINDS:
                continue
            if changed is None:
                changed = dict(self.branches)
            key = e.branch or ""
            b = changed.get(key, BranchSpend())
            if e.kind == REQUESTED:
                model = e.payload.get("model")
                b = replace(
                    b, asking_since=e.t, asking_model=model if isinstance(model, str) else None
                )
            else:
                usd, tokens, calls = usage_of(e.payload)
                b = replace(
                    b,
                    usd=b.usd + usd,
                    tokens=b.tokens + tokens,
                    calls=b.calls + calls,
                    failures=b.failures + (e.kind == ev.PROPOSAL_FAILED),
                )
                if e.kind in OUTCOME_KINDS:
                    b = replace(b, asking_since=None, asking_model=None)
            changed[key] = b
        return self if changed is None else Spend(changed)


def spend_between(record: SessionRecord, after_id: int, through_id: int | None) -> Spend:
    """The spend of the events in (after_id, through_id], summed in SQL so the proposals'
    sources are never decoded into Python; in-flight requests only count from the start."""
    through = through_id if through_id is not None else 2**62
    marks = ", ".join("?" * len(USAGE_KINDS))
    rows = record.execute(
        "SELECT coalesce(branch, ''), kind = ?, "
        "sum(coalesce(json_extract(payload, '$.usage.cost_usd'), 0)), "
        "sum(coalesce(json_extract(payload, '$.usage.tokens'), "
        "  coalesce(json_extract(payload, '$.usage.prompt_tokens'), 0) "
        "  + coalesce(json_extract(payload, '$.usage.completion_tokens'), 0))), "
        "sum(coalesce(json_extract(payload, '$.usage.calls'), 0)), count(*) "
        f"FROM events WHERE kind IN ({marks}) AND id > ? AND id <= ? GROUP BY 1, 2",
        (ev.PROPOSAL_FAILED, *USAGE_KINDS, after_id, through),
    )
    branches: dict[str, BranchSpend] = {}
    for branch, failed, usd, tokens, calls, n in rows:
        b = branches.get(branch, BranchSpend())
        branches[branch] = replace(
            b,
            usd=b.usd + _num(usd),
            tokens=b.tokens + int(_num(tokens)),
            calls=b.calls + int(_num(calls)),
            failures=b.failures + (n if failed else 0),
        )
    if after_id == 0:
        for branch, t, model in _in_flight(record, through):
            b = branches.get(branch, BranchSpend())
            branches[branch] = replace(
                b, asking_since=t, asking_model=model if isinstance(model, str) else None
            )
    return Spend(branches)


def _in_flight(record: SessionRecord, through: int) -> list[tuple]:
    """Each branch's latest request that has no outcome after it (up to `through`)."""
    marks = ", ".join("?" * len(OUTCOME_KINDS))
    return record.execute(
        "SELECT coalesce(r.branch, ''), r.t, json_extract(r.payload, '$.model') FROM events r "
        "JOIN (SELECT branch, max(id) AS id FROM events WHERE kind = ? AND id <= ? "
        "      GROUP BY branch) last ON last.id = r.id "
        f"WHERE NOT EXISTS (SELECT 1 FROM events o WHERE o.kind IN ({marks}) "
        "  AND o.branch IS r.branch AND o.id > r.id AND o.id <= ?)",
        (REQUESTED, through, *OUTCOME_KINDS, through),
    )


def fmt_usd(usd: float) -> str:
    if usd >= 100:
        return f"${usd:.0f}"
    if usd >= 0.995 or usd == 0:
        return f"${usd:.2f}"
    return f"${usd:.3f}" if usd < 0.095 else f"${usd:.2f}"


def fmt_tokens(tokens: int) -> str:
    if tokens < 1000:
        return str(tokens)
    if tokens < 1_000_000:
        return f"{tokens / 1000:.1f}k" if tokens < 10_000 else f"{tokens / 1000:.0f}k"
    return f"{tokens / 1e6:.1f}M"
