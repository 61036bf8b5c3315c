"""Run harness evaluations in batches on a GPU machine and record every figure.

    python bench/harness_gpu.py --plan smoke  --out $OUT     # one quick pass: does the GPU path work?
    python bench/harness_gpu.py --plan seeds  --task softmax --out $OUT   # baselines + every seed, --final
    python bench/harness_gpu.py --plan repeat --task softmax --seed triton_online --n 5 --out $OUT
    python bench/harness_gpu.py --plan exploits --out $OUT   # GPU-only exploit classes

Prints a table as it goes and writes one JSON file per plan under --out (the device tool brings
$OUT back). Every figure that lands in BENCHMARKS.md comes from one of these files.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from gpu_watch import GpuWatch  # noqa: E402

from cockpit.harness import baselines  # noqa: E402
from cockpit.harness.judge import Options, evaluate  # noqa: E402
from cockpit.harness.task import load_task  # noqa: E402

ARGS: argparse.Namespace | None = None


def log(msg: str) -> None:
    print(msg, flush=True)


def machine() -> dict:
    import torch
    import triton

    info = {
        "torch": torch.__version__,
        "triton": triton.__version__,
        "date": time.strftime("%Y-%m-%d %H:%M"),
    }
    if torch.cuda.is_available():
        info["gpu"] = torch.cuda.get_device_name(0)
        with contextlib.suppress(OSError, subprocess.TimeoutExpired):
            info["smi"] = subprocess.run(
                [
                    "nvidia-smi",
                    "--query-gpu=name,driver_version,clocks.sm,clocks.mem,power.draw,temperature.gpu",
                    "--format=csv,noheader",
                ],
                capture_output=True,
                text=True,
                timeout=20,
            ).stdout.strip()
    return info


def summary(r) -> dict:
    d = r.to_dict()
    return {
        "gpu": getattr(r, "_gpu", None),
        "status": d["status"],
        "reasons": [f"{x['kind']}: {x['message'][:300]}" for x in d["reasons"]],
        "geomean_us": d["geomean_us"],
        "hidden_geomean_us": d["hidden_geomean_us"],
        "score_us": d["score_us"],
        "roofline_pct": d["roofline_pct"],
        "speedups": d["speedups"],
        "wall_s": round(d["wall_s"], 1),
        "stage_s": d.get("stage_s"),
        "protections": d["protections"],
        "flags": d["flags"],
        "profile": {
            k: d["profile"].get(k) for k in ("launches", "groups", "unit", "graphs", "graph_breaks")
        },
        "shapes": [shape_row(s) for s in d["shapes"]],
    }


# per-shape timing fields kept in a summary (summary name <- TimingStats name); host time,
# min and percentiles and the stopping rule are there for the repeatability question
TIMING_FIELDS = {
    "median_us": "median_us",
    "mean_us": "mean_us",
    "sem_pct": "sem_pct",
    "n": "n",
    "graph_us": "graph_median_us",
    "host_us": "host_median_us",
    "submit_us": "submit_median_us",  # host time inside the call until it returned
    "late_pct": "late_pct",  # calls that returned after their launch slack ran out
    "slack_us": "slack_median_us",  # the launch slack's median length on the GPU
    "min_us": "min_us",
    "p10_us": "p10_us",
    "p90_us": "p90_us",
    "stop": "stop",
}


def shape_row(s: dict) -> dict:
    t = s.get("timing") or {}
    return {
        "shape": s["shape"],
        "set": s["set"],
        "ok": s["ok"],
        **{k: t.get(src) for k, src in TIMING_FIELDS.items()},
        "floor_us": s.get("floor_us"),
        "roofline_pct": s.get("roofline_pct"),
        "bound": s.get("bound"),
    }


def line(name: str, s: dict) -> str:
    g = s["geomean_us"]
    sp = " ".join(f"{k}={v:.2f}x" for k, v in (s.get("speedups") or {}).items())
    return (
        f"{name:38s} {s['status']:9s} geomean={g if g is None else round(g, 2)} us  "
        f"hidden={s['hidden_geomean_us'] and round(s['hidden_geomean_us'], 2)} us  "
        f"roof={s['roofline_pct'] and round(s['roofline_pct'], 1)}%  {sp}  ({s['wall_s']} s)  "
        + ("; ".join(s["reasons"])[:300])
    )


SINK: dict = {}
SINK_PATH: list[Path] = []


def save() -> None:
    """Write what we have after every evaluation: a run cut off by the device limit keeps it."""
    if SINK_PATH:
        SINK_PATH[0].write_text(json.dumps(SINK, indent=1))


_T0 = [time.monotonic(), ""]


def progress(stage: str, detail: str, done: int, total: int) -> None:
    """One line per step with the elapsed time, so a run cut off by the lease shows where it was."""
    now = time.monotonic()
    log(f"  [{now - _T0[0]:7.1f}s] {stage:7s} {done}/{total} {detail}")


def watched(*args, **kw):
    """evaluate(...) with the GPU's clocks, power and neighbours sampled meanwhile."""
    with GpuWatch() as w:
        r = evaluate(*args, **kw)
    r._gpu = w.stats()
    log(f"  gpu during the evaluation: {w.line()}")
    return r


def opts(device: str, mode: str, **kw) -> Options:
    kw.setdefault("progress", progress)
    return Options(device=device, mode=mode, verify_untimed=not ARGS.skip_untimed, **kw)


