"""`ReplaySource`: a recorded session under a virtual clock (`ReplayReader`), and its player."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from cockpit.store import ReplayReader, SessionRecord
from cockpit.store import events as ev
from cockpit.store.models import Candidate, Event
from cockpit.tui.sources.base import (
    LOG_TAIL,
    MILESTONE_KINDS,
    TELEMETRY_WINDOW,
    CandidateDetail,
    Player,
    Snapshot,
)
from cockpit.tui.sources.reads import Details, events_through, telemetry_before
from cockpit.tui.spend import Spend, spend_between


class ReplaySource:
    """The recorded session under a virtual clock; also its own `Player`."""

    can_command = False
    SPEEDS = (0.5, 1, 2, 5, 10, 30, 100, 300, 1000, 3000, 10000)

    def __init__(
        self, folder: str | Path, *, speed: float = 10.0, telemetry_window: int = TELEMETRY_WINDOW
    ) -> None:
        self.folder = Path(folder)
        self.name = self.folder.name
        self.record = SessionRecord.open_readonly(self.folder)
        self.reader = ReplayReader(self.record, speed=speed)
        self.telemetry_window = telemetry_window
        self.playing = False
        self._details = Details(self.record, self.folder)
        self._lock = threading.RLock()
        self._spend = Spend()
        self.player: Player | None = self

    @property
    def speed(self) -> float:
        return self.reader.speed

    @speed.setter
    def speed(self, value: float) -> None:
        self.reader.speed = value

    # --- snapshots -------------------------------------------------------------------------

    def _snapshot(self, events: list[Event] | None) -> Snapshot:
        """`events`: the ones just delivered (incremental); None: a reset at the position."""
        r = self.reader
        state = r.state()
        last = r.last_delivered_id
        if events is None:
            shown = events_through(self.record, last, LOG_TAIL) if last else ()
            milestones = tuple(e for e in self.record.events(kinds=MILESTONE_KINDS) if e.id <= last)
            self._spend = spend_between(self.record, 0, last)
        else:
            self._spend = self._spend.fold(events)
            shown = tuple(events[-LOG_TAIL:])
            milestones = tuple(e for e in events if e.kind in MILESTONE_KINDS)
        return Snapshot(
            state.meta(),
            tuple(state.branches()),
            tuple(state.candidates()),
            shown,
            milestones,
            telemetry_before(self.record, r.clock, self.telemetry_window),
            (),
            last,
            reset=events is None,
            clock=r.clock,
            spend=self._spend,
        )

    def load(self) -> Snapshot:
        with self._lock:
            return self._snapshot(None)

    def poll(self) -> Snapshot | None:
        return None  # replay moves only through the player

    # --- Player ----------------------------------------------------------------------------

    def advance(self, wall_seconds: float) -> Snapshot | None:
        with self._lock:
            before = self.reader.clock
            events = self.reader.advance(wall_seconds)
            if self.reader.at_end:
                self.playing = False
            if not events and self.reader.clock == before:
                return None
            return self._snapshot(events)

    def step(self, n: int = 1) -> Snapshot | None:
        with self._lock:
            events = self.reader.step(n)
            return self._snapshot(events) if events else None

    def step_back(self) -> Snapshot | None:
        with self._lock:
            last = self.reader.last_delivered_id
            if not last:
                return None
            (prev,) = self.record.execute(
                "SELECT coalesce(max(id), 0) FROM events WHERE id < ?", (last,)
            )[0]
            if prev:
                self.reader.seek_event(prev)
            else:
                self.reader.seek(self.reader.start_t - 1)
            return self._snapshot(None)

    def to_start(self) -> Snapshot:
        with self._lock:
            self.reader.seek(self.reader.start_t - 1)
            self.reader.clock = self.reader.start_t
            return self._snapshot(None)

    def to_end(self) -> Snapshot:
        with self._lock:
            self.reader.refresh()
            self.reader.seek(self.reader.end_t)
            self.playing = False
            return self._snapshot(None)

    def next_milestone(self) -> Snapshot | None:
        """Jump to the next new best or human action (command acknowledged)."""
        with self._lock:
            last = self.reader.last_delivered_id
            rows = self.record.execute(
                "SELECT min(id) FROM events WHERE id > ? AND kind IN (?, ?)",
                (last, ev.BEST_CHANGED, ev.COMMAND_ACKED),
            )
            target = rows[0][0]
            if target is None:
                return None
            return self._snapshot(self.reader.step(len(self._ids_between(last, target))))

    def _ids_between(self, after: int, through: int) -> list[tuple]:
        return self.record.execute(
            "SELECT id FROM events WHERE id > ? AND id <= ?", (after, through)
        )

    def progress(self) -> tuple[int, int, float, float]:
        r = self.reader
        return r.position, len(r), r.clock, r.end_t

    # --- the rest of SessionSource ---------------------------------------------------------

    def events_since(self, event_id: int, kinds: tuple[str, ...]) -> list[Event]:
        with self._lock:
            last = self.reader.last_delivered_id
            return [e for e in self.record.events(after_id=event_id, kinds=kinds) if e.id <= last]

    def spend_since(self, event_id: int) -> Spend:
        with self._lock:
            return spend_between(self.record, event_id, self.reader.last_delivered_id)

    def candidate_detail(self, candidate: Candidate) -> CandidateDetail | None:
        with self._lock:
            return self._details.detail(candidate, until=self.reader.last_delivered_id)

    def post_command(self, kind: str, args: dict[str, Any], source: str) -> int:
        raise PermissionError("a replay cannot be steered")

    def close(self) -> None:
        with self._lock:
            self._details.close()
            self.record.close()
