"""The slack-overrun flag: a shape whose timed calls often return after the launch slack has run
out holds host time in its samples (a two-launch shape whose host time nears the hold's length
reads several times its kernel time)."""

from __future__ import annotations

from cockpit.harness.arena import LAUNCH_SLACK_US, SLACK_SUBMIT_X, slack_target
from cockpit.harness.hold import MAX_US, aim
from cockpit.harness.judge import (
    HOST_BOUND_MIN_US,
    HOST_SLACK_US,
    LATE_FLAG_PCT,
    host_bound,
    host_excess,
    slack_overrun,
)
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


# --- the adaptive launch slack ------------------------------------------------------------------
# A fixed hold is outrun by the timed calls whose host submits take longer than it, and their
# samples then hold host time. The hold follows the host time from its launch until the call
# returned (decision 0017).


def test_the_slack_follows_the_p90_of_the_recent_submit_times_with_a_floor():
    assert slack_target([]) == LAUNCH_SLACK_US
    assert slack_target([40.0] * 64) == LAUNCH_SLACK_US  # a light host: the floor
    submits = [100.0] * 54 + [180.0] * 10  # the p90 is 180 (host us from hold launch to return)
    assert slack_target(submits) == SLACK_SUBMIT_X * 180.0
    assert slack_target([100.0] * 60 + [5000.0] * 4) == LAUNCH_SLACK_US  # a rare stall: not p90


def test_the_hold_is_aimed_in_whole_multiples_of_16_iterations_up_to_its_cap():
    # at 0.01 us an iteration, 200 us is 20,000 iterations; 0.007 us: 28,560 (a multiple of 16,
    # which Triton specializes on, so every length reuses the compiled kernel)
    assert aim(200.0, 0.01) == 20_000
    assert aim(200.0, 0.007) == 28_560
    assert aim(300.0, 0.01) == 30_000  # a slower host asks for more ...
    assert aim(1e6, 0.01) == aim(MAX_US, 0.01) == 200_000  # ... up to MAX_US
    assert aim(0.0, 0.01) == 16  # never a zero-length launch


def test_hidden_work_subtracts_each_calls_own_slack():
    samples = [10.0, 10.0, 10.0]
    # the hold grew from 200 to 400 us with the host: a host clock of slack + 15 us is honest
    host = [215.0, 415.0, 415.0]
    reply = {"flush_us": 200.0, "slacks": [200.0, 400.0, 400.0]}
    assert host_excess(reply, samples, host) == 5.0
    # without the per-call slacks (the sleep) the op's flush cost is what is subtracted
    assert host_excess({"flush_us": 200.0}, samples, host) == 205.0
    # a mismatched list is not trusted
    assert host_excess({"flush_us": 200.0, "slacks": [400.0]}, samples, host) == 205.0
    # work outside the timed stream shows beyond the slack either way
    assert host_excess(reply, samples, [1215.0, 1415.0, 1415.0]) == 1005.0


def timed(gpu_us: float, submit_us: float) -> TimingStats:
    return summarize([gpu_us] * 4, [gpu_us + 250.0] * 4, "converged", [submit_us] * 4)


def test_host_bound_flags_host_time_past_the_base_slack_even_beside_a_tiny_gpu_time():
    """Below HOST_BOUND_MIN_US of GPU time a launch's Python is not flagged (every Triton launch
    costs ~20 us), but host time past the base slack is no launch: the hold stretched to cover
    it, so it is work the clock did not see (a CPU computing while the GPU was held)."""
    assert HOST_SLACK_US == LAUNCH_SLACK_US  # one floor, read by the judge and the arena
    assert host_bound("s", timed(4.0, 120.0)) is None  # one launch's Python at a tiny shape
    assert host_bound("s", timed(4.0, HOST_SLACK_US)) is None
    flag = host_bound("rows=1 cols=4099 float32", timed(4.0, 900.0))
    assert flag == (
        "host-bound: rows=1 cols=4099 float32: 900 us on the host per call (launching it, or "
        "waiting inside it for the GPU) against 4 us on the GPU; back to back, calls would run "
        "at the host's pace"
    )
    # at HOST_BOUND_MIN_US and above, any host time past the GPU's (as before)
    assert host_bound("s", timed(HOST_BOUND_MIN_US, 60.0)) is not None
    assert host_bound("s", timed(68.0, 60.0)) is None  # the GPU is the bottleneck
    assert host_bound("s", summarize([4.0] * 4, [5.0] * 4, "converged", None)) is None  # CPU
