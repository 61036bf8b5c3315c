"""Commands posted with `cockpit send` to a detached engine: applied between steps, acknowledged
with a result, recorded as events; a bad command is refused with a message and the engine goes on.

Most tests share one detached engine that is paused once its first evaluation is in (commands
are applied while paused, and a paused beam stays put). Each of those tests leaves the beam as
it found it, except for what it alone uses (b3 is retired only by the retire test)."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator

import pytest
from engine_helpers import Cockpit, alive, candidates, events, wait_for

from cockpit.store import SessionRecord, engine_pid
from cockpit.store import events as ev

NAME = "cmd"


def send(c: Cockpit, *args: str) -> subprocess.CompletedProcess:
    return c("send", NAME, *args, "--wait", "--timeout", "60")


def branch(st: dict, bid: str) -> dict:
    return next(b for b in st["branches"] if b["id"] == bid)


def evaluating(c: Cockpit) -> list[str]:
    """Candidates being evaluated (not those proposed and waiting for a worker: a paused session
    keeps them waiting)."""
    return [x.id for x in candidates(c.folder(NAME)) if x.status == "evaluating"]


@pytest.fixture(scope="module")
def paused(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cockpit]:
    """A detached engine on the toy task, paused once its first candidate is being evaluated.
    (A verdict arriving later changes no branch: plateaus need 50 evaluations, and escalations
    for want of tunables happen when proposing, which a paused engine does not do.)"""
    tmp = tmp_path_factory.mktemp("commands")
    c = Cockpit(sessions=tmp / "sessions", cwd=tmp)
    try:
        c.start(NAME, "--budget", "100", "--beam", "3", "--plateau", "50")
        folder = c.folder(NAME)
        wait_for(lambda: events(folder, ev.EVALUATION_STARTED), 60, "the first evaluation")
        proc = send(c, "pause")
        assert proc.returncode == 0 and proc.stdout.strip() == "ok: session paused", (
            proc.stdout + proc.stderr
        )
        yield c
    finally:
        c.kill_all()


def test_pause_all_holds_new_evaluations(paused: Cockpit) -> None:
    folder = paused.folder(NAME)
    assert paused.status(NAME)["state"] == "paused"
    ack = next(
        e
        for e in events(folder, ev.COMMAND_ACKED)
        if e.payload["kind"] == "pause" and e.branch is None
    )
    state = [e for e in events(folder, ev.SESSION_STATE) if e.id < ack.id][-1]
    assert state.payload == {"state": "paused", "reason": "by command"}
    wait_for(lambda: not evaluating(paused), 90, "the evaluation in flight to finish")
    deadline = time.monotonic() + 2.0  # the loop would launch within 0.2 s if it were running
    while time.monotonic() < deadline:
        assert not [e for e in events(folder, ev.EVALUATION_STARTED) if e.id > ack.id]
        time.sleep(0.1)


def test_pause_and_resume_one_branch(paused: Cockpit) -> None:
    proc = send(paused, "pause", "--branch", "b1")
    assert proc.returncode == 0 and proc.stdout.strip() == "ok: b1 paused"
    assert branch(paused.status(NAME), "b1")["state"] == "paused"
    proc = send(paused, "resume", "--branch", "b1")
    assert proc.returncode == 0 and proc.stdout.strip() == "ok: b1 running"
    assert branch(paused.status(NAME), "b1")["state"] == "running"
    states = [
        e.payload["state"] for e in events(paused.folder(NAME), ev.BRANCH_STATE) if e.branch == "b1"
    ]
    assert states[-2:] == ["paused", "running"]
    assert paused.status(NAME)["state"] == "paused"  # a branch command leaves the session alone


def test_fork_makes_a_new_branch_with_family_and_instruction(paused: Cockpit) -> None:
    proc = send(paused, "fork", "c0001", "--family", "vectorized", "--instruction", "fuse the add")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.startswith("ok: forked c0001 into b")
    new = proc.stdout.split(" into ")[1].split()[0]
    b = branch(paused.status(NAME), new)
    assert (b["family"], b["state"]) == ("vectorized", "running")
    forked = [e for e in events(paused.folder(NAME), ev.BRANCH_FORKED) if e.branch == new]
    assert len(forked) == 1
    assert forked[0].payload["from_candidate"] == "c0001"
    assert forked[0].payload["from_branch"] == candidates(paused.folder(NAME))[0].branch
    assert forked[0].payload["instruction"] == "fuse the add"


def test_redirect_steer_and_queue_are_acknowledged(paused: Cockpit) -> None:
    steer = send(paused, "redirect", "--branch", "b2", "--mode", "steer", "use", "bigger", "chunks")
    assert steer.returncode == 0 and steer.stdout.strip() == "ok: b2: instruction kept from now on"
    queue = send(
        paused, "redirect", "--branch", "b2", "--mode", "queue", "--instruction", "try CHUNK=8 once"
    )
    assert (
        queue.returncode == 0
        and queue.stdout.strip() == "ok: b2: instruction queued for the next proposal"
    )
    received = [
        e.payload
        for e in events(paused.folder(NAME), ev.COMMAND_RECEIVED)
        if e.payload["kind"] == "redirect"
    ]
    assert {"branch": "b2", "mode": "steer", "instruction": "use bigger chunks"} in [
        r["args"] for r in received
    ]
    assert {"branch": "b2", "mode": "queue", "instruction": "try CHUNK=8 once"} in [
        r["args"] for r in received
    ]


def test_retire_records_its_reason(paused: Cockpit) -> None:
    proc = send(paused, "retire", "--branch", "b3", "--reason", "slow family")
    assert proc.returncode == 0 and proc.stdout.strip() == "ok: b3 retired"
    b = branch(paused.status(NAME), "b3")
    assert (b["state"], b["reason"]) == ("retired", "slow family")
    last = [e for e in events(paused.folder(NAME), ev.BRANCH_STATE) if e.branch == "b3"][-1]
    assert last.payload == {"state": "retired", "reason": "slow family"}
    again = send(paused, "pause", "--branch", "b3")
    assert again.returncode == 1 and again.stdout.strip() == "refused: b3 is retired"


def test_set_model_for_one_branch_then_for_all(paused: Cockpit) -> None:
    one = send(paused, "set-model", "--branch", "b2", "small-model")
    assert one.returncode == 0 and one.stdout.strip() == "ok: model small-model for b2"
    assert branch(paused.status(NAME), "b2")["model"] == "small-model"
    every = send(paused, "set-model", "big-model")
    assert every.returncode == 0 and every.stdout.startswith("ok: model big-model for ")
    st = paused.status(NAME)
    assert all(b["model"] == "big-model" for b in st["branches"] if b["state"] != "retired")
    changed = [
        (e.branch, e.payload["model"]) for e in events(paused.folder(NAME), ev.MODEL_CHANGED)
    ]
    assert changed[-2:] == [("b2", "small-model"), (None, "big-model")]


def test_set_budget_changes_the_recorded_budget(paused: Cockpit) -> None:
    proc = send(paused, "set-budget", "77")
    assert proc.returncode == 0 and proc.stdout.startswith("ok: budget 77 evaluations")
    assert paused.status(NAME)["budget"] == 77
    last = events(paused.folder(NAME), ev.BUDGET_CHANGED)[-1]
    assert last.payload["budget"] == 77 and last.payload["previous"] is not None


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("pause", "--branch", "b9"), "refused: ValueError: no branch 'b9'"),
        (("retire", "--branch", "b9", "--reason", "x"), "refused: ValueError: no branch 'b9'"),
        (("redirect", "--branch", "b9", "faster"), "refused: ValueError: no branch 'b9'"),
        (("set-model", "--branch", "b9", "m"), "refused: ValueError: no branch 'b9'"),
        (("fork", "c9999"), "refused: no candidate 'c9999'"),
        (("set-budget", "--usd", "5"), "refused: this session's proposer makes no paid calls"),
    ],
)
def test_a_bad_command_is_refused_and_the_engine_goes_on(
    paused: Cockpit, args: tuple, message: str
) -> None:
    proc = send(paused, *args)
    assert proc.returncode == 1
    assert proc.stdout.strip().startswith(message), proc.stdout
    acked = [e.payload for e in events(paused.folder(NAME), ev.COMMAND_ACKED)][-1]
    assert acked["ok"] is False
    assert engine_pid(paused.folder(NAME))
    ok = send(paused, "set-model", "--branch", "b1", "still-listening")
    assert ok.returncode == 0


def test_set_budget_posts_usd_and_tokens_and_a_tuner_session_refuses_them(paused: Cockpit) -> None:
    proc = send(paused, "set-budget", "--usd", "$5", "--tokens", "200_000")
    assert proc.returncode == 1 and "makes no paid calls" in proc.stdout
    with SessionRecord.open_readonly(paused.folder(NAME)) as rec:
        assert rec.commands()[-1].args == {"usd": 5.0, "tokens": 200000}
    assert (
        paused.status(NAME)["budget"]
        == events(paused.folder(NAME), ev.BUDGET_CHANGED)[-1].payload["budget"]
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("set-budget", "-3"), "set-budget: budget must be a finite number >= 0, not '-3'"),
        (("set-budget", "--usd", "five"), "set-budget: --usd 'five' is not an amount in USD"),
        (
            ("set-budget", "--tokens", "1.5"),
            "set-budget: --tokens '1.5' is not a whole number of tokens",
        ),
        (("set-budget",), "set-budget needs a budget (evaluations), --usd or --tokens"),
    ],
)
def test_a_malformed_set_budget_is_refused_when_posted(
    paused: Cockpit, args: tuple, message: str
) -> None:
    before = len(events(paused.folder(NAME), ev.COMMAND_RECEIVED))
    proc = paused("send", NAME, *args)
    assert proc.returncode == 2
    assert proc.stderr.strip() == f"cockpit: error: {message}", proc.stderr
    assert len(events(paused.folder(NAME), ev.COMMAND_RECEIVED)) == before  # nothing was posted


def test_an_unknown_command_kind_is_refused_when_posted(paused: Cockpit) -> None:
    proc = paused("send", NAME, "frobnicate")
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip().splitlines() == [proc.stderr.strip()]
    assert "unknown command 'frobnicate'" in proc.stderr


# --- an engine of its own: resume all, then stop ----------------------------------------------


def test_resume_all_restarts_evaluations_and_stop_wait_returns_when_stopped(
    cockpit: Cockpit,
) -> None:
    pid = cockpit.start(NAME, "--budget", "100", "--beam", "2")
    folder = cockpit.folder(NAME)
    assert send(cockpit, "pause").returncode == 0
    wait_for(lambda: not evaluating(cockpit), 90, "the evaluation in flight to finish")
    proc = send(cockpit, "resume")
    assert proc.returncode == 0 and proc.stdout.strip() == "ok: session running"
    ack = [e for e in events(folder, ev.COMMAND_ACKED) if e.payload["kind"] == "resume"][-1]
    wait_for(
        lambda: [e for e in events(folder, ev.EVALUATION_STARTED) if e.id > ack.id],
        30,
        "an evaluation after resume",
    )
    assert cockpit.status(NAME)["state"] == "running"

    stop = cockpit("stop", NAME, "--wait", "--timeout", "90")
    assert stop.returncode == 0, stop.stdout + stop.stderr
    st = cockpit.status(NAME)
    assert (st["state"], st["pid"]) == ("stopped", None)
    wait_for(lambda: not alive(pid), 10, "the engine process to exit")
    last = events(folder, ev.SESSION_STATE)[-1]
    assert last.payload == {"state": "stopped", "reason": "by command"}
    assert not evaluating(cockpit)  # stop waited for the evaluation in flight
