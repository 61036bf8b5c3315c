"""Seeds and their variants side by side on one task's shapes, directly (no arena): the fast
development loop for any task, as qr_direct.py is for QR.

    python bench/direct.py --task softmax --seeds triton_online triton_tiled \
        triton_tiled:TILE_ELEMS=16384,NUM_WARPS=16 --out $OUT
    python bench/direct.py --task rmsnorm --set hidden --out $OUT     # every seed, hidden shapes
    python bench/direct.py --task softmax --seeds triton_tiled --baselines compile --out $OUT
    python bench/direct.py --task rmsnorm --shape rows=132,cols=65536,dtype=bfloat16 \
        --shape rows=2048,cols=65536,dtype=bfloat16 --copy --out $OUT   # shapes of your own

Each (variant, shape): one call checked with the task's own check (the judge's `run_check`),
then timed on two alternating input sets, each call preceded by an L2 flush and the harness's
launch slack (CUDA events; the host clock on the CPU). The first variant is the one the others
are compared with (ratio > 1: faster). Prints a table as it goes, writes direct-TASK.json under
--out (rows, then per variant the geomean over the shapes it passed and the geomean ratio over
the shapes both passed). --rounds N splits each row's calls into N rounds taken in turn, so
rows that differ by less than the machine's drift can be compared (17 x 131073 moves ~1 us
between blocks of calls in one process). --kernel-time N profiles N more calls of each row and
adds `kernel_us`, its kernels' time alone (CUPTI): what a row's time is without its launches
(1 x 4099's copy is a 1.25 us memcpy in a 3.4 us call). Official figures come from
`cockpit eval … --final`.
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

from benchlib import kernel_times, load_module, load_variant, time_calls  # noqa: E402

from cockpit.harness import baselines, scoring  # noqa: E402
from cockpit.harness.task import Shape, load_task  # noqa: E402
from cockpit.harness.verify import as_tuple, run_check  # noqa: E402


def geomean(xs: list[float]) -> float:
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def _why(exc: Exception) -> str:
    """A failure as a row keeps it: the exception's type and the start of its message."""
    return f"{type(exc).__name__}: {str(exc)[:200]}"


