"""One engine per session: an flock on `<session_dir>/engine.lock` that holds the engine's pid.

Why flock: the kernel releases it when the holder dies, however it dies (SIGKILL included), so a
lock left by a crashed engine is stale by construction and the next engine simply takes it; the
pid written in the file only serves the error message and `engine_pid()`. Two engines appending
to one record would interleave two stories, and both would believe their beam.

Children: a forked child shares the lock's open file description and would keep the lock held
after the engine died. The descriptor is close-on-exec (spawned workers never see it) and is
closed in forked children too (`os.register_at_fork`).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
import weakref
from pathlib import Path

LOCK_FILE = "engine.lock"

# Someone probing the lock (`engine_pid`) holds it for microseconds; an engine that finds it
# busy while the recorded holder is dead retries this long before giving up.
PROBE_GRACE_S = 1.0

_held: weakref.WeakSet[EngineLock] = weakref.WeakSet()


class SessionLocked(RuntimeError):
    """Another live engine runs this session."""

    def __init__(self, session: str, pid: int | None, detail: str = "") -> None:
        self.session = session
        self.pid = pid
        who = f"pid {pid}" if pid is not None else "another process"
        super().__init__(f"session {session} is already run by {who}{detail}")


class EngineLock:
    """A held engine lock. `previous_pid` is the dead engine whose stale lock was taken over."""

    def __init__(self, path: Path, fd: int, previous_pid: int | None) -> None:
        self.path = path
        self.pid = os.getpid()
        self.previous_pid = previous_pid
        self._fd: int | None = fd
        _held.add(self)

    @property
    def held(self) -> bool:
        return self._fd is not None

    def release(self) -> None:
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        with contextlib.suppress(OSError):
            os.ftruncate(fd, 0)
        os.close(fd)  # closing the last descriptor releases the flock

    def _forget_in_child(self) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = None

    def __enter__(self) -> EngineLock:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def _after_fork_in_child() -> None:
    for lock in list(_held):
        lock._forget_in_child()


os.register_at_fork(after_in_child=_after_fork_in_child)


def _read_pid(fd: int) -> int | None:
    try:
        text = os.pread(fd, 64, 0).decode("ascii", "replace").strip()
        return int(text) if text else None
    except (OSError, ValueError):
        return None


def _alive(pid: int | None) -> bool:
    if pid is None:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def acquire_engine_lock(session_dir: str | Path) -> EngineLock:
    """Take the session's engine lock or raise SessionLocked naming the pid that holds it."""
    session_dir = Path(session_dir)
    path = session_dir / LOCK_FILE
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)  # private, as the folder
    deadline = time.monotonic() + PROBE_GRACE_S
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            break
        except BlockingIOError:
            holder = _read_pid(fd)
            if _alive(holder) or time.monotonic() > deadline:
                os.close(fd)
                detail = (
                    "" if _alive(holder) else " (no longer running; a child of it holds the lock)"
                )
                raise SessionLocked(session_dir.name, holder, detail) from None
            time.sleep(0.02)
    previous = _read_pid(fd)
    if previous == os.getpid():
        previous = None
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    os.fsync(fd)
    return EngineLock(path, fd, previous)


def engine_pid(session_dir: str | Path) -> int | None:
    """The pid of the engine running the session now, or None when none is.

    Probes with a shared, non-blocking flock held for an instant (see PROBE_GRACE_S)."""
    path = Path(session_dir) / LOCK_FILE
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return _read_pid(fd) or -1
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)
