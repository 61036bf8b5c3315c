"""`breakdown_s`: where an evaluation's wall time goes, per shape and summed (making inputs, the
round trip to the arena, the arena's own part, the candidate's calls, reading outputs back,
checking, the judge's clock). It is informational, and the arena's half of it comes from the
candidate's process, so it is sanitized and never feeds a verdict."""

from __future__ import annotations

import math

from judge_helpers import KERNELS, run_judge

from cockpit.harness.judge import _arena_wall
from cockpit.harness.result import ShapeResult

EPS = 0.05  # s: the clocks on both sides are read at slightly different moments


def test_every_shape_says_where_its_seconds_went_and_the_parts_add_up() -> None:
    res = run_judge("softmax", KERNELS / "softmax" / "seeds" / "torch_eager.py")
    assert res.status == "ok", res.reasons
    for sr in res.shapes:
        v = sr.breakdown_s["verify"]
        assert set(v) == {"inputs", "request", "arena", "arena_candidate", "outputs", "check"}
        assert all(x >= 0 for x in v.values())
        assert v["arena_candidate"] <= v["arena"] + EPS <= v["request"] + 2 * EPS
        if sr.timing is not None:
            t = sr.breakdown_s["time"]
            assert {"inputs", "request", "arena", "arena_loop", "check"} <= set(t)
            assert t["arena_loop"] <= t["arena"] + EPS <= t["request"] + 2 * EPS
            if sr.set == "benchmark":  # the judge's bursts on the shapes the score is made of
                assert 0 < t["judge_clock"] <= res.stage_s["time"]
        else:
            assert "time" not in sr.breakdown_s
    for stage in ("verify", "time"):
        for key, total in res.breakdown_s[stage].items():
            parts = sum(sr.breakdown_s.get(stage, {}).get(key, 0.0) for sr in res.shapes)
            assert math.isclose(total, parts, abs_tol=1e-2), (stage, key)
    # the judge-side parts of a stage fit inside the stage's own clock
    for stage in ("verify", "time"):
        b = res.breakdown_s[stage]
        judge_side = b["inputs"] + b["request"] + b.get("outputs", 0.0) + b["check"]
        assert judge_side <= res.stage_s[stage] + EPS


def test_the_arenas_account_is_sanitized_before_it_is_kept() -> None:
    sr = ShapeResult(shape="s", set="public", hidden=False, ok=True)
    _arena_wall(sr, "verify", {"wall_s": {"arena": "1e9", "candidate": float("nan"), "loop": True}})
    _arena_wall(sr, "verify", {"wall_s": [1, 2]})
    _arena_wall(sr, "verify", "not a reply")
    _arena_wall(sr, "time", {"wall_s": {"arena": -1.0, "candidate": 2e6, "other": 5.0}})
    assert sr.breakdown_s.get("verify", {}) == {}
    assert sr.breakdown_s.get("time", {}) == {}
    _arena_wall(sr, "time", {"wall_s": {"arena": 1.5, "loop": 1}})
    assert sr.breakdown_s["time"] == {"arena": 1.5, "arena_loop": 1.0}


def test_the_eval_table_says_where_the_time_went_in_one_line() -> None:
    from cockpit.render import where_time_went

    r = {
        "stage_s": {"verify": 124.0, "time": 83.0},
        "breakdown_s": {
            "verify": {"inputs": 3.0, "request": 100.0, "arena": 98.0, "arena_candidate": 60.0,
                       "outputs": 10.0, "check": 20.0},
            "time": {"inputs": 5.0, "request": 70.0, "arena": 65.0, "arena_loop": 40.0,
                     "check": 6.0},
        },
    }  # fmt: skip
    assert where_time_went(r) == (
        "verify 124.0 s = candidate 60.0, checks 20.0, inputs/transfers/guards 44.0; "
        "time 83.0 s = sampling 40.0, warm-up 25.0, checks 6.0, inputs/transfers 12.0"
    )
    assert where_time_went({"stage_s": {"load": 1.0}}) == ""  # a load error has no breakdown
    r["breakdown_s"]["time"]["judge_clock"] = 7.0
    r["breakdown_s"]["load"] = {"judge_clock": 2.0}
    assert where_time_went(r).endswith(
        "checks 6.0, judge's clock 7.0, inputs/transfers 5.0; load: null bursts 2.0 s"
    )


def test_the_judges_clock_says_what_it_cost() -> None:
    """The null bursts before the import and the bursts after each benchmark shape's timing are
    in the breakdown, so any evaluation says what the cross-check cost it."""
    res = run_judge("softmax", KERNELS / "softmax" / "seeds" / "torch_eager.py")
    assert res.status == "ok", res.reasons
    null = res.breakdown_s["load"]["judge_clock"]
    assert 0 < null <= res.stage_s["load"] + EPS
    bursts = res.breakdown_s["time"]["judge_clock"]
    assert 0 < bursts <= res.stage_s["time"] + EPS
