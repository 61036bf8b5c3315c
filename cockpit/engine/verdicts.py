"""Keep or discard: a verdict is recorded, committed to the candidate repository, and judged
against its branch's best; a branch that stops improving escalates (`plateau`).

The first passing candidate of a branch becomes its best; later ones must be significantly
faster (`beam.significantly_better`). A best-of-n step is decided once, when its last member's
verdict is in: the fastest passing member against the incumbent. The branch's head, best and
counters follow from the events recorded here (`state.fold`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from cockpit.agents.base import Proposal
from cockpit.engine.beam import next_family, plateaued, significantly_better
from cockpit.engine.state import BranchState
from cockpit.result_view import ResultView
from cockpit.store import events

if TYPE_CHECKING:
    from cockpit.engine.engine import Engine


def finish(
    eng: Engine,
    b: BranchState,
    cid: str,
    proposal: Proposal,
    parent_id: str | None,
    result: dict[str, Any],
    group: int | None = None,
) -> None:
    """Record a verdict. A single candidate is judged against the branch's best at once; the
    candidates of a best-of-n step when the last of them is in: the fastest passing one is
    judged, and kept as the branch head if it beats the incumbent."""
    g = eng.state.groups.get(group) if group is not None else None
    decide: list[tuple[str, dict[str, Any]]] | None = [(cid, result)]
    if g is not None:
        decide = None
        if not g.pending - {cid}:
            decide = [(m, eng.state.results[m]) for m in g.done] + [(cid, result)]
    winner, verdict = None, None
    if decide is not None:
        ok = [m for m in decide if ResultView.from_dict(m[1]).passing]
        decide = sorted(decide, key=lambda m: m[0])
        pick = (
            min(ok, key=lambda m: (ResultView.from_dict(m[1]).score_us, m[0])) if ok else decide[-1]
        )
        verdict = significantly_better(pick[1], b.best_result, ab=pick[1].get("ab"))
        winner = pick if verdict.better else None
    with eng._tx():
        eng._emit(events.EVALUATION_FINISHED, result, branch=b.id, candidate=cid)
        if winner is not None:
            extra = {"choices": [m[0] for m in decide]} if len(decide) > 1 else {}
            eng._emit(
                events.BEST_CHANGED,
                {
                    "candidate": winner[0],
                    "score_us": winner[1].get("score_us"),
                    "previous_us": (b.best_result or {}).get("score_us"),
                    "previous_candidate": b.best_id,
                    # a time the views must label: figures.tag reads it from this payload
                    "comparable": winner[1].get("comparable", True),
                    "why": verdict.reason,
                    **extra,
                },
                branch=b.id,
                candidate=winner[0],
            )
    sha = commit(
        eng, cid, b.id, proposal.source, result, parent_id, proposal.family, proposal.model
    )
    if decide is None:
        return  # more candidates of this step to come
    if winner is not None:
        wid = winner[0]
        wsha = sha if wid == cid else getattr(eng.record.candidate(wid), "commit_sha", None)
        if wsha:
            eng.repo.tag_best(b.id, wsha)
    elif plateaued(b.since_best, eng.cfg.plateau_window):
        plateau(eng, b, f"no significant improvement in {b.since_best} evaluations")


def commit(
    eng: Engine,
    cid: str,
    branch: str,
    source: str,
    result: dict[str, Any] | None,
    parent_id: str | None,
    family: str | None,
    model: str | None,
) -> str | None:
    """The candidate as a commit of its branch (its parent candidate's commit first), then
    `candidate_committed` with the sha."""
    from cockpit.store import format_commit_message

    parent_sha = None
    if parent_id:
        p = eng.record.candidate(parent_id)
        parent_sha = p.commit_sha if p else None
    msg = format_commit_message(
        cid, result, branch=branch, parent=parent_id, family=family, model=model
    )
    sha = eng.repo.commit_candidate(branch, cid, "kernel.py", source, msg, parent_sha=parent_sha)
    eng._emit(
        events.CANDIDATE_COMMITTED, {"commit_sha": sha}, branch=branch, candidate=cid, show=False
    )
    return sha


def plateau(eng: Engine, b: BranchState, reason: str) -> None:
    """A branch without a significant gain for `plateau_window` evaluations (or with nothing
    left to try) escalates: an LLM branch first gets the profile's advisor model, then (and a
    tuner branch at once) it switches to a family it has not tried, within `family_quota`; a
    branch with nothing left is retired with the reason."""
    eng._emit(
        events.PLATEAU_DETECTED,
        {
            "evaluations_since_best": b.since_best,
            "best_us": (b.best_result or {}).get("score_us"),
            "window": eng.cfg.plateau_window,
            "reason": reason,
        },
        branch=b.id,
    )
    advisor = getattr(eng.proposer, "advisor", None)
    if advisor is not None and "model" not in b.escalations_done:
        eng._emit(
            events.ESCALATED,
            {
                "mode": "model",
                "model": advisor.settings().model,
                "family": None,
                "instruction": "advisor model for the next proposal",
                "reason": reason,
            },
            branch=b.id,
        )
        return
    in_beam: dict[str, int] = {}
    for x in eng.branches.values():
        if x.state != "retired" and x.id != b.id:
            in_beam[x.family] = in_beam.get(x.family, 0) + 1
    fam = next_family(b.family, eng.families, in_beam, eng.cfg.family_quota, b.families_tried)
    if fam is None:
        eng._emit(
            events.BRANCH_STATE,
            {
                "state": "retired",
                "reason": f"plateau in {b.family} and no other family left to try",
            },
            branch=b.id,
        )
        return
    eng._emit(
        events.ESCALATED,
        {
            "mode": "family",
            "family": fam,
            "model": None,
            "instruction": f"switch from {b.family} to {fam}",
            "reason": reason,
        },
        branch=b.id,
    )
