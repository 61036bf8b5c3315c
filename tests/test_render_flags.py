"""The eval table repeats a flag kind at most three times: session 7's QR finals of torch-level
seeds carried one `host-bound` flag per timed shape (41), which buried the verdict's other lines."""

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
