"""What the forbidden-call watch costs a candidate's call, side by side in one process.

    python bench/watch_cost.py [--device cpu|cuda] [--reps 5] [--out DIR]

For torch-level QR seeds (many small aten ops per call, the code an agent writes first) it times
one call three ways, alternating: plain; under the arena's watch (`arena._make_watch`: the
forbidden ops replaced in the dispatcher, a profile hook, the canary); and under the session-5
watch, a Python dispatch mode that sees every op plus the same hook (`--no-mode` skips it).
Minimum of `--reps` calls each. Prints a table and writes watch_cost.json.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the GPU image installs nothing
sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchlib import load_module  # noqa: E402

from cockpit.harness.arena import _make_watch  # noqa: E402
from cockpit.harness.task import load_task  # noqa: E402

CASES = {  # seed: (batch, n) on the CPU, on a GPU
    "householder_torch": ((4, 128), (64, 512)),
    "blocked_wy": ((4, 256), (64, 1024)),
    "cholqr_reconstruct": ((4, 256), (64, 1024)),
}


def dispatch_mode_watch(forbidden: frozenset[str], cnames: frozenset[str]):
    """The session-5 watch: a TorchDispatchMode that sees every aten op of the call, plus the
    same C-call profile hook as now (the hook also fires inside the mode's Python frames)."""
    from torch.utils._python_dispatch import TorchDispatchMode

    def watch(fn):
        seen = []

        class Recorder(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                if func.__name__.split(".")[0].lower() in forbidden:
                    seen.append(func.__name__)
                return func(*args, **(kwargs or {}))

        def hook(frame, event, arg):
            if event == "c_call":
                name = str(getattr(arg, "__name__", "")).lower()
                if name in cnames or name in forbidden:
                    seen.append(name)
            elif event == "call":
                code, mod = frame.f_code, str(frame.f_globals.get("__name__", ""))
                if code.co_name.lower() in cnames and mod.startswith(("numpy", "scipy")):
                    seen.append(code.co_name)

        sys.setprofile(hook)
        try:
            with Recorder():
                return fn(), seen
        finally:
            sys.setprofile(None)

    return watch


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--no-mode", action="store_true", help="skip the session-5 watch")
    ap.add_argument("--out", type=Path, default=Path("bench/results/watch"))
    args = ap.parse_args()
    dev = torch.device(args.device)
    task = load_task("qr")
    ops = frozenset(o.lower() for o in task.forbidden_ops)
    names = frozenset(f.lower() for f in task.forbidden_cnames)  # as the judge passes them
    watch = _make_watch(ops, names, dev)
    mode = None if args.no_mode else dispatch_mode_watch(ops, names)

    def sync():
        if dev.type == "cuda":
            torch.cuda.synchronize(dev)

    rows = []
    for seed, shapes in CASES.items():
        batch, n = shapes[dev.type == "cuda"]
        mod = load_module(ROOT / "kernels/qr/seeds" / f"{seed}.py")
        A = torch.randn(batch, n, n, device=dev)

        def call(k=mod.kernel, a=A):
            return k(a)

        ways = {"plain": call, "watch": lambda c=call: watch(c)}
        if mode:
            ways["session-5 watch"] = lambda c=call: mode(c)
        for f in ways.values():  # warm: compile, allocator, caches
            f()
        sync()
        times = {k: [] for k in ways}
        for _ in range(args.reps):
            for k, f in ways.items():
                t0 = time.perf_counter()
                f()
                sync()
                times[k].append(time.perf_counter() - t0)
        best = {k: min(v) for k, v in times.items()}
        rows.append({"seed": seed, "batch": batch, "n": n, "device": dev.type,
                     "best_s": best, "times_s": times})  # fmt: skip
        line = "  ".join(f"{k} {v * 1e3:8.1f} ms ({v / best['plain']:.2f}x)" for k, v in best.items())
        print(f"{seed:20s} {batch}x{n}x{n}  {line}", flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    doc = {"device": args.device, "torch": torch.__version__, "reps": args.reps, "rows": rows}
    (args.out / "watch_cost.json").write_text(json.dumps(doc, indent=1))
    print(f"wrote {args.out / 'watch_cost.json'}")


if __name__ == "__main__":
    main()
