"""The judge's clock against the times the arena reports: honest candidates, forges, and its cost.

Each candidate is judged in this process (`cockpit.harness.judge.evaluate`, one fresh arena
each) and, for every timed shape, the reported median, the judge's reading per call
(`judge_us`), their ratio and the burst length are recorded, with the verdict.

- `--honest TASK:FILE ...`: shipped seeds and honest test candidates; none may be rejected.
- `--forge DIV ...`: `tests/adversarial/reply_forge.py` (samples divided by DIV in the reply
  channel) with the static scan off, the stand-in for native code the scan cannot read;
  `--native DIV` does the same with `tests/adversarial/native_pyrun_forge.py` (a `load_inline`
  extension that runs the same Python through the C API; needs a compiler).
- `--cost TASK:FILE`: the candidate judged with the clock on and off, alternately `--rounds`
  times, in one process: what the check adds to an evaluation's wall time. Every verdict also
  carries the clock's own seconds (`clock_s`, from the judge's breakdown) and their share of the
  evaluation (`clock_share`), which needs no second evaluation and no quiet machine.

    python bench/judge_clock.py --device cuda --honest softmax:kernels/softmax/seeds/triton_tiled.py \\
        --forge 1.5 2 3 10 --cost softmax:kernels/softmax/seeds/triton_tiled.py --out jc.json

Progress goes to stderr, one line per verdict to stdout; `--out` writes everything as JSON.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from cockpit.harness.judge import Options, evaluate  # noqa: E402
from cockpit.harness.task import load_task  # noqa: E402

ADVERSARIAL = ROOT / "tests" / "adversarial"


def judge(task: str, path: Path, args: argparse.Namespace, **opts: Any) -> dict[str, Any]:
    t0 = time.perf_counter()
    res = evaluate(load_task(task), path, Options(device=args.device, mode=args.mode, **opts))
    wall = time.perf_counter() - t0
    shapes = []
    for s in res.shapes:
        t = s.timing
        if t is not None:
            shapes.append(
                {
                    "shape": f"{s.set}: {s.shape}",
                    "median_us": t.median_us,
                    "judge_us": t.judge_us,
                    "ratio": t.judge_ratio,
                    "k": t.judge_k,
                }
            )
    out = {
        "task": task,
        "candidate": str(path.relative_to(ROOT) if path.is_relative_to(ROOT) else path.name),
        "status": res.status,
        "reasons": [f"{r.kind} [{r.shape}]: {r.message}" for r in res.reasons][:3],
        "wall_s": round(wall, 2),
        "stage_s": res.stage_s,
        # what the cross-check itself took: null bursts before the import, bursts after timing
        "clock_s": {
            "null": (res.breakdown_s.get("load") or {}).get("judge_clock", 0.0),
            "bursts": (res.breakdown_s.get("time") or {}).get("judge_clock", 0.0),
        },
        "shapes": shapes,
    }
    out["clock_share"] = round(sum(out["clock_s"].values()) / max(wall, 1e-9), 4)
    ratios = [s["ratio"] for s in shapes if s["ratio"] is not None]
    print(
        f"{out['candidate']:<48} {res.status:<9} wall {wall:6.1f}s "
        f"max ratio {max(ratios, default=float('nan')):6.2f}  clock {100 * out['clock_share']:.1f}% "
        f"{out['reasons'][:1]}",
        flush=True,
    )
    return out


def forged(name: str, divisor: float, tmp: Path, device: str) -> Path:
    """The forge with its divisor; on a GPU one softmax a call (REPEAT, there for the CPU's noise
    floor, would only lengthen the run)."""
    src = (ADVERSARIAL / name).read_text()
    src, n = re.subn(r"^DIVISOR = [\d.]+", f"DIVISOR = {divisor}", src, count=1, flags=re.M)
    assert n == 1, name
    if device != "cpu":
        src, n = re.subn(r"^REPEAT = \d+", "REPEAT = 1", src, count=1, flags=re.M)
        assert n == 1, name
    path = tmp / f"{Path(name).stem}_{divisor:g}.py"
    path.write_text(src)
    return path


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--mode", default="quick", choices=["quick", "iterate", "final"])
    ap.add_argument("--honest", nargs="*", default=[], metavar="TASK:FILE")
    ap.add_argument("--forge", nargs="*", type=float, default=[], metavar="DIV")
    ap.add_argument("--native", nargs="*", type=float, default=[], metavar="DIV")
    ap.add_argument("--cost", nargs="*", default=[], metavar="TASK:FILE")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--out")
    args = ap.parse_args()
    report: dict[str, Any] = {"device": args.device, "mode": args.mode, "honest": [], "forges": []}

    def save() -> None:  # after every verdict: a run cut short keeps what it measured
        if args.out:
            Path(args.out).write_text(json.dumps(report, indent=1))

    with tempfile.TemporaryDirectory() as tmp:
        for spec in args.honest:
            task, _, file = spec.partition(":")
            report["honest"].append(judge(task, ROOT / file, args))
            save()
        for name, divisors in (
            ("reply_forge.py", args.forge),
            ("native_pyrun_forge.py", args.native),
        ):
            for d in divisors:
                r = judge("softmax", forged(name, d, Path(tmp), args.device), args, static=False, profile=False)
                report["forges"].append(dict(r, divisor=d))
                save()
        report["cost"] = []
        for spec in args.cost:
            task, _, file = spec.partition(":")
            walls: dict[str, list[float]] = {"on": [], "off": []}
            for _ in range(args.rounds):
                for key in ("on", "off"):
                    r = judge(task, ROOT / file, args, judge_clock=key == "on")
                    walls[key].append(r["wall_s"])
            on, off = statistics.median(walls["on"]), statistics.median(walls["off"])
            report["cost"].append(
                {"task": task, "candidate": file, "wall_s": walls, "added": round(on / off - 1, 4)}
            )
            print(
                f"cost of the clock on {file}: {100 * (on / off - 1):+.1f}% ({walls})", flush=True
            )
            save()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
