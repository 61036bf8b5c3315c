"""Plain rows of the session record, as the engine, the TUI and `cockpit status` see them.

Frozen dataclasses rather than sqlite3.Row so a view cannot mutate what it was handed and
`dataclasses.asdict` gives `status --json` for free. JSON columns arrive decoded.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, fields
from typing import Any


def loads(text: str | None) -> Any:
    """Decode a JSON column; an empty or NULL column is an empty object."""
    return json.loads(text) if text else {}


def dumps(value: Any) -> str:
    """Encode a JSON object column compactly (the events table holds every result record)."""
    return dumps_value({} if value is None else value)


def dumps_value(value: Any) -> str:
    """Encode any JSON value (None stays null); unknown types become their str()."""
    return json.dumps(value, separators=(",", ":"), default=str)


@dataclass(frozen=True, slots=True)
class Event:
    id: int
    t: float
    kind: str
    branch: str | None = None
    candidate: str | None = None
    payload: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_row(cls, row: tuple) -> Event:
        return cls(row[0], row[1], row[2], row[3], row[4], loads(row[5]))


@dataclass(frozen=True, slots=True)
class Candidate:
    id: str
    branch: str | None
    parent: str | None
    family: str | None
    status: str | None
    geomean_us: float | None
    score_us: float | None
    commit_sha: str | None
    model: str | None
    created_t: float | None
    evaluated_t: float | None
    summary: dict[str, Any]

    @classmethod
    def from_row(cls, row: tuple) -> Candidate:
        return cls(*row[:11], loads(row[11]))

    @property
    def screened(self) -> bool:
        """Judged by the loop's screen only (not promoted to the full evaluation)."""
        return self.summary.get("tier") == "screened"

    @property
    def rankable(self) -> bool:
        """A passing, fully checked candidate with a score: one that may be called best."""
        return self.status == "ok" and bool(self.score_us) and not self.screened


@dataclass(frozen=True, slots=True)
class Branch:
    id: str
    family: str | None
    state: str | None
    model: str | None
    best_candidate: str | None
    best_us: float | None
    created_t: float | None
    updated_t: float | None
    info: dict[str, Any]

    @classmethod
    def from_row(cls, row: tuple) -> Branch:
        return cls(*row[:8], loads(row[8]))


@dataclass(frozen=True, slots=True)
class Command:
    id: int
    t: float
    kind: str
    args: dict[str, Any]
    source: str | None
    state: str
    ack_t: float | None
    ack_message: str | None

    @classmethod
    def from_row(cls, row: tuple) -> Command:
        return cls(row[0], row[1], row[2], loads(row[3]), *row[4:8])


@dataclass(frozen=True, slots=True)
class TelemetrySample:
    """One reading. `gpu` is the device index, None for a host-only sample (no GPU). `node` is
    None for the engine's own host, else the Ray node the sample was taken on (`host node-id`).

    Units: util, cpu_pct, ram_pct in percent; mem_used and mem_total in MiB; power in watts.
    """

    t: float
    gpu: int | None = None
    util: float | None = None
    mem_used: float | None = None
    mem_total: float | None = None
    power_w: float | None = None
    temp_c: float | None = None
    sm_clock_mhz: float | None = None
    cpu_pct: float | None = None
    ram_pct: float | None = None
    node: str | None = None


TELEMETRY_COLUMNS: tuple[str, ...] = tuple(f.name for f in fields(TelemetrySample))
