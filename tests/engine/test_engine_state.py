"""One engine state: the live engine's state is the fold of the events it recorded, and a
resumed engine, folding the same record, knows what the stopped one knew.

A real engine runs the toy task in-process (real SQLite record, real git repository, the
offline tuner with an advisor, commands posted to the record's queue, an evaluation pool that
answers at once and loses one worker). It is stopped between two turns of its loop right after
the n-th event of each kind; then the state folded from the record must equal the live state
captured at the stop, and the state of a new engine resumed on the folder must equal it too,
except for what a resume repairs (documented in cockpit/engine/resume.py).
"""

# ruff: noqa: F811 - `resumed` is the fixture test_engine_restore defines, taken as an argument
from __future__ import annotations

import copy
from concurrent.futures import Future
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any

import pytest
from engine_helpers import TOYTASK
from test_engine_restore import AdvisedTuner, InstantPool, engine, resumed  # noqa: F401

from cockpit.agents.base import ProposalError
from cockpit.engine.config import EngineConfig
from cockpit.engine.seeds import load_seeds
from cockpit.engine.state import EngineState, Seed, fold, fold_events, snapshot
from cockpit.store import Event, SessionRecord
from cockpit.store import events as ev


class LosesAWorker(InstantPool):
    """Answers at once, except that the worker evaluating `c0004` dies the first time."""

    def __init__(self) -> None:
        super().__init__()
        self.died = False

    def submit(self, slot, task_root, name, source, mode, incumbent=None) -> Future:
        if name == "c0004.py" and not self.died:
            self.died = True
            fut: Future = Future()
            fut.set_exception(BrokenProcessPool("worker killed"))
            self.busy = fut
            return fut
        return super().submit(slot, task_root, name, source, mode, incumbent)

    def slot_of(self, fut: Future) -> int:
        return 0

    def how_it_died(self, slot: int) -> str:
        return "killed by SIGKILL"

    def restart(self, slot: int) -> None:
        pass


class Scenario(AdvisedTuner):
    """The tuner with an advisor; b3's first proposal has no usable code and b2's second one
    meets a provider outage."""

    def __init__(self) -> None:
        self.calls: dict[str, int] = {}

    def propose(self, request):
        n = self.calls[request.branch] = self.calls.get(request.branch, 0) + 1
        if request.branch == "b3" and n == 1:
            raise ProposalError("no code in the reply")
        if request.branch == "b2" and n == 2:
            exc = ProposalError("provider down")
            exc.pause = "branch"
            raise exc
        return super().propose(request)


# commands posted before the given turn of the loop
COMMANDS: dict[int, list[tuple[str, dict[str, Any]]]] = {
    0: [
        ("redirect", {"branch": "b1", "mode": "queue", "instruction": "try CHUNK=8 once"}),
        ("redirect", {"branch": "b1", "mode": "steer", "instruction": "keep it short"}),
        ("set_model", {"branch": "b3", "model": "provider/model-x"}),
        ("redirect", {"branch": "b2", "mode": "steer", "instruction": ""}),  # refused
    ],
    2: [("set_budget", {"budget": 18})],
    4: [
        ("fork", {"candidate": "c0002", "family": "chunked", "instruction": "from c0002"}),
        ("pause", {"branch": "b1"}),
    ],
    6: [("resume", {"branch": "b1"}), ("pause", {})],
    7: [
        ("resume", {}),
        ("resume", {"branch": "b2"}),
        ("redirect", {"branch": "b1", "mode": "queue", "instruction": "then CHUNK=2"}),
        ("set_model", {"model": "provider/model-y"}),
    ],
    12: [("retire", {"branch": "b4"})],
}


def make_session(tmp_path: Path) -> Path:
    from cockpit.store import create_session

    cfg = EngineConfig(
        task=str(TOYTASK), device="cpu", beam=3, budget=14, mode="quick", plateau_window=2
    )
    return create_session(
        "s", task="toyscale", device="cpu", sessions_dir=tmp_path / "sessions", config=cfg.to_dict()
    )


