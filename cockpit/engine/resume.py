"""What a resumed engine does besides folding the record (`state.fold_events`): repair what a
killed engine left half-done, and close what it left open. Each repair is an event, so the
state after it is again the fold of the record.

- a verdict recorded without its commit is committed now (idempotent: a commit made just
  before the kill is recognised by the branch's tip), and a best tag whose move was killed
  is moved;
- the evaluation that was in flight is lost (`error`, reported once), not retried; candidates
  that waited for a worker wait again (`EngineState.waiting`);
- a proposal request left without an outcome (the engine died during the call) is closed as
  cancelled, which gives its branch back the instructions and escalation it carried;
- a branch the engine paused for unusable replies runs again: a resume is the decision to
  give it more calls; one paused by a provider outage retries after the cool-down, counted
  from the resume.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from cockpit.engine import verdicts
from cockpit.store import events

if TYPE_CHECKING:
    from cockpit.engine.engine import Engine

PENDING = (None, "proposed", "evaluating")


def repair(eng: Engine) -> None:
    st = eng.state
    for c in eng.record.candidates():
        # a candidate with a verdict but no commit: the engine died between the two writes, or
        # after moving the branch ref and before recording the sha (then the tip is its commit;
        # commit_candidate does not recognise that for a candidate without a parent)
        if c.status in PENDING or c.commit_sha:
            continue
        tip = eng.repo.log(c.branch, max_count=1) if c.branch else []
        if tip and tip[0].candidate == c.id:
            eng._emit(
                events.CANDIDATE_COMMITTED,
                {"commit_sha": tip[0].sha},
                branch=c.branch,
                candidate=c.id,
                show=False,
            )
        else:
            source = st.sources.get(c.id, "")
            verdicts.commit(
                eng, c.id, c.branch, source, st.results.get(c.id), c.parent, c.family, c.model
            )
    for w in [w for w in st.waiting.values() if w.evaluating]:
        eng._emit(
            events.ERROR,
            {
                "message": f"{w.cid}: evaluation lost when the engine stopped; not retried",
                "where": "resume",
            },
            branch=w.branch,
            candidate=w.cid,
        )
    for b in eng.record.branches():
        # the engine may have died between the best's commit and moving its tag
        best = eng.record.candidate(b.best_candidate) if b.best_candidate else None
        if best is not None and best.commit_sha and eng.repo.best(b.id) != best.commit_sha:
            eng.repo.tag_best(b.id, best.commit_sha)
    for rid, req in list(st.requests.items()):
        eng._emit(
            events.PROPOSAL_CANCELLED,
            {"reason": "the engine stopped during the call", "request": rid, "model": None},
            branch=req.branch,
        )
    for b in list(st.branches.values()):
        if b.state == "paused" and b.outage:
            eng.retry_at[b.id] = time.monotonic() + eng.cfg.outage_cooldown_s
        if b.state == "plateau" or (b.state == "paused" and b.stalled):
            eng._emit(
                events.BRANCH_STATE,
                {
                    "state": "running",
                    "cause": "resume",
                    "reason": "resumed: the branch gets more calls",
                },
                branch=b.id,
            )
