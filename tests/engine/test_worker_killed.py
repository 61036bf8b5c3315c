"""An evaluation worker SIGKILLed while it evaluates (from outside, as the OOM killer or an
operator would): the candidate is evaluated again by a fresh worker; a second death of its worker
is its verdict, `crash`, and the run goes on in that slot with the next candidate.

Real `cockpit run --detach` engines on the toy task; the kill hits the worker process that is the
parent of the candidate's sandboxed arena."""

from __future__ import annotations

import os
import signal

import psutil
from engine_helpers import Cockpit, candidates, events, wait_for

from cockpit.store import events as ev

PENDING = (None, "proposed", "evaluating")


def arena_worker(c: Cockpit, pid: int, folder, cid: str | None = None, not_pid: int | None = None):
    """(candidate, worker process) while a candidate (`cid`, or any) is `evaluating` and its
    arena runs under a worker (not `not_pid`); None otherwise."""
    evaluating = [x.id for x in candidates(folder) if x.status == "evaluating"]
    if cid is not None:
        evaluating = [x for x in evaluating if x == cid]
    if not evaluating:
        return None
    for p in c.remember(pid):
        try:
            if "cockpit.harness.arena" not in " ".join(p.cmdline()):
                continue
            worker = p.parent()
        except psutil.Error:
            continue
        if worker is not None and worker.pid not in (pid, not_pid):
            return evaluating[0], worker
    return None


def kill(worker: psutil.Process) -> None:
    os.kill(worker.pid, signal.SIGKILL)
    psutil.wait_procs([worker], timeout=10)


def started(folder, cid: str) -> int:
    return len(events(folder, ev.EVALUATION_STARTED, candidate=cid))


def assert_nothing_left(c: Cockpit, pid: int) -> None:
    procs = list(c.seen.values())
    wait_for(
        lambda: not [p for p in procs if p.is_running() and p.status() != psutil.STATUS_ZOMBIE],
        15,
        "the engine's workers and arenas to be gone",
    )


def test_a_worker_killed_mid_evaluation_gets_the_candidate_evaluated_again(
    cockpit: Cockpit,
) -> None:
    name, budget = "once", 2
    pid = cockpit.start(name, "--budget", str(budget), "--beam", "1")
    folder = cockpit.folder(name)
    cid, worker = wait_for(
        lambda: arena_worker(cockpit, pid, folder), 120, "an evaluation in an arena", 0.01
    )
    kill(worker)
    st = cockpit.wait_finished(name)
    assert (st["state"], st["evaluations"]) == ("done", budget), st
    mine = {x.id: x for x in candidates(folder)}[cid]
    assert mine.status not in (*PENDING, "crash"), mine  # judged on its own merits
    assert mine.commit_sha
    notes = [e for e in events(folder, ev.NOTE, candidate=cid) if e.payload.get("requeued")]
    assert len(notes) == 1, [e.payload for e in notes]
    assert "the evaluation worker died (killed by SIGKILL)" in notes[0].payload["text"]
    assert started(folder, cid) == 2
    assert not [e for e in events(folder, ev.ERROR) if e.candidate == cid]
    assert_nothing_left(cockpit, pid)


def test_a_candidate_whose_worker_dies_twice_is_a_crash_and_the_slot_goes_on(
    cockpit: Cockpit,
) -> None:
    name, budget = "twice", 3
    pid = cockpit.start(name, "--budget", str(budget), "--beam", "1")
    folder = cockpit.folder(name)
    cid, first = wait_for(
        lambda: arena_worker(cockpit, pid, folder), 120, "an evaluation in an arena", 0.01
    )
    kill(first)
    _, second = wait_for(
        lambda: (
            started(folder, cid) == 2 and arena_worker(cockpit, pid, folder, cid, not_pid=first.pid)
        ),
        120,
        f"{cid} evaluated again by a fresh worker",
        0.01,
    )
    assert second.pid != first.pid
    kill(second)
    st = cockpit.wait_finished(name)
    assert (st["state"], st["evaluations"]) == ("done", budget), st
    cands = {x.id: x for x in candidates(folder)}
    mine = cands[cid]
    assert mine.status == "crash" and mine.commit_sha, mine
    reasons = mine.summary.get("reasons") or []
    assert any(
        "the evaluation worker died twice while evaluating it (killed by SIGKILL, then killed "
        "by SIGKILL); not retried again" in r.get("message", "")
        for r in reasons
    ), reasons
    assert started(folder, cid) == 2  # re-queued once, not again
    # the slot goes on: the candidates after it are judged by a third worker, none a crash
    later = [x for x in cands.values() if x.id > cid and x.status not in (*PENDING, "duplicate")]
    assert later and all(x.status != "crash" for x in later), [(x.id, x.status) for x in later]
    assert_nothing_left(cockpit, pid)


