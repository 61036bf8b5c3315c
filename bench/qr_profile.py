"""Where a QR seed's time goes on a GPU: kernel census per benchmark spec (torch.profiler).

    python bench/qr_profile.py --seed triton_panel_wy --out $OUT
    python bench/qr_profile.py --seed triton_fused:USE_GRAPHS=0 --specs 2x4096 8x2048 --out $OUT

For each spec: launches per call, GPU busy time vs wall time (the gap is host/launch overhead),
and the top kernels by total GPU time. Prints a table, writes qr_profile-SEED.json.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchlib import batch_by_n, load_variant  # noqa: E402  (bench/ is the script's own folder)
from qr_direct import load_module  # noqa: E402

from cockpit.harness.task import load_task  # noqa: E402

SPECS = [(20, 32), (40, 176), (40, 352), (640, 512), (60, 1024), (8, 2048), (2, 4096)]


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--seed", required=True, help="STEM or STEM:KEY=VALUE,... (as qr_direct)")
    p.add_argument(
        "--specs",
        nargs="*",
        type=batch_by_n,
        help="BATCHxN each (default: the seven dense benchmark specs)",
    )
    p.add_argument("--calls", type=int, default=3)
    p.add_argument("--top", type=int, default=8)
    p.add_argument("--out", default="bench/results")
    args = p.parse_args()
    task = load_task("qr")
    ref = load_module(task.reference_path)
    fn = load_variant(task.seeds_dir, args.seed).kernel
    specs = args.specs or SPECS
    doc = {"gpu": torch.cuda.get_device_name(0), "seed": args.seed, "specs": []}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for batch, n in specs:
        a = ref.make_inputs({"batch": batch, "n": n, "cond": 2, "family": "dense"}, 5, "cuda")[0]
        fn(a)
        fn(a)
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA, ProfilerActivity.CPU]) as prof:
            t0 = time.perf_counter()
            for _ in range(args.calls):
                fn(a)
            torch.cuda.synchronize()
            wall = (time.perf_counter() - t0) / args.calls * 1e6
        kernels: dict[str, list[float]] = defaultdict(list)
        for ev in prof.events():
            if ev.device_type == torch.autograd.DeviceType.CUDA:
                kernels[ev.name].append(
                    ev.device_time_total if hasattr(ev, "device_time_total") else ev.cuda_time_total
                )
        busy = sum(sum(v) for v in kernels.values()) / args.calls
        launches = sum(len(v) for v in kernels.values()) / args.calls
        top = sorted(kernels.items(), key=lambda kv: -sum(kv[1]))[: args.top]
        row = {
            "batch": batch,
            "n": n,
            "wall_us": wall,
            "gpu_busy_us": busy,
            "launches_per_call": launches,
            "top": [
                {
                    "kernel": k[:90],
                    "per_call_us": sum(v) / args.calls,
                    "count_per_call": len(v) / args.calls,
                }
                for k, v in top
            ],
        }
        doc["specs"].append(row)
        print(
            f"({batch},{n}): wall {wall / 1e3:.3f} ms, GPU busy {busy / 1e3:.3f} ms, "
            f"{launches:.0f} launches/call",
            flush=True,
        )
        for t in row["top"]:
            print(
                f"    {t['per_call_us'] / 1e3:9.3f} ms  x{t['count_per_call']:6.0f}  {t['kernel']}",
                flush=True,
            )
        stem = args.seed.replace(":", "-").replace(",", "-").replace("=", "")
        (out / f"qr_profile-{stem}.json").write_text(json.dumps(doc, indent=1))
        del a
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
