"""A damaged session folder: a truncated, corrupted or emptied `session.db`, a missing `repo/`, a
stale `engine.lock`. `cockpit status` and `cockpit resume` answer with one line naming the file
and exit 2, or recover safely; never a traceback, and the damaged file is left as it was (no
new, empty record or repository made in its place).

Real `cockpit` processes on a session the toy task really ran (`cockpit run`)."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from engine_helpers import RUN_OPTS, TOYTASK, Cockpit, events

from cockpit.store import SessionRecord
from cockpit.store import events as ev


@pytest.fixture(scope="module")
def done_session(tmp_path_factory) -> Path:
    """A session the toy task ran to its budget of 2, made once for the module."""
    root = tmp_path_factory.mktemp("base")
    c = Cockpit(sessions=root / "sessions", cwd=root)
    c("run", str(TOYTASK), "--session", "base", *RUN_OPTS, "--budget", "2", check=True)
    assert c.status("base")["state"] == "done"
    return c.folder("base")


def copy_of(done_session: Path, cockpit: Cockpit, name: str) -> Path:
    folder = cockpit.folder(name)
    cockpit.sessions.mkdir(parents=True, exist_ok=True)
    shutil.copytree(done_session, folder)
    return folder


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def kept(folder: Path) -> list[str]:
    """The folder's entries, SQLite's own -wal/-shm side files aside."""
    return sorted(p.name for p in folder.iterdir() if not p.name.endswith(("-wal", "-shm")))


def one_line_error(proc: subprocess.CompletedProcess, *names: str) -> str:
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("cockpit: error: "), lines[0]
    for n in names:
        assert n in lines[0], lines[0]
    return lines[0]


def truncate(db: Path) -> None:
    data = db.read_bytes()
    db.write_bytes(data[: len(data) // 3])


def scribble(db: Path) -> None:
    """Overwrite the schema page and a stretch of the data pages with garbage."""
    data = bytearray(db.read_bytes())
    data[100:4000] = b"\xff" * 3900
    data[len(data) // 2 : len(data) // 2 + 8192] = b"\x00" * 8192
    db.write_bytes(bytes(data))


def empty(db: Path) -> None:
    db.write_bytes(b"")


def not_sqlite(db: Path) -> None:
    db.write_text("this is not a database\n" * 100)


@pytest.mark.parametrize(
    "damage", [truncate, scribble, empty, not_sqlite], ids=lambda f: f.__name__
)
def test_a_damaged_session_db_is_a_one_line_error_naming_it(
    done_session: Path, cockpit: Cockpit, damage
) -> None:
    folder = copy_of(done_session, cockpit, "hurt")
    db = folder / "session.db"
    damage(db)
    before = digest(db)
    names = kept(folder)
    for args in (
        ("status", "hurt"),
        ("status", "hurt", "--json"),
        ("resume", "hurt"),
        ("resume", "hurt", "--detach"),
        ("send", "hurt", "set-budget", "5", "--queue"),
        ("attach", "hurt"),
        ("serve", "hurt"),
        ("notify", "hurt"),
    ):
        line = one_line_error(cockpit(*args), str(db), "session record is unreadable")
        assert "nothing was changed" in line
    assert digest(db) == before  # not "repaired" into a new, empty record
    assert kept(folder) == names  # and nothing made next to it
    listing = cockpit("ls", "--json", check=True)
    assert [(s["session"], s["state"]) for s in json.loads(listing.stdout)] == [
        ("hurt", "unreadable")
    ]


def test_an_engine_never_starts_a_damaged_record_over(done_session: Path, cockpit: Cockpit) -> None:
    """The engine process itself (what `resume --detach` spawns) refuses an emptied record
    instead of creating the schema in it and starting the session from nothing."""
    folder = copy_of(done_session, cockpit, "emptied")
    empty(folder / "session.db")
    proc = cockpit("_engine", str(folder))
    one_line_error(proc, str(folder / "session.db"), "empty or truncated")
    assert (folder / "session.db").stat().st_size == 0


def test_a_missing_repo_is_named_and_nothing_is_remade(
    done_session: Path, cockpit: Cockpit
) -> None:
    folder = copy_of(done_session, cockpit, "norepo")
    shutil.rmtree(folder / "repo")
    status = cockpit("status", "norepo", "--json")
    assert status.returncode == 0, status.stderr  # the record reads: status shows it ...
    assert json.loads(status.stdout)["state"] == "done"
    warning = status.stderr.strip().splitlines()  # ... and says what is missing
    assert len(warning) == 1 and warning[0].startswith("cockpit: warning: ")
    assert str(folder / "repo") in warning[0] and "2 committed candidates" in warning[0]
    cockpit("send", "norepo", "set-budget", "4", "--queue", check=True)
    for args in (("resume", "norepo"), ("resume", "norepo", "--detach"), ("_engine", str(folder))):
        line = one_line_error(cockpit(*args), str(folder / "repo"))
        assert "candidate repository is missing" in line
    assert not (folder / "repo").exists()  # no new, empty repository in its place
    with SessionRecord.open_readonly(folder) as rec:
        assert len(rec.commands("pending")) == 1  # the queued command waits, unapplied
        assert rec.integrity_check() == "ok"
    assert len(events(folder, ev.SESSION_STARTED)) == 1


@pytest.mark.parametrize("content", ["dead", "garbage"])
def test_a_stale_lock_from_a_dead_engine_is_taken_over(
    done_session: Path, cockpit: Cockpit, content: str
) -> None:
    """`engine.lock` left by an engine that died (its pid, no longer running, or bytes that are
    no pid at all): the lock is the kernel's flock, released with its holder, so `status` says
    no engine runs and `resume` takes the lock over and runs."""
    folder = copy_of(done_session, cockpit, "stale")
    if content == "dead":
        gone = subprocess.Popen([sys.executable, "-c", "pass"])
        gone.wait()
        (folder / "engine.lock").write_text(f"{gone.pid}\n")
    else:
        (folder / "engine.lock").write_bytes(b"\x00\xffnot a pid")
    st = cockpit.status("stale")
    assert st["pid"] is None and st["state"] == "done"
    cockpit("send", "stale", "set-budget", "3", "--queue", check=True)
    proc = cockpit("resume", "stale")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    st = cockpit.status("stale")
    assert (st["state"], st["evaluations"]) == ("done", 3)
    assert [e.payload["resumed"] for e in events(folder, ev.SESSION_STARTED)] == [False, True]
