"""Why do separate processes time the same kernel 15-60% apart? Time one seed three ways, in
several fresh processes, and compare the spreads (a timed loop that leaves the GPU mostly idle
lets medians of the same kernel spread widely between processes at a steady SM clock).

    python bench/timing_modes.py --task softmax --seed triton_online --processes 5 --out $OUT

Modes, each on fresh inputs (a new tensor per call, as the harness does):
- `harness`: synchronize, flush L2 (256 MiB fill), event, call, event, synchronize: the arena's
  timed call, one at a time, the GPU idle between calls while the host prepares the next.
- `queued`: the same flush/event/call/event sequence for `--calls` calls enqueued back to back,
  one synchronize at the end: no idle gaps between calls.
- `busy`: like `harness`, but a ~1 ms GPU spin precedes each flush, so the GPU is never idle
  long before a timed call.
- `sleep`: like `harness`, but the GPU sleeps ~200 us (`torch.cuda._sleep`) between the flush
  and the start event, so the host has enqueued the call before the clock starts. If `sleep` matches `queued`, the
  spread is the host's launch latency leaking into the timed interval.
- `hold`: the harness as it is: every SM held ~200 us (harness/hold.py)
  after the flush, the call made once the flush is done. Should match `sleep` and `queued`.
If `harness` spreads across processes and `queued`/`busy` do not, idle gaps (power states)
are the cause; if all three spread, the placement of memory per process is the suspect.
Prints a table per process and the spread of each mode; writes timing_modes.json.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchlib import load_module as _load  # noqa: E402

from cockpit.harness.arena import LAUNCH_SLACK_CYCLES as SLEEP_CYCLES  # noqa: E402
from cockpit.harness.hold import Hold  # noqa: E402
from cockpit.harness.timing import LAUNCH_SLACK_US  # noqa: E402

MODES = ("harness", "queued", "busy", "sleep", "hold")


def one_process(args) -> dict:
    """The measurement itself (runs in a fresh process)."""
    import torch

    from cockpit.harness.task import load_task

    task = load_task(args.task)
    ref = _load(task.reference_path, "ref")
    seed = _load(task.seeds_dir / f"{args.seed}.py", "seed")
    shapes = [s for s in task.shape_set(args.device, "benchmark") if s.timed]
    shape = next((s for s in shapes if (args.shape or "") in s.describe()), None)
    if shape is None:
        raise SystemExit(f"no benchmark shape of {args.task} matches {args.shape!r}")
    cuda = args.device == "cuda"
    pool = [ref.make_inputs(dict(shape.params), i, args.device) for i in range(2)]

    def fresh(i: int):  # new content at a new address every call, as the arena's inputs
        c = 1.0 + ((i * 7919) % 97) / 97 * 2**-7
        return [x.mul(c) if x.is_floating_point() else x.clone() for x in pool[i % 2]]

    flush = torch.empty(64 << 20, dtype=torch.float32, device=args.device) if cuda else None
    hold = Hold(torch.device(args.device), LAUNCH_SLACK_US) if cuda else None
    spin = torch.empty(4 << 20, dtype=torch.float32, device=args.device) if cuda else None
    for i in range(5):  # warm-up: compile, allocator
        seed.kernel(*fresh(i))
    if cuda:
        torch.cuda.synchronize()

    def event():
        return torch.cuda.Event(enable_timing=True)

    out: dict = {"shape": shape.describe(), "modes": {}}
    for mode in MODES:
        times = []
        if not cuda:
            for i in range(args.calls):
                inp = fresh(i)
                t0 = time.perf_counter()
                seed.kernel(*inp)
                times.append((time.perf_counter() - t0) * 1e6)
        elif mode == "queued":
            inps = [fresh(i) for i in range(args.calls)]
            evs = []
            torch.cuda.synchronize()
            for inp in inps:
                flush.fill_(1.0)
                s, e = event(), event()
                s.record()
                seed.kernel(*inp)
                e.record()
                evs.append((s, e))
            torch.cuda.synchronize()
            times = [s.elapsed_time(e) * 1e3 for s, e in evs]
        else:
            for i in range(args.calls):
                inp = fresh(i)
                torch.cuda.synchronize()
                if mode == "busy":
                    for _ in range(40):  # ~1 ms of memory traffic right before the flush
                        spin.add_(1.0)
                flush.fill_(1.0)
                flushed = event()
                flushed.record()
                if mode == "sleep":
                    torch.cuda._sleep(SLEEP_CYCLES)
                elif mode == "hold":
                    hold.launch()
                s, e = event(), event()
                s.record()
                while mode == "hold" and not flushed.query():
                    pass
                seed.kernel(*inp)
                e.record()
                torch.cuda.synchronize()
                times.append(s.elapsed_time(e) * 1e3)
        q = statistics.quantiles(times, n=10)
        out["modes"][mode] = {
            "median_us": statistics.median(times),
            "mean_us": statistics.fmean(times),
            "p10_us": q[0],
            "p90_us": q[-1],
            "n": len(times),
        }
    return out


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--task", default="softmax")
    p.add_argument("--seed", default="triton_online")
    p.add_argument("--shape", help="a substring of the benchmark shape's description")
    p.add_argument("--processes", type=int, default=5)
    p.add_argument("--calls", type=int, default=200)
    p.add_argument("--device", default="cuda")
    p.add_argument("--out", default="bench/results")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        print(json.dumps(one_process(args)))
        return
    runs = []
    for i in range(args.processes):
        cmd = [sys.executable, __file__, "--child", *sys.argv[1:]]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        if r.returncode != 0:
            print(f"process {i} failed: {r.stderr.strip().splitlines()[-1:]}", flush=True)
            continue
        run = json.loads(r.stdout.strip().splitlines()[-1])
        runs.append(run)
        cells = "  ".join(
            f"{m} {v['median_us']:8.1f} ({v['p10_us']:.1f}..{v['p90_us']:.1f})"
            for m, v in run["modes"].items()
        )
        print(f"process {i}: {run['shape'][:40]:40s} {cells}", flush=True)
    spread = {}
    for mode in MODES:
        meds = [r["modes"][mode]["median_us"] for r in runs if mode in r["modes"]]
        if meds:
            spread[mode] = 100 * (max(meds) - min(meds)) / statistics.median(meds)
            print(
                f"{mode:8s} medians {min(meds):.1f}..{max(meds):.1f} us: spread {spread[mode]:.1f}%"
            )
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "timing_modes.json").write_text(
        json.dumps({"runs": runs, "spread_pct": spread}, indent=1)
    )


if __name__ == "__main__":
    main()
