"""How many candidates the loop judges per hour, and where each one's seconds go.

Runs the real loop (`cockpit run TASK --agent tuner --headless`) once per design, side by side in
one process tree on one machine, and reads each session's record:

- `new`: the cascade (screen, promote only what could become a branch's best) and warm arenas;
- `old`: every candidate gets the full evaluation in an arena started for it (`--cascade off
  --warm off`), the design before the cascade.

For each run: evaluations per hour (evaluations / seconds from the first evaluation's start to
the last one's verdict), the seconds from an evaluation's start to its verdict per tier
(screened, promoted, full) and from its proposal (waiting for the worker included),
the median seconds per judge stage, the best score and when it was reached. `--hang` also times
a candidate that never returns (`cockpit eval` on a spinning kernel): how long a hang costs.

`--eval FILE` judges one candidate three ways in this process, each with a cold compile cache
(a fresh data folder): the full evaluation (`cockpit eval`'s), the cascade with no incumbent
(screened, then promoted) and the cascade against an incumbent nothing can beat (screened only).

    python bench/throughput.py --task softmax --device cuda --budget 24 --out tp.json
    python bench/throughput.py --task softmax --device cpu --budget 8 --mode quick   # CPU figure

Progress goes to stderr; the table to stdout; `--out` writes the figures as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
COCKPIT = [sys.executable, "-c", "import sys; from cockpit.cli import main; sys.exit(main())"]
DESIGNS = {
    "new": ["--cascade", "on", "--warm", "on"],
    "old": ["--cascade", "off", "--warm", "off"],
}
HANG = "import torch\n\n\ndef kernel(x, *rest):\n    while True:\n        x = x + 0\n"


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def run_loop(
    task: str,
    device: str,
    budget: int,
    mode: str,
    design: str,
    sessions: Path,
    beam: int,
    timeout: float,
) -> dict[str, Any]:
    name = f"tp-{Path(task).name}-{design}-{int(time.time())}"
    cmd = [
        *COCKPIT,
        "run",
        task,
        "--agent",
        "tuner",
        "--device",
        device,
        "--budget",
        str(budget),
        "--beam",
        str(beam),
        "--mode",
        mode,
        "--headless",
        "--session",
        name,
        "--sessions-dir",
        str(sessions),
        *DESIGNS[design],
    ]
    log(f"{design}: {' '.join(cmd[3:])}")
    t0 = time.monotonic()
    # past `timeout` the run is stopped (SIGTERM: the session ends `stopped`) and what it
    # finished is counted; its one line per evaluation goes to stderr as it happens
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=sys.stderr, stderr=sys.stderr)
    try:
        rc = proc.wait(timeout)
    except subprocess.TimeoutExpired:
        log(f"{design}: stopped after {timeout:.0f} s")
        proc.terminate()
        rc = proc.wait(60)
    wall = time.monotonic() - t0
    if not (sessions / name / "session.db").is_file():
        raise SystemExit(f"{design}: exit {rc}, no session was recorded")
    out = summarize(sessions / name)
    out.update(design=design, wall_s=round(wall, 1), exit=rc)
    log(
        f"{design}: {out['evaluations']} evaluations in {wall:.0f} s; "
        f"{out['per_hour']:.0f}/h; tiers {out['tiers']}"
    )
    return out


def summarize(folder: Path) -> dict[str, Any]:
    from cockpit.store import SessionRecord

    with SessionRecord.open_readonly(folder) as rec:
        events = rec.events()
    proposed = {e.candidate: e.t for e in events if e.kind == "candidate_proposed"}
    started = {e.candidate: e.t for e in events if e.kind == "evaluation_started"}
    finished = [
        e
        for e in events
        if e.kind == "evaluation_finished" and e.payload.get("status") != "duplicate"
    ]
    best = [e for e in events if e.kind == "best_changed"]
    t_first = min(started.values()) if started else 0.0
    span = (max(e.t for e in finished) - t_first) if finished else 0.0
    tiers: dict[str, int] = {}
    latency: dict[str, list[float]] = {}  # proposal to verdict, waiting for a worker included
    judged: dict[str, list[float]] = {}  # evaluation started to verdict
    stages: dict[str, dict[str, list[float]]] = {}
    for e in finished:
        tier = e.payload.get("tier", "full")
        tiers[tier] = tiers.get(tier, 0) + 1
        t_from = proposed.get(e.candidate, started.get(e.candidate))
        if t_from is not None:
            latency.setdefault(tier, []).append(e.t - t_from)
        if e.candidate in started:
            judged.setdefault(tier, []).append(e.t - started[e.candidate])
        for stage, s in (e.payload.get("stage_s") or {}).items():
            stages.setdefault(tier, {}).setdefault(stage, []).append(float(s))
    med = statistics.median
    return {
        "session": folder.name,
        "evaluations": len(finished),
        "span_s": round(span, 1),
        "per_hour": 3600.0 * len(finished) / span if span > 0 else 0.0,
        "tiers": tiers,
        "statuses": _count(e.payload.get("status", "?") for e in finished),
        "eval_s": {
            k: {"median": round(med(v), 2), "max": round(max(v), 2), "n": len(v)}
            for k, v in judged.items()
        },
        "latency_s": {
            k: {"median": round(med(v), 2), "max": round(max(v), 2), "n": len(v)}
            for k, v in latency.items()
        },
        "stage_s": {k: {st: round(med(v), 2) for st, v in d.items()} for k, d in stages.items()},
        "best_us": best[-1].payload.get("score_us") if best else None,
        "best_at_s": round(best[-1].t - t_first, 1) if best else None,
    }


def _count(items: Any) -> dict[str, int]:
    out: dict[str, int] = {}
    for x in items:
        out[x] = out.get(x, 0) + 1
    return out


def hang_cost(task: str, device: str, mode: str) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "spin.py"
        path.write_text(HANG)
        t0 = time.monotonic()
        proc = subprocess.run(
            [
                *COCKPIT,
                "eval",
                task,
                str(path),
                "--device",
                device,
                f"--{mode}" if mode != "iterate" else "--quick",
                "--json",
            ],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=900,
        )
        wall = time.monotonic() - t0
    try:
        r = json.loads(proc.stdout)
    except ValueError:
        r = {"status": f"unreadable (exit {proc.returncode})", "reasons": []}
    reason = (r.get("reasons") or [{}])[0]
    log(f"hang: {r.get('status')} in {wall:.1f} s: {reason.get('message', '')[:120]}")
    return {
        "status": r.get("status"),
        "wall_s": round(wall, 1),
        "reason": reason.get("message"),
        "stage_s": r.get("stage_s"),
    }


def eval_tiers(
    task_name: str,
    path: str,
    device: str,
    mode: str,
    tiers: tuple[str, ...] = ("full", "promoted", "screened"),
) -> dict[str, Any]:
    """`path` judged once per tier, each with a cold compile cache; `screened` runs against an
    incumbent nothing can beat, made from the first other tier's result."""
    from cockpit.harness import warm
    from cockpit.harness.judge import Options, evaluate
    from cockpit.harness.task import load_task

    task = load_task(task_name)
    source = Path(path).read_text()
    out: dict[str, Any] = {}
    unbeatable: dict[str, Any] | None = None
    from cockpit.harness import scoring

    home = scoring.data_dir()
    scoring.ceilings(device)  # measured once, kept: a loop has them from its first evaluation
    for label in sorted(tiers, key=lambda t: t == "screened"):
        with tempfile.TemporaryDirectory(prefix="cockpit-tp-data-") as d:
            # a cold compile cache, as a new candidate has; the machine's ceilings and baselines
            for sub in ("ceilings", "baselines"):
                if (home / sub).is_dir():
                    shutil.copytree(home / sub, Path(d) / sub)
            os.environ["COCKPIT_DATA_DIR"] = d
            opts = Options(
                device=device,
                mode=mode,
                cascade=label != "full",
                incumbent=unbeatable if label == "screened" else None,
            )
            t0 = time.monotonic()
            r = evaluate(task, path, opts, source=source).to_dict()
            wall = time.monotonic() - t0
        warm.drop()
        if label != "screened" and unbeatable is None:
            unbeatable = json.loads(json.dumps(r))
            for s in unbeatable.get("shapes", []):
                for k in ("median_us", "mean_us"):
                    if (s.get("timing") or {}).get(k):
                        s["timing"][k] /= 1000.0
                s["floor_us"] = None
        out[label] = {
            "status": r["status"],
            "tier": r.get("tier"),
            "wall_s": round(wall, 1),
            "stage_s": r.get("stage_s"),
            "score_us": r.get("score_us"),
            "shapes": len(r.get("shapes", [])),
            "why": r.get("promotion", {}).get("why"),
        }
        log(f"eval {label}: {r['status']} ({r.get('tier')}) in {wall:.1f} s {r.get('stage_s')}")
    return out


