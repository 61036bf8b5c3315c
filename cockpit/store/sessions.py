"""Where sessions live, how a new one is made, and what `cockpit ls` shows about each.

A session is a folder: `session.db` (the record) and `repo/` (the candidate repository). The
sessions directory is, in order of precedence, the `--sessions-dir` argument, the
`COCKPIT_SESSIONS_DIR` environment variable, or `./sessions`.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import sqlite3
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cockpit.store import events as ev
from cockpit.store import figures
from cockpit.store.lock import engine_pid
from cockpit.store.record import DB_FILE, SessionDamaged, SessionRecord

ENV_VAR = "COCKPIT_SESSIONS_DIR"
DEFAULT_DIR = "sessions"
REPO_DIR = "repo"
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,120}$")
# Recorded states that claim an engine is at work; without a live engine they mean a crash.
_ENGINE_STATES = ("running", "paused")


def resolve_sessions_dir(arg: str | Path | None = None) -> Path:
    """`--sessions-dir` > COCKPIT_SESSIONS_DIR > ./sessions."""
    if arg:
        return Path(arg).expanduser()
    env = os.environ.get(ENV_VAR)
    return Path(env).expanduser() if env else Path(DEFAULT_DIR)


def create_session(
    name: str | None = None,
    *,
    task: str,
    device: str,
    sessions_dir: str | Path | None = None,
    config: dict[str, Any] | None = None,
) -> Path:
    """Make a new session folder with its record and repository; returns the folder.

    The name defaults to `<task>-YYYYmmdd-HHMMSS`; a taken name gets `-2`, `-3`, ... (mkdir is
    the atomic test, so two processes creating at the same second get distinct folders)."""
    base = f"{task}-{time.strftime('%Y%m%d-%H%M%S')}" if name is None else name
    check_session_name(base)
    root = resolve_sessions_dir(sessions_dir)
    root.mkdir(parents=True, exist_ok=True)
    with private_files():
        folder = _unique_folder(root, base)
        # made under another name and renamed once whole: a reader (`cockpit ls`, `status`, a
        # test polling) never finds a `session.db` without its tables, which reads as a damaged one
        making = folder / f"{Path(DB_FILE).stem}.new.db"
        try:
            with SessionRecord.open(making, create=True) as record:
                payload = {
                    "name": folder.name, "task": task, "device": device, "created": time.time()
                }
                if config:
                    payload["config"] = config
                record.append(ev.SESSION_CREATED, payload)
            os.replace(making, folder / DB_FILE)
            from cockpit.store.gitrepo import CandidateRepo  # gitpython when a session is made

            CandidateRepo(folder / REPO_DIR).close()
        except BaseException:
            shutil.rmtree(folder, ignore_errors=True)  # ours, just made: no half-made session left
            raise
    return folder


def check_repo(folder: str | Path) -> None:
    """Raise SessionDamaged when `repo/` is gone while the record points at commits in it: an
    engine would otherwise make a new, empty repository and the candidates' history would be
    lost without a word. A session with nothing committed yet gets its repository remade."""
    folder = Path(folder)
    repo = folder / REPO_DIR
    if (repo / ".git").exists():
        return
    with SessionRecord.open_readonly(folder) as record:
        (n,) = record.execute("SELECT count(*) FROM candidates WHERE commit_sha IS NOT NULL")[0]
    if n:
        raise SessionDamaged(
            f"{repo}: the candidate repository is missing ({n} committed candidate"
            f"{'s' * (n > 1)} recorded in session.db); nothing was changed: put the folder back "
            "to resume"
        )


# A session folder holds the prompts, the model's replies and the candidates: private to the
# user who made it (directories 0700, files 0600; git's read-only objects 0400).
PRIVATE_UMASK = 0o077


@contextlib.contextmanager
def private_files() -> Iterator[None]:
    """Files and folders made inside (by this process and the processes it starts, git
    included) are the user's alone; the previous umask is restored after."""
    old = os.umask(PRIVATE_UMASK)
    try:
        yield
    finally:
        os.umask(old)


def make_private(folder: Path) -> None:
    """For the engine's process: everything it writes from now on is private, and so is the
    session folder itself (one made by an older version may be 0755)."""
    os.umask(PRIVATE_UMASK)
    # a folder that cannot be changed (read-only, immutable) cannot be written either: what
    # writes to it next says so in one line
    with contextlib.suppress(OSError):
        os.chmod(folder, 0o700)


