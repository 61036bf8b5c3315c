"""`cockpit status` and `cockpit ls` read into a pipe (a log, `watch`, ssh into a file) keep each
line whole: rich's default 80 columns wraps the status line of the recorded H200 session in two.
Runs on a copy of the shipped example record."""

from __future__ import annotations

import shutil
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[2] / "sessions" / "examples" / "qr-h200-2026-11-30g"


def test_status_and_ls_lines_stay_whole_in_a_pipe(cockpit, monkeypatch) -> None:
    monkeypatch.delenv("COLUMNS", raising=False)
    cockpit.sessions.mkdir(parents=True, exist_ok=True)
    shutil.copytree(EXAMPLE, cockpit.folder(EXAMPLE.name))
    status = cockpit("status", EXAMPLE.name, check=True).stdout.splitlines()
    assert status[0].startswith(f"{EXAMPLE.name}  task qr · cuda · stopped (time limit of 5m")
    assert status[0].endswith("5/20 evaluations · best 1.13 ms (c0002)"), status[0]
    rows = [line for line in cockpit("ls", check=True).stdout.splitlines() if EXAMPLE.name in line]
    assert len(rows) == 1 and "stopped" in rows[0] and "1.13 ms" in rows[0], rows
