"""The soak run, bounded for CI (`bench/soak.py --evals N` is the full one): a real `cockpit run`
on the CPU against a scripted provider on 127.0.0.1 that mixes good, wrong, raising, hanging,
flooding and duplicate candidates, replies without usable code, 429s, 500s and a stream dropped
half-way. It ends with every evaluation accounted for in the record, `PRAGMA integrity_check`
ok, `git fsck` clean and no process left behind.

Marked `slow` (it spawns many evaluations); `.ci/run` runs every test, slow ones included.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EVALS = 50  # about a minute and a half on one idle core


def _soak():
    spec = importlib.util.spec_from_file_location("soak", ROOT / "bench" / "soak.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["soak"] = module
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_a_soak_run_accounts_for_every_evaluation_and_leaves_nothing_behind(tmp_path):
    report = _soak().run_soak(EVALS, tmp_path / "soak", beam=2, timeout_s=500)
    assert report["problems"] == [], report
    assert report["state"] == "done" and report["evaluations"] == EVALS
    assert report["integrity_check"] == "ok" and report["git_fsck_rc"] == 0
    assert report["left_behind"] == []
    # the script's mix reached the engine: provider errors, unusable replies and every verdict
    served = report["served"]
    for kind in ("good", "wrong", "raising", "hanging", "flooding", "429", "500", "cut", "prose"):
        assert served.get(kind), (kind, served)
    assert served.get("duplicate") and served.get("syntax"), served
    assert report["statuses"].get("ok") and report["statuses"].get("timeout"), report
    assert report["truncated"] and report["raised"], report
    # every request the server received is counted in the record (none lost, none invented)
    assert report["requests_received"] == report["requests_recorded"] > EVALS
