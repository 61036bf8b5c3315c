"""Resume rebuilds the beam from the record and the repository, whatever instant the previous
engine died at. The engine runs in-process here, with an evaluation pool that answers at once
(canned results), so each dangerous instant is hit exactly: the death is an exception raised
from the step that would have come next."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import pytest
from engine_helpers import TOYTASK, git

from cockpit.agents.tuner import Tuner
from cockpit.engine.config import EngineConfig
from cockpit.engine.engine import Engine
from cockpit.store import SessionRecord, create_session
from cockpit.store import events as ev


class Killed(BaseException):
    """Stands for SIGKILL: nothing after the raising point runs (but `finally` blocks)."""


def canned(source: str) -> dict[str, Any]:
    """A passing result whose score follows the code: CHUNK=c takes 1000/c us, the others less."""
    m = re.search(r"^CHUNK = (\d+)$", source, re.MULTILINE)
    score = 1000.0 / int(m.group(1)) if m else (50.0 if "torch.add(x * 2, 1)" in source else 20.0)
    shape = {"weight": 1.0, "timing": {"median_us": score, "sem_pct": 0.5}}
    return {
        "status": "ok",
        "score_us": score,
        "geomean_us": score,
        "reasons": [],
        "shapes": [shape, shape],
    }


class InstantPool:
    """One slot; every evaluation is finished by the time `submit` returns (or never, `hang`)."""

    size = 1

    def __init__(self, hang: bool = False) -> None:
        self.hang = hang
        self.busy: Future | None = None

    def free_slot(self) -> int | None:
        return None if self.busy is not None and not self.busy.done() else 0

    def submit(
        self, slot: int, task_root: str, name: str, source: str, mode: str, incumbent=None
    ) -> Future:
        fut: Future = Future()
        if not self.hang:
            fut.set_result(canned(source))
        self.busy = fut
        return fut

    def shutdown(self) -> None:
        pass


@pytest.fixture
def session(tmp_path: Path) -> Callable[..., Path]:
    def make(budget: int = 8, beam: int = 3, plateau: int = 6) -> Path:
        cfg = EngineConfig(
            task=str(TOYTASK),
            device="cpu",
            beam=beam,
            budget=budget,
            mode="quick",
            plateau_window=plateau,
        )
        return create_session(
            "s",
            task="toyscale",
            device="cpu",
            sessions_dir=tmp_path / "sessions",
            config=cfg.to_dict(),
        )

    return make


def engine(folder: Path, pool: Any = None, proposer: Tuner | None = None) -> Engine:
    with SessionRecord.open_readonly(folder) as rec:
        cfg = EngineConfig.from_dict(rec.meta()["config"])
    return Engine(folder, cfg, proposer or Tuner(), pool=pool or InstantPool())


def die_on(obj: Any, name: str, when: Callable[..., bool]) -> None:
    """Make `obj.name` raise Killed on the call for which `when(call_number, args, kwargs)` holds."""
    real = getattr(obj, name)
    calls = [0]

    def wrapper(*args: Any, **kw: Any) -> Any:
        calls[0] += 1
        if when(calls[0], args, kw):
            raise Killed(name)
        return real(*args, **kw)

    setattr(obj, name, wrapper)


@pytest.fixture
def resumed() -> Iterator[Callable[[Path], Engine]]:
    """Start a fresh engine on the folder (what `cockpit resume` does before its first step)."""
    opened: list[Engine] = []

    def start(folder: Path, pool: Any = None, proposer: Tuner | None = None) -> Engine:
        e = engine(folder, pool, proposer)
        opened.append(e)
        e.start()
        return e

    yield start
    for e in opened:
        if e.lock.held:
            e.close()


def best_tags_match(folder: Path) -> None:
    with SessionRecord.open_readonly(folder) as rec:
        shas = {c.id: c.commit_sha for c in rec.candidates()}
        for b in rec.branches():
            if b.best_candidate:
                tag = git(folder / "repo", "rev-parse", f"refs/tags/best/{b.id}").stdout.strip()
                assert tag == shas[b.best_candidate], b.id


def test_a_run_on_the_instant_pool_reaches_its_budget(session) -> None:
    folder = session(budget=8)
    assert engine(folder).run() == "done"
    with SessionRecord.open_readonly(folder) as rec:
        counted = [
            c for c in rec.candidates() if c.status not in ("duplicate", "proposed", "evaluating")
        ]
        assert len(counted) == 8
        assert all(c.commit_sha for c in rec.candidates())
    best_tags_match(folder)


def test_resume_commits_a_verdict_whose_commit_was_killed(session, resumed) -> None:
    folder = session(budget=6)
    e = engine(folder)
    die_on(e.repo, "commit_candidate", lambda n, args, kw: n == 3)
    with pytest.raises(Killed):
        e.run()
    with SessionRecord.open_readonly(folder) as rec:
        orphan = [c for c in rec.candidates() if c.status == "ok" and not c.commit_sha]
    assert len(orphan) == 1
    resumed(folder).close()
    with SessionRecord.open_readonly(folder) as rec:
        c = rec.candidate(orphan[0].id)
    assert c.commit_sha
    assert git(folder / "repo", "log", "-1", "--format=%s", c.commit_sha).stdout.startswith(
        f"{c.id} ok"
    )


def test_resume_records_a_commit_made_just_before_the_kill_without_committing_twice(
    session, resumed
) -> None:
    """Killed after the branch ref moved, before the sha was recorded, for a candidate without
    a parent (a seed after a family switch) on a branch that already has commits."""
    folder = session(budget=8)
    e = engine(folder)

    def when(n: int, args: tuple, kw: dict) -> bool:
        if args[0] != ev.CANDIDATE_COMMITTED:
            return False
        c = e.record.candidate(kw["candidate"])
        return c.parent is None and len(e.repo.log(kw["branch"])) > 1

    die_on(e.record, "append", when)
    with pytest.raises(Killed):
        e.run()
    resumed(folder).close()
    log = git(folder / "repo", "log", "--all", "--format=%H %s").stdout.splitlines()
    by_id = {}
    for line in log:
        sha, cid = line.split()[:2]
        assert cid not in by_id, f"{cid} committed twice"
        by_id[cid] = sha
    with SessionRecord.open_readonly(folder) as rec:
        for c in rec.candidates():
            if c.status not in ("proposed", "evaluating"):
                assert c.commit_sha == by_id[c.id], c.id


def test_resume_moves_a_best_tag_whose_move_was_killed(session, resumed) -> None:
    folder = session(budget=8)
    e = engine(folder)
    die_on(e.repo, "tag_best", lambda n, args, kw: n == 4)
    with pytest.raises(Killed):
        e.run()
    resumed(folder).close()
    best_tags_match(folder)


def test_resume_after_a_kill_right_after_an_escalation_starts_from_the_new_familys_seed(
    session, resumed
) -> None:
    folder = session(budget=20, beam=3)
    e = engine(folder)
    die_on(
        e.record,
        "append",
        lambda n, args, kw: (
            bool(args)
            and args[0] == ev.CANDIDATE_PROPOSED
            and any(x.kind == ev.ESCALATED for x in e.record.events(kinds=[ev.ESCALATED]))
        ),
    )
    with pytest.raises(Killed):
        e.run()
    with SessionRecord.open_readonly(folder) as rec:
        escalated = rec.events(kinds=[ev.ESCALATED])[0]
    bid, family = escalated.branch, escalated.payload["family"]
    e2 = resumed(folder)
    b = e2.branches[bid]
    seed = next(s for s in e2.seeds if s.family == family)
    assert b.family == family
    assert b.pending_seed and b.head_source == seed.source
    assert b.families_tried >= {family, escalated.payload["instruction"].split()[2]}


def test_resume_keeps_the_head_of_a_forked_branch_not_yet_evaluated(session, resumed) -> None:
    folder = session(budget=6)
    engine(folder).run()
    e2 = resumed(folder)
    e2.record.post_command("fork", {"candidate": "c0003", "family": "chunked"}, source="test")
    e2.apply_commands()
    forked = next(
        b for b in e2.branches.values() if b.head_id == "c0003" and b.id not in ("b1", "b2", "b3")
    )
    e2.close()  # dies before the forked branch is evaluated
    e3 = resumed(folder)
    b = e3.branches[forked.id]
    assert (b.head_id, b.pending_seed) == ("c0003", False)
    assert b.head_source == forked.head_source


def test_resume_of_an_engine_killed_while_paused_stays_paused(session, resumed) -> None:
    folder = session(budget=6)
    e = resumed(folder)
    e.record.post_command("pause", {}, source="test")
    e.apply_commands()
    assert e.paused
    e.close()  # killed while paused
    e2 = resumed(folder)
    assert e2.paused
    with SessionRecord.open_readonly(folder) as rec:
        assert rec.meta()["state"] == "paused"


def test_a_lost_evaluation_is_reported_once_however_often_the_session_is_resumed(
    session, resumed
) -> None:
    folder = session(budget=6)
    e = resumed(folder, InstantPool(hang=True))
    assert (
        e.tick(wait_s=0.01) is None
    )  # the seeds are recorded, one is submitted and never finishes
    lost = next(iter(e.inflight.values()))[0]
    waiting = [r.cid for r in e.ready]
    assert waiting  # the other seeds wait for the (one) worker
    e.close()
    for _ in range(3):
        resumed(folder).close()
    with SessionRecord.open_readonly(folder) as rec:
        errors = [x for x in rec.events(kinds=[ev.ERROR]) if x.candidate == lost]
        assert len(errors) == 1
        assert "evaluation lost" in errors[0].payload["message"]
        assert not [x for x in rec.events(kinds=[ev.ERROR]) if x.candidate in waiting]


def test_candidates_waiting_for_a_worker_are_evaluated_on_resume_not_lost(session, resumed) -> None:
    folder = session(budget=6)
    e = resumed(folder, InstantPool(hang=True))
    e.tick(wait_s=0.01)
    waiting = [r.cid for r in e.ready]
    assert waiting
    e.close()  # killed while they waited
    e2 = resumed(folder)
    assert [r.cid for r in e2.ready] == waiting
    e2.close()
    assert engine(folder).run() == "done"
    with SessionRecord.open_readonly(folder) as rec:
        for cid in waiting:
            c = rec.candidate(cid)
            assert c.status == "ok" and c.commit_sha, cid
        started = [x.candidate for x in rec.events(kinds=[ev.EVALUATION_STARTED])]
        assert all(started.count(cid) == 1 for cid in waiting)


def test_an_engine_failing_before_its_loop_raises_its_own_error_and_releases_the_lock(
    session,
) -> None:
    folder = session()
    e = engine(folder)
    die_on(e.record, "append", lambda n, args, kw: args[0] == ev.SESSION_STARTED)
    with pytest.raises(Killed):
        e.run()
    assert not e.lock.held
    engine(folder).close()  # a new engine may take the session


def test_the_duplicate_hash_is_computed_once_per_proposal(session, monkeypatch) -> None:
    """The tuner hashes its child to skip tried ones and hands the hash along; the engine hashes
    only what comes without one (the seeds)."""
    import cockpit.engine.engine as engine_module

    real, calls = engine_module.source_hash, []
    monkeypatch.setattr(engine_module, "source_hash", lambda src: calls.append(src) or real(src))
    folder = session(budget=8)
    assert engine(folder).run() == "done"
    with SessionRecord.open_readonly(folder) as rec:
        proposed = rec.events(kinds=[ev.CANDIDATE_PROPOSED])
    seeds = [e.payload["source"] for e in proposed if e.payload["note"] == "seed"]
    assert len(proposed) > len(seeds) > 0
    assert calls == seeds
    for e in proposed:
        assert e.payload["source_hash"] == real(e.payload["source"])


class Scripted(Tuner):
    """The tuner, except that a proposal for a branch in `hang` blocks until `release` is set
    (an LLM call the engine dies in) and one for a branch in `fail` fails (an outage)."""

    def __init__(self, hang: tuple[str, ...] = (), fail: tuple[str, ...] = ()) -> None:
        import threading

        self.hang, self.fail = hang, fail
        self.release = threading.Event()
        self.seen: list[tuple[str, list[str]]] = []

    def propose(self, request):
        from cockpit.agents.base import ProposalError

        self.seen.append((request.branch, list(request.queued)))
        if request.branch in self.fail:  # an outage: the engine pauses the branch
            exc = ProposalError("provider down")
            exc.pause = "branch"
            raise exc
        if request.branch in self.hang:
            self.release.wait(30)
        return super().propose(request)


def queue(e: Engine, branch: str, text: str) -> None:
    e.record.post_command(
        "redirect", {"branch": branch, "mode": "queue", "instruction": text}, source="test"
    )
    e.apply_commands()


def ticks_until(e: Engine, done: Callable[[], bool], n: int = 200) -> None:
    for _ in range(n):
        if done():
            return
        e.tick(wait_s=0.01)
    raise AssertionError("condition not reached")


def test_queued_instructions_not_yet_used_survive_a_resume(session, resumed) -> None:
    folder = session(budget=20)
    e = resumed(folder, proposer=Scripted())
    queue(e, "b2", "try CHUNK=8 once")
    queue(e, "b2", "then CHUNK=2")
    assert e.branches["b2"].queued == ["try CHUNK=8 once", "then CHUNK=2"]
    e.close()  # killed before any proposal used them
    assert resumed(folder).branches["b2"].queued == ["try CHUNK=8 once", "then CHUNK=2"]


def test_queued_instructions_a_proposal_used_are_not_given_again_after_a_resume(
    session, resumed
) -> None:
    folder = session(budget=20)
    proposer = Scripted()
    e = resumed(folder, proposer=proposer)
    queue(e, "b1", "try CHUNK=8 once")
    ticks_until(
        e, lambda: ("b1", ["try CHUNK=8 once"]) in proposer.seen and "b1" not in e.proposing
    )
    assert e.branches["b1"].queued == []
    e.close()
    assert resumed(folder).branches["b1"].queued == []


def test_queued_instructions_of_a_call_the_engine_died_in_come_back_on_resume(
    session, resumed
) -> None:
    folder = session(budget=20)
    proposer = Scripted(hang=("b1",))
    e = resumed(folder, proposer=proposer)
    queue(e, "b1", "try CHUNK=8 once")
    ticks_until(e, lambda: "b1" in e.proposing)  # the call carrying it is in flight
    assert e.branches["b1"].queued == []
    e.close()  # dies during the call
    proposer.release.set()
    e2 = resumed(folder)
    assert e2.branches["b1"].queued == ["try CHUNK=8 once"]
    with SessionRecord.open_readonly(folder) as rec:  # the dead call was closed as cancelled
        assert rec.events(kinds=[ev.PROPOSAL_CANCELLED])


def test_a_failed_proposal_gives_its_queued_instructions_back_live_and_after_a_resume(
    session, resumed
) -> None:
    folder = session(budget=20)
    proposer = Scripted(fail=("b1",))
    e = resumed(folder, proposer=proposer)
    queue(e, "b1", "try CHUNK=8 once")
    ticks_until(e, lambda: e.branches["b1"].state == "paused")  # the call failed: outage
    assert proposer.seen.count(("b1", ["try CHUNK=8 once"])) == 1
    assert e.branches["b1"].queued == ["try CHUNK=8 once"]  # the next request carries it again
    e.close()
    assert resumed(folder).branches["b1"].queued == ["try CHUNK=8 once"]


def _attempts(e: Engine) -> dict[str, list[tuple]]:
    return {
        bid: [(a.candidate, a.status, a.score_us, a.summary) for a in b.history]
        for bid, b in e.branches.items()
    }


def test_resume_restores_each_branchs_history_of_attempts(session, resumed) -> None:
    """The proposer is shown a branch's past attempts: after a resume it sees the same list as
    the engine that died, not an empty one."""
    folder = session(budget=10)
    e = engine(folder)
    die_on(
        e.record,
        "append",
        lambda n, args, kw: args[0] == ev.PROPOSAL_REQUESTED and e.evaluations >= 6,
    )
    with pytest.raises(Killed):
        e.run()
    before = _attempts(e)
    assert sum(len(h) for h in before.values()) >= 6
    after = _attempts(resumed(folder))
    assert after == before


class _Advisor:
    def settings(self) -> Any:
        return type("S", (), {"model": "advisor-model"})()


class AdvisedTuner(Tuner):
    """The tuner with an advisor, as an LLM proposer has: a plateau escalates to it first."""

    advisor = _Advisor()


def test_resume_does_not_escalate_a_branch_to_the_advisor_twice(session, resumed) -> None:
    folder = session(budget=14, beam=1, plateau=2)
    e = engine(folder, pool=InstantPool(), proposer=AdvisedTuner())
    die_on(
        e.record,
        "append",
        lambda n, args, kw: args[0] == ev.PROPOSAL_REQUESTED
        and bool(e.record.events(kinds=[ev.ESCALATED])),
    )
    with pytest.raises(Killed):
        e.run()
    r = resumed(folder, proposer=AdvisedTuner())
    assert all("model" in b.escalations_done for b in r.branches.values() if b.id == "b1")
    r.run()
    with SessionRecord.open_readonly(folder) as rec:
        models = [x for x in rec.events(kinds=[ev.ESCALATED]) if x.payload.get("mode") == "model"]
    assert len({x.branch for x in models}) == len(models), "a branch went to the advisor twice"