def shape_arg(text: str) -> Shape:
    """A shape as KEY=VALUE,... (integers where they parse): an argparse type, so a malformed
    one is a one-line usage error."""
    params: dict = {}
    for item in text.split(","):
        key, eq, value = item.partition("=")
        if not eq or not key.strip() or not value.strip():
            raise argparse.ArgumentTypeError(f"{text!r}: want KEY=VALUE,... (got {item!r})")
        value = value.strip()
        params[key.strip()] = int(value) if value.lstrip("-").isdigit() else value
    return Shape(params, "benchmark")


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--task", required=True)
    p.add_argument("--seeds", nargs="*", help="STEM or STEM:KEY=VALUE,... (default: every seed)")
    p.add_argument(
        "--baselines",
        nargs="*",
        default=[],
        choices=sorted(baselines.VARIANTS),
        help="also the harness's baselines, built from the task's reference exactly as "
        "`cockpit baseline` builds them (compile: torch.compile(reference)), as rows "
        "`baseline:NAME` after the seeds",
    )
    p.add_argument(
        "--copy",
        action="store_true",
        help="also time a copy of the first input (x.clone(): one read, one write of the bytes "
        "the roofline counts) on each shape, timed the same way, as a row `copy`; every row then "
        "gets %%copy = copy time / its time: the roofline as this GPU reaches it at that size, "
        "where the launch and the ramp of a small kernel dominate",
    )
    p.add_argument(
        "--hold",
        action="store_true",
        help="the launch slack as the arena makes it (every SM held by harness/hold.py, the call "
        "made once the flush is done) instead of a sleep on one thread",
    )
    p.add_argument("--set", default="benchmark", choices=["benchmark", "public", "hidden"])
    p.add_argument(
        "--shape",
        action="append",
        type=shape_arg,
        default=[],
        metavar="KEY=VALUE,...",
        help="a shape of your own instead of --set (repeatable), e.g. "
        "rows=132,cols=65536,dtype=bfloat16: the task's make_inputs parameters",
    )
    p.add_argument(
        "--match", nargs="*", default=[], help="only shapes whose label contains one of these"
    )
    p.add_argument("--reps", type=int, default=50)
    p.add_argument("--budget-s", type=float, default=1.0, help="timing budget per (seed, shape)")
    p.add_argument(
        "--rounds",
        type=int,
        default=1,
        help="time each shape's rows in this many rounds of reps / rounds calls, round-robin "
        "(copy, then the variants in order), so a machine that drifts during the run moves every "
        "row alike; a row's median is over all its calls, and `round_medians` keeps each round's",
    )
    p.add_argument(
        "--kernel-time",
        type=int,
        default=0,
        metavar="N",
        help="also profile N more calls of each row (CUPTI, L2 flushed before each) and report "
        "`kernel_us`, the median of each call's kernel (and memcpy) durations summed: the time "
        "without launches and the gaps between a call's kernels (GPU only)",
    )
    p.add_argument("--device", default="cuda", help="cpu: a smoke test of this script")
    p.add_argument("--out", default="bench/results")
    args = p.parse_args()
    if args.rounds < 1 or args.reps < 1:
        p.error("--rounds and --reps must be at least 1")
    if args.kernel_time < 0 or (args.kernel_time and args.device != "cuda"):
        p.error("--kernel-time takes a number of calls and needs --device cuda (the profiler)")

    task = load_task(args.task)
    ref = load_module(task.reference_path, f"direct_ref_{task.name}")
    shapes = args.shape or [s for s in task.shape_set(args.device, args.set) if s.timed]
    if args.match:
        shapes = [s for s in shapes if any(m in s.describe() for m in args.match)]
        if not shapes:
            raise SystemExit(f"error: no {args.set} shape of {task.name} matches {args.match}")
    names = args.seeds or [p.stem for p in task.seeds()]
    fns = {}
    for name in names:
        try:
            fns[name] = load_variant(task.seeds_dir, name).kernel
        except Exception as exc:  # a broken variant is a line, not the end of the run
            print(f"{name}: cannot load: {type(exc).__name__}: {exc}", flush=True)
    for variant in args.baselines:
        namespace: dict = {}
        source = baselines.baseline_source(task, variant)
        exec(compile(source, f"<baseline {variant}>", "exec"), namespace)
        fns[f"baseline:{variant}"] = namespace["kernel"]
    cuda = args.device == "cuda"
    ceil = scoring.ceilings(args.device)
    flush = None
    if cuda:
        l2 = getattr(torch.cuda.get_device_properties(0), "L2_cache_size", 50 << 20)
        flush = torch.empty(max(256 << 20, 2 * l2) // 4, dtype=torch.float32, device="cuda")
    hold = None
    if args.hold and cuda:
        from cockpit.harness.hold import Hold
        from cockpit.harness.timing import LAUNCH_SLACK_US

        hold = Hold(torch.device("cuda"), LAUNCH_SLACK_US)
    doc = {
        "task": task.name,
        "gpu": torch.cuda.get_device_name(0) if cuda else "cpu",
        "torch": torch.__version__,
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "set": args.set,
        "slack": hold.describe() if hold else ("sleep" if cuda else "none (host clock)"),
        "rows": [],
    }
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    out_file = out_dir / f"direct-{task.name}.json"
    t0 = time.monotonic()
    print(
        f"{'shape':36s} {'seed':40s} {'check':>5s} {'median':>10s} {'%roof':>6s} {'%copy':>6s} "
        f"{'ratio':>6s}"
    )
    for shape in shapes:
        label = shape.describe()
        try:
            inputs = [tuple(ref.make_inputs(dict(shape.params), s, args.device)) for s in (11, 12)]
        except Exception as exc:  # a --shape the task cannot make: one line, non-zero exit
            raise SystemExit(
                f"error: {task.name} cannot make inputs for {label}: {type(exc).__name__}: {exc}"
            ) from None
        floor, _ = scoring.floor_us(task, shape, ceil, args.device)
        timed = []  # (name, fn, row): checked rows, timed below
        if args.copy:
            row = {"shape": label, "seed": "copy", "floor_us": floor, "check": "-"}
            timed.append(("copy", lambda x, *_: x.clone(), row))
        rows = [row for *_, row in timed]
        for name, fn in fns.items():
            row = {"shape": label, "seed": name, "floor_us": floor}
            rows.append(row)
            try:
                out = as_tuple(fn(*inputs[0]))
                ok, metrics = run_check(task, ref, inputs[0], list(out))
                row["check"] = "ok" if ok else "FAIL"
                row["message"] = str(metrics.get("message", ""))[:200]
                del out
                timed.append((name, fn, row))
            except Exception as exc:
                row["check"] = "ERROR"
                row["message"] = _why(exc)
        calls: dict[str, list[float]] = {name: [] for name, *_ in timed}
        per = -(-args.reps // args.rounds)
        for _ in range(args.rounds):
            for name, fn, row in timed:
                if row.get("check") == "ERROR":
                    continue
                try:
                    t = time_calls(fn, inputs, per, args.budget_s / args.rounds, flush, hold)
                except Exception as exc:  # a variant that fails while timed: a line, no time
                    row["check"] = "ERROR"
                    row["message"] = _why(exc)
                    continue
                calls[name] += t
                row.setdefault("round_medians", []).append(statistics.median(t))
        if args.kernel_time:
            for _, fn, row in timed:
                if row.get("check") == "ERROR":
                    continue
                try:
                    k, kernels = kernel_times(fn, inputs, args.kernel_time, flush)
                except Exception as exc:  # as in the timing: a line, no kernel time
                    row["kernel_error"] = _why(exc)
                    continue
                if k:
                    row["kernel_us"], row["kernels"] = statistics.median(k), kernels
        copy_us = None
        first = None
        for row in rows:
            t = calls.get(row["seed"])
            if t and row.get("check") != "ERROR":
                row["median_us"] = statistics.median(t)
                row["n_calls"] = len(t)
                row["roofline_pct"] = 100.0 * floor / row["median_us"]
                if row["seed"] == "copy":
                    copy_us = row["median_us"]
                elif copy_us:
                    row["copy_pct"] = 100.0 * copy_us / row["median_us"]
            if row["seed"] != "copy":
                if first is None:
                    first = row.get("median_us")
                if first and row.get("median_us"):
                    row["ratio"] = first / row["median_us"]
            doc["rows"].append(row)
            med = row.get("median_us")
            pct = 100.0 if row["seed"] == "copy" else row.get("copy_pct", 0)
            ratio = "" if row["seed"] == "copy" else f"{row.get('ratio', 0):5.2f}x"
            kern = f" kernel {row['kernel_us']:7.2f}us" if "kernel_us" in row else ""
            print(
                f"{label[:36]:36s} {row['seed'][:40]:40s} {row['check']:>5s} "
                f"{(f'{med:8.1f}us' if med else '-'):>10s} {row.get('roofline_pct', 0):5.1f}% "
                f"{pct:5.1f}% {ratio:>6s}{kern}  [{time.monotonic() - t0:5.1f}s]",
                flush=True,
            )
        out_file.write_text(json.dumps(doc, indent=1))
        del inputs
    passed: dict[str, dict[str, float]] = {}
    for r in doc["rows"]:
        if r.get("check") in ("ok", "-") and r.get("median_us"):
            passed.setdefault(r["seed"], {})[r["shape"]] = r["median_us"]
    summary = {}
    base = passed.get(next(iter(fns), ""), {})
    for name, d in passed.items():
        common = [k for k in d if k in base]
        summary[name] = {
            "shapes": len(d),
            "geomean_us": geomean(list(d.values())),
            "ratio_vs_first": geomean([base[k] / d[k] for k in common]) if common else None,
        }
    doc["summary"] = summary
    out_file.write_text(json.dumps(doc, indent=1))
    print(json.dumps(summary, indent=1), flush=True)


if __name__ == "__main__":
    main()
