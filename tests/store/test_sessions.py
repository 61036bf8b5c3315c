"""Sessions directory resolution, creation, listing; and that the store imports light."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cockpit.store import (
    SessionRecord,
    create_session,
    find_session,
    latest_session,
    list_sessions,
    resolve_sessions_dir,
)
from cockpit.store import events as ev


def test_sessions_dir_precedence_is_argument_then_env_then_default(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("COCKPIT_SESSIONS_DIR", raising=False)
    assert resolve_sessions_dir() == Path("sessions")
    monkeypatch.setenv("COCKPIT_SESSIONS_DIR", str(tmp_path / "env"))
    assert resolve_sessions_dir() == tmp_path / "env"
    assert resolve_sessions_dir(tmp_path / "arg") == tmp_path / "arg"


def test_create_session_names_it_after_task_and_time(tmp_path: Path) -> None:
    folder = create_session(task="softmax", device="cpu", sessions_dir=tmp_path)
    assert re.fullmatch(r"softmax-\d{8}-\d{6}", folder.name)
    assert (folder / "session.db").is_file() and (folder / "repo" / ".git").is_dir()
    with SessionRecord.open_readonly(folder) as record:
        meta = record.meta()
    assert (meta["name"], meta["task"], meta["device"], meta["state"]) == (
        folder.name,
        "softmax",
        "cpu",
        "created",
    )


def test_create_session_never_reuses_a_folder(tmp_path: Path) -> None:
    names = [
        create_session("run", task="t", device="cpu", sessions_dir=tmp_path).name for _ in range(3)
    ]
    assert names == ["run", "run-2", "run-3"]


def test_create_session_refuses_a_name_with_a_path_in_it(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        create_session("../escape", task="t", device="cpu", sessions_dir=tmp_path)


def test_list_sessions_reports_counts_best_and_a_crash(tmp_path: Path) -> None:
    done = create_session("done", task="softmax", device="cpu", sessions_dir=tmp_path)
    with SessionRecord.open(done) as record:
        record.append(ev.BRANCH_CREATED, {"family": "online"}, branch="b1")
        record.append(ev.EVALUATION_FINISHED, {"status": "ok", "score_us": 5.0}, "b1", "c1")
        record.append(ev.BEST_CHANGED, {"candidate": "c1", "score_us": 5.0}, branch="b1")
        record.append(ev.SESSION_STATE, {"state": "done"})
    time.sleep(0.01)
    crashed = create_session("crashed", task="qr", device="cuda", sessions_dir=tmp_path)
    with SessionRecord.open(crashed) as record:
        record.append(ev.SESSION_STARTED, {"pid": 999999, "host": "h", "resumed": False})
    (tmp_path / "not-a-session").mkdir()
    infos = list_sessions(tmp_path)
    assert [i.name for i in infos] == ["done", "crashed"]
    assert (infos[0].state, infos[0].candidates, infos[0].best_us) == ("done", 1, 5.0)
    assert infos[0].best_candidate == "c1"
    assert (infos[1].state, infos[1].recorded_state, infos[1].engine_pid) == (
        "crashed",
        "running",
        None,
    )


def test_a_running_engine_keeps_its_session_running(tmp_path: Path) -> None:
    folder = create_session("live", task="t", device="cpu", sessions_dir=tmp_path)
    with SessionRecord.open(folder) as record:
        record.acquire_engine_lock()
        record.append(ev.SESSION_STARTED, {"pid": 1, "host": "h", "resumed": False})
        (info,) = list_sessions(tmp_path)
        assert info.state == "running" and info.engine_pid is not None


def test_latest_and_find_session(tmp_path: Path) -> None:
    assert latest_session(tmp_path) is None
    create_session("a", task="t", device="cpu", sessions_dir=tmp_path)
    time.sleep(0.01)
    b = create_session("b", task="t", device="cpu", sessions_dir=tmp_path)
    assert latest_session(tmp_path).name == "b"
    assert find_session("latest", tmp_path) == b
    assert find_session("b", tmp_path) == b
    assert find_session(b) == b
    with pytest.raises(FileNotFoundError):
        find_session("nope", tmp_path)


def test_importing_the_store_loads_no_git_torch_or_textual() -> None:
    code = (
        "import sys, cockpit.store;"
        "print([m for m in ('git', 'torch', 'textual', 'rich') if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
