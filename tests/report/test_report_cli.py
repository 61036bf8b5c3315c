"""`cockpit report` and `cockpit export` through the real CLI (`python -m cockpit.cli` in a
child process), their outputs and their error paths."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from report_sessions import (
    EXAMPLE,
    REPO_ROOT,
    build_cpu_session,
    build_failed_session,
    build_llm_session,
)

from cockpit.harness.static_scan import scan
from cockpit.harness.task import load_task
from cockpit.report import END_OF_HEADER


def cockpit(*args: str, cwd: Path = REPO_ROOT) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}  # this checkout's cockpit, from any cwd
    return subprocess.run(
        [sys.executable, "-m", "cockpit.cli", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )


def usage_error(proc: subprocess.CompletedProcess, *words: str) -> None:
    """Exit 2 and one line on stderr that says what was wrong."""
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("cockpit: error: "), proc.stderr
    for w in words:
        assert w in lines[0], (w, lines[0])


def split_export(text: str) -> tuple[str, str]:
    header, sep, source = text.partition(END_OF_HEADER)
    assert sep, "no end-of-header line"
    assert all(line.startswith("#") for line in header.splitlines())
    return header, source


def recorded_source(folder: Path, cid: str) -> str:
    import sqlite3

    uri = f"{(folder / 'session.db').resolve().as_uri()}?mode=ro"
    with sqlite3.connect(uri, uri=True) as conn:
        (payload,) = conn.execute(
            "SELECT payload FROM events WHERE kind = 'candidate_proposed' AND candidate = ?",
            (cid,),
        ).fetchone()
    return json.loads(payload)["source"]


def test_report_of_the_example_through_the_cli(tmp_path):
    out = tmp_path / "example.html"
    proc = cockpit("report", str(EXAMPLE), "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    assert f"wrote {out}" in proc.stdout
    page = out.read_text()
    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")
    assert page.count("<svg") == 2 and "Best candidate per shape (c0002)" in page
    # without -o the page is SESSION.html in the current directory
    proc = cockpit("report", str(EXAMPLE), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "qr-h200-2026-11-30g.html").is_file()


def test_report_errors_are_one_line_and_exit_2(tmp_path):
    usage_error(cockpit("report", str(tmp_path / "nowhere")), "no session")
    usage_error(
        cockpit("report", str(EXAMPLE), "-o", str(tmp_path / "missing" / "r.html")),
        "cannot write",
    )
    proc = cockpit("report")
    assert proc.returncode == 2 and "session" in proc.stderr


def test_export_of_the_best_passes_the_tasks_scan_and_keeps_the_source(tmp_path):
    out = tmp_path / "best.py"
    proc = cockpit("export", str(EXAMPLE), "--best", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "c0002" in proc.stderr and proc.stdout == ""
    header, source = split_export(out.read_text())
    original = recorded_source(EXAMPLE, "c0002")
    assert source == original  # byte for byte after the header
    forbidden = load_task("qr").forbidden
    assert scan(original, forbidden) == []
    assert scan(out.read_text(), forbidden) == []
    for line in (
        "# session:   qr-h200-2026-11-30g (task qr, device cuda, cuda-NVIDIA_H200)",
        "# candidate: c0002",
        "# branch:    b1",
        "# family:    fused-small-n",
        "# parent:    none (a seed)",
        "# model:     none (offline tuner)",
        "# note:      seed",
    ):
        assert line in header.splitlines(), line
    assert re.search(r"^# verdict:   ok, score 1\.13 ms \(geomean 3\.77 ms", header, re.M)
    assert (
        "# shapes: 63 checked (22 public, 29 hidden, 12 benchmark), 63 correct, 41 timed" in header
    )
    assert "#   batch=1 n=1 cond=1 family=dense float32 [hidden]: 5.25 µs (floor 3 µs," in header

    # no CANDIDATE and no --best is the best too; without -o it goes to stdout
    proc = cockpit("export", str(EXAMPLE))
    assert proc.returncode == 0, proc.stderr
    assert split_export(proc.stdout)[1] == original


def test_export_of_a_named_candidate_and_its_parent(tmp_path):
    proc = cockpit("export", str(EXAMPLE), "c0004")
    assert proc.returncode == 0, proc.stderr
    header, source = split_export(proc.stdout)
    assert source == recorded_source(EXAMPLE, "c0004")
    assert "# parent:    c0001" in header and "# note:      USE_TF32X3: False -> True" in header
    # a proposed candidate never evaluated still exports, and says so
    proc = cockpit("export", str(EXAMPLE), "c0007")
    header, source = split_export(proc.stdout)
    assert "# verdict:   proposed" in header and source == recorded_source(EXAMPLE, "c0007")


@pytest.fixture(scope="module")
def llm_session(tmp_path_factory) -> tuple[Path, dict[str, str]]:
    folder = tmp_path_factory.mktemp("sessions") / "softmax-llm"
    return folder, build_llm_session(folder).sources


def test_export_reads_the_candidate_repository_when_the_record_has_no_source(llm_session):
    folder, sources = llm_session
    proc = cockpit("export", "softmax-llm", "--best", "--sessions-dir", str(folder.parent))
    assert proc.returncode == 0, proc.stderr
    header, source = split_export(proc.stdout)
    assert source == sources["c0007"]  # committed to repo/ only
    assert scan(proc.stdout, load_task("softmax").forbidden) == []
    assert "# model:     anthropic/model-c" in header and "# parent:    c0004" in header
    assert "# commit:    " in header


def test_export_errors_are_one_line_and_exit_2(tmp_path, llm_session):
    usage_error(cockpit("export", str(tmp_path / "nowhere")), "no session")
    usage_error(cockpit("export", str(EXAMPLE), "c9999"), "no candidate 'c9999'")
    usage_error(cockpit("export", str(EXAMPLE), "c0002", "--best"), "not both")
    usage_error(
        cockpit("export", str(EXAMPLE), "c0002", "-o", str(tmp_path / "missing" / "x.py")),
        "cannot write",
    )
    failed = tmp_path / "failed"
    build_failed_session(failed)
    usage_error(cockpit("export", str(failed), "--best"), "no candidate passed")
    # a candidate whose source is in neither the record nor the repository
    folder, _ = llm_session
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "session.db").write_bytes((folder / "session.db").read_bytes())
    usage_error(cockpit("export", str(broken), "c0007"), "no source recorded for c0007")
    assert not (tmp_path / "missing").exists()


@pytest.mark.slow
def test_an_exported_candidate_is_judged_as_the_candidate_was(llm_session, tmp_path):
    """The header is comments only: the harness loads, checks and times the exported file."""
    folder, _ = llm_session
    out = tmp_path / "c0002.py"
    assert cockpit("export", str(folder), "c0002", "-o", str(out)).returncode == 0
    proc = cockpit("eval", "softmax", str(out), "--device", "cpu", "--quick", "--json")
    verdict = json.loads(proc.stdout.strip().splitlines()[-1])
    assert proc.returncode == 0 and verdict["status"] == "ok", verdict.get("reasons")
    assert verdict["comparable"] is False  # the Triton interpreter, labelled as such


def test_a_note_or_reason_with_newlines_stays_inside_the_comments():
    from cockpit.report.export import header
    from cockpit.store.models import Candidate

    c = Candidate("c1", "b1", None, "f", "wrong", None, None, None, None, None, None, {})
    result = {"status": "wrong", "reasons": [{"kind": "numerical", "message": "a\nimport os"}]}
    text = header(
        {"name": "s", "task": "t", "device": "cpu"}, c, result, "x = 1\n\nraise SystemExit"
    )
    assert text.endswith(END_OF_HEADER)
    assert all(line.startswith("#") for line in text.splitlines())
    assert "# import os" in text and "# raise SystemExit" in text


def test_export_best_of_a_cpu_session_is_a_candidate_not_the_baseline(tmp_path):
    folder = tmp_path / "softmax-cpu"
    sources = build_cpu_session(folder).sources
    proc = cockpit("export", str(folder), "--best")
    header, source = split_export(proc.stdout)
    assert "# candidate: c0002" in header and source == sources["c0002"]
    assert "# times:     not comparable (Triton interpreter on a CPU)" in header
