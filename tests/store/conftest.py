"""Fixtures for the session-record tests: real SQLite files and git repositories in tmp_path,
and a way to run the child-process roles in child.py (other engines, viewers, posters)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from cockpit.store import SessionRecord, create_session

CHILD = Path(__file__).with_name("child.py")
REPO_ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def session_dir(tmp_path: Path) -> Path:
    return create_session("s", task="softmax", device="cpu", sessions_dir=tmp_path / "sessions")


@pytest.fixture
def record(session_dir: Path) -> Iterator[SessionRecord]:
    rec = SessionRecord.open(session_dir)
    yield rec
    rec.close()


def spawn_child(*args: str, **kw) -> subprocess.Popen:
    """Start `python tests/store/child.py ARGS` with pipes for stdin and stdout."""
    return subprocess.Popen(
        [sys.executable, str(CHILD), *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO_ROOT,
        **kw,
    )


@pytest.fixture
def child() -> Iterator[Callable[..., subprocess.Popen]]:
    procs: list[subprocess.Popen] = []

    def start(*args: str) -> subprocess.Popen:
        proc = spawn_child(*args)
        procs.append(proc)
        return proc

    yield start
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=10)
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            if stream:
                stream.close()
