"""The kernel-development tools under bench/ that run without a GPU: sass_stats (compile for
sm_90 here and count the loop's machine code), pick_variant (the fastest passing variant of a
qr_direct run written into a copy of the seed), direct on the CPU, and plot_speedups (charts of
recorded results)."""

import json
import os
import subprocess
import sys
from pathlib import Path
from xml.etree import ElementTree

import pytest

ROOT = Path(__file__).resolve().parents[1]

LOOP_KERNEL = """
import triton
import triton.language as tl


@triton.jit
def scale_rows(X, n, steps, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(X + offs, mask=offs < n, other=0.0)
    for i in range(0, steps):
        x = x * 0.5 + tl.sum(x, 0) / BLOCK
    tl.store(X + offs, x, mask=offs < n)
"""


def run_tool(*args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}  # compile, not interpret
    return subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, env=env, cwd=ROOT, timeout=300
    )


def test_sass_stats_counts_the_loop_of_a_kernel_compiled_for_sm90_without_a_gpu(tmp_path):
    src = tmp_path / "k.py"
    src.write_text(LOOP_KERNEL)
    out = tmp_path / "stats.json"
    r = run_tool(
        "bench/sass_stats.py", str(src), "scale_rows", "--const", "BLOCK=1024",
        "--div", "X", "--warps", "4", "--json", str(out),
    )  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    assert "scale_rows sm_90 4 warps: regs" in r.stdout
    doc = json.loads(out.read_text())
    assert doc["resources"]["regs"] > 0
    (loop,) = doc["loops"]  # one runtime loop: the steps loop
    # a cross-warp sum per step: shuffles inside warps, a barrier to combine the warps
    assert loop["instructions"] > 10 and loop["SHFL"] > 0 and loop["BAR"] > 0
    assert loop["STL"] == loop["LDL"] == 0  # no spills in so small a kernel


def _persist_panel_ptx(tmp_path: Path, *sig: str) -> subprocess.CompletedProcess:
    """triton_fused's `_panel_persist` compiled for sm_90 (64 rows, 32 columns, 64 programs a
    matrix, 4 warps), its PTX in tmp_path / k.ptx and its loop counts in tmp_path / k.json."""
    return run_tool(
        "bench/sass_stats.py", "kernels/qr/seeds/triton_fused.py", "_panel_persist",
        "--const", "RB=64", "NBP=32", "PP=64", "--div", "H", "V", "T", "TAU",
        "S", "CNT", "n", "k", "v_bs", "m", "--sig", *sig, "--warps", "4",
        "--ptx", str(tmp_path / "k.ptx"), "--json", str(tmp_path / "k.json"),
    )  # fmt: skip


def test_the_persistent_qr_panel_compiles_to_a_grid_barrier_with_release_and_acquire(tmp_path):
    """triton_fused's `_panel_persist` (no GPU here to run it): the barrier between the programs
    of a matrix must be a release add and an acquire poll at GPU scope, behind CTA barriers, and
    the partial statistics other SMs wrote must be read from L2 (`.cg`), never a stale L1 line."""
    ptx, stats = tmp_path / "k.ptx", tmp_path / "k.json"
    r = _persist_panel_ptx(tmp_path, "CNT=*i32")
    assert r.returncode == 0, r.stdout + r.stderr
    text = ptx.read_text()
    assert "atom.global.gpu.release.add" in text
    # one thread per program arrives (predicated), not every thread: the counter counts programs
    (arrive,) = [line for line in text.splitlines() if "atom.global.gpu.release.add" in line]
    assert arrive.strip().startswith("@%p")
    assert "ld.global.gpu.acquire" in text
    assert "ld.global.cg" in text and "bar.sync" in text
    doc = json.loads(stats.read_text())
    assert doc["loops"] and all(row["STL"] == row["LDL"] == 0 for row in doc["loops"])  # no spills


