"""The engine's state as a fold over the session's events: `fold(state, event)`.

The live engine and a resumed one build their state the same way. The live engine appends an
event to the record and applies `fold` to it; a resumed engine applies `fold` to every event
the record holds, in order (`fold_events`). So whatever a branch knew when the engine stopped
(its head and best, the history of attempts the proposer is shown, the escalations it had, the
instructions waiting for its next proposal, its model, the budget, a pause) is what it knows
after a resume, and no state changes except through an event.

`fold` reads nothing but the state and the event: no clock, no record, no repository. The one
input that is not an event is the task's seeds (`EngineState.seeds`): a branch that starts from
a seed, or switches to another family, starts from that family's seed file, which the events
name but do not copy.

What is not here is scheduling: futures of proposals and evaluations in flight, the outage
retry timers, the order in which branches are asked (`Engine`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from cockpit.agents.base import Attempt
from cockpit.store import events as ev
from cockpit.store.models import Event


@dataclass
class Seed:
    """One seed file of the task: a candidate of its own family (`FAMILY`, else the file name)."""

    name: str  # the file name, as `branch_created` records it
    family: str
    source: str


@dataclass
class BranchState:
    id: str
    family: str
    state: str = "running"
    model: str | None = None
    head_id: str | None = None  # candidate proposals start from (the family's best, or its seed)
    head_source: str = ""
    best_id: str | None = None
    best_result: dict[str, Any] | None = None
    since_best: int = 0
    families_tried: set[str] = field(default_factory=set)
    steer: list[str] = field(default_factory=list)
    queued: list[str] = field(default_factory=list)
    history: list[Attempt] = field(default_factory=list)
    pending_seed: bool = False  # head not evaluated yet (a fresh branch or a family switch)
    escalation: str | None = None  # for the next proposal only: "model" | "family" | "prompt"
    escalations_done: set[str] = field(default_factory=set)
    unusable: int = 0  # unusable replies in a row (a duplicate, no code, unparseable code)
    stalled: bool = False  # paused by the engine for `unusable`; a resume of the session lifts it
    waiting: bool = False  # the record says it waits for the provider (a back-off is announced)
    outage: bool = False  # paused by the engine for a provider outage (it retries by itself)


@dataclass
class Waiting:
    """A recorded candidate without a verdict yet: waiting for a worker, or being evaluated."""

    cid: str
    branch: str
    parent: str | None
    family: str | None
    model: str | None
    note: str
    group: int | None
    evaluating: bool = False


@dataclass
class Request:
    """A proposal request without an outcome: what it took from its branch, given back if it
    fails or is cancelled (a failure gives back the instructions only, as it always has)."""

    branch: str
    queued: list[str]
    escalation: str | None


@dataclass
class Group:
    """A best-of-n step: its candidates are evaluated one by one, then the best is kept."""

    branch: str
    pending: set[str] = field(default_factory=set)
    done: list[str] = field(default_factory=list)


@dataclass
class EngineState:
    seeds: list[Seed]
    model: str | None = None  # the model new branches and forks get
    budget: int = 0
    evaluations: int = 0
    paused: bool = False
    paused_by_cap: bool = False  # the session was paused by an LLM budget cap (set-budget lifts it)
    branches: dict[str, BranchState] = field(default_factory=dict)
    seen_hashes: dict[str, str] = field(default_factory=dict)  # source hash -> first candidate
    sources: dict[str, str] = field(default_factory=dict)  # candidate -> its source
    results: dict[str, dict[str, Any]] = field(default_factory=dict)  # candidate -> its verdict
    waiting: dict[str, Waiting] = field(default_factory=dict)  # in the order a worker takes them
    worker_lost: dict[str, list[str]] = field(default_factory=dict)  # candidate -> how they died
    groups: dict[int, Group] = field(default_factory=dict)  # best-of-n steps by request id
    requests: dict[int, Request] = field(default_factory=dict)  # open proposal requests
    commands: dict[int, tuple[str, dict[str, Any]]] = field(default_factory=dict)  # received
    seeded: set[str] = field(default_factory=set)  # seed files a branch has started from
    step_fresh: dict[str, bool] = field(default_factory=dict)  # branch -> a fresh choice so far

    def seed_of(self, family: str) -> Seed | None:
        return next((s for s in self.seeds if s.family == family), None)

    def open_request(self, branch: str | None) -> int | None:
        """The branch's proposal request in flight (a branch has one at most)."""
        return next((rid for rid, r in self.requests.items() if r.branch == branch), None)


