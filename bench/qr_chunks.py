"""Would a QR seed gain from factoring a large batch a chunk of matrices at a time?

A 640 x 512 float32 batch is 671 MB, far past the H200's 50 MB L2, so every trailing update of
every panel streams the whole batch through device memory. A chunk of ~40 matrices (40 MB)
would stay in L2 across its panels, at the price of fewer programs per launch and more
launches. This times the seed on the whole batch against the same seed called on consecutive
chunks of it (each chunk call as the harness would make it: a graph per chunk shape, its
input copied in and its outputs cloned), every variant in one process, and checks the joined
result of the chunked calls.

    python bench/qr_chunks.py --seed triton_fused --specs 640x512 60x1024 --chunks 20 40 80 160
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchlib import batch_by_n, load_module, load_variant, time_calls  # noqa: E402

from cockpit.harness.task import load_task  # noqa: E402


def _positive(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive number of matrices")
    return int(text)


def chunked(fn, size: int):
    def run(a: torch.Tensor):
        hs, taus = [], []
        for i in range(0, a.shape[0], size):
            h, tau = fn(a[i : i + size])
            hs.append(h)
            taus.append(tau)
        return torch.cat(hs), torch.cat(taus)

    return run


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--seed", default="triton_fused", help="STEM or STEM:KEY=VALUE,...")
    p.add_argument(
        "--specs", nargs="+", type=batch_by_n, default=[(640, 512)], help="BATCHxN, dense family"
    )
    p.add_argument("--chunks", nargs="+", type=_positive, default=[20, 40, 80, 160])
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--budget-s", type=float, default=0.5)
    p.add_argument("--device", default="cuda", help="cpu: a smoke test (set TRITON_INTERPRET=1)")
    p.add_argument("--out", default="bench/results")
    args = p.parse_args()
    task = load_task("qr")
    ref = load_module(task.reference_path, "chunks_ref")
    fn = load_variant(task.seeds_dir, args.seed).kernel
    rows = []
    print(f"{'spec':>10s} {'chunk':>6s} {'check':>6s} {'median ms':>10s} {'vs whole':>9s}")
    for batch, n in args.specs:
        spec = f"{batch}x{n}"
        params = {"batch": batch, "n": n, "family": "dense", "cond": 2}
        inputs = [ref.make_inputs(params, s, args.device)[0] for s in (11, 12)]
        whole = None
        for size in [0, *args.chunks]:
            if size >= batch:
                continue
            f = fn if size == 0 else chunked(fn, size)
            ok, _ = ref.check((inputs[0],), f(inputs[0]))
            f(inputs[1])
            if args.device == "cuda":
                torch.cuda.synchronize()
            t = time_calls(f, [(x,) for x in inputs], args.reps, args.budget_s)
            med = statistics.median(t)
            whole = med if size == 0 else whole
            row = {"spec": spec, "chunk": size, "ok": bool(ok), "median_us": med}
            rows.append(row)
            print(
                f"{spec:>10s} {size or 'whole':>6} {'ok' if ok else 'FAIL':>6s} "
                f"{med / 1e3:10.3f} {whole / med:8.2f}x",
                flush=True,
            )
        del inputs
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    doc = {"seed": args.seed, "date": time.strftime("%Y-%m-%d %H:%M"), "rows": rows}
    (out / "qr_chunks.json").write_text(json.dumps(doc, indent=1))


if __name__ == "__main__":
    main()
