"""The slack-overrun flag: a shape whose timed calls often return after the launch slack has run
out holds host time in its samples (session 17: 17 x 131073's two launches took 173-192 us of
host time in slow runs against a 205 us hold, and its median read 27-51 us instead of 11-13)."""

from __future__ import annotations

from cockpit.harness.judge import LATE_FLAG_PCT, slack_overrun
from cockpit.harness.result import Result, TimingStats
from cockpit.harness.timing import summarize


def stats(late_pct: float | None, submit: float = 190.0) -> TimingStats:
    s = summarize([12.0, 13.0, 40.0, 51.0], [250.0] * 4, "converged", [submit] * 4)
    s.late_pct = late_pct
    return s


def test_a_shape_whose_calls_outran_the_slack_is_flagged_with_its_numbers():
    flag = slack_overrun("rows=17 cols=131073 float32", stats(37.5), 205.0)
    assert flag == (
        "slack-overrun: rows=17 cols=131073 float32: 38% of timed calls returned after the 205 us "
        "launch slack had run out (host 190 us per call, median): host time is inside those "
        "samples; a cheaper host path (fewer launches) would time true"
    )


def test_a_few_late_calls_or_no_slack_at_all_raise_nothing():
    assert slack_overrun("s", stats(LATE_FLAG_PCT), 205.0) is None  # at the threshold: not above
    assert slack_overrun("s", stats(0.0), 205.0) is None
    assert slack_overrun("s", stats(None), 0.0) is None  # the CPU: no slack, nothing counted
    assert slack_overrun("s", stats(5.1), 205.0) is not None


def test_the_late_share_survives_a_result_round_trip():
    """late_pct is a TimingStats field: saved with the result and read back (replays, the
    session store), and a result saved before it existed still loads (None)."""
    r = Result(task="softmax", candidate="c.py", device="cuda", mode="final")
    d = r.to_dict()
    d["shapes"] = [
        {"shape": "a", "set": "hidden", "hidden": True, "ok": True, "timing": vars(stats(12.5))},
        {"shape": "b", "set": "hidden", "hidden": True, "ok": True, "timing": {
            k: v for k, v in vars(stats(None)).items() if k != "late_pct"
        }},
    ]  # fmt: skip
    back = Result.from_dict(d)
    assert back.shapes[0].timing.late_pct == 12.5
    assert back.shapes[1].timing.late_pct is None