def run_baselines(task, device: str, mode: str, variants: list[str], out: dict) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        for v in variants:
            p = Path(tmp) / f"baseline_{v.replace('-', '_')}.py"
            p.write_text(baselines.baseline_source(task, v))
            r = watched(task, p, opts(device, mode, profile=True), exempt=True)
            s = summary(r)
            if r.ok:
                d = r.to_dict()
                d["candidate"] = v
                baselines.store(task, device, v, d)
            out[v] = s
            save()
            log(line(f"{task.name}/baseline:{v}", s))
    return out


def plan_seeds(
    args, task_name: str | None = None, mode: str | None = None, variants: list[str] | None = None
) -> dict:
    task = load_task(task_name or args.task)
    mode = mode or args.mode
    res = SINK.setdefault(
        f"seeds-{task.name}",
        {
            "machine": machine(),
            "task": task.name,
            "mode": mode,
            "verify_untimed": not args.skip_untimed,
            "baselines": {},
            "seeds": {},
        },
    )
    if not args.skip_baselines:
        run_baselines(task, "cuda", mode, variants or args.variants, res["baselines"])
    for seed in task.seeds():
        if args.only and seed.stem not in args.only:
            continue
        r = watched(task, seed, opts("cuda", mode))
        res["seeds"][seed.stem] = summary(r)
        save()
        log(line(f"{task.name}/{seed.stem}", res["seeds"][seed.stem]))
    return res


def plan_all(args) -> dict:
    """Everything issue #2 asks of the GPU, most important first, saved as it goes."""
    plan_seeds(args, "softmax", "final", ["reference", "compile"])
    plan_seeds(args, "qr", "quick", ["reference"])
    plan_seeds(args, "rmsnorm", "final", ["reference"])
    SINK["repeat"] = plan_repeat(args)
    save()
    return SINK


def plan_repeat(args) -> dict:
    task = load_task(args.task)
    seed = task.seeds_dir / f"{args.seed}.py"
    runs = []
    for i in range(args.n):
        r = watched(task, seed, opts("cuda", args.repeat_mode, profile=False))
        runs.append(summary(r))
        SINK.setdefault("runs_so_far", []).append(runs[-1])
        save()
        log(line(f"repeat {i}", runs[-1]))
    shapes = {}
    for run in runs:
        for s in run["shapes"]:
            if s["median_us"]:
                shapes.setdefault(s["shape"], []).append(s["median_us"])
    spread = {
        k: {
            "min": min(v),
            "max": max(v),
            "spread_pct": 100 * (max(v) - min(v)) / statistics.median(v),
        }
        for k, v in shapes.items()
    }
    geos = [r["geomean_us"] for r in runs if r["geomean_us"]]
    out = {
        "machine": machine(),
        "task": task.name,
        "seed": args.seed,
        "runs": runs,
        "per_shape_spread": spread,
        "geomean_spread_pct": 100 * (max(geos) - min(geos)) / statistics.median(geos)
        if geos
        else None,
    }
    log(f"geomean spread over {len(geos)} processes: {out['geomean_spread_pct']:.2f}%")
    for k, v in spread.items():
        log(f"  {k:40s} {v['min']:.2f}..{v['max']:.2f} us  spread {v['spread_pct']:.2f}%")
    return out


def plan_exploits(args) -> dict:
    """Every GPU-only exploit of tests/gpu through the harness (quick, static scan off), and the
    honest torch_eager seed under the same options: an exploit that "passes" must not be faster
    than it (side_stream_early: the launch slack must not hide work)."""
    task = load_task("softmax")
    out = {"machine": machine()}
    honest = task.seeds_dir / "torch_eager.py"
    files = [honest, *sorted((ROOT / "tests" / "gpu").glob("*.py"))]
    for f in files:
        r = watched(task, f, Options(device="cuda", mode="quick", static=False, profile=False))
        out[f.stem] = summary(r)
        log(line(f"exploit {f.stem}", out[f.stem]))
    return out


def plan_smoke(args) -> dict:
    out = {"machine": machine()}
    log(json.dumps(out["machine"]))
    for name in args.tasks:
        task = load_task(name)
        for seed in task.seeds():
            r = evaluate(task, seed, Options(device="cuda", mode="quick"))
            out[f"{name}/{seed.stem}"] = summary(r)
            log(line(f"{name}/{seed.stem}", out[f"{name}/{seed.stem}"]))
    return out


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--plan", required=True, choices=["smoke", "seeds", "repeat", "exploits", "all"])
    p.add_argument(
        "--skip-untimed", action="store_true", help="skip verify-only hidden shapes (timing runs)"
    )
    p.add_argument("--repeat-mode", default="iterate")
    p.add_argument("--task", default="softmax")
    p.add_argument("--tasks", nargs="+", default=["softmax"])
    p.add_argument("--seed", default="triton_online")
    p.add_argument("--only", nargs="*")
    p.add_argument("--n", type=int, default=5)
    p.add_argument("--mode", default="final")
    p.add_argument("--variants", nargs="+", default=list(baselines.VARIANTS))
    p.add_argument("--skip-baselines", action="store_true")
    p.add_argument("--out", default="bench/results")
    args = p.parse_args()
    global ARGS
    ARGS = args
    t0 = time.time()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    name = f"{args.plan}-{args.task if args.plan in ('seeds', 'repeat') else 'all'}.json"
    SINK_PATH.append(out / name)
    res = {
        "smoke": plan_smoke,
        "seeds": plan_seeds,
        "repeat": plan_repeat,
        "exploits": plan_exploits,
        "all": plan_all,
    }[args.plan](args)
    SINK.update(res if res is not SINK else {})
    SINK["wall_s"] = time.time() - t0
    save()
    log(f"wrote {out / name} in {SINK['wall_s']:.0f} s")


if __name__ == "__main__":
    main()