QR_RESULTS = ROOT / "bench" / "results"
GEQRF_FINAL = QR_RESULTS / "h200-2026-11-30g" / "torch_geqrf-final.json"
FUSED_FINAL = QR_RESULTS / "h200-2026-12-01h" / "parts" / "triton_fused-final-call5-merged.json"


def test_plot_speedups_charts_real_results_against_their_baseline(tmp_path):
    """bench/plot_speedups.py on two recorded H200 `--final` results: per benchmark spec the
    baseline's mean over the result's, the harness's weighted geomean last, an SVG with one bar
    per (spec, series) and the target line, and the same numbers in JSON."""
    r = run_tool(
        "bench/plot_speedups.py", str(GEQRF_FINAL), f"{FUSED_FINAL}=session-9", "--target", "50",
        "--out", str(tmp_path),
    )  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    base, fused = (json.loads(p.read_text()) for p in (GEQRF_FINAL, FUSED_FINAL))
    doc = json.loads((tmp_path / "speedups.json").read_text())
    assert doc["task"] == "qr" and len(doc["shapes"]) == 12
    ratio = base["geomean_us"] / fused["geomean_us"]  # both the harness's weighted geomean
    assert abs(doc["speedups"]["session-9"]["geomean"] - ratio) < 1e-6 * ratio
    assert "dense 2×4096" in doc["labels"] and "geomean" in r.stdout
    root = ElementTree.parse(tmp_path / "speedups.svg").getroot()
    bars = [e for e in root.iter() if e.get("class") == "bar"]
    assert len(bars) == 13  # 12 specs and the geomean, one series
    assert any("target 50×" in (e.text or "") for e in root.iter())


def test_plot_speedups_rejects_bad_input_in_one_line(tmp_path):
    other = json.loads(GEQRF_FINAL.read_text())
    other["task"] = "softmax"
    (tmp_path / "other.json").write_text(json.dumps(other))
    (tmp_path / "not.json").write_text("{")
    cases = [
        (tmp_path / "missing.json", "missing.json: no such file"),
        (tmp_path / "not.json", "not.json: not a JSON evaluation result"),
        (tmp_path / "other.json", "is a softmax result, the baseline qr"),
    ]
    for path, message in cases:
        r = run_tool("bench/plot_speedups.py", str(GEQRF_FINAL), str(path), "--out", str(tmp_path))
        assert r.returncode == 2 and message in r.stderr
        assert r.stderr.count("\n") == 1 and not r.stdout
    r = run_tool("bench/plot_speedups.py", str(GEQRF_FINAL), str(FUSED_FINAL), "--target", "-5")
    assert r.returncode == 2 and "-5: must be > 0" in r.stderr and not r.stdout


def test_sass_stats_reports_a_kernel_that_does_not_compile_in_one_line(tmp_path):
    src = tmp_path / "k.py"
    src.write_text(LOOP_KERNEL)
    r = run_tool("bench/sass_stats.py", str(src), "scale_rows", "--warps", "4")  # no BLOCK
    assert r.returncode == 1
    assert r.stdout.count("\n") == 1 and r.stdout.startswith("sass_stats: cannot compile")


def _row(seed: str, label: str, us: float, check: str = "ok") -> dict:
    return {"seed": seed, "label": label, "check": check, "median_us": us}


