"""The loop's cascade, warm arenas and per-call limits, through the real judge and real spawned
arena processes on the CPU, on the tiered toy task (`tests/tiered_task.py`)."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest
from judge_helpers import describe
from tiered_task import PROMOTED, tiered_task

from cockpit.harness import warm
from cockpit.harness.judge import Options, evaluate
from cockpit.harness.task import TaskError, load_task

GOOD = "import torch\n\n\ndef kernel(x):\n    return x * 2 + 1\n"
# right on every screened shape; on the promoted one (41 rows) it is off by one
WRONG_ON_PROMOTED = (
    "import torch\n\n\ndef kernel(x):\n"
    "    y = x * 2 + 1\n"
    "    return y + 1 if x.shape[0] == 41 else y\n"
)


def judge(root: Path, source: str, **opts) -> object:
    task = load_task(root)
    return evaluate(
        task, "candidate.py", Options(device="cpu", mode="quick", **opts), source=source
    )


@pytest.fixture(autouse=True)
def no_spare_left():
    yield
    warm.drop()


def test_a_tier_is_declared_per_shape_and_verify_only_shapes_default_to_promote(tmp_path):
    task = load_task(tiered_task(tmp_path))
    tiers = {s.describe(): s.tier for s in task.shape_set("cpu", "hidden")}
    assert tiers == {"rows=37 cols=16 float32": "screen", PROMOTED: "promote"}
    softmax = load_task("softmax")
    big = [s for s in softmax.shape_set("cuda", "hidden") if not s.timed]
    assert big and all(s.tier == "promote" for s in big)  # the > 2**31 one
    assert all(s.tier == "screen" for s in softmax.shape_set("cuda", "hidden") if s.timed)


@pytest.mark.parametrize(
    "entry, field",
    [
        ('{ rows = 41, cols = 16, dtype = "float32", tier = "later" }', "tier"),
        ('{ rows = 41, cols = 16, dtype = "float32", tier = 3 }', "tier"),
    ],
)
def test_a_bad_tier_is_a_one_line_error_naming_the_field(tmp_path, entry, field):
    root = tiered_task(tmp_path)
    text = (root / "task.toml").read_text()
    (root / "task.toml").write_text(
        text.replace('{ rows = 41, cols = 16, dtype = "float32", tier = "promote" }', entry)
    )
    with pytest.raises(TaskError, match=rf"shapes.*hidden\[1\]\.{field}"):
        load_task(root)


@pytest.mark.parametrize(
    "limits, message",
    [
        ("[limits]\ncall_floor_s = -1\n", "limits.call_floor_s"),
        ("[limits]\nhang_s = 3\n", "unknown field 'limits.hang_s'"),
        ("[limits]\nfirst_call_s = true\n", "limits.first_call_s. must be a positive number"),
    ],
)
def test_bad_limits_are_one_line_errors(tmp_path, limits, message):
    with pytest.raises(TaskError, match=message):
        load_task(tiered_task(tmp_path, limits))


def test_without_an_incumbent_a_screened_candidate_is_promoted_and_checked_everywhere(tmp_path):
    r = judge(tiered_task(tmp_path), GOOD, cascade=True)
    assert r.status == "ok", describe(r)
    assert r.tier == "promoted" and "no incumbent" in r.promotion["why"]
    assert PROMOTED in [s.shape for s in r.shapes]


def test_a_candidate_wrong_only_on_a_promoted_shape_is_wrong_and_the_verdict_names_it(tmp_path):
    root = tiered_task(tmp_path)
    r = judge(root, WRONG_ON_PROMOTED, cascade=True)
    assert r.status == "wrong" and r.tier == "promoted", describe(r)
    assert [x.shape for x in r.reasons] == [PROMOTED]
    # screened alone (an incumbent far faster than anything) it is not promoted, and says so
    fast = judge(root, GOOD).to_dict()
    for s in fast["shapes"]:
        if s.get("timing"):
            s["timing"]["median_us"] = s["timing"]["mean_us"] = 1e-3
    r2 = judge(root, WRONG_ON_PROMOTED, cascade=True, incumbent=fast)
    assert r2.status == "ok" and r2.tier == "screened", describe(r2)
    assert "not promoted" in r2.promotion["why"]
    assert PROMOTED not in [s.shape for s in r2.shapes]


def test_the_full_evaluation_is_unchanged_without_the_cascade(tmp_path):
    r = judge(tiered_task(tmp_path), WRONG_ON_PROMOTED)
    assert r.status == "wrong" and r.tier == "full", describe(r)


MARKER = (
    "import os\n\nimport torch\n\n"
    "SEEN = os.environ.get('COCKPIT_TEST_MARKER')\n"
    "os.environ['COCKPIT_TEST_MARKER'] = 'left by an earlier candidate'\n\n\n"
    "def kernel(x):\n"
    "    return x * 2 + 1 if SEEN is None else x * 0\n"
)


def test_a_warm_arena_is_a_fresh_process_that_no_earlier_candidate_touched(tmp_path):
    """Each candidate leaves a marker in its process's environment and is wrong if it finds one:
    three in a row through warm arenas all pass, the later two in arenas started ahead."""
    root = tiered_task(tmp_path)
    results = [judge(root, MARKER, warm=True, static=False) for _ in range(3)]
    assert [r.status for r in results] == ["ok"] * 3, [describe(r) for r in results]
    arenas = [r.protections.get("arena", "") for r in results]
    assert arenas[0] == "started for this candidate"
    assert all(a.startswith("warm") for a in arenas[1:]), arenas
    # ... and the marker is real: a candidate that finds it set fails
    bad = MARKER.replace("SEEN = os.environ.get('COCKPIT_TEST_MARKER')", "SEEN = 'x'")
    assert judge(root, bad, static=False).status == "wrong"


def test_a_spare_of_another_task_configuration_is_not_used(tmp_path):
    root = tiered_task(tmp_path)
    judge(root, GOOD, warm=True)
    r = judge(root, GOOD, warm=True, memory_bytes=6 << 30)  # another arena limit
    assert r.status == "ok" and r.protections["arena"] == "started for this candidate"


SPIN = "import torch\n\n\ndef kernel(x):\n    while True:\n        x = x + 0\n"
SPIN_ON_SHAPE = (
    "import torch\n\n\ndef kernel(x):\n"
    "    while x.shape[0] == 96:\n        x = x + 0\n"
    "    return x * 2 + 1\n"
)


def test_a_call_that_never_returns_is_ended_at_its_per_call_limit(tmp_path):
    root = tiered_task(tmp_path)
    t0 = time.monotonic()
    r = judge(root, SPIN, limits={"call_floor_s": 1.0, "first_call_s": 2.0})
    took = time.monotonic() - t0
    assert r.status == "timeout", describe(r)
    assert r.reasons[0].shape == "rows=64 cols=16 float32"
    assert "ran past its" in r.reasons[0].message
    assert took < 30, f"a hang cost {took:.0f} s"


def test_a_hang_that_compiles_nothing_gets_no_compile_allowance(tmp_path):
    """The first call's allowance is for compiling: a call that spins without starting a
    compile is ended at its per-call limit, however large the allowance."""
    root = tiered_task(tmp_path)
    t0 = time.monotonic()
    r = judge(root, SPIN, limits={"call_floor_s": 1.0, "first_call_s": 300.0})
    took = time.monotonic() - t0
    assert r.status == "timeout", describe(r)
    # verify makes two calls (the second on perturbed inputs): 2 x 1 s, no allowance
    assert "ran past its 2 s limit" in r.reasons[0].message, r.reasons[0].message
    assert took < 60, f"a hang cost {took:.0f} s"
    assert r.protections.get("compile_beacon") == ["triton", "dynamo"]


COMPILED_SLOWLY = (
    "import torch\n\n\n"
    "@torch.compile(dynamic=False)\n"
    "def _f(x):\n    return x * 2 + 1\n\n\n"
    "def kernel(x):\n    return _f(x)\n"
)


@pytest.mark.skipif(shutil.which("g++") is None, reason="Inductor on the CPU needs a C++ compiler")
def test_a_first_call_that_compiles_gets_the_allowance(tmp_path):
    """A `torch.compile`d candidate compiles on each shape's first call, far past a per-call
    limit of a fraction of a second: Dynamo's compile start is counted, so it gets the
    allowance and passes; without the count it would be a hang."""
    root = tiered_task(tmp_path)
    r = judge(root, COMPILED_SLOWLY, limits={"call_floor_s": 0.2, "first_call_s": 300.0})
    assert r.status == "ok", describe(r)


def test_the_per_call_limit_comes_from_the_task_and_names_a_later_shape(tmp_path):
    root = tiered_task(tmp_path, "[limits]\ncpu_call_floor_s = 1\ncpu_first_call_s = 2\n")
    t0 = time.monotonic()
    r = judge(root, SPIN_ON_SHAPE, cascade=True)
    assert r.status == "timeout", describe(r)
    assert r.reasons[0].shape == "rows=96 cols=16 float32"
    assert time.monotonic() - t0 < 30


def test_an_arena_started_ahead_sets_up_only_once_configured(tmp_path):
    """A spare on a GPU must not touch the device while another candidate is timed: it imports,
    then waits for its configuration before it sets up (CUDA context, hold, sandbox)."""
    root = tiered_task(tmp_path)
    cfg = {
        "device": "cpu",
        "n_outputs": 1,
        "forbidden_ops": [],
        "forbidden_cnames": [],
        "sandbox": True,
        "exclude": [str(root)],
        "memory_bytes": 4 << 30,
    }
    cache = tmp_path / "cache"
    cache.mkdir()
    a = warm.start(cfg, device="cpu", exchange="memfd", memory_bytes=None, cache=cache, prime=False)
    try:
        assert not a.ch.conn.poll(8.0), "set up before it was configured"
        assert a.alive()
        a.prime()
        assert a.wait_ready(time.monotonic() + 60) == {"ready": True}
    finally:
        a.close()
