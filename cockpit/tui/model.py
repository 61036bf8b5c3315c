"""The view model: what the cockpit has learned from the snapshots so far, as plain data.

Kept apart from the widgets so the rules (what is a branch's best-so-far curve, which command
just got its acknowledgement, what deserves a bell) are pure functions a unit test can call.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from cockpit.store import events as ev
from cockpit.store import figures
from cockpit.store.models import Branch, Candidate, Command, Event
from cockpit.store.states import end_reason, evaluations
from cockpit.tui.notify import BY_COMMAND
from cockpit.tui.plot import StepSeries
from cockpit.tui.sources import Snapshot
from cockpit.tui.spend import Spend

RETIRED = "retired"


@dataclass
class SessionModel:
    meta: dict[str, Any] = field(default_factory=dict)
    branches: tuple[Branch, ...] = ()
    candidates: tuple[Candidate, ...] = ()
    milestones: list[Event] = field(default_factory=list)
    commands: dict[int, Command] = field(default_factory=dict)
    last_event_id: int = 0
    clock: float | None = None
    first_t: float | None = None
    last_t: float | None = None
    spend: Spend = field(default_factory=Spend)
    _index: dict[str, Candidate] = field(default_factory=dict, repr=False)
    _index_of: tuple[Candidate, ...] | None = field(default=None, repr=False)
    # figures over the whole candidate list, kept while the list is the same object: a
    # snapshot that changed no candidate hands over the same tuple, and these are asked of
    # every snapshot (the session bar, the plot's reference line)
    _figures: dict[Any, Any] = field(default_factory=dict, repr=False)
    _figures_of: tuple[Candidate, ...] | None = field(default=None, repr=False)

    def apply(self, snap: Snapshot) -> list[Command]:
        """Take in a snapshot; returns the commands whose acknowledgement just arrived."""
        if snap.reset:
            self.milestones = list(snap.milestones)
        else:
            self.milestones.extend(snap.milestones)
        self.meta, self.branches, self.candidates = snap.meta, snap.branches, snap.candidates
        self.last_event_id, self.clock = snap.last_event_id, snap.clock
        if snap.spend is not None:
            self.spend = snap.spend
        if snap.events:
            self.last_t = max(self.last_t or snap.events[-1].t, snap.events[-1].t)
        if snap.reset:
            self.last_t = snap.events[-1].t if snap.events else None
        self.first_t = self.meta.get("created") or self.first_t
        acked = []
        for c in snap.commands:
            before = self.commands.get(c.id)
            if before is not None and before.state == "pending" and c.state != "pending":
                acked.append(c)
            self.commands[c.id] = c
        return acked

    # --- questions the panels ask ----------------------------------------------------------

    def branch(self, branch_id: str | None) -> Branch | None:
        return next((b for b in self.branches if b.id == branch_id), None)

    def candidate(self, candidate_id: str | None) -> Candidate | None:
        if self._index_of is not self.candidates:  # rebuilt once per new candidate list
            self._index = {c.id: c for c in self.candidates}
            self._index_of = self.candidates
        return self._index.get(candidate_id or "")

    @property
    def pending(self) -> list[Command]:
        return [c for c in self.commands.values() if c.state == "pending"]

    def _of_candidates(self, name: Any, compute: Callable[[tuple[Candidate, ...]], Any]) -> Any:
        if self._figures_of is not self.candidates:
            self._figures, self._figures_of = {}, self.candidates
        if name not in self._figures:
            self._figures[name] = compute(self.candidates)
        return self._figures[name]

    @property
    def evaluations(self) -> int:
        return self._of_candidates("evaluations", evaluations)

    @property
    def best(self) -> Candidate | None:
        # the branches' bests can change in a snapshot that changed no candidate row
        held = tuple(b.best_candidate for b in self.branches)
        return self._of_candidates(
            ("best", held), lambda cands: figures.best(cands, self.branches)
        )

    @property
    def paused_all(self) -> bool:
        return self.meta.get("state") == "paused"

    @property
    def ended(self) -> str | None:
        """Why the run ended, in one sentence (cockpit.store.states); None while it runs."""
        return end_reason(self.meta.get("state"), self.meta, self.branches, self.evaluations)

    @property
    def engine_active(self) -> bool:
        """Whether the record says an engine is at work (a proposal in flight means something
        only then: a crashed engine leaves its last request without an outcome)."""
        return self.meta.get("state") in ("running", "paused")

    def outages(self) -> list[str]:
        """Branches paused by the engine because the model provider is failing."""
        return [b.id for b in self.branches if branch_outage(b)]

    def history(self) -> tuple[list[str], list[StepSeries]]:
        """Best-so-far per branch from the best_changed events: (branch ids, series). A
        baseline's time is the plot's reference line (`reference`), not a series."""
        points: dict[str, list[tuple[float, float]]] = {b.id: [] for b in self.branches}
        ended: dict[str, float] = {}
        for e in self.milestones:
            if e.kind == ev.BEST_CHANGED and e.branch and e.payload.get("score_us"):
                c = self.candidate(e.payload.get("candidate", e.candidate))
                if c is not None and figures.is_baseline(c):
                    continue
                points.setdefault(e.branch, []).append((e.t, float(e.payload["score_us"])))
            elif e.kind == ev.BRANCH_STATE and e.branch:
                if e.payload.get("state") == RETIRED:
                    ended[e.branch] = e.t
                else:
                    ended.pop(e.branch, None)
        ids = [b for b in points if points[b]]
        return ids, [StepSeries(tuple(points[b]), ended.get(b)) for b in ids]

    def reference(self) -> Candidate | None:
        return self._of_candidates("reference", figures.reference)

    def history_comparable(self) -> bool:
        """Whether the plotted times are comparable ones (the best's pool: figures.best)."""
        b = self.best
        return b is None or figures.comparable(b.summary)

    def marks(self) -> list[tuple[float, str]]:
        """Human actions (▲) and family switches / forks (◆) on the time axis."""
        out = []
        for e in self.milestones:
            if e.kind == ev.COMMAND_ACKED and e.payload.get("ok"):
                out.append((e.t, "▲"))
            elif e.kind == ev.ESCALATED or e.kind == ev.BRANCH_FORKED:
                out.append((e.t, "◆"))
        return out


def branch_outage(b: Branch) -> bool:
    """Paused, and not by a person: the engine pauses a branch itself only on a provider
    outage (and resumes it after a cool-down)."""
    reason = str(b.info.get("state_reason") or "")
    return b.state == "paused" and bool(reason) and not reason.startswith(BY_COMMAND)