def test_pick_variant_writes_the_fastest_passing_complete_variant(tmp_path):
    rows = [
        _row("geqrf", "a", 100.0),
        _row("triton_fused", "a", 10.0),
        _row("triton_fused", "b", 10.0),
        _row("triton_fused:USE_GRAPHS=0,NB=16", "a", 5.0),
        _row("triton_fused:USE_GRAPHS=0,NB=16", "b", 5.0),
        _row("triton_fused:NB=64", "a", 1.0),  # fastest, but one spec failed its check
        _row("triton_fused:NB=64", "b", 1.0, check="FAIL"),
        _row("triton_fused:SPLIT_MIN=8", "a", 2.0),  # fastest passing, but ran one spec only
        _row("triton_panel_wy", "a", 0.5),  # another seed
    ]
    doc = tmp_path / "qr_direct.json"
    doc.write_text(json.dumps({"rows": rows}))
    dest = tmp_path / "picked" / "triton_fused.py"
    r = run_tool("bench/pick_variant.py", str(doc), "triton_fused", str(dest))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "* triton_fused:USE_GRAPHS=0,NB=16" in r.stdout
    text = dest.read_text()
    assert text.startswith((ROOT / "kernels/qr/seeds/triton_fused.py").read_text())
    assert text.rstrip().endswith("USE_GRAPHS = False\nNB = 16")


def test_h200_seeds_runs_each_gpus_parts_and_they_merge_into_one_evaluation(tmp_path):
    """The device plan for long --final evaluations, run for real on the CPU (quick mode): each
    part lands in the tarball as eval JSON, and `cockpit merge` of the parts passes."""
    r, res = _h200_seeds(tmp_path, GPU0="torch_eager:1/2", GPU1="torch_eager:2/2")
    assert "rc=0" in r.stdout and "packed" in r.stdout
    assert _merged_status(sorted(res.glob("torch_eager-*-of-2.json")), 2) == "ok"


def _h200_seeds(tmp_path, **extra: str) -> tuple[subprocess.CompletedProcess, Path]:
    import tarfile

    env = {
        **os.environ,
        "OUT": str(tmp_path),
        "TASK": "softmax",
        "DEVICE": "cpu",
        "MODE": "--quick",
        "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}",
        **extra,
    }
    r = subprocess.run(
        ["bash", "bench/h200_seeds.sh"], capture_output=True, text=True, env=env, cwd=ROOT,
        timeout=300,
    )  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    with tarfile.open(tmp_path / "h200-seeds.tgz") as tar:
        tar.extractall(tmp_path, filter="data")
    return r, tmp_path / "h200-seeds"


def _merged_status(parts: list[Path], n: int) -> str:
    assert len(parts) == n, parts
    m = subprocess.run(
        [sys.executable, "-m", "cockpit.cli", "merge", *map(str, parts), "--json"],
        capture_output=True, text=True, cwd=ROOT, timeout=120,
    )  # fmt: skip
    assert m.returncode == 0, m.stderr
    return json.loads(m.stdout)["status"]


def test_h200_seeds_queue_gives_each_part_to_one_free_gpu(tmp_path):
    """QUEUE: the GPUs take parts from one list as they come free; each part runs exactly once
    and the parts merge."""
    r, res = _h200_seeds(tmp_path, QUEUE="torch_eager:1/3 torch_eager:2/3 torch_eager:3/3")
    log = (res / "steps.log").read_text()
    for k in (1, 2, 3):
        assert log.count(f"start torch_eager-{k}-of-3 ") == 1, log
        assert f"end torch_eager-{k}-of-3 rc=0" in log, log
    assert not list(res.glob(".queue*")), "the queue's files must not be packed"
    assert _merged_status(sorted(res.glob("torch_eager-*-of-3.json")), 3) == "ok"


def test_h200_seeds_queue_leaves_a_part_unstarted_when_it_cannot_finish(tmp_path):
    """SEED:K/N@SECONDS (or MIN_PART): with less time left than a part needs, the part is logged
    as skipped, never started (a part cut by the limit wastes all the device time it used), and
    the next part that fits still runs."""
    r, res = _h200_seeds(tmp_path, QUEUE="torch_eager:1/2@500 torch_eager:2/2", LIMIT="250",
                         MIN_PART="40", GPUS="0")  # fmt: skip
    log = (res / "steps.log").read_text()
    assert "skip torch_eager:1/2 (" in log and "needs 500s" in log, log
    assert "start torch_eager-1-of-2" not in log, log
    # the shorter part after it still fits, and runs
    assert "end torch_eager-2-of-2 rc=0" in log, log