def check_session_name(name: str) -> None:
    """ValueError unless `name` is one plain folder name: no '/', no '..', not empty, no
    leading '.' or '-', nothing but letters, digits, '.', '_' and '-'."""
    if not _NAME_RE.fullmatch(name):
        raise ValueError(
            f"bad session name {name!r}: letters, digits, '.', '_', '-', starting with a "
            "letter or digit"
        )


def _unique_folder(root: Path, base: str) -> Path:
    for n in range(1, 10_000):
        folder = root / (base if n == 1 else f"{base}-{n}")
        try:
            folder.mkdir(mode=0o700)
            return folder
        except FileExistsError:
            continue
    raise RuntimeError(f"no free session name for {base!r} in {root}")


@dataclass(frozen=True)
class SessionInfo:
    """What a listing shows. `state` is the recorded state, except that a session recorded as
    running or paused whose engine is gone is reported `crashed`."""

    name: str
    path: Path
    task: str | None
    device: str | None
    state: str
    recorded_state: str | None
    created: float | None
    engine_pid: int | None
    candidates: int
    best_us: float | None
    best_candidate: str | None
    last_event_t: float | None
    best_label: str = ""  # figures.tag of the best: "n/c" when no comparable time exists


def effective_state(recorded: str | None, engine_running: bool) -> str:
    if recorded in _ENGINE_STATES and not engine_running:
        return "crashed"
    return recorded or "unknown"


def read_session_info(folder: str | Path) -> SessionInfo:
    """Summarize one session by reading its record read-only (never blocks its engine)."""
    folder = Path(folder)
    pid = engine_pid(folder)
    with SessionRecord.open_readonly(folder) as record, record.snapshot():
        meta = record.meta()
        candidates = record.candidates()
        branches = record.branches()
        (last_t,) = record.execute("SELECT max(t) FROM events")[0]
    best = figures.best(candidates, branches)
    return SessionInfo(
        name=folder.name,
        path=folder,
        task=meta.get("task"),
        device=meta.get("device"),
        state=effective_state(meta.get("state"), pid is not None),
        recorded_state=meta.get("state"),
        created=meta.get("created"),
        engine_pid=pid,
        candidates=len(candidates),
        best_us=best.score_us if best else None,
        best_candidate=best.id if best else None,
        last_event_t=last_t,
        best_label=figures.tag(best),
    )


UNREADABLE = "unreadable"


def list_sessions(sessions_dir: str | Path | None = None) -> list[SessionInfo]:
    """Every session, oldest first. A folder whose `session.db` cannot be read is listed with
    the state `unreadable` (first, its creation time being unknown), not left out: `cockpit ls`
    must not hide a damaged session."""
    root = resolve_sessions_dir(sessions_dir)
    if not root.is_dir():
        return []
    infos = []
    for folder in root.iterdir():
        if not (folder / DB_FILE).is_file():
            continue
        try:
            infos.append(read_session_info(folder))
        except (sqlite3.Error, OSError):
            infos.append(
                SessionInfo(
                    name=folder.name,
                    path=folder,
                    task=None,
                    device=None,
                    state=UNREADABLE,
                    recorded_state=None,
                    created=None,
                    engine_pid=None,
                    candidates=0,
                    best_us=None,
                    best_candidate=None,
                    last_event_t=None,
                )
            )
    return sorted(infos, key=lambda i: (i.created or 0.0, i.name))


def latest_session(sessions_dir: str | Path | None = None) -> SessionInfo | None:
    """The most recently created readable session, or None when there is none."""
    sessions = [i for i in list_sessions(sessions_dir) if i.state != UNREADABLE]
    return sessions[-1] if sessions else None


def find_session(name_or_path: str | Path, sessions_dir: str | Path | None = None) -> Path:
    """Resolve what a user typed: a session folder path, a name in the sessions directory,
    or `latest`."""
    if str(name_or_path) == "latest":
        latest = latest_session(sessions_dir)
        if latest is None:
            raise FileNotFoundError(f"no sessions in {resolve_sessions_dir(sessions_dir)}")
        return latest.path
    direct = Path(name_or_path)
    if (direct / DB_FILE).is_file():
        return direct
    named = resolve_sessions_dir(sessions_dir) / str(name_or_path)
    if (named / DB_FILE).is_file():
        return named
    raise FileNotFoundError(f"no session {name_or_path!r} (looked in {named.parent})")