def drive(folder: Path, stop_at: tuple[str, int] | None = None, stop_when=None):
    """Run the scenario; stop between two turns once the n-th event of a kind is recorded (or
    one for which `stop_when(kind, payload)` holds). Returns the engine (closed) and the kinds
    it recorded, in order."""
    e = engine(folder, LosesAWorker(), Scenario())
    seen: list[str] = []
    real = e.record.append

    def append(kind, payload=None, *args, **kw):
        eid = real(kind, payload, *args, **kw)
        seen.append(kind)
        if stop_when is not None and stop_when(kind, payload or {}):
            seen.append("stop")
        return eid

    e.record.append = append
    e.start()
    try:
        for turn in range(300):
            if "stop" in seen or (stop_at and seen.count(stop_at[0]) >= stop_at[1]):
                break
            for kind, args in COMMANDS.get(turn, []):
                e.record.post_command(kind, args, source="test")
            if e.tick(wait_s=0.01) is not None:
                break
        else:
            raise AssertionError("the scenario did not end")
    finally:
        for job in e.proposing.values():
            job.cancel.set()
        e.close()
    return e, seen


def folded(folder: Path) -> dict[str, Any]:
    with SessionRecord.open_readonly(folder) as rec:
        cfg = EngineConfig.from_dict(rec.meta()["config"])
        state = EngineState(load_seeds(TOYTASK), model=cfg.model, budget=cfg.budget)
        return snapshot(fold_events(state, rec.events()))


def after_resume(live: dict[str, Any]) -> dict[str, Any]:
    """What a resume makes of a stopped engine's state (cockpit/engine/resume.py): requests
    without an outcome are closed (their instructions and escalation go back to the branch),
    the evaluation in flight is lost, a branch paused for unusable replies runs again."""
    want = copy.deepcopy(live)
    requests, want["requests"] = want["requests"], {}
    for bid, queued, escalation in requests.values():
        b = want["branches"][bid]
        b["queued"] = queued + b["queued"]
        b["escalation"] = b["escalation"] or escalation
        b["waiting"] = False
    want["waiting"] = [w for w in want["waiting"] if not w[2]]
    for b in want["branches"].values():
        if b["state"] == "paused" and b["stalled"]:
            b.update(state="running", stalled=False, unusable=0)
    return want


@pytest.fixture(scope="module")
def full_run(tmp_path_factory) -> list[str]:
    folder = make_session(tmp_path_factory.mktemp("full"))
    e, seen = drive(folder)
    assert e.snapshot() == folded(folder)
    return seen


def test_the_scenario_records_every_kind_the_engine_folds(full_run) -> None:
    kinds = set(full_run)
    assert kinds >= {
        ev.BRANCH_CREATED,
        ev.BRANCH_FORKED,
        ev.BRANCH_STATE,
        ev.BUDGET_CHANGED,
        ev.MODEL_CHANGED,
        ev.SESSION_STATE,
        ev.PROPOSAL_REQUESTED,
        ev.PROPOSAL_FAILED,
        ev.PROPOSAL_CANCELLED,
        ev.CANDIDATE_PROPOSED,
        ev.EVALUATION_STARTED,
        ev.EVALUATION_FINISHED,
        ev.BEST_CHANGED,
        ev.CANDIDATE_COMMITTED,
        ev.PLATEAU_DETECTED,
        ev.ESCALATED,
        ev.COMMAND_RECEIVED,
        ev.COMMAND_ACKED,
        ev.NOTE,
    }, sorted(kinds)


STOPS = [
    (kind, n)
    for kind, ns in {
        ev.BRANCH_CREATED: (2,),
        ev.BRANCH_FORKED: (1,),
        ev.BRANCH_STATE: (1, 2, 3),
        ev.BUDGET_CHANGED: (2,),
        ev.MODEL_CHANGED: (1, 2),
        ev.SESSION_STATE: (1, 2),
        ev.PROPOSAL_REQUESTED: (1, 3, 6),
        ev.PROPOSAL_FAILED: (1, 2),
        ev.PROPOSAL_CANCELLED: (1,),
        ev.CANDIDATE_PROPOSED: (1, 4, 9),
        ev.EVALUATION_STARTED: (2, 5),
        ev.EVALUATION_FINISHED: (3, 7, 12),
        ev.BEST_CHANGED: (1, 3),
        ev.CANDIDATE_COMMITTED: (2, 8),
        ev.PLATEAU_DETECTED: (1, 2),
        ev.ESCALATED: (1, 2, 3),
        ev.COMMAND_RECEIVED: (1, 5, 9),
        ev.COMMAND_ACKED: (2, 6, 11),
        ev.NOTE: (1,),
    }.items()
    for n in ns
]


