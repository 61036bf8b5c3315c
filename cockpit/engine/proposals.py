"""Proposal handling: asking a branch's proposer for its next candidate on a thread of its own,
collecting the outcome, cancelling a call in flight.

One step per branch is in the pipeline at a time (proposing, ready or evaluating). Interrupting
a branch (pause, retire, stop, redirect) while its proposal is in flight cancels it
cooperatively: the request's cancel event is set, `proposal_cancelled` is recorded at once (the
instructions and escalation the request took go back to the branch: `state.fold`), and whatever
the thread returns later is discarded (`proposal_discarded`, with its usage, so costs count).
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from cockpit.agents.base import Proposal, ProposalError, ProposalRequest
from cockpit.engine import spend, verdicts
from cockpit.engine.state import BranchState
from cockpit.store import events

if TYPE_CHECKING:
    from cockpit.engine.engine import Engine

# a wait for the provider at least this long is recorded on its branch ("waiting for provider
# until HH:MM:SS"); shorter back-offs pass unannounced
WAIT_SHOWN_S = 1.0


@dataclass
class Job:
    """A branch's proposal in flight, from its proposal_requested to its outcome."""

    branch: str
    request_event: int
    request: ProposalRequest
    cancel: threading.Event
    future: Future
    reason: str = ""  # why it was cancelled


def spawn(fn: Callable[..., Any], *args: Any, name: str = "propose") -> Future:
    """Run `fn` on a daemon thread; its Future. Daemon: an abandoned call (cancelled, its HTTP
    request still waiting for the provider) must not keep a stopping engine alive."""
    fut: Future = Future()

    def run() -> None:
        if not fut.set_running_or_notify_cancel():
            return
        try:
            fut.set_result(fn(*args))
        except BaseException as exc:  # noqa: BLE001 - handed to the engine's thread
            fut.set_exception(exc)

    threading.Thread(target=run, name=name, daemon=True).start()
    return fut


def request(eng: Engine, b: BranchState) -> None:
    """Start the branch's next step: its pending seed is recorded at once; a proposal is asked
    for on a thread of its own and collected by a later turn of the loop."""
    if b.pending_seed:
        seed = Proposal(source=b.head_source, family=b.family, note="seed", model=None)
        eng._accept(b, None, seed, None)
        return
    queued, escalation = list(b.queued), b.escalation  # the request takes them (state.fold)
    rid = eng._emit(
        events.PROPOSAL_REQUESTED,
        {"parent": b.head_id, "model": b.model, "instructions": queued},
        branch=b.id,
    )
    cancel = threading.Event()
    req = ProposalRequest(
        task_name=eng.task_root.name,
        task_root=str(eng.task_root),
        branch=b.id,
        family=b.family,
        parent_id=b.head_id,
        parent_source=b.head_source,
        parent_result=b.best_result,
        history=b.history[-8:],
        tried_hashes=set(eng.seen_hashes),
        steer=list(b.steer),
        queued=queued,
        model=b.model,
        seed=eng.cfg.seed * 1000 + eng.evaluations,
        escalation=escalation,
        cancel=cancel,
        on_wait=lambda until, why, bid=b.id: eng._waits.put((bid, until, why)),
    )
    fut = spawn(eng.proposer.propose, req, name=f"propose-{b.id}")
    eng.proposing[b.id] = Job(b.id, rid, req, cancel, fut)


def cancel(eng: Engine, b: BranchState, reason: str) -> bool:
    """Cancel the branch's proposal in flight, if any: recorded now, its reply discarded when it
    comes. The instructions and escalation it carried go back to the branch for the next one."""
    job = eng.proposing.pop(b.id, None)
    if job is None:
        return False
    job.cancel.set()
    job.reason = reason
    eng.abandoned[job.future] = job
    eng._emit(
        events.PROPOSAL_CANCELLED,
        {"reason": reason, "model": job.request.model, "request": job.request_event},
        branch=b.id,
    )
    return True


