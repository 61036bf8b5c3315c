"""The session folder stops taking writes while the engine runs: the candidate repository made
read-only, or the record's file unable to grow (a full disk). The engine stops `stopped` with a
one-line reason naming what it could not write, never `crashed` with a traceback; the record and
the repository stay sound (SQLite integrity, `git fsck`); once writes work again `cockpit resume`
goes on and every verdict ends up with its commit.

Real `cockpit run --detach` engines on the toy task. How the writes are made to fail, for any
user: the repository's object folder is made immutable with `chattr +i` when the tests run as
root (root ignores a mode of 0555), read-only with chmod otherwise; the full disk is a file-size
limit (RLIMIT_FSIZE, set on the running engine with prlimit) at the record's current size, so
its next append fails as it would on a full disk."""

from __future__ import annotations

import os
import resource
import shutil
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from engine_helpers import (
    COCKPIT,
    RUN_OPTS,
    TOYTASK,
    Cockpit,
    alive,
    candidates,
    events,
    git,
    wait_for,
)

from cockpit.store import SessionRecord
from cockpit.store import events as ev

PENDING = (None, "proposed", "evaluating")


def _chattr(path: Path, flag: str) -> bool:
    exe = shutil.which("chattr")
    if exe is None:
        return False
    return subprocess.run([exe, "-R", flag, str(path)], capture_output=True).returncode == 0


def make_read_only(path: Path) -> None:
    if os.geteuid() == 0:
        if not _chattr(path, "+i"):
            pytest.skip("running as root, which ignores chmod, and chattr +i does not work here")
        probe = path / "probe"
        try:
            probe.write_text("x")
        except PermissionError:
            return
        probe.unlink()
        pytest.skip("chattr +i did not stop a write here")
    for p in [path, *path.rglob("*")]:
        if p.is_dir():
            p.chmod(stat.S_IRUSR | stat.S_IXUSR)


def make_writable(path: Path) -> None:
    if os.geteuid() == 0:
        _chattr(path, "-i")
        return
    for p in [path, *path.rglob("*")]:
        if p.is_dir():
            p.chmod(stat.S_IRWXU)


@pytest.fixture
def unlock() -> Iterator[list[Path]]:
    """Folders made read-only by a test, made writable again whatever happens (tmp_path must be
    removable)."""
    locked: list[Path] = []
    yield locked
    for p in locked:
        make_writable(p)


def verdicts(folder: Path) -> dict[str, str]:
    return {x.id: x.status for x in candidates(folder) if x.status not in PENDING}


def assert_sound(folder: Path) -> None:
    with SessionRecord.open_readonly(folder) as rec:
        assert rec.integrity_check() == "ok"
    fsck = git(folder / "repo", "fsck", "--strict", "--full", "--no-dangling")
    assert fsck.returncode == 0, fsck.stdout + fsck.stderr


def assert_stopped_on(c: Cockpit, name: str, pid: int, what: str) -> dict:
    wait_for(lambda: not alive(pid), 120, "the engine to stop")
    st = c.status(name)
    assert st["state"] == "stopped", st
    reason = st["reason"]
    assert "\n" not in reason and reason.startswith("cannot write "), reason
    assert what in reason and f"then `cockpit resume {name}`" in reason, reason
    log = (c.folder(name) / "engine.log").read_text()
    assert "Traceback" not in log, log
    assert not [e for e in events(c.folder(name), ev.ERROR) if e.payload.get("where") == "engine"]
    return st


def assert_resumes(c: Cockpit, name: str, kept: dict[str, str]) -> None:
    """Resume for one more evaluation: done, every verdict kept and committed, git's history and
    the record tell the same story."""
    folder = c.folder(name)
    n = c.status(name)["evaluations"]
    c("send", name, "set-budget", str(n + 1), "--queue", check=True)
    proc = c("resume", name)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    st = c.status(name)
    assert (st["state"], st["evaluations"]) == ("done", n + 1), st
    assert_sound(folder)
    cands = candidates(folder)
    now = {x.id: x for x in cands}
    for cid, status in kept.items():
        assert now[cid].status == status, cid
    judged = [x for x in cands if x.status not in PENDING]
    assert all(x.commit_sha for x in judged), [(x.id, x.commit_sha) for x in judged]
    log = git(folder / "repo", "log", "--all", "--format=%s").stdout.split("\n")
    assert sorted(s.split()[0] for s in log if s) == sorted(x.id for x in judged)