def fold(state: EngineState, e: Event) -> EngineState:
    """Apply one event to the state (in place) and return it."""
    handler = _FOLD.get(e.kind)
    if handler is not None:
        handler(state, e)
    return state


def fold_events(state: EngineState, evs: Iterable[Event]) -> EngineState:
    for e in evs:
        fold(state, e)
    return state


def attempt(cid: str, result: dict[str, Any]) -> Attempt:
    """What the proposer is shown of one judged candidate."""
    reasons = [r for r in (result.get("reasons") or [])[:2] if isinstance(r, dict)]
    return Attempt(
        cid,
        result.get("status") or "?",
        result.get("score_us"),
        "; ".join(str(r.get("message", ""))[:120] for r in reasons),
    )


def snapshot(state: EngineState) -> dict[str, Any]:
    """The state as plain data, to compare two states (a live engine's and a resumed one's)."""
    return {
        "model": state.model,
        "budget": state.budget,
        "evaluations": state.evaluations,
        "paused": state.paused,
        "paused_by_cap": state.paused_by_cap,
        "seen_hashes": dict(state.seen_hashes),
        "waiting": [(w.cid, w.branch, w.evaluating) for w in state.waiting.values()],
        "worker_lost": {k: list(v) for k, v in state.worker_lost.items()},
        "groups": {g: (x.branch, sorted(x.pending), list(x.done)) for g, x in state.groups.items()},
        "requests": {
            rid: (r.branch, list(r.queued), r.escalation) for rid, r in state.requests.items()
        },
        "branches": {bid: _branch_snapshot(b) for bid, b in state.branches.items()},
    }


def _branch_snapshot(b: BranchState) -> dict[str, Any]:
    return {
        "family": b.family,
        "state": b.state,
        "model": b.model,
        "head_id": b.head_id,
        "head_source": b.head_source,
        "best_id": b.best_id,
        "best_score_us": (b.best_result or {}).get("score_us"),
        "since_best": b.since_best,
        "families_tried": sorted(b.families_tried),
        "steer": list(b.steer),
        "queued": list(b.queued),
        "history": [(a.candidate, a.status, a.score_us, a.summary) for a in b.history],
        "pending_seed": b.pending_seed,
        "escalation": b.escalation,
        "escalations_done": sorted(b.escalations_done),
        "unusable": b.unusable,
        "stalled": b.stalled,
        "waiting": b.waiting,
        "outage": b.outage,
    }


# --- session -------------------------------------------------------------------------------


def _session_state(s: EngineState, e: Event) -> None:
    state = e.payload.get("state")
    if state == "paused":
        s.paused, s.paused_by_cap = True, e.payload.get("cause") == "budget_cap"
    else:  # running, or the run ended: a new run starts unpaused unless it was killed paused
        s.paused, s.paused_by_cap = False, False


def _budget_changed(s: EngineState, e: Event) -> None:
    if e.payload.get("budget") is not None:
        s.budget = int(e.payload["budget"])


def _model_changed(s: EngineState, e: Event) -> None:
    model = e.payload.get("model")
    if e.branch is not None:
        if e.branch in s.branches:
            s.branches[e.branch].model = model
        return
    s.model = model
    for b in s.branches.values():
        if b.state != "retired":
            b.model = model


# --- branches ------------------------------------------------------------------------------


def _branch_created(s: EngineState, e: Event) -> None:
    p = e.payload
    family = p.get("family") or ""
    seed = next((x for x in s.seeds if x.name == p.get("seed")), None) or s.seed_of(family)
    name = seed.name if seed else f"?{family}"
    # a second branch of a family starts from the seed's first *child*, not the seed again
    first = name not in s.seeded
    s.seeded.add(name)
    s.branches[e.branch] = BranchState(
        e.branch,
        family,
        model=p.get("model"),
        head_source=seed.source if seed else "",
        families_tried={family},
        pending_seed=first,
    )


