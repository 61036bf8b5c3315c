"""The judge's own clock over bursts of calls (cockpit/harness/judge_clock.py): forged times are
rejected, honest ones are not, and the clock reads what the arena's process really spends."""

from __future__ import annotations

import re
import subprocess
import sys
import time

import pytest
from judge_helpers import ADVERSARIAL, describe, run_judge

from cockpit.harness import judge_clock
from cockpit.harness.judge_clock import Reading

CLOCK = r"reported times are [\d.]+x below what the judge's clock saw"


def _forge(name: str, divisor: float) -> str:
    src, n = re.subn(
        r"^DIVISOR = [\d.]+", f"DIVISOR = {divisor}", (ADVERSARIAL / name).read_text(), flags=re.M
    )
    assert n == 1
    return src


# --- the reading ----------------------------------------------------------------------------------


def test_the_ladder_runs_from_one_call_to_the_calls_the_memory_allows():
    assert judge_clock.ladder(4, "cpu") == [1, 3, 12, 48, 192, 256]
    assert judge_clock.ladder(1 << 30, "cpu") == [1, 3]  # one output bigger than the budget
    big = judge_clock.ladder(64 << 20, "cuda")  # 64 MiB an output: 64 calls in 4 GiB
    assert big[:2] == [1, 3] and big[-1] == 64
    assert all(b == 4 * a for a, b in zip(big[1:], big[2:-1]))


def test_the_burst_length_holds_the_target_by_the_reported_median():
    ks = judge_clock.ladder(4, "cpu")
    assert judge_clock.burst_calls(1000.0, ks) == 12  # 4 calls wanted: the next step up
    assert judge_clock.burst_calls(1.0, ks) == 256  # more wanted than allowed: the longest
    assert judge_clock.burst_calls(5000.0, ks) == 1  # a call long enough to read alone
    assert judge_clock.burst_calls(3000.0, ks) == 3
    # a forged (smaller) median only makes the burst longer
    assert judge_clock.burst_calls(100.0, ks) >= judge_clock.burst_calls(300.0, ks)


@pytest.mark.parametrize(
    ("burst_us", "median_us", "implausible"),
    [
        (2_600.0 + 256 * 10.0, 10.0, False),  # what the median says
        (2_600.0 + 256 * 35.0, 10.0, False),  # 3.5x it: a shared CPU's contention
        (2_600.0 + 256 * 60.0, 10.0, True),  # six times it, far past the allowance
        (2_600.0 + 256 * 1.0, 0.1, False),  # too little time beyond the null to say anything
    ],
)
def test_a_reading_is_implausible_only_far_above_the_allowance(burst_us, median_us, implausible):
    r = Reading(k=256, burst_us=burst_us, null_us=2_600.0, median_us=median_us, device="cpu")
    assert r.implausible is implausible, (r.per_call_us, r.allowance_us, r.readable)


def test_the_gpu_allows_for_a_launch_on_the_host():
    cpu = Reading(k=64, burst_us=64 * 25.0, null_us=0.0, median_us=5.0, device="cpu")
    gpu = Reading(k=64, burst_us=64 * 25.0, null_us=0.0, median_us=5.0, device="cuda")
    assert cpu.implausible and not gpu.implausible


# --- the clock on the CPU: the CPU time the kernel accounts to the arena's processes ------------

SPIN = "import time\nt = time.process_time()\nwhile time.process_time() - t < {s}: pass\n"


def test_cpu_time_counts_a_process_and_the_processes_it_starts():
    # the child spins 0.4 s of CPU itself, then starts a grandchild that spins 0.4 s more
    code = SPIN.format(s=0.4) + (
        "import subprocess, sys\n"
        f"subprocess.run([sys.executable, '-c', {SPIN.format(s=0.4)!r} + 'time.sleep(2)'])\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", code + "time.sleep(5)"])
    try:
        start = judge_clock.cpu_us(proc.pid)
        deadline = time.monotonic() + 30
        seen = start
        while time.monotonic() < deadline and seen - start < 0.7e6:
            time.sleep(0.1)
            seen = judge_clock.cpu_us(proc.pid)
        assert seen - start >= 0.7e6, "the grandchild's spin must count as the arena's"
    finally:
        proc.kill()
        proc.wait()


def test_cpu_time_does_not_count_sleep():
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3)"])
    try:
        time.sleep(0.5)
        a = judge_clock.cpu_us(proc.pid)
        time.sleep(1.0)
        assert judge_clock.cpu_us(proc.pid) - a < 0.1e6
    finally:
        proc.kill()
        proc.wait()


def test_a_process_that_is_gone_reads_zero():
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    assert judge_clock.cpu_us(proc.pid) == 0


# --- forges ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("divisor", [20.0, 50.0])
def test_a_forge_that_divides_the_reported_times_is_rejected_by_the_clock(divisor):
    """The reply channel rewritten in the candidate's process; the scan is off (the stand-in for
    native code it cannot read): only the judge's clock is left to catch it."""
    src = _forge("reply_forge.py", divisor)
    res = run_judge("softmax", ADVERSARIAL / "reply_forge.py", source=src, static=False)
    assert res.status == "rejected", describe(res)
    hits = [r for r in res.reasons if r.kind == "integrity" and re.search(CLOCK, r.message)]
    assert hits and hits[0].stage == "time" and hits[0].shape, describe(res)


def test_the_same_forge_at_divisor_one_is_judged_ok():
    """The forge's own machinery (a wrapped reply channel) costs nothing the clock objects to."""
    src = _forge("reply_forge.py", 1.0)
    res = run_judge("softmax", ADVERSARIAL / "reply_forge.py", source=src, static=False)
    assert res.status == "ok", describe(res)


def test_the_native_forge_with_the_scan_off_is_rejected_by_the_clock():
    """Issue 31's forge as it is: a load_inline extension runs the wrapping Python through the C
    API. Native code can hide from any scan; the clock still sees the time."""
    pytest.importorskip("ninja")
    src = _forge("native_pyrun_forge.py", 30.0)
    res = run_judge("softmax", ADVERSARIAL / "native_pyrun_forge.py", source=src, static=False)
    if res.status == "load_error":
        pytest.skip(f"no C++ toolchain for load_inline here: {describe(res)}")
    assert res.status == "rejected", describe(res)
    assert any(r.kind == "integrity" and re.search(CLOCK, r.message) for r in res.reasons), describe(res)


FAKE_COMMITS = '''
import json, multiprocessing.connection as _c
import torch

_orig = _c.Connection.send_bytes


def _forged(self, buf, *args, **kwargs):
    msg = json.loads(bytes(buf))
    if isinstance(msg, dict) and isinstance(msg.get("commits"), list):
        msg["commits"] = [0.0 for _ in msg["commits"]]
        buf = json.dumps(msg).encode()
    return _orig(self, buf, *args, **kwargs)


_c.Connection.send_bytes = _forged


def kernel(x):
    return torch.softmax(x, dim=-1)
'''


def test_a_burst_whose_commitments_are_not_its_calls_is_rejected():
    """A burst that claims calls it did not make (here: commitments replaced) cannot back them
    when the judge asks to see one call's outputs."""
    res = run_judge("softmax", ADVERSARIAL / "fake_commits.py", source=FAKE_COMMITS, static=False)
    assert res.status == "rejected", describe(res)
    assert any(
        r.kind == "integrity" and "the burst's reply did not come from its calls" in r.message
        for r in res.reasons
    ), describe(res)