def test_a_read_only_repository_stops_the_engine_resumably(cockpit: Cockpit, unlock) -> None:
    name = "rorepo"
    pid = cockpit.start(name, "--budget", "30", "--beam", "1")
    folder = cockpit.folder(name)
    wait_for(lambda: any(x.commit_sha for x in candidates(folder)), 120, "a first commit")
    objects = folder / "repo" / ".git" / "objects"
    unlock.append(objects)
    make_read_only(objects)
    assert_stopped_on(cockpit, name, pid, str(objects))
    kept = verdicts(folder)
    uncommitted = [x.id for x in candidates(folder) if x.id in kept and not x.commit_sha]
    assert len(uncommitted) == 1, uncommitted  # the verdict whose commit was refused
    with SessionRecord.open_readonly(folder) as rec:
        assert rec.integrity_check() == "ok"
    make_writable(objects)
    unlock.clear()
    assert_resumes(cockpit, name, kept)


def test_a_record_that_cannot_grow_stops_the_engine_resumably(cockpit: Cockpit) -> None:
    name = "full"
    pid = cockpit.start(name, "--budget", "30", "--beam", "1")
    folder = cockpit.folder(name)
    wait_for(lambda: any(x.commit_sha for x in candidates(folder)), 120, "a first commit")
    wal = folder / "session.db-wal"
    size = wal.stat().st_size
    resource.prlimit(pid, resource.RLIMIT_FSIZE, (size, size))
    assert_stopped_on(cockpit, name, pid, str(folder / "session.db"))
    kept = verdicts(folder)
    assert_sound(folder)
    assert_resumes(cockpit, name, kept)


def test_a_record_that_takes_no_write_at_all_ends_the_engine_with_one_line(
    cockpit: Cockpit,
) -> None:
    """No room even for the stop (a file-size limit of one byte: the checkpoint cannot help):
    the foreground `cockpit run` ends with exit 1 and one line on stderr, no traceback; the
    record, unchanged since its last commit, says the engine died; `resume` goes on."""
    name = "nowrite"
    folder = cockpit.folder(name)
    proc = subprocess.Popen(
        [
            *COCKPIT,
            "run",
            str(TOYTASK),
            "--session",
            name,
            *RUN_OPTS,
            "--budget",
            "30",
            "--beam",
            "1",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        env=cockpit.env(),
        cwd=cockpit.cwd,
    )
    cockpit.pids.add(proc.pid)
    try:
        wait_for(
            lambda: (
                (folder / "session.db").exists() and any(x.commit_sha for x in candidates(folder))
            ),
            120,
            "a first commit",
        )
        cockpit.remember(proc.pid)
        resource.prlimit(proc.pid, resource.RLIMIT_FSIZE, (1, 1))
        _, err = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert proc.returncode == 1, err
    assert "Traceback" not in err, err
    lines = err.strip().splitlines()
    assert lines == [
        f"session {name} stopped: cannot write {folder / 'session.db'}: disk I/O error; the "
        "record could not take the stop either: free space or make the folder writable, then "
        f"`cockpit resume {name}`"
    ], err
    assert cockpit.status(name)["state"] == "crashed"
    kept = verdicts(folder)
    assert_sound(folder)
    assert_resumes(cockpit, name, kept)


def test_a_read_only_sessions_directory_is_read_and_refused_in_one_line(
    cockpit: Cockpit, unlock
) -> None:
    """The whole sessions directory read-only (archived, or a file system remounted read-only):
    `status` still reads a finished session; `resume` (foreground or detached) and a new `run`
    are one line naming what cannot be written, exit 2, nothing made; once writable, `resume`
    goes on."""
    name = "archived"
    cockpit(
        "run",
        str(TOYTASK),
        "--session",
        name,
        *RUN_OPTS,
        "--budget",
        "2",
        "--beam",
        "1",
        check=True,
    )
    folder = cockpit.folder(name)
    cockpit("send", name, "set-budget", "3", "--queue", check=True)
    assert not Path(f"{folder / 'session.db'}-wal").exists()  # every connection closed
    unlock.append(cockpit.sessions)
    make_read_only(cockpit.sessions)

    st = cockpit.status(name)
    assert (st["state"], st["evaluations"]) == ("done", 2), st
    for args, what in (
        (("resume", name), f"{folder / 'session.db'}: cannot write the session record"),
        (("resume", name, "--detach"), f"cannot write {folder / 'engine.log'}"),
        (
            ("run", str(TOYTASK), "--session", "fresh", *RUN_OPTS, "--budget", "1"),
            f"cannot create the session: {cockpit.sessions / 'fresh'}",
        ),
    ):
        proc = cockpit(*args)
        assert proc.returncode == 2, proc.stdout + proc.stderr
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"cockpit: error: {what}"), proc.stderr
    assert not cockpit.folder("fresh").exists()

    make_writable(cockpit.sessions)
    unlock.clear()
    proc = cockpit("resume", name)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    st = cockpit.status(name)
    assert (st["state"], st["evaluations"]) == ("done", 3), st
    assert_sound(folder)