def test_the_harness_hold_kernel_fits_four_programs_per_sm_of_an_h200(tmp_path):
    """The launch-slack hold (cockpit/harness/hold.py) blocks side streams only if its programs
    take every thread slot of every SM: 4 programs of 512 threads on sm_90, which needs at most
    32 registers per thread (4 x 512 x 32 = the 65,536-register file) and no shared memory."""
    out = tmp_path / "hold.json"
    r = run_tool(
        "bench/sass_stats.py", "cockpit/harness/hold.py", "_spin",
        "--sig", "out_ptr=*fp32", "iters=i32", "seed=fp32", "--warps", "16", "--json", str(out),
    )  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    doc = json.loads(out.read_text())
    assert 0 < doc["resources"]["regs"] <= 32
    assert doc["resources"]["shared"] <= 1024
    assert doc["loops"] and all(loop["STL"] == 0 for loop in doc["loops"])


def test_direct_times_the_harness_baselines_beside_the_seeds(tmp_path):
    """--baselines: torch.compile(reference) and the reference itself, built from the task's
    reference as `cockpit baseline` builds them, as checked and timed rows after the seeds."""
    r = subprocess.run(
        [
            sys.executable, "bench/direct.py", "--task", "softmax", "--device", "cpu",
            "--seeds", "torch_eager", "--baselines", "compile", "reference", "--reps", "3",
            "--budget-s", "0.05", "--out", str(tmp_path),
        ],
        capture_output=True, text=True, cwd=ROOT, timeout=600,
    )  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    doc = json.loads((tmp_path / "direct-softmax.json").read_text())
    names = ["torch_eager", "baseline:compile", "baseline:reference"]
    assert [row["seed"] for row in doc["rows"][:3]] == names
    assert all(row["check"] == "ok" and row["median_us"] > 0 for row in doc["rows"])
    assert set(doc["summary"]) == set(names)
    bad = run_tool("bench/direct.py", "--task", "softmax", "--baselines", "no-such")
    assert bad.returncode == 2 and "invalid choice" in bad.stderr


def test_device_time_per_call_is_summed_between_flush_markers_of_a_real_profile(monkeypatch):
    """benchlib.device_us_per_call on a real torch.profiler run (CPU activities here, top-level
    ops only; on a GPU, `kernel_times` gives it CUDA kernels): an op before the first flush
    belongs to no call, each call's time is the sum of its ops' durations, and a flush never
    counts. bench/direct.py --kernel-time off a GPU is a usage error."""
    monkeypatch.syspath_prepend(str(ROOT / "bench"))
    import torch
    from benchlib import device_us_per_call

    flush, x = torch.empty(1 << 16), torch.randn(512, 512)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        x.sum()  # before any flush: no call's
        for i in range(3):
            flush.fill_(float(i))
            x.clone()
            x.sum()
    top = [e for e in prof.events() if e.cpu_parent is None]
    calls = device_us_per_call(top, lambda name: name == "aten::fill_")
    assert len(calls) == 3
    starts = sorted(e.time_range.start for e in top if e.name == "aten::fill_")
    for i, got in enumerate(calls):
        lo, hi = starts[i], starts[i + 1] if i + 1 < len(starts) else float("inf")
        mine = [e for e in top if e.name != "aten::fill_" and lo <= e.time_range.start < hi]
        assert {e.name for e in mine} == {"aten::clone", "aten::sum"}
        assert got == pytest.approx(sum(e.time_range.end - e.time_range.start for e in mine))
    bad = run_tool("bench/direct.py", "--task", "softmax", "--device", "cpu", "--kernel-time", "5")
    assert bad.returncode == 2 and "--kernel-time" in bad.stderr.splitlines()[-1]