def table(runs: list[dict[str, Any]]) -> str:
    rows = [
        (
            "design",
            "evals",
            "per hour",
            "tiers",
            "screened s",
            "promoted/full s",
            "queued+judged s",
            "best",
            "best at s",
        )
    ]
    for r in runs:
        lat = r["eval_s"]  # evaluation start to verdict, median
        full = lat.get("promoted") or lat.get("full") or {}
        waits = [v["median"] for v in r["latency_s"].values()]
        rows.append(
            (
                r["design"],
                str(r["evaluations"]),
                f"{r['per_hour']:.0f}",
                " ".join(f"{k}={v}" for k, v in sorted(r["tiers"].items())),
                f"{lat['screened']['median']:.1f}" if "screened" in lat else "-",
                f"{full['median']:.1f}" if full else "-",
                f"{max(waits):.0f}" if waits else "-",
                f"{r['best_us']:.2f} us" if r.get("best_us") else "-",
                f"{r['best_at_s']:.0f}" if r.get("best_at_s") is not None else "-",
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(row, widths)) for row in rows)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--task", default="softmax")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--budget", type=int, default=24)
    ap.add_argument("--beam", type=int, default=3)
    ap.add_argument("--mode", default="iterate", choices=["quick", "iterate", "final"])
    ap.add_argument("--designs", nargs="+", default=["new", "old"], choices=list(DESIGNS))
    ap.add_argument("--hang", action="store_true", help="also time a candidate that never returns")
    ap.add_argument("--eval", metavar="FILE", help="judge FILE full, promoted and screened only")
    ap.add_argument(
        "--tiers",
        nargs="+",
        default=["full", "promoted", "screened"],
        choices=["full", "promoted", "screened"],
        help="with --eval: which of the three (screened needs one of the others)",
    )
    ap.add_argument("--timeout", type=float, default=3600.0, help="seconds per run")
    ap.add_argument("--out", help="write the figures as JSON")
    ap.add_argument("--sessions-dir", help="keep the runs' sessions here (default: a temp folder)")
    args = ap.parse_args()
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    if args.eval:
        if args.tiers == ["screened"]:
            ap.error("--tiers screened needs full or promoted beside it (its incumbent)")
        out = {
            "task": args.task,
            "device": args.device,
            "mode": args.mode,
            "candidate": args.eval,
            "date": time.strftime("%Y-%m-%d %H:%M"),
            "tiers": eval_tiers(args.task, args.eval, args.device, args.mode, tuple(args.tiers)),
        }
        for label, r in out["tiers"].items():
            print(
                f"{label:9s} {r['status']:8s} {r['wall_s']:7.1f} s  {r['shapes']} shapes  "
                f"{json.dumps(r['stage_s'])}"
            )
        if args.out:
            Path(args.out).write_text(json.dumps(out, indent=1))
        return 0
    out: dict[str, Any] = {
        "task": args.task,
        "device": args.device,
        "budget": args.budget,
        "mode": args.mode,
        "date": time.strftime("%Y-%m-%d %H:%M"),
    }
    if args.hang:
        out["hang"] = hang_cost(args.task, args.device, args.mode)
    with tempfile.TemporaryDirectory(prefix="cockpit-tp-") as d:
        where = Path(args.sessions_dir or d)
        where.mkdir(parents=True, exist_ok=True)
        out["runs"] = runs = [
            run_loop(
                args.task,
                args.device,
                args.budget,
                args.mode,
                design,
                where,
                args.beam,
                args.timeout,
            )
            for design in args.designs
        ]
    print(table(runs))
    for r in runs:
        print(f"{r['design']}: stage medians by tier {json.dumps(r['stage_s'])}")
    if "hang" in out:
        print(f"hang: {out['hang']['status']} after {out['hang']['wall_s']} s")
    if args.out:
        Path(args.out).write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
