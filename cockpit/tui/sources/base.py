"""What a session source hands the cockpit: snapshots, candidate details, replay controls.

The app is given a source, never a path (memray's `TUIApp(reader)`, Harlequin's adapter), so
the live view, replay and tests are one app. Every source method blocks (SQLite, git) and is
called from worker threads; each source serializes its own calls with a lock.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from cockpit.store import events as ev
from cockpit.store.models import Branch, Candidate, Command, Event, TelemetrySample
from cockpit.tui.spend import Spend

LOG_TAIL = 300  # events the log starts with
TELEMETRY_WINDOW = 300  # samples kept (per GPU, 1 Hz: five minutes)
# Events that the history plot and the notifications need in full, however old.
MILESTONE_KINDS = (
    ev.BEST_CHANGED,
    ev.COMMAND_ACKED,
    ev.ESCALATED,
    ev.BRANCH_FORKED,
    ev.BRANCH_STATE,
    ev.PLATEAU_DETECTED,
)


@dataclass(frozen=True)
class Snapshot:
    """What a view needs to draw one moment of the session.

    `reset` snapshots replace everything (first load, a replay seek backwards); the others
    carry only the events that are new since the previous snapshot. Lists that did not change
    are handed over as the very same objects, so a view can skip redrawing with an `is` test."""

    meta: dict[str, Any]
    branches: tuple[Branch, ...]
    candidates: tuple[Candidate, ...]
    events: tuple[Event, ...]
    milestones: tuple[Event, ...]
    telemetry: tuple[TelemetrySample, ...]
    commands: tuple[Command, ...]
    last_event_id: int
    reset: bool
    clock: float | None = None  # the virtual clock in replay; None when live (use wall time)
    spend: Spend | None = None  # model spend and proposals in flight, per branch


@dataclass(frozen=True)
class CandidateDetail:
    candidate: Candidate
    source: str | None
    parent_source: str | None
    diff: str | None
    result: dict[str, Any] | None  # the last evaluation_finished payload
    proposal: dict[str, Any] | None  # the candidate_proposed payload (note, model, ...)


class Player(Protocol):
    """Replay controls; every call returns the snapshot to show next (None: nothing moved)."""

    playing: bool
    speed: float

    def advance(self, wall_seconds: float) -> Snapshot | None: ...
    def step(self, n: int = 1) -> Snapshot | None: ...
    def step_back(self) -> Snapshot | None: ...
    def to_start(self) -> Snapshot: ...
    def to_end(self) -> Snapshot: ...
    def next_milestone(self) -> Snapshot | None: ...
    def progress(self) -> tuple[int, int, float, float]: ...  # (delivered, total, clock, end)


class SessionSource(Protocol):
    name: str
    folder: Path
    can_command: bool  # False in replay: history cannot be steered
    player: Player | None

    def load(self) -> Snapshot: ...
    def poll(self) -> Snapshot | None: ...
    def events_since(self, event_id: int, kinds: tuple[str, ...]) -> list[Event]: ...
    def spend_since(self, event_id: int) -> Spend: ...
    def candidate_detail(self, candidate: Candidate) -> CandidateDetail | None: ...
    def post_command(self, kind: str, args: dict[str, Any], source: str) -> int: ...
    def close(self) -> None: ...
