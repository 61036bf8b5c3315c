"""Replay: a session's events in order under a virtual clock, and the beam at any past moment.

The reader is the same record a live view reads; it just delivers events according to a clock
it controls (`seek`, `step`, `events_until`, `advance` at a speed factor) instead of as they
arrive. `state_at(event_id)` reconstructs the derived tables as they stood just after that event
by re-applying events into an in-memory SQLite database with the very `apply_event` the engine
used, so a replayed beam cannot drift from what was shown live. Checkpoints (in-memory database
copies every `checkpoint_every` events) make seeking backwards cost at most that many
re-applications.
"""

from __future__ import annotations

import bisect
import json
import sqlite3
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from cockpit.store import queries
from cockpit.store.derive import apply_event
from cockpit.store.models import Branch, Candidate, Event
from cockpit.store.record import SessionRecord
from cockpit.store.schema import create_schema

_Row = tuple[int, float, str, str | None, str | None, str]


@dataclass(frozen=True)
class ReplayState:
    """The derived tables as they were just after event `event_id` (0: before any event)."""

    event_id: int
    t: float | None
    branch_list: list[Branch] = field(default_factory=list)
    candidate_list: list[Candidate] = field(default_factory=list)
    meta_dict: dict[str, Any] = field(default_factory=dict)

    def branches(self) -> list[Branch]:
        return list(self.branch_list)

    def candidates(self, branch: str | None = None) -> list[Candidate]:
        if branch is None:
            return list(self.candidate_list)
        return [c for c in self.candidate_list if c.branch == branch]

    def meta(self) -> dict[str, Any]:
        return dict(self.meta_dict)


def _memory_db() -> sqlite3.Connection:
    return sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)


def _event(row: _Row) -> Event:
    return Event(row[0], row[1], row[2], row[3], row[4], json.loads(row[5]) if row[5] else {})


