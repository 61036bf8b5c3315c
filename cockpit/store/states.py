"""What a session and its branches are doing, and why a run ended, read from the record.

The record keeps each branch's last `branch_state` event, which says what the engine did to
that branch, not what it does now: once the session is done, stopped or crashed no branch runs,
whatever its last event said. These functions are the one place that combines the two, so
`cockpit status`, the cockpit's beam and header, and the engine's final event say the same.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from cockpit.store.models import Branch, Candidate

# Recorded session states in which an engine is at work.
ENGINE_STATES = ("running", "paused")
# Session states in which no engine runs and none will until `cockpit resume`.
ENDED_STATES = ("done", "stopped", "crashed")
# A `done` reason that names two causes at once (records may carry it): read, it is replaced
# by the one sentence; written, only if that sentence cannot be made.
GENERIC_DONE = "budget spent or beam retired"
# Candidate statuses that did not use an evaluation of the budget.
NOT_EVALUATED = (None, "proposed", "evaluating", "duplicate")


def evaluations(candidates: Iterable[Candidate]) -> int:
    """Evaluations spent from the budget: candidates with a verdict (duplicates cost none)."""
    return sum(1 for c in candidates if c.status not in NOT_EVALUATED)


def branch_state(recorded: str | None, session: str | None) -> str:
    """The state to show for a branch whose last recorded state is `recorded`, in a session
    whose (effective) state is `session`. Retired stays retired and paused stays paused (its
    reason says why, and it is what the branch will be when the session resumes); in a session
    that has ended every other branch has ended with it. (A paused session keeps its branches'
    own states: a branch resumed by command runs again as soon as the session does.)"""
    if recorded in ("retired", "paused"):
        return recorded
    if session in ENDED_STATES:
        return session
    return recorded or "?"


def branch_reason(recorded: str | None, reason: str | None, session: str | None) -> str | None:
    """Why the branch is in the state `branch_state` shows. A running branch needs no reason:
    `by command` or `escalated` on a running branch are history (the event log keeps them),
    except what it is waiting for now (`waiting for provider until HH:MM:SS`)."""
    shown = branch_state(recorded, session)
    if shown != (recorded or "?"):
        return f"session {session}"
    if shown == "running":
        return reason if reason and reason.startswith("waiting for provider") else None
    return reason or None


def _of(n: int, budget: Any) -> str:
    return f"{n}/{budget} evaluations" if budget is not None else f"{n} evaluations"


def _retired_cause(branches: list[Branch]) -> str:
    reasons = [str(b.info.get("state_reason") or "") for b in branches]
    plateau = sum("plateau" in r for r in reasons)
    command = sum(r.startswith("by command") for r in reasons)
    if plateau == len(reasons):
        return "after plateaus"
    if command == len(reasons):
        return "by command"
    parts = [f"{plateau} after plateaus"] if plateau else []
    parts += [f"{command} by command"] if command else []
    other = len(reasons) - plateau - command
    parts += [f"{other} for other reasons"] if other else []
    return f"({', '.join(parts)})"


def end_reason(
    state: str | None,
    meta: dict[str, Any],
    branches: Iterable[Branch],
    evaluated: int,
) -> str | None:
    """Why the run ended, in one sentence, for a session in `state` (its effective state);
    None while an engine is at work. `evaluated`: evaluations spent (see `evaluations`)."""
    if state not in ENDED_STATES:
        return None
    budget = meta.get("budget")
    # the recorded reason is this state's only when the record's state is this one (the engine
    # asks for the sentence before it records `done`, over the previous state's reason).
    # `recorded_state`: what the record said, where a viewer put the effective state in `state`.
    recorded_state = meta.get("recorded_state", meta.get("state"))
    recorded = str(meta.get("state_reason") or "") if recorded_state == state else ""
    of = _of(evaluated, budget)
    if state == "done":
        if budget is not None and evaluated >= int(budget):
            return f"budget spent: {of}"
        branches = list(branches)
        if branches and all(b.state == "retired" for b in branches):
            tuner = (meta.get("config") or {}).get("agent") == "tuner"  # offline: no model
            todo = "fork another family" + ("" if tuner else " or set a model")
            return f"every branch retired {_retired_cause(branches)} at {of}: {todo} to continue"
        return f"{recorded} at {of}" if recorded and recorded != GENERIC_DONE else f"done at {of}"
    if state == "stopped":
        if recorded.startswith("interrupted by "):
            why = f"stopped by {recorded.removeprefix('interrupted by ')}"
        elif recorded.startswith("time limit of "):
            why = f"time limit {recorded.removeprefix('time limit of ')}"
        elif recorded == "by command" or not recorded:
            why = "stopped by command"
        else:
            why = f"stopped ({recorded})"
        return f"{why} at {of}; `cockpit resume` continues it"
    if recorded_state == "crashed":  # the engine recorded its own error
        return f"the engine crashed at {of}: {meta.get('last_error') or 'engine error'}"
    return (
        f"the engine died at {of} without recording why (killed, or its machine went down); "
        "`cockpit resume` continues it"
    )


def effective_meta(meta: dict[str, Any], engine_running: bool) -> dict[str, Any]:
    """The record's session metadata with `state` as it is now: a record that says an engine
    is at work (running, paused) while none holds the session's lock is `crashed`; the
    recorded state is kept as `recorded_state`. Unchanged otherwise."""
    if meta.get("state") in ENGINE_STATES and not engine_running:
        return {**meta, "state": "crashed", "recorded_state": meta.get("state")}
    return meta


def record_end_reason(record: Any, state: str) -> str | None:
    """`end_reason` read from an open record (a `SessionRecord` or a read-only one)."""
    return end_reason(state, record.meta(), record.branches(), evaluations(record.candidates()))
