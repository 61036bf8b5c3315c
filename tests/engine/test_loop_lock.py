"""One engine per session: a second engine is refused while the first runs."""

from __future__ import annotations

from engine_helpers import Cockpit, alive

from cockpit.store import engine_pid


def test_a_second_resume_while_the_engine_runs_is_refused(cockpit: Cockpit) -> None:
    pid = cockpit.start("busy", "--budget", "50")
    for args in (("resume", "busy"), ("resume", "busy", "--detach")):
        proc = cockpit(*args)
        assert proc.returncode == 2, proc.stdout + proc.stderr
        assert proc.stderr == f"cockpit: error: session busy is already running (pid {pid})\n"
    assert engine_pid(cockpit.folder("busy")) == pid and alive(pid)


def test_a_second_engine_process_on_a_running_session_is_refused(cockpit: Cockpit) -> None:
    pid = cockpit.start("busy", "--budget", "50")
    proc = cockpit("_engine", str(cockpit.folder("busy")))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr.startswith(f"cockpit: error: session busy is already run by pid {pid}")
    assert len(proc.stderr.strip().splitlines()) == 1
    assert engine_pid(cockpit.folder("busy")) == pid and alive(pid)
