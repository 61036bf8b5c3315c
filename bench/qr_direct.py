"""QR seeds against torch.geqrf on a GPU, directly (no arena): the fast development loop.

    python bench/qr_direct.py --out $OUT                       # every seed, the 12 benchmark specs
    python bench/qr_direct.py --seeds triton_fused --set hidden --out $OUT
    python bench/qr_direct.py --seeds triton_panel_wy triton_panel_wy:USE_GRAPHS=1 \
        triton_panel_wy:USE_TF32X3=1,USE_GRAPHS=1 --out $OUT      # A/B of module constants

Each (seed, spec): one call checked matrix by matrix with the task's own float64 check, then
CUDA-event timing of calls on two alternating input sets (median), then one more call checked (a
graph replay, for seeds that capture one at their first call). A seed whose call takes longer
than --max-call-s is skipped for the larger specs of that run. Figures from this script are the
development loop's; the official figures are `cockpit eval qr SEED --device cuda --final`
(bench/harness_gpu.py), which adds isolation, hidden shapes and fresh inputs per call.
Prints a table as it goes and writes qr_direct.json under --out after every spec.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchlib import load_module as _load  # noqa: E402
from benchlib import load_variant, time_calls  # noqa: E402

from cockpit.harness.task import load_task  # noqa: E402


def load_module(path: Path):
    return _load(path, f"seed_{path.stem}")


def sync() -> None:
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument(
        "--seeds",
        nargs="*",
        help="seed stems, each optionally STEM:KEY=VALUE,... to override module constants "
        "(default: every seed of the task)",
    )
    p.add_argument("--set", default="benchmark", choices=["benchmark", "public", "hidden"])
    p.add_argument("--reps", type=int, default=15)
    p.add_argument("--budget-s", type=float, default=4.0, help="timing budget per (seed, spec)")
    p.add_argument("--max-call-s", type=float, default=3.0)
    p.add_argument("--no-geqrf", action="store_true")
    p.add_argument("--max-elems", type=float, default=1.2e9, help="skip specs larger than this")
    p.add_argument("--max-batch", type=int, help="only specs with at most this many matrices")
    p.add_argument("--min-n", type=int, default=0, help="only specs with at least this n")
    p.add_argument("--device", default="cuda", help="cpu: a smoke test of this script")
    p.add_argument("--out", default="bench/results")
    args = p.parse_args()

    task = load_task("qr")
    ref = load_module(task.reference_path)
    specs = [s for s in task.shape_set(args.device, args.set) if s.timed]
    seeds = sorted(task.seeds_dir.glob("*.py"))
    fns = {} if args.no_geqrf else {"geqrf": lambda a: torch.geqrf(a)}
    for spec_name in args.seeds or [p.stem for p in seeds]:
        if spec_name.partition(":")[0] == "torch_geqrf":
            continue
        try:
            fns[spec_name] = load_variant(task.seeds_dir, spec_name).kernel
        except Exception as exc:  # a broken seed is a row, not the end of the run
            print(f"{spec_name}: cannot load: {type(exc).__name__}: {exc}", flush=True)
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    doc = {
        "gpu": torch.cuda.get_device_name(0) if args.device == "cuda" else "cpu",
        "torch": torch.__version__,
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "set": args.set,
        "rows": [],
    }
    slow: set[str] = set()
    t_start = time.monotonic()
    print(f"{'spec':34s} {'seed':22s} {'check':>6s} {'median':>11s} {'vs geqrf':>9s}", flush=True)
    for spec in specs:
        params = dict(spec.params)
        if params["batch"] * params["n"] ** 2 > args.max_elems or params["n"] < args.min_n:
            continue
        if args.max_batch is not None and params["batch"] > args.max_batch:
            continue
        label = f"{params['family']} ({params['batch']},{params['n']}) c{params.get('cond', 1)}"
        inputs = [ref.make_inputs(params, s, args.device)[0] for s in (11, 12)]
        base = None
        for name, fn in fns.items():
            row = {"spec": params, "label": label, "seed": name}
            if name in slow:
                row["skipped"] = "slower than --max-call-s on a smaller spec"
                doc["rows"].append(row)
                continue
            try:
                sync()
                t0 = time.monotonic()
                h, tau = fn(inputs[0])
                sync()
                first_s = time.monotonic() - t0
                ok, metrics = ref.check((inputs[0],), (h, tau))
                row["check"] = "ok" if ok else "FAIL"
                row["metrics"] = {
                    k: v for k, v in metrics.items() if isinstance(v, int | float | str)
                }
                del h, tau
                fn(inputs[1])
                sync()
                t = time_calls(fn, [(x,) for x in inputs], args.reps, args.budget_s)
                # the check again after the timed calls: a seed that captures a CUDA graph at
                # its first call answers every later one from a replay, which the first check
                # never saw (a race between streams would show here)
                ok2, metrics2 = ref.check((inputs[1],), fn(inputs[1]))
                sync()
                if not ok2:
                    row["check"] = "FAIL"
                    row["metrics_after"] = {
                        k: v for k, v in metrics2.items() if isinstance(v, int | float | str)
                    }
                row["median_us"] = statistics.median(t)
                row["min_us"] = min(t)
                row["n_calls"] = len(t)
                row["first_call_s"] = first_s
                if row["median_us"] > args.max_call_s * 1e6:
                    slow.add(name)
            except Exception as exc:
                row["error"] = f"{type(exc).__name__}: {str(exc)[:300]}"
                sync()
            if name == "geqrf":
                base = row.get("median_us")
            if base and row.get("median_us"):
                row["speedup_vs_geqrf"] = base / row["median_us"]
            doc["rows"].append(row)
            med = row.get("median_us")
            print(
                f"{label:34s} {name:22s} {row.get('check', '-'):>6s} "
                f"{(f'{med / 1e3:9.3f}ms' if med else row.get('error', row.get('skipped', ''))[:40]):>11s} "
                f"{row.get('speedup_vs_geqrf', 0):8.1f}x  [{time.monotonic() - t_start:6.1f}s]",
                flush=True,
            )
            (out_dir / "qr_direct.json").write_text(json.dumps(doc, indent=1))
        del inputs
        if args.device == "cuda":
            torch.cuda.empty_cache()
    # geometric means over the specs every seed completed
    by_seed: dict[str, dict[str, float]] = {}
    for r in doc["rows"]:
        if r.get("median_us") and r.get("check") == "ok":
            by_seed.setdefault(r["seed"], {})[r["label"]] = r["median_us"]
    summary = {}
    for name, d in by_seed.items():
        geo = math.exp(sum(math.log(v) for v in d.values()) / len(d))
        summary[name] = {"specs": len(d), "geomean_us": geo}
        if "geqrf" in by_seed and name != "geqrf":
            common = [k for k in d if k in by_seed["geqrf"]]
            if common:
                summary[name]["geomean_speedup_vs_geqrf_common"] = math.exp(
                    sum(math.log(by_seed["geqrf"][k] / d[k]) for k in common) / len(common)
                )
                summary[name]["common_specs"] = len(common)
    doc["summary"] = summary
    (out_dir / "qr_direct.json").write_text(json.dumps(doc, indent=1))
    print(json.dumps(summary, indent=1), flush=True)


if __name__ == "__main__":
    main()
