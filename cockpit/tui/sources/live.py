"""`LiveSource`: polls a session record read-only while its engine writes (attach)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from cockpit.store import SessionRecord, engine_pid
from cockpit.store.models import Branch, Candidate, Command, Event, TelemetrySample
from cockpit.store.states import effective_meta
from cockpit.tui.sources.base import (
    LOG_TAIL,
    MILESTONE_KINDS,
    TELEMETRY_WINDOW,
    CandidateDetail,
    Snapshot,
)
from cockpit.tui.sources.reads import Details, events_through, telemetry_before
from cockpit.tui.spend import Spend, spend_between

# candidates named by one poll's events beyond which the whole table is read instead
MAX_REREAD = 200


class LiveSource:
    """Polls a session record read-only: cheap when nothing changed (two small queries)."""

    can_command = True
    player = None

    def __init__(self, folder: str | Path, *, telemetry_window: int = TELEMETRY_WINDOW) -> None:
        self.folder = Path(folder)
        self.name = self.folder.name
        self.record = SessionRecord.open_readonly(self.folder)
        self.telemetry_window = telemetry_window
        self._details = Details(self.record, self.folder)
        self._lock = threading.Lock()
        self._last_id = 0
        self._last_tel: float | None = None
        self._branches: tuple[Branch, ...] = ()
        self._candidates: tuple[Candidate, ...] = ()
        self._telemetry: tuple[TelemetrySample, ...] = ()
        self._commands: tuple[Command, ...] = ()
        self._meta: dict[str, Any] = {}
        self._alive = False  # whether an engine held the session's lock at the last read
        self._spend = Spend()

    def _engine_alive(self) -> bool:
        """Probed before the record is read: an engine records its final state before it lets
        the lock go, so a record read after a free lock already says how the engine ended."""
        return engine_pid(self.folder) is not None

    def load(self) -> Snapshot:
        with self._lock:
            self._alive = self._engine_alive()
        with self._lock, self.record.snapshot():
            last = self.record.last_event_id()
            self._meta = effective_meta(self.record.meta(), self._alive)
            self._branches = tuple(self.record.branches())
            self._candidates = tuple(self.record.candidates())
            self._telemetry = telemetry_before(self.record, None, self.telemetry_window)
            self._last_tel = self._telemetry[-1].t if self._telemetry else None
            self._commands = tuple(self.record.commands())
            events = events_through(self.record, last, LOG_TAIL)
            milestones = tuple(self.record.events(kinds=MILESTONE_KINDS))
            self._spend = spend_between(self.record, 0, last)
            self._last_id = last
            return Snapshot(
                self._meta,
                self._branches,
                self._candidates,
                events,
                milestones,
                self._telemetry,
                self._commands,
                last,
                reset=True,
                spend=self._spend,
            )

    def poll(self) -> Snapshot | None:
        """Only what changed since the last call; None when nothing did. An engine that died
        without a word changes nothing in the record: its lock going is the change."""
        with self._lock:
            alive = self._engine_alive()
        with self._lock, self.record.snapshot():
            last = self.record.last_event_id()
            (tel_t,) = self.record.execute("SELECT max(t) FROM telemetry")[0]
            commands = tuple(self.record.commands())
            same = last == self._last_id and tel_t == self._last_tel and alive == self._alive
            if same and commands == self._commands:
                return None
            events: tuple[Event, ...] = ()
            if alive != self._alive:
                self._alive = alive
                self._meta = effective_meta(self.record.meta(), alive)
            if last != self._last_id:
                events = tuple(self.record.events(after_id=self._last_id))
                self._meta = effective_meta(self.record.meta(), alive)
                self._branches = tuple(self.record.branches())
                self._candidates = self._candidates_after(events)
                self._spend = self._spend.fold(events)
                self._last_id = last
            if tel_t != self._last_tel:
                self._telemetry = telemetry_before(self.record, None, self.telemetry_window)
                self._last_tel = tel_t
            if commands != self._commands:
                self._commands = commands
            milestones = tuple(e for e in events if e.kind in MILESTONE_KINDS)
            return Snapshot(
                self._meta,
                self._branches,
                self._candidates,
                events[-LOG_TAIL:],
                milestones,
                self._telemetry,
                self._commands,
                last,
                reset=False,
                spend=self._spend,
            )

    def _candidates_after(self, events: tuple[Event, ...]) -> tuple[Candidate, ...]:
        """The candidate list once `events` are recorded. A candidate's row changes only by an
        event that names it (cockpit.store.derive), so only those rows are read again: parsing
        a long session's whole table on each poll that brings an event costs more than the
        rest of the poll together. The same tuple when no event names a candidate (views skip
        it with an `is` test); the whole table when many do, or when the count of rows says
        one came some other way."""
        ids = {e.candidate for e in events if e.candidate}
        if not ids:
            return self._candidates
        if len(ids) > MAX_REREAD:
            return tuple(self.record.candidates())
        at = {c.id: i for i, c in enumerate(self._candidates)}
        out = list(self._candidates)
        for c in self.record.candidates_in(ids):  # new ones last, in the order recorded
            i = at.get(c.id)
            if i is None:
                out.append(c)
            else:
                out[i] = c
        (count,) = self.record.execute("SELECT count(*) FROM candidates")[0]
        if count != len(out):
            return tuple(self.record.candidates())
        return tuple(out)

    def events_since(self, event_id: int, kinds: tuple[str, ...]) -> list[Event]:
        with self._lock:
            return self.record.events(after_id=event_id, kinds=kinds)

    def spend_since(self, event_id: int) -> Spend:
        with self._lock:
            return spend_between(self.record, event_id, None)

    def candidate_detail(self, candidate: Candidate) -> CandidateDetail | None:
        with self._lock:
            current = self.record.candidate(candidate.id) or candidate
            return self._details.detail(current)

    def post_command(self, kind: str, args: dict[str, Any], source: str) -> int:
        """Write to the queue through a short-lived read-write connection: the viewer's own
        connection stays read-only, so a viewer can never write anything but a command."""
        with SessionRecord.open(self.folder) as rw:
            return rw.post_command(kind, args, source=source)

    def close(self) -> None:
        with self._lock:
            self._details.close()
            self.record.close()
