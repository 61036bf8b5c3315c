"""`cockpit notify`: the cockpit's notifications without the cockpit, as a real process watching
a real session record while events are appended to it; the user's command runs for real."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cockpit.store import SessionRecord, create_session
from cockpit.store import events as ev

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    f = create_session("watched", task="qr", device="cpu", sessions_dir=tmp_path / "sessions")
    with SessionRecord.open(f) as rec:
        rec.append(ev.SESSION_STATE, {"state": "running", "reason": "started"})
        rec.append(ev.BEST_CHANGED, {"candidate": "c0001", "score_us": 900.0}, branch="b1")
    return f


def watch(folder: Path, *args: str, tmp: Path) -> subprocess.Popen:
    env = {**os.environ, "COCKPIT_KEYMAP": str(tmp / "no-config.toml")}
    return subprocess.Popen(
        [sys.executable, "-m", "cockpit.cli", "notify", str(folder), "--interval", "0.05", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=ROOT,
    )


def wait_for(pred, timeout: float = 20.0) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return
        time.sleep(0.05)
    raise AssertionError("timed out")


def test_new_events_become_lines_and_commands_until_the_session_ends(folder, tmp_path):
    out = tmp_path / "calls.txt"
    cmd = f'echo "$COCKPIT_EVENT $COCKPIT_BRANCH $COCKPIT_CANDIDATE $COCKPIT_SCORE_US" >> {out}'
    p = watch(folder, "--command", cmd, tmp=tmp_path)
    assert "watching watched (running)" in p.stdout.readline()  # past events are not reported
    with SessionRecord.open(folder) as rec:
        rec.append(
            ev.BEST_CHANGED,
            {"candidate": "c0007", "score_us": 412.5},
            branch="b2",
            candidate="c0007",
        )
        rec.append(ev.PLATEAU_DETECTED, {"evaluations_since_best": 6}, branch="b3")
        rec.append(ev.NOTE, {"text": "not a notice"})
    wait_for(lambda: out.exists() and len(out.read_text().splitlines()) == 2)
    assert out.read_text().splitlines() == ["best b2 c0007 412.5", "plateau b3  "]
    with SessionRecord.open(folder) as rec:
        rec.append(ev.SESSION_STATE, {"state": "done", "reason": "budget spent"})
    stdout, stderr = p.communicate(timeout=20)
    assert p.returncode == 0, stderr
    lines = stdout.splitlines()
    assert "best" in lines[0] and "new best on b2: c0007" in lines[0]
    assert "plateau" in lines[1] and "b3 reached a plateau" in lines[1]
    assert lines[-1] == "session watched: done" and len(lines) == 3
    assert len(out.read_text().splitlines()) == 2  # nothing ran for the note or the end


def test_kinds_filter_the_past_is_reported_on_request_and_a_failing_command_is_one_line(
    folder, tmp_path
):
    p = watch(
        folder, "--from-start", "--on", "plateau", "error", "--command", "exit 3", tmp=tmp_path
    )
    p.stdout.readline()
    with SessionRecord.open(folder) as rec:
        rec.append(ev.PLATEAU_DETECTED, {"evaluations_since_best": 6}, branch="b1")
        rec.append(ev.BEST_CHANGED, {"candidate": "c0009", "score_us": 1.0}, branch="b1")
        rec.append(ev.SESSION_STATE, {"state": "stopped", "reason": "by command"})
    stdout, stderr = p.communicate(timeout=20)
    assert p.returncode == 0
    assert [line.split()[1] for line in stdout.splitlines()[:-1]] == ["plateau"]  # no bests
    assert stderr.strip() == "cockpit notify: notify command exited 3"


def test_from_start_reports_what_happened_before_the_watch(folder, tmp_path):
    with SessionRecord.open(folder) as rec:
        rec.append(ev.SESSION_STATE, {"state": "done", "reason": "budget spent"})
    p = watch(folder, "--from-start", tmp=tmp_path)
    stdout, _ = p.communicate(timeout=20)
    assert p.returncode == 0
    lines = stdout.splitlines()
    assert "new best on b1: c0001" in lines[1] and lines[-1] == "session watched: done"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--on", "bogus"], "--on bogus: kinds are best, plateau"),
        (["--interval", "0"], "--interval 0.0: must be positive"),
        (["--command", "  "], "--command: must not be empty"),
    ],
)
def test_bad_arguments_are_one_line_and_exit_2(folder, tmp_path, args, message):
    p = watch(folder, *args, tmp=tmp_path)
    stdout, stderr = p.communicate(timeout=20)
    assert p.returncode == 2 and stdout == ""
    assert stderr.count("\n") == 1 and message in stderr


def test_a_folder_that_is_not_a_session_is_one_line_and_exit_2(tmp_path):
    p = watch(tmp_path / "nowhere", tmp=tmp_path)
    _, stderr = p.communicate(timeout=20)
    assert p.returncode == 2 and stderr.count("\n") == 1 and "no session" in stderr