@pytest.mark.parametrize(("kind", "n"), STOPS, ids=[f"{k}-{n}" for k, n in STOPS])
def test_resume_after_each_kind_of_event_restores_the_state_of_the_stopped_engine(
    tmp_path, resumed, full_run, kind, n
) -> None:
    if full_run.count(kind) < n:
        pytest.skip(f"the scenario records {full_run.count(kind)} {kind}")
    folder = make_session(tmp_path)
    e, seen = drive(folder, (kind, n))
    assert seen.count(kind) >= n
    live = e.snapshot()
    assert folded(folder) == live  # the live state is the fold of what it recorded
    r = resumed(folder, LosesAWorker(), Scenario())
    assert r.snapshot() == after_resume(live)
    assert folded(folder) == r.snapshot()  # and so is the resumed one, repairs included


def test_a_resumed_run_retries_an_outage_and_goes_on_to_its_end(tmp_path, resumed) -> None:
    """Stopped with b2 paused by the provider outage: the resumed engine retries it after the
    cool-down (here: a person resumes it at once) and the run ends as the scenario does."""
    folder = make_session(tmp_path)
    drive(folder, stop_when=lambda kind, p: p.get("cause") == "outage")
    r = resumed(folder, LosesAWorker(), AdvisedTuner())  # the provider is back
    assert (r.branches["b2"].state, r.branches["b2"].outage) == ("paused", True)
    assert "b2" in r.retry_at
    for b in r.branches.values():
        if b.state == "paused":  # b2, and b1 if the scenario's pause was its last word on it
            r.record.post_command("resume", {"branch": b.id}, source="test")
    for _ in range(500):
        if (final := r.tick(wait_s=0.01)) is not None:
            break
    assert final == "done"
    assert r.evaluations == r.budget or all(b.state == "retired" for b in r.branches.values())
    assert r.snapshot() == folded(folder)
    with SessionRecord.open_readonly(folder) as rec:
        judged = [c for c in rec.candidates() if c.status not in ("proposed", "evaluating")]
        assert len([c for c in judged if c.status != "duplicate"]) == r.evaluations
        assert all(c.commit_sha for c in judged)


# --- the reducer, one event kind at a time ------------------------------------------------------

SEEDS = [
    Seed("a.py", "alpha", "A = 1\n"),
    Seed("b.py", "beta", "B = 1\n"),
]


class Events:
    """Events with increasing ids, folded into a fresh state."""

    def __init__(self) -> None:
        self.state = EngineState(list(SEEDS), model="m0", budget=10)
        self.next_id = 0

    def __call__(self, kind: str, payload=None, branch=None, candidate=None) -> int:
        self.next_id += 1
        fold(self.state, Event(self.next_id, 0.0, kind, branch, candidate, dict(payload or {})))
        return self.next_id

    def branch(self, bid: str = "b1", seed: str = "a.py", family: str = "alpha") -> None:
        self(ev.BRANCH_CREATED, {"family": family, "model": "m0", "seed": seed}, branch=bid)

    def proposed(self, cid: str, bid: str = "b1", source: str = "X = 1\n", **extra) -> None:
        payload = {"parent": None, "family": "alpha", "source_hash": f"h-{source}", "note": ""}
        payload.update({"source": source, "request": None, **extra})
        self(ev.CANDIDATE_PROPOSED, payload, branch=bid, candidate=cid)

    def finished(self, cid: str, bid: str = "b1", status: str = "ok", score: float = 10.0):
        result = {"status": status, "score_us": score, "reasons": [{"message": "why " + cid}]}
        self(ev.EVALUATION_FINISHED, result, branch=bid, candidate=cid)


@pytest.fixture
def rec() -> Events:
    return Events()


def test_fold_branch_created_starts_from_the_seed_and_a_second_branch_from_its_child(rec) -> None:
    rec.branch("b1")
    rec.branch("b2")
    b1, b2 = rec.state.branches["b1"], rec.state.branches["b2"]
    assert (b1.head_source, b1.pending_seed, b1.families_tried) == ("A = 1\n", True, {"alpha"})
    assert (b2.head_source, b2.pending_seed, b2.model) == ("A = 1\n", False, "m0")


