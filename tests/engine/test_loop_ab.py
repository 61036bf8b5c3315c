"""Improvements confirmed by interleaved A/B timing in one process (`--ab on`), on the toy task.

The chunked seed gets faster as its CHUNK grows, so the tuner's children look faster than their
incumbent and each such look is confirmed (or not) by `judge.compare` in the worker.
"""

from __future__ import annotations

import pytest
from engine_helpers import RUN_OPTS, TOYTASK, Cockpit, events

from cockpit.engine.beam import significantly_better
from cockpit.store import events as ev


def _ok(score: float) -> dict:
    return {"status": "ok", "score_us": score, "shapes": []}


def test_ab_decides_over_the_scores() -> None:
    new, old = _ok(50.0), _ok(100.0)  # the scores alone claim 2x
    slower = {"ok": True, "ratio": 0.97, "ci_low": 0.95, "ci_high": 0.99}
    v = significantly_better(new, old, ab=slower)
    assert not v.better and v.reason.startswith("A/B") and v.ratio == pytest.approx(0.97)
    noisy = {"ok": True, "ratio": 1.05, "ci_low": 0.99, "ci_high": 1.11}
    assert not significantly_better(new, old, ab=noisy).better
    real = {"ok": True, "ratio": 1.2, "ci_low": 1.1, "ci_high": 1.3}
    v = significantly_better(_ok(99.0), old, ab=real)  # the scores alone would say "under 3%"
    assert v.better and v.reason == "A/B +20.0% faster"
    failed = {"ok": False, "kind": "crash", "message": "boom"}
    assert not significantly_better(new, old, ab=failed).reason.startswith("A/B")  # scores decide


def test_a_run_with_ab_on_confirms_every_claimed_improvement(tmp_path) -> None:
    c = Cockpit(sessions=tmp_path / "sessions", cwd=tmp_path)
    try:
        proc = c("run", str(TOYTASK), "--session", "ab", "--budget", "6", "--beam", "1",
                 "--ab", "on", *RUN_OPTS, timeout=400)
    finally:
        c.kill_all()
    assert proc.returncode == 0, proc.stdout + proc.stderr
    folder = c.folder("ab")
    finished = events(folder, ev.EVALUATION_FINISHED)
    compared = [e for e in finished if "ab" in e.payload]
    assert compared, "no candidate was compared with its incumbent"
    for e in compared:
        ab = e.payload["ab"]
        assert ab["ok"], ab
        assert ab["incumbent"] and ab["ratio"] > 0 and ab["ci_low"] <= ab["ratio"] <= ab["ci_high"]
        assert ab["shapes"], "per-shape ratios are recorded"
    bests = [e for e in events(folder, ev.BEST_CHANGED) if e.payload.get("previous_candidate")]
    by_cand = {e.candidate: e.payload["ab"] for e in compared}
    for b in bests:
        assert b.candidate in by_cand, "an improvement was declared without an A/B comparison"
        assert b.payload["why"].startswith("A/B")
    print(f"{len(compared)} compared, {len(bests)} improvements")
