"""SIGKILL the detached engine, then `cockpit resume --detach` to the end: the record and the
repository stay sound, every verdict recorded before the kill survives with its commit, only the
evaluation in flight is lost (and recorded as lost; candidates proposed and waiting for a worker
are evaluated after the resume), and no evaluation process outlives the engine.

The kill hits the engine's pid alone (not its process group): its workers and sandboxed
evaluations must die with it on their own (PR_SET_PDEATHSIG).
"""

from __future__ import annotations

import os
import random
import signal
from pathlib import Path

import psutil
from engine_helpers import Cockpit, alive, candidates, events, git, wait_for

from cockpit.engine.engine import FAULT_ENV
from cockpit.store import SessionRecord
from cockpit.store import events as ev

PENDING = (None, "proposed", "evaluating")
SEED = int(os.environ.get("COCKPIT_TEST_SEED", "20261130"))
ROUNDS = 3


def cmdline(p: psutil.Process) -> str:
    try:
        return " ".join(p.cmdline())
    except psutil.Error:
        return ""


def running(procs: list[psutil.Process]) -> list[str]:
    out = []
    for p in procs:
        try:
            if p.is_running() and p.status() != psutil.STATUS_ZOMBIE:
                out.append(f"{p.pid} {cmdline(p)[:120]}")
        except psutil.NoSuchProcess:
            pass
    return out


def kill_engine(c: Cockpit, pid: int) -> list[str]:
    """SIGKILL the engine; wait for it and everything it had spawned to be gone. Returns the
    command lines of what it had spawned."""
    engine = psutil.Process(pid)
    procs = c.remember(pid)
    lines = [cmdline(p) for p in procs]
    os.kill(pid, signal.SIGKILL)
    wait_for(lambda: not running([engine]), 10, "the engine to die")
    wait_for(
        lambda: not running(procs), 10, lambda: f"the engine's children to die: {running(procs)}"
    )
    return lines


def verdicts(folder: Path) -> dict[str, tuple[str, str | None]]:
    return {x.id: (x.status, x.commit_sha) for x in candidates(folder) if x.status not in PENDING}


def assert_sound(folder: Path) -> None:
    with SessionRecord.open_readonly(folder) as rec:
        assert rec.integrity_check() == "ok"
    fsck = git(folder / "repo", "fsck", "--strict", "--full", "--no-dangling")
    assert fsck.returncode == 0, fsck.stdout + fsck.stderr


def assert_kept(folder: Path, before: dict[str, tuple[str, str | None]]) -> None:
    """Every verdict seen before survives, with its commit (one made on resume if the kill came
    between the verdict and the commit)."""
    now = {x.id: x for x in candidates(folder)}
    for cid, (status, sha) in before.items():
        assert now[cid].status == status, cid
        if sha:
            assert now[cid].commit_sha == sha, cid


def assert_complete(c: Cockpit, name: str, lost: set[str], budget: int) -> None:
    folder = c.folder(name)
    st = c.status(name)
    assert (st["state"], st["evaluations"]) == ("done", budget)
    repo = folder / "repo"
    cands = candidates(folder)
    for x in cands:
        if x.id in lost:
            assert x.status in PENDING and x.commit_sha is None, x
            continue
        assert x.status not in PENDING, f"{x.id} has no verdict"
        assert x.commit_sha, f"{x.id} has no commit"
        assert git(repo, "cat-file", "-e", f"{x.commit_sha}^{{commit}}").returncode == 0
    log = git(repo, "log", "--all", "--format=%s").stdout.split("\n")
    assert sorted(s.split()[0] for s in log if s) == sorted(x.id for x in cands if x.id not in lost)
    errors = events(folder, ev.ERROR)
    for cid in lost:
        mine = [e for e in errors if e.candidate == cid]
        assert len(mine) == 1, f"{cid}: {[e.payload for e in mine]}"
        assert "evaluation lost" in mine[0].payload["message"]
    assert {e.candidate for e in errors if e.candidate} == lost
    shas = {x.id: x.commit_sha for x in cands}
    for b in st["branches"]:
        if b["best_candidate"]:
            tag = git(repo, "rev-parse", f"refs/tags/best/{b['id']}").stdout.strip()
            assert tag == shas[b["best_candidate"]], b["id"]


def test_sigkill_during_an_evaluation_loses_only_that_evaluation(cockpit: Cockpit) -> None:
    name, budget = "inflight", 3
    pid = cockpit.start(name, "--budget", str(budget), "--beam", "3")
    folder = cockpit.folder(name)

    def evaluation_in_the_sandbox() -> list[str]:
        if not any(x.commit_sha for x in candidates(folder)):
            return []  # first let one verdict in, so there is something to keep
        arenas = [p for p in cockpit.remember(pid) if "cockpit.harness.arena" in cmdline(p)]
        pending = [x.id for x in candidates(folder) if x.status == "evaluating"]
        return pending if arenas and pending else []

    wait_for(evaluation_in_the_sandbox, 120, "an evaluation running in a sandbox")
    before = verdicts(folder)
    spawned = kill_engine(cockpit, pid)
    assert any("cockpit.harness.arena" in line for line in spawned), spawned
    lost = {x.id for x in candidates(folder) if x.status == "evaluating"}
    assert len(lost) == 1
    assert cockpit.status(name)["state"] == "crashed"
    assert_sound(folder)
    assert_kept(folder, before)

    cockpit.resume(name)
    cockpit.wait_finished(name)
    assert_sound(folder)
    assert_kept(folder, before)
    assert_complete(cockpit, name, lost, budget)
    resumed = [e.payload["resumed"] for e in events(folder, ev.SESSION_STARTED)]
    assert resumed == [False, True]


