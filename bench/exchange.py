"""Tensor transfers between the judge and the arena: the file exchange against the memfd one.

    python bench/exchange.py [--sizes-mb 64 256 671] [--transfers 6] [--device cpu|cuda] [--out DIR]

Each row sends one tensor of that size `--transfers` times, as an evaluation does shape after
shape (judge: `pack` to the exchange; arena: `unpack` from it; for CUDA the pack starts from and
the unpack ends on the GPU), and reports the seconds and GB/s of a transfer for each exchange:
the first one (the memfd region faults its pages in then) and the median of the rest. Both ends
run in this one process; the region is the same memfd mapped twice, so the memory behaviour is
the cross-process one. Prints a table and writes exchange.json.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the GPU image installs nothing

from cockpit.harness import wire  # noqa: E402


def _ends(kind: str, folder: Path):
    if kind == "files":
        f = wire.Files(folder)
        return f, f
    w = wire.Region(name="bench-exchange")
    import os

    return w, wire.Region(fd=os.dup(w.fd))


def run(kind: str, nbytes: int, transfers: int, device: str) -> list[float]:
    folder = Path(tempfile.mkdtemp(prefix="bench-x-", dir=wire.exchange_root()))
    try:
        tx, rx = _ends(kind, folder)
        t = torch.randn(nbytes // 4, device=device)
        times = []
        for _ in range(transfers):
            t0 = time.perf_counter()
            meta = tx.pack(t, "b")
            out = rx.unpack(meta, device)
            if device == "cuda":
                torch.cuda.synchronize()
            times.append(time.perf_counter() - t0)
            tx.reset()
            del out
        for end in {id(tx): tx, id(rx): rx}.values():
            if isinstance(end, wire.Region):
                end.close()
        return times
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes-mb", type=int, nargs="+", default=[64, 256, 671])
    p.add_argument("--transfers", type=int, default=6)
    p.add_argument("--device", default="cpu")
    p.add_argument("--out", type=Path, default=Path("bench/results"))
    args = p.parse_args()
    rows = []
    for mb in args.sizes_mb:
        for kind in ("files", "memfd"):
            times = run(kind, mb << 20, args.transfers, args.device)
            rest = statistics.median(times[1:]) if len(times) > 1 else times[0]
            rows.append(
                {
                    "size_mb": mb,
                    "exchange": kind,
                    "first_s": times[0],
                    "median_s": rest,
                    "gb_s": (mb / 1024) / rest,
                    "times_s": times,
                }
            )
    cols = ("MB", "exchange", "first (s)", "median of the rest (s)", "GB/s", "vs files")
    lines = []
    for r in rows:
        files = next(x for x in rows if x["size_mb"] == r["size_mb"] and x["exchange"] == "files")
        lines.append(
            (
                str(r["size_mb"]),
                r["exchange"],
                f"{r['first_s']:.3f}",
                f"{r['median_s']:.3f}",
                f"{r['gb_s']:.2f}",
                f"{files['median_s'] / r['median_s']:.1f}x",
            )
        )
    title = f"pack + unpack of one tensor, {args.device} ({args.transfers} transfers)"
    try:
        from rich.console import Console
        from rich.table import Table
    except ImportError:  # the GPU image has no rich
        print(title)
        for line in (cols, *lines):
            print("  ".join(f"{c:>22}" for c in line))
    else:
        table = Table(title=title)
        for col in cols:
            table.add_column(col, justify="right")
        for line in lines:
            table.add_row(*line)
        Console().print(table)
    args.out.mkdir(parents=True, exist_ok=True)
    doc = {"device": args.device, "torch": torch.__version__, "rows": rows}
    (args.out / "exchange.json").write_text(json.dumps(doc, indent=1))


if __name__ == "__main__":
    main()
