"""How a run ends when it is not the budget that ends it: a signal (SIGTERM from `kill`,
`timeout` or a lease running out; SIGHUP when the ssh terminal of a headless run closes) and the
`--max-time` limit. Real `cockpit` processes on the toy task, real records.

Python's default SIGTERM ends the process without the engine's clean-up, which would leave a
record saying `running` for an engine that is gone (`timeout 380 cockpit run …`). The record must
say `stopped` with the reason, and `cockpit resume` go on."""

from __future__ import annotations

import signal
import subprocess

import psutil
import pytest
from engine_helpers import (
    COCKPIT,
    RUN_OPTS,
    TOYTASK,
    Cockpit,
    candidates,
    descendants,
    events,
    wait_for,
)

from cockpit.store import engine_pid
from cockpit.store import events as ev


def _cmd(p: psutil.Process) -> str:
    try:
        return " ".join(p.cmdline())
    except psutil.Error:
        return ""


def _last_state(folder) -> dict:
    return events(folder, ev.SESSION_STATE)[-1].payload


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_a_signal_during_an_evaluation_stops_the_session_cleanly_and_resume_finishes_it(
    cockpit: Cockpit, sig: signal.Signals
) -> None:
    name = f"sig-{sig.name.lower()}"
    folder = cockpit.folder(name)
    proc = subprocess.Popen(
        [*COCKPIT, "run", str(TOYTASK), "--session", name, "--budget", "4", "--beam", "2",
         *RUN_OPTS],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=cockpit.env(),
        cwd=cockpit.cwd,
    )
    try:
        # during an evaluation: its candidate's process (the arena) is up. (On the event alone
        # the signal could land while the worker process was still being spawned, which then
        # prints multiprocessing's EOFError as it finds its parent gone.)
        wait_for(
            lambda: any("cockpit.harness.arena" in _cmd(p) for p in descendants(proc.pid)),
            120,
            "an evaluation's arena process",
        )
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 128 + sig, out + err
    assert f"interrupted by {sig.name}; resume with: cockpit resume {name}" in out
    assert "Traceback" not in err, err
    st = cockpit.status(name)
    assert (st["state"], st["pid"], st["reason"]) == ("stopped", None, f"interrupted by {sig.name}")
    text = cockpit("status", name, check=True).stdout
    assert f"stopped (interrupted by {sig.name})" in text
    assert engine_pid(folder) is None  # the lock is released
    assert _last_state(folder) == {"state": "stopped", "reason": f"interrupted by {sig.name}"}
    assert not [e for e in events(folder, ev.ERROR) if e.payload.get("where") == "engine"]
    cockpit("resume", name, check=True, timeout=240)
    st = cockpit.status(name)
    spent = "budget spent: 4/4 evaluations"  # why it ended, in one sentence, recorded
    assert (st["state"], st["evaluations"], st["reason"], st["ended"]) == ("done", 4, spent, spent)
    assert _last_state(folder) == {"state": "done", "reason": spent}


def test_sigterm_to_a_detached_engine_records_stopped(cockpit: Cockpit) -> None:
    pid = cockpit.start("detached", "--budget", "6", "--beam", "2")
    folder = cockpit.folder("detached")
    wait_for(lambda: events(folder, ev.EVALUATION_STARTED), 120, "an evaluation to start")
    import os

    os.kill(pid, signal.SIGTERM)
    st = cockpit.wait_finished("detached", timeout=60)
    assert st["state"] == "stopped"
    assert _last_state(folder)["reason"] == "interrupted by SIGTERM"


def test_max_time_stops_starting_evaluations_and_loses_none(cockpit: Cockpit) -> None:
    proc = cockpit("run", str(TOYTASK), "--session", "timed", "--budget", "200", "--beam", "2",
                   "--max-time", "4s", *RUN_OPTS, timeout=240)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "session timed: stopped" in proc.stdout
    folder = cockpit.folder("timed")
    st = cockpit.status("timed")
    assert (st["state"], st["reason"]) == ("stopped", "time limit of 4s reached")
    assert 1 <= st["evaluations"] < 200
    assert _last_state(folder) == {"state": "stopped", "reason": "time limit of 4s reached"}
    notes = [e.payload["text"] for e in events(folder, ev.NOTE)]
    assert any(t.startswith("time limit of 4s reached") for t in notes), notes
    # what was in flight finished and was recorded: nothing is left half-evaluated
    assert not [c.id for c in candidates(folder) if c.status == "evaluating"]
    started = {e.candidate for e in events(folder, ev.EVALUATION_STARTED)}
    finished = {e.candidate for e in events(folder, ev.EVALUATION_FINISHED)}
    assert started == finished


@pytest.mark.parametrize(
    "value, message",
    [
        ("0", "--max-time '0': must be more than zero"),
        ("-5m", "--max-time '-5m': not a duration"),
        ("ten minutes", "--max-time 'ten minutes': not a duration"),
        ("5x", "--max-time '5x': not a duration"),
    ],
)
def test_max_time_rejects_what_is_not_a_duration(cockpit: Cockpit, value: str, message: str):
    proc = cockpit("run", str(TOYTASK), "--session", "bad", f"--max-time={value}", *RUN_OPTS)
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0 and message in proc.stderr, proc.stderr
    assert not cockpit.folder("bad").exists()  # nothing was created for a bad command


def test_durations_parse_in_every_documented_form() -> None:
    from cockpit.cli.loop import parse_duration
    from cockpit.engine.engine import _duration

    assert [parse_duration(t) for t in ("90", "90s", "15m", "1h30m", "2.5h", "1d")] == [
        90, 90, 900, 5400, 9000, 86400
    ]
    assert [_duration(s) for s in (4, 90, 5400, 7200)] == ["4s", "1m30s", "1h30m", "2h"]


def test_a_run_can_move_tensors_through_the_memfd_exchange(cockpit: Cockpit) -> None:
    proc = cockpit("run", str(TOYTASK), "--session", "mx", "--budget", "2", "--beam", "2",
                   "--exchange", "memfd", *RUN_OPTS, timeout=240)  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    st = cockpit.status("mx")
    assert (st["state"], st["evaluations"]) == ("done", 2)
    assert all(c["status"] == "ok" for c in st["candidate_list"])
    from cockpit.store import SessionRecord

    with SessionRecord.open_readonly(cockpit.folder("mx")) as rec:
        assert rec.meta()["config"]["exchange"] == "memfd"
    done = events(cockpit.folder("mx"), ev.EVALUATION_FINISHED)
    assert len(done) == 2
    assert all(e.payload["protections"]["exchange"].startswith("memfd") for e in done)