def test_sigkill_at_random_moments_then_resume_loses_nothing_recorded(cockpit: Cockpit) -> None:
    """Kills land right after an event of a random kind appears (a verdict, a commit, a start)
    or after a random number of events: between the verdict and its commit, between commits,
    in the middle of proposing."""
    rng = random.Random(SEED)
    name, budget = "random", 4
    folder = cockpit.folder(name)
    kept: dict[str, tuple[str, str | None]] = {}
    lost: set[str] = set()
    moments = []
    kills = 0
    for round_ in range(ROUNDS):
        pid = (
            cockpit.start(name, "--budget", str(budget), "--beam", "2")
            if round_ == 0
            else cockpit.resume(name)
        )
        if pid is None:
            break  # the last kill came after the last verdict: nothing was left to do
        with SessionRecord.open_readonly(folder) as rec:
            base = rec.last_event_id()
        kind = rng.choice(
            [ev.EVALUATION_FINISHED, ev.CANDIDATE_COMMITTED, ev.EVALUATION_STARTED, None]
        )
        extra = rng.randint(1, 12)
        moments.append((kind, extra))

        def moment(kind=kind, extra=extra, base=base) -> bool:
            with SessionRecord.open_readonly(folder) as rec:
                if kind is None:
                    return rec.last_event_id() >= base + extra
                return bool(rec.events(after_id=base, kinds=[kind], limit=1))

        try:
            engine = psutil.Process(pid)
        except psutil.NoSuchProcess:
            break  # finished already: the budget was spent
        wait_for(
            lambda engine=engine: moment() or not running([engine]),
            120,
            f"the moment to kill ({kind or f'{extra} events'}; seed {SEED})",
            interval=0.005,
        )
        if not moment() or not running([engine]):
            break  # the budget ran out first: the engine finished on its own
        kill_engine(cockpit, pid)
        kills += 1
        assert_sound(folder)
        assert_kept(folder, kept)
        kept.update(verdicts(folder))
        lost |= {x.id for x in candidates(folder) if x.status == "evaluating"}

    cockpit.resume(name)
    cockpit.wait_finished(name)
    assert_sound(folder)
    assert_kept(folder, kept)
    assert_complete(cockpit, name, lost, budget)
    assert kills >= 2, moments
    # one engine per kill and one that finished: the final resume's, or, when a round found the
    # engine finishing on its own, that round's (the final resume of a done session is refused)
    assert len(events(folder, ev.SESSION_STARTED)) == kills + 1, moments


def test_a_command_applied_but_killed_before_its_ack_is_applied_exactly_once_on_resume(
    cockpit: Cockpit,
) -> None:
    """The engine SIGKILLs itself after applying a fork and before acknowledging it (an injected
    fault). The command's receipt, its effects and its ack are one transaction: the record shows
    the command still pending and nothing of it applied, and the resumed engine applies it once.
    (Applied and acknowledged separately, the resume would fork a second branch.)"""
    name = "cmdkill"
    folder = cockpit.folder(name)
    cockpit.extra_env[FAULT_ENV] = "command_applied:fork"
    pid = cockpit.start(name, "--budget", "3", "--beam", "2")
    cockpit.extra_env.clear()
    wait_for(lambda: [x for x in candidates(folder) if x.id == "c0001"], 60, "the first candidate")
    posted = cockpit(
        "send",
        name,
        "fork",
        "c0001",
        "--family",
        "vectorized",
        "--instruction",
        "fuse the add",
        check=True,
    )
    command_id = int(posted.stdout.split()[-1])
    wait_for(lambda: not alive(pid), 30, "the engine to die right after applying the fork")
    with SessionRecord.open_readonly(folder) as rec:
        assert [c.state for c in rec.commands() if c.id == command_id] == ["pending"]
    assert not events(folder, ev.BRANCH_FORKED, ev.COMMAND_RECEIVED, ev.COMMAND_ACKED)
    assert_sound(folder)

    cockpit.resume(name)
    cockpit.wait_finished(name)
    assert_sound(folder)
    forks = events(folder, ev.BRANCH_FORKED)
    assert len(forks) == 1 and forks[0].payload["from_candidate"] == "c0001"
    received = [
        e for e in events(folder, ev.COMMAND_RECEIVED) if e.payload["command_id"] == command_id
    ]
    acked = [e for e in events(folder, ev.COMMAND_ACKED) if e.payload["command_id"] == command_id]
    assert len(received) == 1 and len(acked) == 1 and acked[0].payload["ok"]
    assert received[0].id < forks[0].id < acked[0].id
    assert forks[0].payload["family"] == "vectorized"
    assert forks[0].branch in [b["id"] for b in cockpit.status(name)["branches"]]