def test_fold_candidate_proposed_waits_for_a_worker_and_marks_the_seed_done(rec) -> None:
    rec.branch()
    rec.proposed("c1", note="seed", source="A = 1\n")
    b = rec.state.branches["b1"]
    assert not b.pending_seed
    assert list(rec.state.waiting) == ["c1"]
    assert rec.state.seen_hashes == {"h-A = 1\n": "c1"}
    rec.proposed("c2", source="A = 1\n", duplicate_of="c1")
    assert rec.state.seen_hashes == {"h-A = 1\n": "c1"}  # the first one keeps the hash
    assert b.unusable == 1  # a step of duplicates only is an unusable reply


def test_fold_evaluation_started_and_finished(rec) -> None:
    rec.branch()
    rec.proposed("c1")
    rec(ev.EVALUATION_STARTED, {"worker": 0}, branch="b1", candidate="c1")
    assert rec.state.waiting["c1"].evaluating
    rec.finished("c1", status="wrong", score=None)
    b = rec.state.branches["b1"]
    assert "c1" not in rec.state.waiting
    assert rec.state.evaluations == 1
    assert [(a.candidate, a.status, a.summary) for a in b.history] == [("c1", "wrong", "why c1")]
    assert (b.head_id, b.since_best, b.best_id) == ("c1", 1, None)
    rec.proposed("c2", source="Y = 2\n")
    rec.finished("c2", status="duplicate")
    assert rec.state.evaluations == 1  # a duplicate is not an evaluation
    assert b.since_best == 2


def test_fold_best_changed_moves_head_and_best(rec) -> None:
    rec.branch()
    rec.proposed("c1", source="Z = 3\n")
    rec.finished("c1", score=7.0)
    rec(ev.BEST_CHANGED, {"candidate": "c1", "score_us": 7.0}, branch="b1", candidate="c1")
    b = rec.state.branches["b1"]
    assert (b.best_id, b.best_result["score_us"], b.head_source, b.since_best) == (
        "c1",
        7.0,
        "Z = 3\n",
        0,
    )


def test_fold_best_of_n_is_decided_when_its_last_member_is_in(rec) -> None:
    rec.branch()
    for k, cid in enumerate(("c1", "c2"), start=1):
        rec.proposed(cid, source=f"V = {k}\n", group=5, choice=k, choices=2)
    rec.finished("c1")
    b = rec.state.branches["b1"]
    assert (b.since_best, rec.state.groups[5].pending) == (0, {"c2"})
    rec.finished("c2")
    assert b.since_best == 2 and 5 not in rec.state.groups


def test_fold_requests_carry_and_give_back_queued_instructions_and_escalation(rec) -> None:
    rec.branch()
    b = rec.state.branches["b1"]
    b.queued.append("once")
    b.escalation = "model"
    r1 = rec(ev.PROPOSAL_REQUESTED, {"parent": None}, branch="b1")
    assert (b.queued, b.escalation) == ([], None)
    rec(ev.PROPOSAL_CANCELLED, {"request": r1}, branch="b1")
    assert (b.queued, b.escalation) == (["once"], "model")
    r2 = rec(ev.PROPOSAL_REQUESTED, {"parent": None}, branch="b1")
    rec(ev.PROPOSAL_FAILED, {"request": r2, "reason": "x", "unusable": True}, branch="b1")
    assert (b.queued, b.escalation, b.unusable) == (["once"], None, 1)  # a failure keeps none
    r3 = rec(ev.PROPOSAL_REQUESTED, {"parent": None}, branch="b1")
    rec.proposed("c1", request=r3)
    assert (b.queued, rec.state.requests, b.unusable) == ([], {}, 0)


def test_fold_commands_redirect_on_ack_only(rec) -> None:
    rec.branch()
    args = {"branch": "b1", "mode": "queue", "instruction": "  try it  "}
    rec(ev.COMMAND_RECEIVED, {"command_id": 1, "kind": "redirect", "args": args})
    assert rec.state.branches["b1"].queued == []
    rec(ev.COMMAND_ACKED, {"command_id": 1, "ok": True})
    steer = {"branch": "b1", "mode": "steer", "instruction": "keep"}
    rec(ev.COMMAND_RECEIVED, {"command_id": 2, "kind": "redirect", "args": steer})
    rec(ev.COMMAND_ACKED, {"command_id": 2, "ok": False})
    b = rec.state.branches["b1"]
    assert (b.queued, b.steer, rec.state.commands) == (["try it"], [], {})


