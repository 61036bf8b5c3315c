"""Roofline floors and scores.

floor(shape) = max(FLOPs / peak FLOP/s, min bytes / peak bandwidth, launch floor), with ceilings
*measured* on this machine (cached per machine in the data folder). The score of a candidate is
the weighted geometric mean of max(time, floor): a kernel gets no credit for being "faster" than
physics, and a time below the floor is rejected outright as impossible.
"""

from __future__ import annotations

import json
import os
import platform
import socket
import time
from pathlib import Path
from typing import Any

import torch

from cockpit.harness.task import Shape, Task
from cockpit.harness.timing import geomean

LAUNCH_FLOOR_US = {"cuda": 3.0, "cpu": 0.5}


def data_dir() -> Path:
    return Path(os.environ.get("COCKPIT_DATA_DIR") or Path.home() / ".local" / "share" / "cockpit")


def machine_key(device: str) -> str:
    """Results are comparable only on the same kind of machine: GPU model, or CPU model + host."""
    if device.startswith("cuda") and torch.cuda.is_available():
        name = torch.cuda.get_device_name(0)
    else:
        name = f"{platform.processor() or platform.machine()}-{socket.gethostname()}"
    return "".join(
        c if c.isalnum() or c in "-_." else "_" for c in f"{device.split(':')[0]}-{name}"
    )


def _best_time(fn, reps: int, cuda: bool) -> float:
    """Fastest of `reps`: a ceiling is what the machine can do, and load only slows it down."""
    times = []
    for _ in range(reps):
        if cuda:
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            fn()
            b.record()
            torch.cuda.synchronize()
            times.append(a.elapsed_time(b) / 1000.0)
        else:
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
    return min(times)


def measure_ceilings(device: str) -> dict[str, Any]:
    """Copy bandwidth (bytes read + written per second) and matmul rates, measured here."""
    cuda = device.startswith("cuda")
    dev = torch.device(device)
    n_copy = (1 << 28) if cuda else (1 << 24)  # 1 GiB / 64 MiB of float32
    src = torch.randn(n_copy, device=dev)
    dst = torch.empty_like(src)
    dst.copy_(src)
    t_copy = _best_time(lambda: dst.copy_(src), 7, cuda)
    out: dict[str, Any] = {
        "device": device,
        "key": machine_key(device),
        "bandwidth": 2 * src.numel() * 4 / t_copy,
    }
    m = 8192 if cuda else 512
    for name, dtype, tf32 in (
        ("fp32", torch.float32, False),
        ("tf32", torch.float32, True),
        ("bf16", torch.bfloat16, False),
    ):
        if not cuda and name != "fp32":
            continue
        a = torch.randn(m, m, device=dev, dtype=dtype)
        b = torch.randn(m, m, device=dev, dtype=dtype)
        prev = torch.backends.cuda.matmul.allow_tf32
        torch.backends.cuda.matmul.allow_tf32 = tf32
        try:
            a @ b
            t = _best_time(lambda a=a, b=b: a @ b, 5, cuda)
        finally:
            torch.backends.cuda.matmul.allow_tf32 = prev
        out[name] = 2 * m**3 / t
    if not cuda:
        out["tf32"] = out["bf16"] = out["fp32"]
    out["measured"] = time.strftime("%Y-%m-%d %H:%M:%S")
    return out


def ceilings(device: str) -> dict[str, Any]:
    path = data_dir() / "ceilings" / f"{machine_key(device)}.json"
    if path.is_file():
        try:
            return json.loads(path.read_text())
        except (OSError, ValueError):
            pass
    c = measure_ceilings(device)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(c, indent=1))
    tmp.replace(path)
    return c


def floor_us(task: Task, shape: Shape, ceil: dict[str, Any], device: str) -> tuple[float, str]:
    """The physical floor of one call and what bounds it: memory, compute or latency."""
    flops, nbytes = task.floor_inputs(shape)
    peak_name = task.peak or ("bf16" if shape.dtype in ("bfloat16", "float16") else "fp32")
    peak = ceil.get(peak_name) or ceil["fp32"]
    t_compute = flops / peak * 1e6
    t_memory = nbytes / ceil["bandwidth"] * 1e6
    t_launch = LAUNCH_FLOOR_US["cuda" if device.startswith("cuda") else "cpu"]
    best = max((t_memory, "memory"), (t_compute, "compute"), (t_launch, "latency"))
    return best[0], best[1]


def score(times: list[float], floors: list[float], weights: list[float]) -> float:
    return geomean([max(t, f) for t, f in zip(times, floors)], weights)