class ReplayReader:
    """Iterate a record's events in order with a virtual clock (seconds, the events' own `t`)."""

    def __init__(
        self, record: SessionRecord, *, speed: float = 1.0, checkpoint_every: int = 10_000
    ) -> None:
        self.record = record
        self.speed = speed
        self.checkpoint_every = max(1, checkpoint_every)
        self._rows: list[_Row] = []
        self._ids: list[int] = []
        self._times: list[float] = []  # running maximum of t: a wall clock may step back
        self.position = 0  # index of the next event to deliver
        self.clock = 0.0
        self._mem: sqlite3.Connection | None = None
        self._applied = 0  # how many rows the in-memory state has applied
        self._checkpoints: dict[int, sqlite3.Connection] = {}
        # Candidates as of `_cands_at` applied rows (None: not valid). Every derived update of a
        # candidate row names it in the event's `candidate` column, so moving forward re-reads
        # only the candidates the new events name: 10,000 candidates no longer cost a full read
        # (and 10,000 JSON summaries) per replay step.
        self._cands: dict[str, Candidate] = {}
        self._cands_at: int | None = None
        # The cockpit reads states from worker threads (loading, playing, the detail pane), one
        # thread each: the in-memory tables are built and read under this lock, and their
        # connections may be used from any thread (sqlite3 refuses by default).
        self._lock = threading.RLock()
        self.refresh()
        self.clock = self.start_t

    # --- the event list --------------------------------------------------------------------

    def refresh(self) -> int:
        """Load events appended since the last load (replaying a session still running)."""
        with self._lock:
            return self._refresh()

    def _refresh(self) -> int:
        after = self._ids[-1] if self._ids else 0
        rows = self.record.execute(
            "SELECT id, t, kind, branch, candidate, payload FROM events WHERE id > ? ORDER BY id",
            (after,),
        )
        latest = self._times[-1] if self._times else float("-inf")
        for row in rows:
            latest = max(latest, row[1])
            self._rows.append(row)
            self._ids.append(row[0])
            self._times.append(latest)
        return len(rows)

    def __len__(self) -> int:
        return len(self._rows)

    @property
    def start_t(self) -> float:
        return self._rows[0][1] if self._rows else 0.0

    @property
    def end_t(self) -> float:
        return self._times[-1] if self._times else 0.0

    @property
    def at_end(self) -> bool:
        return self.position >= len(self._rows)

    @property
    def last_delivered_id(self) -> int:
        return self._ids[self.position - 1] if self.position else 0

    # --- the clock -------------------------------------------------------------------------

    def seek(self, t: float) -> None:
        """Set the clock to `t`: events at or before it count as delivered, the rest are next."""
        self.clock = t
        self.position = bisect.bisect_right(self._times, t)

    def seek_event(self, event_id: int) -> None:
        """Position just after event `event_id`, clock at its time."""
        self.position = bisect.bisect_right(self._ids, event_id)
        self.clock = self._times[self.position - 1] if self.position else self.start_t

    def step(self, n: int = 1) -> list[Event]:
        """Deliver the next `n` events (fewer at the end) and move the clock to the last one."""
        end = min(len(self._rows), self.position + max(0, n))
        events = [_event(r) for r in self._rows[self.position : end]]
        self.position = end
        if events:
            self.clock = max(self.clock, self._times[end - 1])
        return events

    def events_until(self, t: float) -> list[Event]:
        """Deliver every undelivered event at or before `t` and move the clock to `t`."""
        end = bisect.bisect_right(self._times, t)
        events = [_event(r) for r in self._rows[self.position : end]] if end > self.position else []
        self.position = max(self.position, end)
        self.clock = max(self.clock, t)
        return events

    def advance(self, wall_seconds: float) -> list[Event]:
        """What a player delivers after `wall_seconds` of real time at `speed`."""
        return self.events_until(self.clock + wall_seconds * self.speed)

    def __iter__(self) -> Iterator[Event]:
        while not self.at_end:
            yield from self.step(1)

    # --- past states -----------------------------------------------------------------------

    def state(self) -> ReplayState:
        """The derived tables after the last delivered event."""
        return self._state_through(self.position)

    def state_at(self, event_id: int) -> ReplayState:
        """The derived tables just after event `event_id`."""
        return self._state_through(bisect.bisect_right(self._ids, event_id))

    def _state_through(self, count: int) -> ReplayState:
        with self._lock:
            self._apply_through(count)
            mem = self._mem
            assert mem is not None
            return ReplayState(
                event_id=self._ids[count - 1] if count else 0,
                t=self._rows[count - 1][1] if count else None,
                branch_list=queries.read_branches(mem),
                candidate_list=self._candidates_through(mem, count),
                meta_dict=queries.read_meta(mem),
            )

    def _candidates_through(self, mem: sqlite3.Connection, count: int) -> list[Candidate]:
        if self._cands_at is None or count < self._cands_at:
            self._cands = {c.id: c for c in queries.read_candidates(mem)}
        else:
            touched = dict.fromkeys(r[4] for r in self._rows[self._cands_at : count] if r[4])
            new: list[tuple[int, Candidate]] = []
            for cid in touched:
                c = queries.read_candidate(mem, cid)
                if c is None:
                    continue
                if cid in self._cands:
                    self._cands[cid] = c
                else:  # keep the table's order (rowid), like a full read
                    rowid = mem.execute("SELECT rowid FROM candidates WHERE id = ?", (cid,))
                    new.append((rowid.fetchone()[0], c))
            for _, c in sorted(new, key=lambda rc: rc[0]):
                self._cands[c.id] = c
        self._cands_at = count
        return list(self._cands.values())

    def _apply_through(self, count: int) -> None:
        nearest = max((k for k in self._checkpoints if k <= count), default=0)
        if self._mem is None or count < self._applied or nearest > self._applied:
            self._restore(nearest)
        mem = self._mem
        assert mem is not None
        if count == self._applied:
            return
        mem.execute("BEGIN")
        for i in range(self._applied, count):
            apply_event(mem, _event(self._rows[i]))
            if (i + 1) % self.checkpoint_every == 0 and (i + 1) not in self._checkpoints:
                mem.execute("COMMIT")
                self._checkpoints[i + 1] = self._copy(mem)
                mem.execute("BEGIN")
        mem.execute("COMMIT")
        self._applied = count

    def _restore(self, checkpoint: int) -> None:
        """Reset the in-memory state to a checkpoint (0: empty tables)."""
        self._cands_at = None
        if self._mem is None:
            self._mem = _memory_db()
        if checkpoint:
            self._checkpoints[checkpoint].backup(self._mem)
        else:
            self._mem.close()
            self._mem = _memory_db()
            create_schema(self._mem)
        self._applied = checkpoint

    @staticmethod
    def _copy(mem: sqlite3.Connection) -> sqlite3.Connection:
        copy = _memory_db()
        mem.backup(copy)
        return copy
