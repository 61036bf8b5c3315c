"""Read queries over a session database, shared by the live record and replay's past states.

Functions of a connection, not methods, so a replayed state (an in-memory database) answers
`branches()` and `candidates()` exactly as the live file does and views need not care which
one they were handed.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Collection, Iterable
from typing import Any

from cockpit.store.models import (
    TELEMETRY_COLUMNS,
    Branch,
    Candidate,
    Command,
    Event,
    TelemetrySample,
)
from cockpit.store.schema import select_columns

_CANDIDATE_COLS = (
    "id, branch, parent, family, status, geomean_us, score_us, commit_sha, model, "
    "created_t, evaluated_t, summary"
)
_BRANCH_COLS = "id, family, state, model, best_candidate, best_us, created_t, updated_t, info"
_COMMAND_COLS = "id, t, kind, args, source, state, ack_t, ack_message"


def read_events(
    conn: sqlite3.Connection,
    after_id: int = 0,
    kinds: Iterable[str] | None = None,
    limit: int | None = None,
    candidate: str | None = None,
) -> list[Event]:
    sql = "SELECT id, t, kind, branch, candidate, payload FROM events WHERE id > ?"
    args: list[Any] = [after_id]
    if kinds is not None:
        kinds = list(kinds)
        sql += f" AND kind IN ({','.join('?' * len(kinds))})"
        args += kinds
    if candidate is not None:
        sql += " AND candidate = ?"
        args.append(candidate)
    sql += " ORDER BY id"
    if limit is not None:
        sql += " LIMIT ?"
        args.append(limit)
    return [Event.from_row(r) for r in conn.execute(sql, args)]


def read_candidates(conn: sqlite3.Connection, branch: str | None = None) -> list[Candidate]:
    """Candidates in the order they were first recorded."""
    if branch is None:
        rows = conn.execute(f"SELECT {_CANDIDATE_COLS} FROM candidates ORDER BY rowid")
    else:
        rows = conn.execute(
            f"SELECT {_CANDIDATE_COLS} FROM candidates WHERE branch = ? ORDER BY rowid",
            (branch,),
        )
    return [Candidate.from_row(r) for r in rows]


def read_candidates_in(conn: sqlite3.Connection, ids: Collection[str]) -> list[Candidate]:
    """The candidates among `ids` that exist, in the order they were first recorded."""
    if not ids:
        return []
    marks = ", ".join("?" * len(ids))
    rows = conn.execute(
        f"SELECT {_CANDIDATE_COLS} FROM candidates WHERE id IN ({marks}) ORDER BY rowid",
        tuple(ids),
    )
    return [Candidate.from_row(r) for r in rows]


def read_candidate(conn: sqlite3.Connection, candidate_id: str) -> Candidate | None:
    row = conn.execute(
        f"SELECT {_CANDIDATE_COLS} FROM candidates WHERE id = ?", (candidate_id,)
    ).fetchone()
    return None if row is None else Candidate.from_row(row)


def read_branches(conn: sqlite3.Connection) -> list[Branch]:
    """Branches in the order they were created."""
    rows = conn.execute(f"SELECT {_BRANCH_COLS} FROM branches ORDER BY created_t, rowid")
    return [Branch.from_row(r) for r in rows]


def read_meta(conn: sqlite3.Connection) -> dict[str, Any]:
    rows = conn.execute("SELECT key, value FROM session ORDER BY key")
    return {k: None if v is None else json.loads(v) for k, v in rows}


def read_commands(conn: sqlite3.Connection, state: str | None = None) -> list[Command]:
    if state is None:
        rows = conn.execute(f"SELECT {_COMMAND_COLS} FROM commands ORDER BY id")
    else:
        rows = conn.execute(
            f"SELECT {_COMMAND_COLS} FROM commands WHERE state = ? ORDER BY id", (state,)
        )
    return [Command.from_row(r) for r in rows]


def read_telemetry(
    conn: sqlite3.Connection, since_t: float | None = None, limit: int | None = None
) -> list[TelemetrySample]:
    """Samples in time order; with `limit`, the most recent `limit` of them."""
    cols = select_columns(conn, "telemetry", TELEMETRY_COLUMNS)
    where = "" if since_t is None else " WHERE t > ?"
    args: list[Any] = [] if since_t is None else [since_t]
    if limit is None:
        rows = conn.execute(f"SELECT {cols} FROM telemetry{where} ORDER BY t, rowid", args)
        return [TelemetrySample(*r) for r in rows]
    rows = conn.execute(
        f"SELECT {cols} FROM telemetry{where} ORDER BY t DESC, rowid DESC LIMIT ?",
        [*args, limit],
    ).fetchall()
    return [TelemetrySample(*r) for r in reversed(rows)]


def read_counts(conn: sqlite3.Connection) -> dict[str, Any]:
    """Sizes a status line needs, without materializing any rows."""
    one = conn.execute(
        "SELECT (SELECT coalesce(max(id), 0) FROM events), (SELECT count(*) FROM events), "
        "(SELECT count(*) FROM candidates), (SELECT count(*) FROM branches), "
        "(SELECT count(*) FROM telemetry), "
        "(SELECT count(*) FROM commands WHERE state = 'pending')"
    ).fetchone()
    by_status = dict(
        conn.execute("SELECT coalesce(status, '?'), count(*) FROM candidates GROUP BY 1")
    )
    return {
        "last_event_id": one[0],
        "events": one[1],
        "candidates": one[2],
        "branches": one[3],
        "telemetry": one[4],
        "pending_commands": one[5],
        "candidates_by_status": by_status,
    }