def test_fold_model_changed_for_a_branch_or_all_live_ones(rec) -> None:
    rec.branch("b1")
    rec.branch("b2", seed="b.py", family="beta")
    rec(ev.BRANCH_STATE, {"state": "retired"}, branch="b2")
    rec(ev.MODEL_CHANGED, {"model": "m1"}, branch="b1")
    assert (rec.state.branches["b1"].model, rec.state.model) == ("m1", "m0")
    rec(ev.MODEL_CHANGED, {"model": "m2"})
    assert rec.state.model == "m2"
    assert [b.model for b in rec.state.branches.values()] == ["m2", "m0"]


def test_fold_budget_and_session_pauses(rec) -> None:
    rec(ev.BUDGET_CHANGED, {"budget": 30, "previous": 10})
    assert rec.state.budget == 30
    rec(ev.SESSION_STATE, {"state": "paused", "cause": "budget_cap"})
    assert (rec.state.paused, rec.state.paused_by_cap) == (True, True)
    rec(ev.SESSION_STATE, {"state": "running"})
    assert (rec.state.paused, rec.state.paused_by_cap) == (False, False)
    rec(ev.SESSION_STATE, {"state": "paused", "reason": "by command"})
    assert (rec.state.paused, rec.state.paused_by_cap) == (True, False)
    rec(ev.SESSION_STATE, {"state": "stopped"})  # a new run starts unpaused
    assert not rec.state.paused


def test_fold_branch_state_causes(rec) -> None:
    rec.branch()
    b = rec.state.branches["b1"]
    b.unusable = 5
    rec(ev.BRANCH_STATE, {"state": "paused", "cause": "unusable"}, branch="b1")
    assert (b.state, b.stalled) == ("paused", True)
    rec(ev.BRANCH_STATE, {"state": "running", "cause": "resume"}, branch="b1")
    assert (b.state, b.stalled, b.unusable) == ("running", False, 0)
    rec(ev.BRANCH_STATE, {"state": "running", "cause": "provider_wait"}, branch="b1")
    assert b.waiting
    rec(ev.BRANCH_STATE, {"state": "paused", "cause": "outage"}, branch="b1")
    assert (b.waiting, b.outage) == (False, True)


def test_fold_escalations_model_once_then_family(rec) -> None:
    rec.branch()
    b = rec.state.branches["b1"]
    b.since_best = 4
    rec(ev.ESCALATED, {"mode": "model", "model": "adv"}, branch="b1")
    assert (b.escalation, b.escalations_done, b.since_best) == ("model", {"model"}, 0)
    rec(ev.ESCALATED, {"mode": "family", "family": "beta"}, branch="b1")
    assert (b.family, b.head_source, b.head_id, b.pending_seed) == ("beta", "B = 1\n", None, True)
    assert b.families_tried == {"alpha", "beta"}


def test_fold_branch_forked_starts_from_the_candidate_and_keeps_its_instruction(rec) -> None:
    rec.branch()
    rec.proposed("c1", source="W = 9\n")
    rec.finished("c1")
    payload = {"from_branch": "b1", "from_candidate": "c1", "family": "alpha", "model": "m5"}
    rec(ev.BRANCH_FORKED, {**payload, "instruction": "go"}, branch="b2")
    b = rec.state.branches["b2"]
    assert (b.head_id, b.head_source, b.best_id, b.model, b.steer) == (
        "c1",
        "W = 9\n",
        "c1",
        "m5",
        ["go"],
    )


def test_fold_worker_death_requeues_first_in_line_and_a_lost_evaluation_leaves(rec) -> None:
    rec.branch()
    rec.proposed("c1", source="P = 1\n")
    rec.proposed("c2", source="P = 2\n")
    rec(ev.EVALUATION_STARTED, {}, branch="b1", candidate="c2")
    rec(ev.NOTE, {"text": "died", "requeued": True, "how": "oom"}, branch="b1", candidate="c2")
    assert [(w.cid, w.evaluating) for w in rec.state.waiting.values()] == [
        ("c2", False),
        ("c1", False),
    ]
    assert rec.state.worker_lost == {"c2": ["oom"]}
    rec(ev.ERROR, {"message": "lost"}, branch="b1", candidate="c1")
    assert list(rec.state.waiting) == ["c2"]
