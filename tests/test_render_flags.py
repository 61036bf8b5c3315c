"""The eval table repeats a flag kind at most three times: a torch-level QR seed's final carries
one `host-bound` flag per timed shape (41), which would bury the verdict's other lines."""

from __future__ import annotations

import json
from pathlib import Path

from rich.console import Console

from cockpit.render import collapse_flags, print_result

ROOT = Path(__file__).resolve().parents[1]
FINAL = ROOT / "bench/results/h200-2026-11-30g/householder_torch-final.json"


def test_a_kind_is_shown_three_times_then_counted() -> None:
    flags = [f"host-bound: shape {i}: slow" for i in range(5)] + ["impossible: x: too fast"]
    assert collapse_flags(flags) == [
        "host-bound: shape 0: slow",
        "host-bound: shape 1: slow",
        "host-bound: shape 2: slow",
        "impossible: x: too fast",
        "host-bound: … and 2 more shapes",
    ]
    assert collapse_flags(flags[:4]) == flags[:3] + ["host-bound: … and 1 more shape"]
    assert collapse_flags(flags[:3]) == flags[:3]
    assert collapse_flags([]) == []


def test_a_real_h200_final_prints_its_flags_collapsed() -> None:
    r = json.loads(FINAL.read_text())
    assert sum(f.startswith("host-bound: ") for f in r["flags"]) == 41
    console = Console(record=True, width=200)
    print_result(r, console)
    text = console.export_text()
    assert text.count("! host-bound: ") == 4
    assert "host-bound: … and 38 more shapes" in text
    assert "verdict: ok" in text


def test_the_candidate_pane_collapses_them_too() -> None:
    from cockpit.store.models import Candidate
    from cockpit.tui.sources.base import CandidateDetail
    from cockpit.tui.widgets.candidate_detail import feedback_text

    r = json.loads(FINAL.read_text())
    c = Candidate("c0001", "b1", None, "householder", "ok", 1.0, 1.0, None, None, None, None, {})
    text = feedback_text(CandidateDetail(c, None, None, None, r, None)).plain
    assert text.count("! host-bound: ") == 4
    assert "host-bound: … and 38 more shapes" in text


def test_a_gpu_result_shows_the_hosts_time_per_call_beside_the_gpus() -> None:
    """The launch slack keeps host time out of the GPU median (up to 2 ms), so
    the table shows it beside: the same H200 final's `submit_median_us`, per timed shape."""
    r = json.loads(FINAL.read_text())
    console = Console(record=True, width=220)
    print_result(r, console)
    text = console.export_text()
    assert any(" host " in ln for ln in text.splitlines()[:4])  # the header
    row = next(ln for ln in text.splitlines() if "1000×33" in ln)
    assert "9.39 ms" in row  # batch=1000 n=33: 9,390.7 us of host time per call
    # a CPU result keeps the table as it was: its submit time is its median (host clock)
    r["device"] = "cpu"
    for s in r["shapes"]:
        if s.get("timing"):
            s["timing"]["submit_median_us"] = s["timing"]["median_us"]
    console = Console(record=True, width=220)
    print_result(r, console)
    assert not any(" host " in ln for ln in console.export_text().splitlines()[:4])