def test_direct_runs_variants_side_by_side_and_checks_each_with_the_tasks_check(tmp_path):
    """bench/direct.py on the CPU (interpreter): every variant row is checked by the judge's
    run_check and timed; the first variant is the reference of the ratios; a variant naming a
    constant the seed lacks is a line, not the end of the run."""
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    r = subprocess.run(
        [
            sys.executable, "bench/direct.py", "--task", "rmsnorm", "--device", "cpu",
            "--seeds", "torch_eager", "triton_tiled", "triton_tiled:NUM_WARPS=4",
            "triton_tiled:NO_SUCH=1", "--reps", "3", "--budget-s", "0.05",
            "--out", str(tmp_path),
        ],
        capture_output=True, text=True, env=env, cwd=ROOT, timeout=300,
    )  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    assert "triton_tiled:NO_SUCH=1: cannot load: AttributeError" in r.stdout
    doc = json.loads((tmp_path / "direct-rmsnorm.json").read_text())
    seeds = ["torch_eager", "triton_tiled", "triton_tiled:NUM_WARPS=4"]
    assert {row["seed"] for row in doc["rows"]} == set(seeds)
    assert all(row["check"] == "ok" and row["median_us"] > 0 for row in doc["rows"])
    assert set(doc["summary"]) == set(seeds)
    assert doc["summary"]["torch_eager"]["ratio_vs_first"] == 1.0
    # pick_variant reads this format too, and writes the winner into a copy of the seed
    picked = tmp_path / "picked.py"
    r = run_tool(
        "bench/pick_variant.py", str(tmp_path / "direct-rmsnorm.json"), "triton_tiled", str(picked)
    )
    assert r.returncode == 0, r.stdout + r.stderr
    seed_text = (ROOT / "kernels/rmsnorm/seeds/triton_tiled.py").read_text()
    assert picked.read_text().startswith(seed_text)
    won = [ln for ln in r.stdout.splitlines() if ln.startswith("*")][0]
    assert ("NUM_WARPS=4" in won) == picked.read_text().endswith("NUM_WARPS = 4\n")


def test_direct_times_a_copy_of_each_shape_and_keeps_only_the_matching_shapes(tmp_path):
    """--copy: a `copy` row per shape (x.clone(), timed like the variants, not checked) and
    every variant row's %copy against it; --match keeps the shapes whose label holds one of the
    strings; a --match that keeps nothing is a one-line error and exit 1. --hold is accepted;
    without a GPU there is no slack to replace (the host clock times the calls)."""
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    r = subprocess.run(
        [
            sys.executable, "bench/direct.py", "--task", "softmax", "--device", "cpu",
            "--set", "hidden", "--match", "cols=17 ", "cols=1000 ", "--copy", "--hold",
            "--seeds", "triton_tiled", "--reps", "3", "--budget-s", "0.05",
            "--out", str(tmp_path),
        ],
        capture_output=True, text=True, env=env, cwd=ROOT, timeout=300,
    )  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    doc = json.loads((tmp_path / "direct-softmax.json").read_text())
    assert doc["slack"] == "none (host clock)"  # --hold builds the arena's hold only on a GPU
    shapes = ["rows=3 cols=17 bfloat16", "rows=1 cols=1000 float32"]
    assert [(row["shape"], row["seed"]) for row in doc["rows"]] == [
        (shape, seed) for shape in shapes for seed in ("copy", "triton_tiled")
    ]
    copies = {row["shape"]: row["median_us"] for row in doc["rows"] if row["seed"] == "copy"}
    for row in doc["rows"]:
        if row["seed"] == "copy":
            assert row["check"] == "-" and row["median_us"] > 0
        else:
            assert row["check"] == "ok"
            assert row["copy_pct"] == 100.0 * copies[row["shape"]] / row["median_us"]
    bad = run_tool("bench/direct.py", "--task", "softmax", "--device", "cpu", "--match", "zzz")
    assert bad.returncode == 1
    assert bad.stderr.strip() == "error: no benchmark shape of softmax matches ['zzz']"


