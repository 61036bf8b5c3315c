"""From events to the derived tables: the one function that says what each event means.

`apply_event` is a pure function of (derived tables so far, event): it reads nothing but the
connection it is given and the event, never the clock or the environment. That is what lets
`SessionRecord.rebuild()` recompute every derived table from `events` alone, and lets replay
reconstruct the beam at any past moment by applying events into an in-memory database.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from typing import Any

from cockpit.store import events as ev
from cockpit.store.models import Event, dumps, dumps_value, loads
from cockpit.store.schema import DERIVED_TABLES

# What of the harness's result record is copied into candidates.summary; the rest (per-shape
# timings, profile, log tail) stays in the evaluation_finished event, one query away.
SUMMARY_KEYS = (
    "status",
    "geomean_us",
    "hidden_geomean_us",
    "score_us",
    "speedups",
    "roofline_pct",
    "comparable",
    "baseline_exempt",
    "wall_s",
    "flags",
    "mode",
    "tier",
    "promotion",
)
MAX_SUMMARY_REASONS = 5
MAX_REASON_CHARS = 300


def apply_event(conn: sqlite3.Connection, event: Event) -> None:
    """Apply one event to the derived tables. The caller owns the transaction."""
    handler = _HANDLERS.get(event.kind)
    if handler is not None and _has_subject(event):
        handler(conn, event)
    if event.branch is not None:
        conn.execute("UPDATE branches SET updated_t = ? WHERE id = ?", (event.t, event.branch))


def _has_subject(event: Event) -> bool:
    """An event about a branch or candidate without naming it changes nothing (and must not
    create a row with a NULL id, which SQLite would allow for a TEXT primary key)."""
    if event.kind in _CANDIDATE_KINDS:
        return event.candidate is not None
    if event.kind in _BRANCH_KINDS:
        return event.branch is not None
    return True


def clear_derived(conn: sqlite3.Connection) -> None:
    """Empty the derived tables (before re-applying every event)."""
    for table in DERIVED_TABLES:
        conn.execute(f"DELETE FROM {table}")


def result_summary(result: dict[str, Any]) -> dict[str, Any]:
    """The compact part of a result record that lists and status lines need."""
    summary = {k: result[k] for k in SUMMARY_KEYS if k in result}
    reasons = result.get("reasons") or []
    summary["reasons"] = [
        {
            "kind": r.get("kind", ""),
            "stage": r.get("stage", ""),
            "message": str(r.get("message", ""))[:MAX_REASON_CHARS],
        }
        for r in reasons[:MAX_SUMMARY_REASONS]
        if isinstance(r, dict)
    ]
    if len(reasons) > MAX_SUMMARY_REASONS:
        summary["more_reasons"] = len(reasons) - MAX_SUMMARY_REASONS
    return summary


# --- session -------------------------------------------------------------------------------


def _set_meta(conn: sqlite3.Connection, items: dict[str, Any]) -> None:
    conn.executemany(
        "INSERT INTO session(key, value) VALUES (?, ?) "
        "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
        [(k, dumps_value(v)) for k, v in items.items()],
    )


def _get_meta(conn: sqlite3.Connection, key: str, default: Any = None) -> Any:
    row = conn.execute("SELECT value FROM session WHERE key = ?", (key,)).fetchone()
    return default if row is None else json.loads(row[0])


def _session_created(conn: sqlite3.Connection, e: Event) -> None:
    meta = {"created": e.t, **e.payload, "state": "created"}
    _set_meta(conn, meta)


def _session_started(conn: sqlite3.Connection, e: Event) -> None:
    _set_meta(conn, {**e.payload, "started_t": e.t, "state": "running"})


def _session_state(conn: sqlite3.Connection, e: Event) -> None:
    p = e.payload
    _set_meta(conn, {"state": p.get("state"), "state_reason": p.get("reason"), "state_t": e.t})


def _budget_changed(conn: sqlite3.Connection, e: Event) -> None:
    items = {"budget": e.payload.get("budget")}
    for cap in ("usd", "tokens"):  # LLM caps, when the event sets them (null = no cap)
        if cap in e.payload:
            items[f"budget_{cap}"] = e.payload[cap]
    _set_meta(conn, items)


def _model_changed(conn: sqlite3.Connection, e: Event) -> None:
    model = e.payload.get("model")
    if e.branch is not None:
        conn.execute("UPDATE branches SET model = ? WHERE id = ?", (model, e.branch))
        return
    _set_meta(conn, {"model": model})
    conn.execute("UPDATE branches SET model = ? WHERE state IS NOT 'retired'", (model,))


def _error(conn: sqlite3.Connection, e: Event) -> None:
    errors = _get_meta(conn, "errors", 0) or 0
    _set_meta(conn, {"errors": errors + 1, "last_error": e.payload.get("message")})


# --- branches ------------------------------------------------------------------------------


def _update_info(conn: sqlite3.Connection, branch: str, change: Callable[[dict], None]) -> None:
    row = conn.execute("SELECT info FROM branches WHERE id = ?", (branch,)).fetchone()
    if row is None:
        return
    info = loads(row[0])
    change(info)
    conn.execute("UPDATE branches SET info = ? WHERE id = ?", (dumps(info), branch))


def _bump(key: str) -> Callable[[dict], None]:
    def change(info: dict) -> None:
        info[key] = info.get(key, 0) + 1

    return change


def _new_branch(conn: sqlite3.Connection, e: Event, info: dict[str, Any]) -> None:
    """Create the branch, or (if a fork and a create both name it) merge into the existing one."""
    p = e.payload
    row = conn.execute("SELECT info FROM branches WHERE id = ?", (e.branch,)).fetchone()
    if row is not None:
        merged = {**loads(row[0]), **{k: v for k, v in info.items() if v is not None}}
        conn.execute(
            "UPDATE branches SET family = coalesce(?, family), model = coalesce(?, model), "
            "info = ? WHERE id = ?",
            (p.get("family"), p.get("model"), dumps(merged), e.branch),
        )
        return
    conn.execute(
        "INSERT INTO branches(id, family, state, model, created_t, updated_t, info) "
        "VALUES (?, ?, 'running', ?, ?, ?, ?)",
        (e.branch, p.get("family"), p.get("model"), e.t, e.t, dumps(info)),
    )


def _branch_created(conn: sqlite3.Connection, e: Event) -> None:
    p = e.payload
    info = {"parent_candidate": p.get("parent_candidate"), "instruction": p.get("instruction")}
    _new_branch(conn, e, info)


def _branch_forked(conn: sqlite3.Connection, e: Event) -> None:
    p = e.payload
    info = {
        "parent_candidate": p.get("from_candidate"),
        "forked_from": p.get("from_branch"),
        "instruction": p.get("instruction"),
    }
    _new_branch(conn, e, info)


def _branch_state(conn: sqlite3.Connection, e: Event) -> None:
    state = e.payload.get("state")
    conn.execute("UPDATE branches SET state = ? WHERE id = ?", (state, e.branch))

    def change(info: dict) -> None:
        info["state_reason"] = e.payload.get("reason")

    _update_info(conn, e.branch, change)


def _plateau_detected(conn: sqlite3.Connection, e: Event) -> None:
    _update_info(conn, e.branch, _bump("plateaus"))


def _escalated(conn: sqlite3.Connection, e: Event) -> None:
    p = e.payload
    conn.execute(
        "UPDATE branches SET model = coalesce(?, model), family = coalesce(?, family) WHERE id = ?",
        (p.get("model"), p.get("family"), e.branch),
    )

    def change(info: dict) -> None:
        info["escalations"] = info.get("escalations", 0) + 1
        info["last_escalation"] = p.get("mode")
        if p.get("instruction"):
            info["instruction"] = p["instruction"]

    _update_info(conn, e.branch, change)


def _best_changed(conn: sqlite3.Connection, e: Event) -> None:
    p = e.payload
    conn.execute(
        "UPDATE branches SET best_candidate = ?, best_us = ? WHERE id = ?",
        (p.get("candidate", e.candidate), p.get("score_us"), e.branch),
    )


def _proposal_failed(conn: sqlite3.Connection, e: Event) -> None:
    if e.branch is not None:
        _update_info(conn, e.branch, _bump("proposal_failures"))


# --- candidates ----------------------------------------------------------------------------


def _ensure_candidate(conn: sqlite3.Connection, e: Event) -> None:
    """Evaluations of candidates that were never proposed (seeds, imports) still get a row."""
    conn.execute(
        "INSERT OR IGNORE INTO candidates(id, branch, family, model, status, created_t) "
        "SELECT ?, ?, b.family, b.model, 'proposed', ? FROM (SELECT 1) "
        "LEFT JOIN branches b ON b.id = ?",
        (e.candidate, e.branch, e.t, e.branch),
    )


def _candidate_proposed(conn: sqlite3.Connection, e: Event) -> None:
    p = e.payload
    _ensure_candidate(conn, e)
    summary = {"source_hash": p.get("source_hash")}
    if p.get("filename"):
        summary["filename"] = p["filename"]
    conn.execute(
        "UPDATE candidates SET parent = ?, family = coalesce(?, family), "
        "model = coalesce(?, model), summary = ? WHERE id = ?",
        (p.get("parent"), p.get("family"), p.get("model"), dumps(summary), e.candidate),
    )


def _evaluation_started(conn: sqlite3.Connection, e: Event) -> None:
    _ensure_candidate(conn, e)
    conn.execute("UPDATE candidates SET status = 'evaluating' WHERE id = ?", (e.candidate,))


def _evaluation_finished(conn: sqlite3.Connection, e: Event) -> None:
    _ensure_candidate(conn, e)
    p = e.payload
    row = conn.execute("SELECT summary FROM candidates WHERE id = ?", (e.candidate,)).fetchone()
    summary = {**loads(row[0]), **result_summary(p)}
    conn.execute(
        "UPDATE candidates SET status = ?, geomean_us = ?, score_us = ?, evaluated_t = ?, "
        "summary = ? WHERE id = ?",
        (
            p.get("status"),
            p.get("geomean_us"),
            p.get("score_us"),
            e.t,
            dumps(summary),
            e.candidate,
        ),
    )


def _candidate_committed(conn: sqlite3.Connection, e: Event) -> None:
    conn.execute(
        "UPDATE candidates SET commit_sha = ? WHERE id = ?",
        (e.payload.get("commit_sha"), e.candidate),
    )


# --- commands ------------------------------------------------------------------------------


def _command_acked(conn: sqlite3.Connection, e: Event) -> None:
    """The queue row is an input, but its acknowledgement is a fact: re-applying is idempotent."""
    p = e.payload
    state = "acked" if p.get("ok") else "failed"
    conn.execute(
        "UPDATE commands SET state = ?, ack_t = ?, ack_message = ? WHERE id = ?",
        (state, e.t, p.get("message"), p.get("command_id")),
    )


_HANDLERS: dict[str, Callable[[sqlite3.Connection, Event], None]] = {
    ev.SESSION_CREATED: _session_created,
    ev.SESSION_STARTED: _session_started,
    ev.SESSION_STATE: _session_state,
    ev.BUDGET_CHANGED: _budget_changed,
    ev.MODEL_CHANGED: _model_changed,
    ev.ERROR: _error,
    ev.BRANCH_CREATED: _branch_created,
    ev.BRANCH_FORKED: _branch_forked,
    ev.BRANCH_STATE: _branch_state,
    ev.PLATEAU_DETECTED: _plateau_detected,
    ev.ESCALATED: _escalated,
    ev.BEST_CHANGED: _best_changed,
    ev.PROPOSAL_FAILED: _proposal_failed,
    ev.CANDIDATE_PROPOSED: _candidate_proposed,
    ev.EVALUATION_STARTED: _evaluation_started,
    ev.EVALUATION_FINISHED: _evaluation_finished,
    ev.CANDIDATE_COMMITTED: _candidate_committed,
    ev.COMMAND_ACKED: _command_acked,
}

_CANDIDATE_KINDS = frozenset(
    {
        ev.CANDIDATE_PROPOSED,
        ev.EVALUATION_STARTED,
        ev.EVALUATION_FINISHED,
        ev.CANDIDATE_COMMITTED,
    }
)
_BRANCH_KINDS = frozenset(
    {
        ev.BRANCH_CREATED,
        ev.BRANCH_FORKED,
        ev.BRANCH_STATE,
        ev.PLATEAU_DETECTED,
        ev.ESCALATED,
        ev.BEST_CHANGED,
        ev.PROPOSAL_FAILED,
    }
)