def _branch_forked(s: EngineState, e: Event) -> None:
    p = e.payload
    family = p.get("family") or ""
    origin = p.get("from_candidate")
    b = BranchState(
        e.branch,
        family,
        model=p.get("model"),
        head_id=origin,
        head_source=s.sources.get(origin, "") if origin else "",
        families_tried={family},
    )
    if p.get("instruction"):
        b.steer.append(p["instruction"])
    result = s.results.get(origin) if origin else None
    if result is not None and result.get("status") == "ok":
        b.best_id, b.best_result = origin, result
    s.branches[e.branch] = b


def _branch_state(s: EngineState, e: Event) -> None:
    b = s.branches.get(e.branch)
    if b is None:
        return
    p = e.payload
    b.state = p.get("state") or b.state
    cause = p.get("cause")
    b.stalled = cause == "unusable"
    b.waiting = cause == "provider_wait"
    b.outage = cause == "outage"
    if cause in ("command", "resume"):  # a person (or a resume) gives the branch more calls
        b.unusable = 0


def _escalated(s: EngineState, e: Event) -> None:
    b = s.branches.get(e.branch)
    if b is None:
        return
    p = e.payload
    if p.get("mode") == "model":
        # an LLM branch first gets the stronger model (the profile's advisor), once
        b.escalations_done.add("model")
        b.escalation = "model"
        b.since_best = 0
        return
    family = p.get("family")
    if p.get("mode") != "family" or not family:
        return
    seed = s.seed_of(family)
    b.family = family
    b.families_tried.add(family)
    b.head_source, b.head_id = (seed.source if seed else ""), None
    b.best_id, b.best_result, b.since_best = None, None, 0
    b.pending_seed = True


def _best_changed(s: EngineState, e: Event) -> None:
    b = s.branches.get(e.branch)
    cid = e.payload.get("candidate") or e.candidate
    if b is None or cid is None:
        return
    b.best_id, b.best_result, b.since_best = cid, s.results.get(cid), 0
    b.head_id, b.head_source = cid, s.sources.get(cid, "")


# --- proposals -----------------------------------------------------------------------------


def _proposal_requested(s: EngineState, e: Event) -> None:
    b = s.branches.get(e.branch)
    if b is None:
        return
    old = s.open_request(e.branch)
    if old is not None:  # a record whose outcome never came (older engines): closed by this one
        s.requests.pop(old)
    s.requests[e.id] = Request(b.id, list(b.queued), b.escalation)
    b.queued.clear()
    b.escalation = None


def _close_request(s: EngineState, e: Event) -> Request | None:
    """The request an outcome answers, removed: `request` (None for a seed, which answers no
    request), else, in records whose outcomes do not name it, the branch's open one."""
    rid = e.payload["request"] if "request" in e.payload else s.open_request(e.branch)
    req = s.requests.pop(rid, None) if rid is not None else None
    b = s.branches.get(e.branch)
    if b is not None:
        b.waiting = False
    return req


def _proposal_failed(s: EngineState, e: Event) -> None:
    req = _close_request(s, e)
    b = s.branches.get(e.branch)
    if b is None:
        return
    if req is not None:
        b.queued[:0] = req.queued  # nothing came of them: the next request carries them again
    if e.payload.get("unusable"):
        b.unusable += 1


def _proposal_cancelled(s: EngineState, e: Event) -> None:
    req = _close_request(s, e)
    b = s.branches.get(e.branch)
    if b is None or req is None:
        return
    b.queued[:0] = req.queued
    if b.escalation is None:
        b.escalation = req.escalation