def test_direct_rounds_time_every_row_in_turn(tmp_path):
    """--rounds 3: each row's calls come in three rounds taken in turn (copy, then each variant),
    so a drifting machine moves every row alike; a row's median is over all its calls (3 rounds
    of ceil(7 / 3) = 3 calls: 9) and `round_medians` keeps one median per round. A variant
    naming an unknown constant is still a line; --rounds 0 is a usage error."""
    r = subprocess.run(
        [
            sys.executable, "bench/direct.py", "--task", "softmax", "--device", "cpu",
            "--shape", "rows=4,cols=64,dtype=float32", "--copy", "--rounds", "3",
            "--seeds", "torch_eager", "triton_online", "--reps", "7", "--budget-s", "5",
            "--out", str(tmp_path),
        ],
        capture_output=True, text=True, env={**os.environ, "TRITON_INTERPRET": "1"}, cwd=ROOT,
        timeout=300,
    )  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    doc = json.loads((tmp_path / "direct-softmax.json").read_text())
    assert [row["seed"] for row in doc["rows"]] == ["copy", "torch_eager", "triton_online"]
    for row in doc["rows"]:
        assert row["n_calls"] == 9 and len(row["round_medians"]) == 3
        lo, hi = min(row["round_medians"]), max(row["round_medians"])
        assert lo <= row["median_us"] <= hi
    eager, online = doc["rows"][1], doc["rows"][2]
    assert eager["ratio"] == 1.0 and online["ratio"] == eager["median_us"] / online["median_us"]
    bad = run_tool("bench/direct.py", "--task", "softmax", "--device", "cpu", "--rounds", "0")
    assert bad.returncode == 2 and "--rounds and --reps must be at least 1" in bad.stderr


def test_inductor_code_writes_what_torch_compile_generated_for_each_shape(tmp_path):
    """bench/inductor_code.py on the CPU: Inductor's generated module for the reference at one
    shape, written to a file named after the shape; a malformed --shape is a one-line error."""
    r = run_tool(
        "bench/inductor_code.py", "--task", "rmsnorm", "--shape", "5x33:bfloat16", "--device",
        "cpu", "--out", str(tmp_path),
    )  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    code = (tmp_path / "rmsnorm-5x33-bfloat16.py.txt").read_text()
    assert "def call(" in code and "fused" in code and "rsqrt" in code
    bad = run_tool(
        "bench/inductor_code.py", "--task", "rmsnorm", "--shape", "5by33", "--out", str(tmp_path)
    )  # not bench/results: a folder there is a recorded run
    assert bad.returncode == 1
    assert bad.stderr.strip().splitlines()[-1] == (
        "error: bad --shape '5by33': expected ROWSxCOLS[:float32|bfloat16]"
    )


def test_sass_stats_tells_vector_loads_from_scalar_ones(tmp_path):
    """`global memory:` counts loads and stores by width. The softmax tile kernel at f32 with 3000
    columns: without the alignment hint (AL = 1) Triton cannot prove a row starts on 16 bytes
    and loads 4-byte scalars; with AL = 4 (what the seed computes for 3000) it loads vectors."""
    widths = {}
    for al in (1, 4):
        out = tmp_path / f"al{al}.json"
        r = run_tool(
            "bench/sass_stats.py", "kernels/softmax/seeds/triton_tiled.py", "_softmax_tile",
            "--const", "R=2", "BC=4096", f"AL={al}", "BT=0", "FT=False", "SPL=1",
            "--div", "x_ptr", "y_ptr", "--sig", "x_ptr=*fp32", "y_ptr=*fp32", "--warps", "8",
            "--json", str(out),
        )  # fmt: skip
        assert r.returncode == 0, r.stdout + r.stderr
        assert "global memory: " in r.stdout
        widths[al] = json.loads(out.read_text())["memory"]
    assert widths[1].get("LDG.E", 0) > 0 and "LDG.E.128" not in widths[1]
    assert widths[4].get("LDG.E.128", 0) > 0 and widths[4].get("STG.E.128", 0) > 0
    assert sum(widths[4].values()) * 4 == sum(widths[1].values())  # 4 floats per instruction