def test_an_arena_killed_mid_evaluation_is_that_candidates_verdict(cockpit: Cockpit) -> None:
    """The candidate's arena SIGKILLed, not the worker: the judge cannot tell a kill from outside
    from the OOM killer acting on the candidate's own memory, so it is the candidate's verdict
    (`crash`, naming SIGKILL and the stage), not re-queued; the worker lives on and judges the
    next candidates."""
    name, budget = "arena", 3
    pid = cockpit.start(name, "--budget", str(budget), "--beam", "1")
    folder = cockpit.folder(name)
    cid, worker = wait_for(
        lambda: arena_worker(cockpit, pid, folder), 120, "an evaluation in an arena", 0.01
    )
    arenas = [p for p in worker.children() if "cockpit.harness.arena" in " ".join(p.cmdline())]
    for p in arenas:
        os.kill(p.pid, signal.SIGKILL)
    wait_for(
        lambda: {x.id: x.status for x in candidates(folder)}[cid] not in PENDING,
        60,
        f"{cid}'s verdict",
    )
    assert worker.is_running() and worker.status() != psutil.STATUS_ZOMBIE  # it lives on
    st = cockpit.wait_finished(name)
    assert (st["state"], st["evaluations"]) == ("done", budget), st
    cands = {x.id: x for x in candidates(folder)}
    mine = cands[cid]
    assert mine.status == "crash" and mine.commit_sha, mine
    (reason,) = mine.summary.get("reasons") or [{}]
    assert "the process was killed by SIGKILL during" in reason.get("message", ""), reason
    assert started(folder, cid) == 1
    assert not [e for e in events(folder, ev.NOTE, candidate=cid) if e.payload.get("requeued")]
    later = [x for x in cands.values() if x.id > cid and x.status not in (*PENDING, "duplicate")]
    assert later and all(x.status != "crash" for x in later), [(x.id, x.status) for x in later]
    assert_nothing_left(cockpit, pid)


def test_a_candidate_re_queued_when_the_engine_stops_is_evaluated_on_resume(
    cockpit: Cockpit,
) -> None:
    """`cockpit stop`, then the worker dies under the evaluation the engine was finishing: the
    engine stops with the candidate re-queued, not evaluated. `resume` evaluates it (it is not
    reported lost), and its one retry stays spent."""
    name = "stopq"
    pid = cockpit.start(name, "--budget", "30", "--beam", "1")
    folder = cockpit.folder(name)
    cid, worker = wait_for(
        lambda: arena_worker(cockpit, pid, folder), 120, "an evaluation in an arena", 0.01
    )
    cockpit("stop", name, check=True)
    wait_for(lambda: events(folder, ev.COMMAND_ACKED), 30, "the stop to be taken", 0.01)
    assert {x.id: x.status for x in candidates(folder)}[cid] == "evaluating"
    kill(worker)
    st = cockpit.wait_finished(name)
    assert st["state"] == "stopped", st
    assert {x.id: x.status for x in candidates(folder)}[cid] == "evaluating"
    n = st["evaluations"]
    cockpit("send", name, "set-budget", str(n + 1), "--queue", check=True)
    proc = cockpit("resume", name)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    st = cockpit.status(name)
    assert (st["state"], st["evaluations"]) == ("done", n + 1), st
    mine = {x.id: x for x in candidates(folder)}[cid]
    assert mine.status not in (*PENDING, "crash") and mine.commit_sha, mine
    assert started(folder, cid) == 2
    assert not [e for e in events(folder, ev.ERROR) if e.candidate == cid]