def _candidate_proposed(s: EngineState, e: Event) -> None:
    p, cid = e.payload, e.candidate
    b = s.branches.get(e.branch)
    if cid is None or b is None:
        return
    if p.get("choice", 1) == 1:
        _close_request(s, e)  # the proposal used what its request carried
        if p.get("note") == "seed" and p.get("request") is None:
            b.pending_seed = False
    s.sources[cid] = p.get("source") or ""
    h, dup = p.get("source_hash"), p.get("duplicate_of")
    if h and not dup:
        s.seen_hashes.setdefault(h, cid)
    group = p.get("group")
    s.waiting[cid] = Waiting(
        cid, b.id, p.get("parent"), p.get("family"), p.get("model"), p.get("note") or "", group
    )
    if group is not None:
        s.groups.setdefault(group, Group(b.id)).pending.add(cid)
    # unusable replies in a row: a step whose every choice is a duplicate is one more
    fresh = not dup or (p.get("choice", 1) > 1 and s.step_fresh.get(b.id, False))
    s.step_fresh[b.id] = fresh
    if p.get("choice", 1) == p.get("choices", 1):
        b.unusable = 0 if fresh else b.unusable + 1


def _evaluation_started(s: EngineState, e: Event) -> None:
    w = s.waiting.get(e.candidate or "")
    if w is not None:
        w.evaluating = True


def _evaluation_finished(s: EngineState, e: Event) -> None:
    cid, result = e.candidate, e.payload
    if cid is None:
        return
    w = s.waiting.pop(cid, None)
    s.results[cid] = result
    if result.get("status") != "duplicate":
        s.evaluations += 1
    b = s.branches.get(e.branch)
    if b is None:
        return
    b.history.append(attempt(cid, result))
    n = 1
    g = s.groups.get(w.group) if w is not None and w.group is not None else None
    if g is not None:
        g.pending.discard(cid)
        g.done.append(cid)
        if g.pending:
            return  # more candidates of this step to come
        del s.groups[w.group]
        n = len(g.done)
    # the step is decided; when it won, `best_changed` follows in the same transaction
    b.since_best += n
    if b.best_id is None and b.head_id is None:
        b.head_id, b.head_source = cid, s.sources.get(cid, "")


def _note(s: EngineState, e: Event) -> None:
    """A worker died while evaluating the candidate: it waits for a fresh one, first in line."""
    cid = e.candidate
    if not e.payload.get("requeued") or cid is None or cid not in s.waiting:
        return
    w = s.waiting.pop(cid)
    w.evaluating = False
    s.waiting = {cid: w, **s.waiting}
    s.worker_lost.setdefault(cid, []).append(str(e.payload.get("how", "ended")))


def _error(s: EngineState, e: Event) -> None:
    """An evaluation lost when the engine stopped: reported once, never retried."""
    if e.candidate is not None:
        s.waiting.pop(e.candidate, None)


# --- commands ------------------------------------------------------------------------------


def _command_received(s: EngineState, e: Event) -> None:
    p = e.payload
    if p.get("command_id") is not None:
        s.commands[p["command_id"]] = (str(p.get("kind") or ""), dict(p.get("args") or {}))


def _command_acked(s: EngineState, e: Event) -> None:
    """A redirect's instruction is kept once its command is acknowledged; every other command
    changes the state through the events it caused."""
    kind, args = s.commands.pop(e.payload.get("command_id"), ("", {}))
    if not e.payload.get("ok") or kind != "redirect":
        return
    b = s.branches.get(args.get("branch"))
    text = str(args.get("instruction") or "").strip()
    if b is None or not text:
        return
    (b.queued if args.get("mode") == "queue" else b.steer).append(text)


_FOLD: dict[str, Callable[[EngineState, Event], None]] = {
    ev.SESSION_STATE: _session_state,
    ev.BUDGET_CHANGED: _budget_changed,
    ev.MODEL_CHANGED: _model_changed,
    ev.ERROR: _error,
    ev.NOTE: _note,
    ev.BRANCH_CREATED: _branch_created,
    ev.BRANCH_FORKED: _branch_forked,
    ev.BRANCH_STATE: _branch_state,
    ev.ESCALATED: _escalated,
    ev.BEST_CHANGED: _best_changed,
    ev.PROPOSAL_REQUESTED: _proposal_requested,
    ev.PROPOSAL_FAILED: _proposal_failed,
    ev.PROPOSAL_CANCELLED: _proposal_cancelled,
    ev.CANDIDATE_PROPOSED: _candidate_proposed,
    ev.EVALUATION_STARTED: _evaluation_started,
    ev.EVALUATION_FINISHED: _evaluation_finished,
    ev.COMMAND_RECEIVED: _command_received,
    ev.COMMAND_ACKED: _command_acked,
}
