"""Reads both sources share: telemetry windows, log tails, model spend, candidate details."""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any

from cockpit.store import SessionRecord
from cockpit.store import events as ev
from cockpit.store.models import TELEMETRY_COLUMNS, Candidate, Event, TelemetrySample
from cockpit.tui.sources.base import CandidateDetail


def telemetry_before(record: SessionRecord, t: float | None, limit: int) -> tuple:
    have = {r[1] for r in record.execute("PRAGMA table_info(telemetry)")}
    cols = ", ".join(c if c in have else f"NULL AS {c}" for c in TELEMETRY_COLUMNS)
    where, args = ("", []) if t is None else (" WHERE t <= ?", [t])
    rows = record.execute(
        f"SELECT {cols} FROM telemetry{where} ORDER BY t DESC, rowid DESC LIMIT ?", [*args, limit]
    )
    return tuple(TelemetrySample(*r) for r in reversed(rows))


def events_through(record: SessionRecord, last_id: int, limit: int) -> tuple[Event, ...]:
    rows = record.execute(
        "SELECT id, t, kind, branch, candidate, payload FROM events WHERE id <= ? "
        "ORDER BY id DESC LIMIT ?",
        (last_id, limit),
    )
    return tuple(Event.from_row(r) for r in reversed(rows))


class Details:
    """Candidate sources, diffs and results, shared by both sources."""

    def __init__(self, record: SessionRecord, folder: Path) -> None:
        self.record = record
        self.folder = folder
        self._repo: Any = None

    def _repo_source(self, sha: str) -> str | None:
        if self._repo is None:
            from cockpit.store import CandidateRepo  # gitpython only when a file must be read

            try:
                self._repo = CandidateRepo(self.folder / "repo", create=False)
            except FileNotFoundError:
                return None
        try:
            return self._repo.read_source(sha)
        except Exception:  # noqa: BLE001 - a missing object is shown as "no source"
            return None

    def _payload(self, kind: str, candidate_id: str, until: int | None) -> dict | None:
        found = [
            e
            for e in self.record.events(kinds=[kind], candidate=candidate_id)
            if until is None or e.id <= until
        ]
        return found[-1].payload if found else None

    def source_of(self, candidate_id: str, sha: str | None) -> tuple[str | None, dict | None]:
        proposal = self._payload(ev.CANDIDATE_PROPOSED, candidate_id, None)
        text = proposal.get("source") if proposal else None
        if text is None and sha:
            text = self._repo_source(sha)
        return text, proposal

    def detail(self, c: Candidate, until: int | None = None) -> CandidateDetail:
        text, proposal = self.source_of(c.id, c.commit_sha)
        parent_text = diff = None
        if c.parent:
            parent = self.record.candidate(c.parent)
            parent_text, _ = self.source_of(c.parent, parent.commit_sha if parent else None)
        if text is not None and parent_text is not None:
            diff = "".join(
                difflib.unified_diff(
                    parent_text.splitlines(keepends=True),
                    text.splitlines(keepends=True),
                    f"{c.parent}/kernel.py",
                    f"{c.id}/kernel.py",
                )
            )
        result = self._payload(ev.EVALUATION_FINISHED, c.id, until)
        return CandidateDetail(c, text, parent_text, diff, result, proposal)

    def close(self) -> None:
        if self._repo is not None:
            self._repo.close()