def test_sass_stats_takes_ptr_names_as_pointers_and_writes_the_sass(tmp_path):
    """Arguments named `*_ptr` are pointers without --sig (the row seeds' spelling), and --sass
    writes the machine code the counts came from: RMSNorm's tile kernel at 1 x 4099 f32 (a head
    and a tail, 8 warps) loads x and the weight as 16-byte vectors and reduces across warps
    through barriers. (Its comparison with the thread-local lone-row kernel went with that
    kernel: decision 0040.)"""
    kern = "_rmsnorm_tile"
    const = ["R=1", "BC=4096", "AL=1", "BT=4", "WE=1", "FT=0", "SPL=1"]
    div = ["x_ptr", "w_ptr", "y_ptr", "stride_x", "stride_y"]
    sass, out = tmp_path / f"{kern}.sass", tmp_path / f"{kern}.json"
    r = run_tool(
        "bench/sass_stats.py", "kernels/rmsnorm/seeds/triton_tiled.py", kern,
        "--const", *const, "--div", *div, "--sig", "eps=fp32", "--warps", "8",
        "--sass", str(sass), "--json", str(out),
    )  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    doc = json.loads(out.read_text())
    assert doc["memory"].get("LDG.E.128", 0) > 0  # x and w as 16-byte vectors: pointers
    assert sass.read_text().count("BAR.SYNC") == doc["all"]["BAR"] > 0


def test_exchange_bench_times_both_exchanges_and_writes_its_table(tmp_path):
    r = run_tool("bench/exchange.py", "--sizes-mb", "1", "2", "--transfers", "2",
                 "--out", str(tmp_path))  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    assert "pack + unpack of one tensor" in r.stdout
    doc = json.loads((tmp_path / "exchange.json").read_text())
    got = {(row["size_mb"], row["exchange"]) for row in doc["rows"]}
    assert got == {(1, "files"), (1, "memfd"), (2, "files"), (2, "memfd")}
    assert all(len(row["times_s"]) == 2 and row["gb_s"] > 0 for row in doc["rows"])


def test_watch_cost_times_each_seed_plain_watched_and_under_the_old_watch(tmp_path):
    r = run_tool("bench/watch_cost.py", "--reps", "1", "--out", str(tmp_path))
    assert r.returncode == 0, r.stdout + r.stderr
    doc = json.loads((tmp_path / "watch_cost.json").read_text())
    assert {row["seed"] for row in doc["rows"]} == {"householder_torch", "blocked_wy",
                                                      "cholqr_reconstruct"}  # fmt: skip
    for row in doc["rows"]:
        assert set(row["best_s"]) == {"plain", "watch", "session-5 watch"}
        assert all(v > 0 for v in row["best_s"].values())
    assert "householder_torch" in r.stdout and "session-5 watch" in r.stdout


def test_qr_chunks_times_the_whole_batch_against_chunks_of_it_and_checks_each(tmp_path):
    """bench/qr_chunks.py on the CPU (interpreter): the seed on the whole batch, then on
    consecutive chunks of it joined back together; every row checked by the task's own check and
    timed, chunks not smaller than the batch skipped."""
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    r = subprocess.run(
        [
            sys.executable, "bench/qr_chunks.py", "--device", "cpu", "--specs", "6x40",
            "--chunks", "2", "4", "6", "--reps", "3", "--budget-s", "0.05", "--out", str(tmp_path),
        ],
        capture_output=True, text=True, env=env, cwd=ROOT, timeout=300,
    )  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    doc = json.loads((tmp_path / "qr_chunks.json").read_text())
    assert [row["chunk"] for row in doc["rows"]] == [0, 2, 4]  # 6 is the whole batch
    assert all(row["ok"] and row["median_us"] > 0 for row in doc["rows"])
    assert "whole" in r.stdout and "vs whole" in r.stdout


