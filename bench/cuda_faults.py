"""CUDA faults in a candidate, judged on a GPU: what each verdict says, and that the judge
evaluates the next candidate correctly after each.

The candidates are `tests/gpu/faults/*.py` (400 GiB asked for, a store a terabyte past the
output, a 32-bit row offset that wraps on the hidden shape with more than 2**31 elements). Each
is judged (`--mode`, iterate by default: every hidden shape), then the honest seed `--after` (in
`--after-mode`; `--after ''` for none), in the same judge process.

    python bench/cuda_faults.py --out faults.json

One line per verdict to stdout; `--out` writes the verdicts as JSON.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from cockpit.harness.judge import Options, evaluate  # noqa: E402
from cockpit.harness.task import load_task  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--mode", default="iterate", choices=["quick", "iterate", "final"])
    ap.add_argument(
        "--after", default="kernels/softmax/seeds/triton_tiled.py", help="'' for none"
    )
    ap.add_argument("--after-mode", default="quick", choices=["quick", "iterate", "final"])
    ap.add_argument("files", nargs="*")
    ap.add_argument("--out")
    args = ap.parse_args()
    files = [Path(f) for f in args.files] or sorted((ROOT / "tests/gpu/faults").glob("*.py"))
    task = load_task("softmax")
    out = []
    for f in files:
        for path in (f, ROOT / args.after) if args.after else (f,):
            t0 = time.perf_counter()
            mode = args.after_mode if path != f else args.mode
            res = evaluate(task, path, Options(device=args.device, mode=mode, profile=False))
            row = {
                "candidate": path.name,
                "after": path != f,
                "status": res.status,
                "reasons": [r.line() for r in res.reasons][:3],
                "wall_s": round(time.perf_counter() - t0, 1),
            }
            out.append(row)
            print(json.dumps(row), flush=True)
            if args.out:
                Path(args.out).write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
