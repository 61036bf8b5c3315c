"""The queue's commands, one small handler each (`HANDLERS`): check the arguments, cancel what
the command interrupts, record what it changes. Each returns (ok, message), the message the
acknowledgement carries. A handler changes the engine's state only through the events it
records (`state.fold`); a redirect's instruction is kept by its acknowledgement.

The vocabulary and the arguments are in `cockpit.store.commands`; `Engine.apply_commands`
applies each pending command and its acknowledgement in one transaction.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from cockpit.engine import proposals, spend
from cockpit.engine.state import BranchState
from cockpit.store import events

if TYPE_CHECKING:
    from cockpit.engine.engine import Engine

Handler = Callable[["Engine", dict[str, Any]], tuple[bool, str]]


def apply(eng: Engine, kind: str, args: dict[str, Any]) -> tuple[bool, str]:
    handler = HANDLERS.get(kind)
    if handler is None:
        return False, f"unknown command {kind!r}"
    return handler(eng, args)


def _branch(eng: Engine, args: dict[str, Any]) -> BranchState:
    bid = args.get("branch")
    if bid not in eng.branches:
        raise ValueError(f"no branch {bid!r} (branches: {', '.join(eng.branches)})")
    return eng.branches[bid]


def _pause_or_resume(eng: Engine, a: dict[str, Any], pause: bool) -> tuple[bool, str]:
    target = "paused" if pause else "running"
    if a.get("branch"):
        b = _branch(eng, a)
        if b.state == "retired":
            return False, f"{b.id} is retired"
        eng.retry_at.pop(b.id, None)
        cancelled = pause and proposals.cancel(eng, b, "branch paused by command")
        eng._emit(
            events.BRANCH_STATE,
            {"state": target, "reason": "by command", "cause": "command"},
            branch=b.id,
        )
        return True, f"{b.id} {target}" + (
            " (its proposal in flight was cancelled)" if cancelled else ""
        )
    n = (
        sum(
            proposals.cancel(eng, b, "session paused by command")
            for b in list(eng.branches.values())
        )
        if pause
        else 0
    )
    eng._emit(events.SESSION_STATE, {"state": target, "reason": "by command"})
    return True, f"session {target}" + (
        f" ({n} proposal{'s' * (n > 1)} in flight cancelled)" if n else ""
    )


def _pause(eng: Engine, a: dict[str, Any]) -> tuple[bool, str]:
    return _pause_or_resume(eng, a, pause=True)


def _resume(eng: Engine, a: dict[str, Any]) -> tuple[bool, str]:
    return _pause_or_resume(eng, a, pause=False)


def _stop(eng: Engine, a: dict[str, Any]) -> tuple[bool, str]:
    eng.stopping = True
    for b in list(eng.branches.values()):
        proposals.cancel(eng, b, "the session is stopping")
    return True, "stopping after the evaluation in flight"


def _retire(eng: Engine, a: dict[str, Any]) -> tuple[bool, str]:
    b = _branch(eng, a)
    eng.retry_at.pop(b.id, None)
    proposals.cancel(eng, b, "branch retired by command")
    eng._emit(
        events.BRANCH_STATE,
        {"state": "retired", "reason": a.get("reason") or "by command"},
        branch=b.id,
    )
    return True, f"{b.id} retired"


def _redirect(eng: Engine, a: dict[str, Any]) -> tuple[bool, str]:
    b = _branch(eng, a)
    text = str(a.get("instruction") or "").strip()
    if not text:
        return False, "redirect needs an instruction"
    mode = a.get("mode") or "steer"
    if mode not in ("steer", "queue"):
        return False, f"redirect mode must be steer or queue, not {mode!r}"
    # the call in flight was asked without it: cancel, and ask again with the instruction (which
    # the branch keeps once this command is acknowledged)
    cancelled = proposals.cancel(eng, b, f"redirected by command ({mode})")
    kept = "kept from now on" if mode == "steer" else "queued for the next proposal"
    return True, (
        f"{b.id}: instruction {kept}"
        + ("; the proposal in flight was cancelled" if cancelled else "")
    )


def _set_model(eng: Engine, a: dict[str, Any]) -> tuple[bool, str]:
    model = a.get("model")
    if not model:
        return False, "set-model needs a model"
    from cockpit.agents.profiles import LLM_FIELDS

    try:  # the cockpit's `m` key posts what was typed
        model = LLM_FIELDS["model"](model)
    except ValueError as exc:
        return False, f"set-model: the model {exc}"
    if getattr(eng.proposer, "name", None) == "llm":  # every call would fail with it
        from cockpit.agents.llm import check_model

        try:
            check_model(model)
        except ValueError as exc:
            return False, f"set-model: {exc}"
    if a.get("branch") and _branch(eng, a).state == "retired":  # e.g. queued, then retired
        return False, f"{a['branch']} is retired"
    targets = (
        [_branch(eng, a)]
        if a.get("branch")
        else [b for b in eng.branches.values() if b.state != "retired"]
    )
    eng._emit(events.MODEL_CHANGED, {"model": model, "previous": None}, branch=a.get("branch"))
    if not a.get("branch"):
        eng.cfg.model = model
    return True, f"model {model} for {', '.join(b.id for b in targets)}"


def _fork(eng: Engine, a: dict[str, Any]) -> tuple[bool, str]:
    cid = a.get("candidate")
    c = eng.record.candidate(cid) if cid else None
    if c is None:
        return False, f"no candidate {cid!r}"
    family = a.get("family") or c.family or "unknown"
    live = sum(1 for b in eng.branches.values() if b.family == family and b.state != "retired")
    if live >= eng.cfg.family_quota and not a.get("family"):
        return False, f"family {family} is at its quota of {eng.cfg.family_quota} live branches"
    bid = f"b{max(int(x[1:]) for x in eng.branches) + 1 if eng.branches else 1}"
    eng._emit(
        events.BRANCH_FORKED,
        {
            "from_branch": c.branch,
            "from_candidate": cid,
            "family": family,
            "model": a.get("model") or eng.state.model,
            "instruction": a.get("instruction"),
        },
        branch=bid,
    )
    return True, f"forked {cid} into {bid} ({family})"


HANDLERS: dict[str, Handler] = {
    "pause": _pause,
    "resume": _resume,
    "stop": _stop,
    "retire": _retire,
    "redirect": _redirect,
    "set_model": _set_model,
    "set_budget": spend.set_budget,
    "fork": _fork,
}