def test_qr_chunks_rejects_a_bad_spec_or_chunk_in_one_line():
    for args, what in ((["--specs", "640"], "is not BATCHxN"), (["--chunks", "0"], "positive")):
        r = run_tool("bench/qr_chunks.py", *args)
        assert r.returncode == 2 and what in r.stderr and "Traceback" not in r.stderr


def test_qr_profile_rejects_a_bad_spec_in_one_line():
    """The same BATCHxN type as qr_chunks (benchlib.batch_by_n), refused before any GPU work:
    "640" used to reach the loop and fail there with a traceback."""
    r = run_tool("bench/qr_profile.py", "--seed", "triton_fused", "--specs", "640")
    assert r.returncode == 2 and "is not BATCHxN" in r.stderr and "Traceback" not in r.stderr


def test_direct_times_shapes_of_your_own_and_refuses_bad_ones_in_one_line(tmp_path):
    """--shape KEY=VALUE,... (repeatable) replaces the task's set: the rows are those shapes,
    checked and timed; a malformed one is a usage error, one the task cannot make a one-line
    error, both with a non-zero exit."""
    r = subprocess.run(
        [
            sys.executable, "bench/direct.py", "--task", "softmax", "--device", "cpu",
            "--seeds", "torch_eager", "--shape", "rows=3,cols=33,dtype=float32",
            "--shape", "rows=2,cols=5,dtype=bfloat16", "--reps", "3", "--budget-s", "0.05",
            "--out", str(tmp_path),
        ],
        capture_output=True, text=True, cwd=ROOT, timeout=300,
    )  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    doc = json.loads((tmp_path / "direct-softmax.json").read_text())
    assert [row["shape"] for row in doc["rows"]] == [
        "rows=3 cols=33 float32",
        "rows=2 cols=5 bfloat16",
    ]
    assert all(row["check"] == "ok" and row["median_us"] > 0 for row in doc["rows"])
    bad = run_tool("bench/direct.py", "--task", "softmax", "--shape", "rows=3,cols")
    assert bad.returncode == 2 and "want KEY=VALUE" in bad.stderr
    bad = run_tool(
        "bench/direct.py", "--task", "softmax", "--device", "cpu", "--seeds", "torch_eager",
        "--shape", "rows=3,cols=33,dtype=float99", "--out", str(tmp_path),
    )  # fmt: skip
    assert bad.returncode == 1
    err = bad.stderr.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: softmax cannot make inputs for rows=3")


def test_ptx_compare_finds_the_same_launches_and_a_change_in_them(tmp_path):
    """`bench/ptx_compare.py` on the softmax seed against a copy of itself: every launch of every
    task.toml shape the same kernel, grid and sm_90 PTX (0 differing, exit 0); a copy with
    TILE_ELEMS = 4096 plans other tiles for some shapes, which it reports (exit 1)."""
    seed = ROOT / "kernels/softmax/seeds/triton_tiled.py"
    out = tmp_path / "same.json"
    same = tmp_path / "same.py"
    same.write_text(seed.read_text())
    r = run_tool("bench/ptx_compare.py", "softmax", "--old", str(same), "--json", str(out))
    assert r.returncode == 0, r.stdout + r.stderr
    doc = json.loads(out.read_text())
    assert doc["launches_compared"] > 40 and doc["launches_differing"] == 0
    assert doc["ptx_identical"] == doc["launches_compared"]
    changed = tmp_path / "changed.py"
    changed.write_text(seed.read_text().replace("\nTILE_ELEMS = 8192", "\nTILE_ELEMS = 4096", 1))
    r = run_tool("bench/ptx_compare.py", "softmax", "--old", str(same), "--new", str(changed))
    assert r.returncode == 1, r.stdout + r.stderr
    assert "DIFFER" in r.stdout and '"launches_differing": 0' not in r.stdout
