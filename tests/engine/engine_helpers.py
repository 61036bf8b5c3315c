"""Helpers for the loop's integration tests: real `cockpit` processes on a session folder in
tmp_path, real SQLite records, real git repositories, real spawned evaluations of the toy task.

Every engine a test starts detached is killed in teardown (with everything it spawned), so a
failing test never leaks a process into the next one.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

from cockpit.store import SessionRecord, engine_pid

TOYTASK = Path(__file__).with_name("toytask")
REPO_ROOT = Path(__file__).resolve().parents[2]
RUN_OPTS = ("--device", "cpu", "--mode", "quick")
# What the `cockpit` console script runs.
COCKPIT = (sys.executable, "-c", "import sys; from cockpit.cli import main; sys.exit(main())")


def wait_for(
    predicate: Callable[[], Any],
    timeout: float,
    what: str | Callable[[], str],
    interval: float = 0.05,
) -> Any:
    """Poll `predicate` until it returns something truthy; fail naming `what` (a text, or a
    function that says what is still missing) after `timeout`."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            text = what() if callable(what) else what
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {text}")
        time.sleep(interval)


def alive(pid: int) -> bool:
    """True while `pid` runs (a zombie nobody reaped yet counts as dead)."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def descendants(pid: int) -> list[psutil.Process]:
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []


def git(repo: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True)


@dataclass
class Cockpit:
    """Runs `cockpit ...` against one sessions directory, as a user would."""

    sessions: Path
    cwd: Path
    started: list[str] = field(default_factory=list)
    pids: set[int] = field(default_factory=set)
    seen: dict[int, psutil.Process] = field(default_factory=dict)
    extra_env: dict[str, str] = field(default_factory=dict)  # e.g. a fault to inject

    def env(self) -> dict[str, str]:
        env = dict(os.environ) | self.extra_env
        env["COCKPIT_SESSIONS_DIR"] = str(self.sessions)
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in [str(REPO_ROOT), env.get("PYTHONPATH", "")] if p
        )
        return env

    def __call__(
        self, *args: str, timeout: float = 120, check: bool = False
    ) -> subprocess.CompletedProcess:
        proc = subprocess.run(
            [*COCKPIT, *args],
            capture_output=True,
            text=True,
            env=self.env(),
            cwd=self.cwd,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )
        if check:
            assert proc.returncode == 0, (
                f"cockpit {' '.join(args)} -> {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
            )
        return proc

    def folder(self, name: str) -> Path:
        return self.sessions / name

    # --- detached engines ---------------------------------------------------------------------
    def start(self, name: str, *opts: str, task: Path = TOYTASK) -> int:
        """`cockpit run TASK --detach`; returns the engine's pid (it held the lock by then)."""
        self.started.append(name)
        out = self(
            "run", str(task), "--session", name, "--detach", *RUN_OPTS, *opts, check=True
        ).stdout
        return self.watch(out)

    def resume(self, name: str) -> int | None:
        """`cockpit resume NAME --detach`; the engine's pid, or None when it had nothing left to
        do and already finished, or the session was done already (resume refuses it)."""
        proc = self("resume", name, "--detach")
        if proc.returncode == 2 and f"session {name} is done (" in proc.stderr:
            return None
        assert proc.returncode == 0, f"cockpit resume {name} -> {proc.returncode}\n{proc.stderr}"
        out = proc.stdout
        if "running in the background" not in out:
            assert out.strip() == f"session {name}: done", out
            return None
        return self.watch(out)

    def watch(self, out: str) -> int:
        """The pid `--detach` printed; what it spawns is killed in teardown."""
        m = re.search(r"running in the background \(pid (\d+)\)", out)
        assert m, out
        pid = int(m.group(1))
        self.pids.add(pid)
        self.remember(pid)
        return pid

    def remember(self, pid: int) -> list[psutil.Process]:
        """Note what `pid` spawned so far (workers, sandboxed evaluations) for the teardown."""
        procs = descendants(pid)
        for p in procs:
            self.seen.setdefault(p.pid, p)
        return procs

    def status(self, name: str) -> dict[str, Any]:
        proc = self("status", name, "--json", check=True)
        return json.loads(proc.stdout)

    def wait_finished(self, name: str, timeout: float = 150) -> dict[str, Any]:
        folder = self.folder(name)

        def finished() -> dict[str, Any] | None:
            if engine_pid(folder):
                return None
            st = self.status(name)
            return st if st["state"] in ("done", "stopped", "crashed") else None

        return wait_for(finished, timeout, f"{name} to finish", interval=0.25)

    def kill_all(self) -> None:
        for name in self.started:
            pid = engine_pid(self.folder(name))
            if pid and pid > 0:
                self.pids.add(pid)
        for pid in self.pids:
            self.remember(pid)
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        for p in self.seen.values():
            with contextlib.suppress(psutil.Error):
                p.kill()
        psutil.wait_procs(list(self.seen.values()), timeout=10)


def events(folder: Path, *kinds: str, candidate: str | None = None) -> list:
    with SessionRecord.open_readonly(folder) as rec:
        return rec.events(kinds=list(kinds) or None, candidate=candidate)


def candidates(folder: Path) -> list:
    with SessionRecord.open_readonly(folder) as rec:
        return rec.candidates()
