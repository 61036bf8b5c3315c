"""End to end in a real terminal: the cockpit in a tmux pane, keys sent with `send-keys`, the
screen read with `capture-pane`; effects checked in the session record (a recorded session, the
test playing the engine) and through `cockpit status --json` (a real engine, detached).

Uses a private tmux server (`-L`), so it never touches anyone's sessions. Every wait polls with
a deadline; none sleeps and hopes."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import psutil
import pytest
from tui_helpers import hold_engine_lock

from cockpit.store import SessionRecord

TMUX = shutil.which("tmux")
REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(TMUX is None, reason="tmux is not installed")


class Pane:
    def __init__(self, socket: str, name: str) -> None:
        self.socket, self.name = socket, name

    def tmux(self, *args: str) -> str:
        cmd = [TMUX, "-L", self.socket, *args]
        return subprocess.run(cmd, capture_output=True, text=True, check=True, timeout=10).stdout

    def keys(self, *keys: str) -> None:
        self.tmux("send-keys", "-t", self.name, *keys)

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-t", self.name)


def wait_for(
    what: str,
    check: Callable[[], object],
    timeout: float = 30.0,
    every: float = 0.2,
    pane: Pane | None = None,
):
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            size = (
                pane.tmux("display", "-p", "-t", pane.name, "#{window_width}x#{window_height}")
                if pane
                else ""
            )
            seen = f"; the screen ({size.strip()}):\n{pane.screen()}" if pane else ""
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}{seen}")
        time.sleep(every)


@pytest.fixture
def pane(session: Path, tmp_path: Path) -> Iterator[tuple[Pane, Path]]:
    hold_engine_lock(session)  # as its engine would: a record with no live engine is crashed
    socket = f"cockpit-test-{os.getpid()}"
    done = tmp_path / "exit-code"
    env = f"COCKPIT_KEYMAP={tmp_path / 'none.toml'} TERM=xterm-256color"
    # -u COLUMNS/LINES: pytest exports its own terminal size, which would win over the pane's.
    command = (
        f"cd {REPO} && env -u COLUMNS -u LINES {env} {sys.executable} -m cockpit.tui {session}; "
        f"echo $? > {done}"
    )
    subprocess.run(
        [
            TMUX,
            "-L",
            socket,
            "-f",
            "/dev/null",
            "new-session",
            "-d",
            "-s",
            "cockpit",
            "-x",
            "120",
            "-y",
            "40",
            command,
        ],
        check=True,
        timeout=10,
    )
    try:
        yield Pane(socket, "cockpit"), done
    finally:
        subprocess.run([TMUX, "-L", socket, "kill-server"], capture_output=True, timeout=10)


def test_attach_steer_see_the_ack_and_detach_in_tmux(pane, session: Path):
    p, done = pane
    screen = wait_for("the summary on attach", lambda: "Since you last looked" in p.screen())
    p.keys("Escape")
    wait_for("the beam", lambda: "beam" in p.screen() and "Since you last" not in p.screen())
    p.keys("Space")  # the first row: branch b1

    def posted():
        with SessionRecord.open_readonly(session) as rec:
            return rec.pending_commands()

    (cmd,) = wait_for("a pause command in the queue", posted, timeout=15)
    assert (cmd.kind, cmd.args, cmd.source.startswith("tui@")) == ("pause", {"branch": "b1"}, True)
    wait_for("the pending mark", lambda: "1 pending" in p.screen(), timeout=15, pane=p)

    with SessionRecord.open(session) as rec:  # the engine's side of the queue
        rec.ack_command(cmd.id, True, "b1 paused")
    screen = wait_for(
        "the acknowledgement", lambda: "b1 paused" in (s := p.screen()) and s, timeout=15
    )
    assert "pending" not in screen.splitlines()[0]

    p.keys("q")
    code = wait_for("the cockpit to exit", lambda: done.exists() and done.read_text().strip())
    assert code == "0"
    assert (session / "last_looked.json").exists()


# --- a real engine, detached ------------------------------------------------------------------

TOYTASK = REPO / "tests" / "engine" / "toytask"
COCKPIT = (sys.executable, "-c", "import sys; from cockpit.cli import main; sys.exit(main())")


def _cockpit(env: dict[str, str], *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*COCKPIT, *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


def _status(env: dict[str, str], name: str) -> dict:
    r = _cockpit(env, "status", name, "--json", timeout=60)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[tuple[dict[str, str], str, int]]:
    """`cockpit run TOYTASK --detach` on the CPU with a budget it will not finish during the
    test; killed with everything it spawned in teardown."""
    sessions = tmp_path / "sessions"
    env = dict(os.environ, COCKPIT_SESSIONS_DIR=str(sessions))
    env["COCKPIT_KEYMAP"] = str(tmp_path / "none.toml")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH")) if p)
    opts = ("--device", "cpu", "--mode", "quick", "--budget", "400", "--beam", "2")
    r = _cockpit(env, "run", str(TOYTASK), "--session", "e2e", "--detach", *opts)
    assert r.returncode == 0, r.stdout + r.stderr
    m = re.search(r"running in the background \(pid (\d+)\)", r.stdout)
    assert m, r.stdout
    pid = int(m.group(1))
    try:
        yield env, "e2e", pid
    finally:
        with contextlib.suppress(psutil.NoSuchProcess):
            procs = [psutil.Process(pid), *psutil.Process(pid).children(recursive=True)]
            for p in procs:
                with contextlib.suppress(psutil.NoSuchProcess):
                    p.kill()
            psutil.wait_procs(procs, timeout=15)


def test_attach_to_a_detached_engine_steer_filter_and_detach_in_tmux(engine, tmp_path: Path):
    env, name, pid = engine
    wait_for(
        "the engine's first evaluation",
        lambda: _status(env, name)["evaluations"] >= 1,
        timeout=120,
        every=1.0,
    )
    socket_name = f"cockpit-e2e-{os.getpid()}"
    done = tmp_path / "exit-code"
    exports = " ".join(
        f"{k}={shlex.quote(env[k])}"
        for k in ("COCKPIT_SESSIONS_DIR", "COCKPIT_KEYMAP", "PYTHONPATH")
    )
    command = (
        f"cd {REPO} && env -u COLUMNS -u LINES {exports} TERM=xterm-256color "
        f"{shlex.join(COCKPIT)} attach {name}; echo $? > {done}"
    )
    subprocess.run(
        [
            TMUX,
            "-L",
            socket_name,
            "-f",
            "/dev/null",
            "new-session",
            "-d",
            "-s",
            "e2e",
            "-x",
            "120",
            "-y",
            "40",
            command,
        ],
        check=True,
        timeout=10,
    )
    p = Pane(socket_name, "e2e")
    try:
        wait_for("the summary on attach", lambda: "Since you last looked" in p.screen(), pane=p)
        p.keys("Escape")
        wait_for("the beam with b1", lambda: "b1" in (s := p.screen()) and "Since" not in s, pane=p)
        p.keys("Space")  # the first row is branch b1
        wait_for(
            "b1 paused according to `cockpit status --json`",
            lambda: (
                next(b for b in _status(env, name)["branches"] if b["id"] == "b1")["state"]
                == "paused"
            ),
            timeout=90,
            every=1.0,
        )
        wait_for("the acknowledgement on screen", lambda: "b1 paused" in p.screen(), pane=p)

        def b1_row(screen: str) -> bool:  # b1's beam row: its id, then its state glyph
            return re.search(r"\bb1\s+[▶‖✕≈]", screen) is not None

        assert b1_row(p.screen())
        p.keys("/")
        # Keys are forwarded to the widget focused when they arrive: wait for the box to have
        # the focus before typing (a person does; a burst sent with the `/` would go to the beam).
        wait_for("the filter box", lambda: "esc Clear filter" in p.screen(), pane=p)
        p.keys("-l", "branch:b2")
        p.keys("Enter")
        screen = wait_for(
            "the filter indicator", lambda: "⧩ branch:b2" in (s := p.screen()) and s, pane=p
        )
        assert not b1_row(screen) and re.search(r"\bb2\s+[▶‖✕≈]", screen)
        p.keys("Escape")
        wait_for("the filter cleared", lambda: "⧩" not in (s := p.screen()) and b1_row(s), pane=p)

        p.keys("q")
        code = wait_for("the cockpit to exit", lambda: done.exists() and done.read_text().strip())
        assert code == "0"
        status = _status(env, name)
        assert status["pid"] == pid and status["state"] == "running"
        assert psutil.pid_exists(pid) and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    finally:
        subprocess.run([TMUX, "-L", socket_name, "kill-server"], capture_output=True, timeout=10)