def show_waits(eng: Engine) -> None:
    """Record each announced wait for the provider on its branch: the status and the
    cockpit show "waiting for provider until HH:MM:SS"."""
    waits: queue.SimpleQueue[tuple[str, float, str]] = eng._waits
    while True:
        try:
            bid, until, why = waits.get_nowait()
        except queue.Empty:
            return
        b = eng.branches.get(bid)
        if b is None or b.state != "running" or bid not in eng.proposing:
            continue
        if until - time.time() < WAIT_SHOWN_S:
            continue  # a blink: nothing a person could act on
        clock = time.strftime("%H:%M:%S", time.localtime(until))
        eng._emit(
            events.BRANCH_STATE,
            {
                "state": "running",
                "cause": "provider_wait",
                "reason": f"waiting for provider until {clock} ({why[:200]})",
                "until": until,
            },
            branch=bid,
        )


def collect(eng: Engine) -> None:
    """Take in every proposal whose thread has ended, and the cost of abandoned ones."""
    for bid, job in list(eng.proposing.items()):
        if job.future.done():
            del eng.proposing[bid]
            b = eng.branches[bid]
            if b.waiting and b.state == "running":
                eng._emit(
                    events.BRANCH_STATE,
                    {"state": "running", "reason": "the provider answered"},
                    branch=bid,
                )
            _outcome(eng, b, job)
    for fut, job in list(eng.abandoned.items()):
        if fut.done():
            del eng.abandoned[fut]
            _discarded(eng, job)


def _outcome(eng: Engine, b: BranchState, job: Job) -> None:
    try:
        proposal = job.future.result()
    except ProposalError as exc:
        _failed(eng, b, job, exc)
        return
    except Exception as exc:  # noqa: BLE001 - a proposer bug pauses its branch, never the engine
        err = ProposalError(f"proposer error: {type(exc).__name__}: {exc}")
        err.pause = "branch"  # type: ignore[attr-defined]
        _failed(eng, b, job, err)
        return
    eng._accept(b, job, proposal, job.request.parent_id)


def _discarded(eng: Engine, job: Job) -> None:
    """A cancelled proposal's thread ended: its reply is not used, what it cost is recorded."""
    try:
        usage = job.future.result().usage
    except BaseException as exc:  # noqa: BLE001 - ProposalCancelled or any failure
        usage = getattr(exc, "usage", None) or {}
    if usage.get("calls_detail"):
        eng._emit(
            events.PROPOSAL_DISCARDED,
            {
                "reason": f"the reply came after the request was cancelled ({job.reason})",
                "request": job.request_event,
                "usage": usage,
            },
            branch=job.branch,
        )


def _failed(eng: Engine, b: BranchState, job: Job, exc: ProposalError) -> None:
    """A proposal that brought no candidate. An LLM outage pauses the branch, a spent budget
    the session, a request or USD cap stops it; a reply without usable code counts toward
    `max_unusable`; `exhausted` (nothing left to try) is a plateau."""
    pause = getattr(exc, "pause", None)
    unusable = pause is None and not exc.exhausted
    eng._emit(
        events.PROPOSAL_FAILED,
        {
            "reason": exc.reason,
            "model": job.request.model,
            "usage": getattr(exc, "usage", {}),
            "request": job.request_event,
            "unusable": unusable,
        },
        branch=b.id,
    )
    if pause == "branch":
        eng.retry_at[b.id] = time.monotonic() + eng.cfg.outage_cooldown_s
        eng._emit(
            events.BRANCH_STATE,
            {
                "state": "paused",
                "cause": "outage",
                "reason": f"{exc.reason} (retrying in "
                f"{eng.cfg.outage_cooldown_s:.0f} s, or resume it now)",
            },
            branch=b.id,
        )
    elif pause == "session":
        for other in list(eng.branches.values()):
            cancel(eng, other, "the session paused: LLM budget reached")
        eng._emit(
            events.SESSION_STATE, {"state": "paused", "reason": exc.reason, "cause": "budget_cap"}
        )
    elif pause == "stop" and not eng.stopping:  # the model request cap or the USD cap
        how = getattr(exc, "raise_with", None) or "N"
        eng.stop(
            f"{exc.reason}; to go on: cockpit send {eng.dir.name} set-budget {how} --queue, "
            f"then cockpit resume {eng.dir.name}",
            f"the session is stopping: {exc.reason[:120]}",
        )
    if exc.exhausted:
        verdicts.plateau(eng, b, exc.reason)
    if unusable:  # no usable code in the reply
        spend.stall_if_unusable(eng, b, exc.reason)
