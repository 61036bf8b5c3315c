"""Spend control: the LLM ledger's caps (USD, tokens, model requests), the evaluation budget
and the pause of a branch whose model keeps sending unusable replies.

The ledger lives in the proposer (`Engine.ledger`, None for the offline tuner). Its caps are
events (`budget_changed`), its spend is in the usage of the events that ended each proposal, so
both survive a restart (`restore_costs`).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from cockpit.engine.state import BranchState
from cockpit.store import events

if TYPE_CHECKING:
    from cockpit.engine.engine import Engine


def initial_caps(eng: Engine) -> dict[str, Any]:
    """A new session's LLM caps: the USD cap of `cockpit run --usd` (None: no cap), else the
    profile's `budget_usd`, else DEFAULT_USD_CAP (only priced calls count toward it, so a
    local server's unpriced model is bounded by the call caps alone)."""
    from cockpit.agents.costs import DEFAULT_USD_CAP

    caps = eng.ledger.caps
    if "usd" in eng.cfg.extra:
        usd, where = eng.cfg.extra["usd"], "set by cockpit run --usd"
    elif caps.usd is not None:
        usd, where = caps.usd, "the profile's budget_usd"
    else:
        usd, where = DEFAULT_USD_CAP, "the default for priced models"
    usd = None if usd is None else float(usd)
    eng.ledger.set_caps(usd=usd, tokens=caps.tokens, usd_from=where)
    return {"usd": usd, "tokens": caps.tokens, "usd_from": where}


def restore_costs(eng: Engine, meta: dict[str, Any]) -> None:
    """The LLM ledger from the record: every call's cost is in the usage of the event that
    ended its proposal (`calls_detail`), so budget caps hold across engine restarts. Caps
    changed by `set-budget` override the profile's."""
    if eng.ledger is None:
        return
    calls: list[dict[str, Any]] = []
    requests = 0  # every attempt, failed ones too: the request cap holds across restarts
    for e in eng.record.events(
        kinds=[events.CANDIDATE_PROPOSED, events.PROPOSAL_FAILED, events.PROPOSAL_DISCARDED]
    ):
        usage = e.payload.get("usage") or {}
        detail = [c for c in usage.get("calls_detail") or [] if isinstance(c, dict)]
        calls += detail
        attempts = usage.get("attempts")
        requests += attempts if isinstance(attempts, int) else len(detail)
    eng.ledger.restore(calls)
    if hasattr(eng.ledger, "count_request"):
        eng.ledger.count_request(requests)
    if "budget_usd" in meta or "budget_tokens" in meta:
        caps = eng.ledger.caps
        last = [
            e.payload
            for e in eng.record.events(kinds=[events.BUDGET_CHANGED])
            if "usd" in e.payload
        ]
        eng.ledger.set_caps(
            usd=meta.get("budget_usd", caps.usd),
            tokens=meta.get("budget_tokens", caps.tokens),
            usd_from=str(last[-1].get("usd_from") or "") if last else "",
        )


def set_request_cap(eng: Engine) -> None:
    """The hard cap on model requests: `max_calls_per_eval` for each evaluation of the
    budget (follows `set-budget`)."""
    if eng.calls_per_eval and eng.ledger is not None:
        eng.ledger.set_request_cap(
            eng.calls_per_eval * eng.budget,
            f"{eng.calls_per_eval} per evaluation of a budget of {eng.budget}",
        )


def cap_allows(eng: Engine) -> bool:
    from cockpit.agents.costs import BudgetExceeded

    try:
        eng.ledger.check("")
    except BudgetExceeded:
        return False
    return True


def set_budget(eng: Engine, a: dict[str, Any]) -> tuple[bool, str]:
    """The `set_budget` command: evaluations (`budget`) and/or the LLM caps (`usd`, `tokens`;
    null = no cap). A session the caps paused goes on once the new ones allow a call."""
    if not any(k in a for k in ("budget", "usd", "tokens")):
        return False, "set-budget needs a budget (evaluations), --usd or --tokens"
    budget = eng.budget if a.get("budget") is None else int(a["budget"])
    if budget < 0:
        return False, "budget must be >= 0"
    payload: dict[str, Any] = {"budget": budget, "previous": eng.budget}
    parts = [f"budget {budget} evaluations ({eng.evaluations} used)"]
    if "usd" in a or "tokens" in a:
        if eng.ledger is None:
            return (
                False,
                "this session's proposer makes no paid calls (no USD or token budget to set)",
            )
        caps = eng.ledger.caps
        usd = caps.usd if "usd" not in a else (None if a["usd"] is None else float(a["usd"]))
        tokens = (
            caps.tokens
            if "tokens" not in a
            else (None if a["tokens"] is None else int(a["tokens"]))
        )
        if (usd is not None and usd < 0) or (tokens is not None and tokens < 0):
            return False, "LLM caps must be >= 0"
        usd_from = eng.ledger.usd_from if "usd" not in a else "set by set-budget --usd"
        payload.update(
            usd=usd,
            tokens=tokens,
            previous_usd=caps.usd,
            previous_tokens=caps.tokens,
            usd_from=usd_from,
        )
        eng.ledger.set_caps(usd=usd, tokens=tokens, usd_from=usd_from)
        spent = eng.ledger.summary()["total"]
        parts.append(
            f"LLM cap {'none' if usd is None else f'${usd:.4f}'} (${spent['cost_usd']:.4f} spent), "
            f"{'none' if tokens is None else f'{tokens:,}'} tokens ({spent['tokens']:,} used)"
        )
    eng._emit(events.BUDGET_CHANGED, payload)
    set_request_cap(eng)
    if eng.paused_by_cap and cap_allows(eng):
        eng._emit(
            events.SESSION_STATE,
            {"state": "running", "reason": "the new budget allows more calls"},
        )
        parts.append("session resumed")
    return True, "; ".join(parts)


def stall_if_unusable(eng: Engine, b: BranchState, why: str) -> None:
    """At `max_unusable` unusable replies in a row (counted by `state.fold`) the branch is
    paused with the reason; the session stops once no branch is left running (`all_stalled`)."""
    if b.unusable < eng.max_unusable or b.state != "running":
        return
    eng.retry_at.pop(b.id, None)
    eng.cancel(b, "the branch is paused: unusable replies")
    eng._emit(
        events.BRANCH_STATE,
        {
            "state": "paused",
            "cause": "unusable",
            "reason": f"{b.unusable} unusable replies in a row (last: {why[:300]})",
        },
        branch=b.id,
    )


def all_stalled(eng: Engine) -> str | None:
    """The reason to stop when no branch can go on by itself: every one is retired or paused
    by the engine for unusable replies (at least one of them)."""
    live = [b for b in eng.branches.values() if b.state != "retired"]
    if not live or not all(b.state == "paused" and b.stalled for b in live):
        return None
    names = ", ".join(b.id for b in live)
    return (
        f"every branch is paused or retired ({names}: {eng.max_unusable} unusable replies "
        f"in a row); to try again: cockpit resume {eng.dir.name}"
    )


def retry_outages(eng: Engine) -> None:
    """A branch paused by a provider outage runs again once its cool-down is over."""
    now = time.monotonic()
    for bid, at in list(eng.retry_at.items()):
        b = eng.branches.get(bid)
        if b is None or b.state != "paused":
            del eng.retry_at[bid]  # resumed or retired meanwhile
        elif now >= at:
            del eng.retry_at[bid]
            eng._emit(
                events.BRANCH_STATE,
                {"state": "running", "reason": "retrying after the provider outage"},
                branch=bid,
            )
