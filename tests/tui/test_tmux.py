"""End to end in a real terminal: `python -m cockpit.tui SESSION` in a tmux pane, keys sent with
`send-keys`, the screen read with `capture-pane`, effects checked in the session record.

Uses a private tmux server (`-L`), so it never touches anyone's sessions. Every wait polls with
a deadline; none sleeps and hopes."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

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
