"""What several bench scripts share. Scripts run as `python bench/NAME.py`, so this folder is
on sys.path and `from benchlib import ...` works without installing anything."""

from __future__ import annotations

import argparse
import importlib.util
from pathlib import Path
from types import ModuleType


def load_module(path: Path, name: str | None = None) -> ModuleType:
    """Import a file (a seed, a reference, a kernel file) as a fresh module of its own: two loads
    of one file are two modules, so module constants can differ between them."""
    spec = importlib.util.spec_from_file_location(name or f"bench_{path.stem}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def batch_by_n(text: str) -> tuple[int, int]:
    """A QR spec as BATCHxN (x or X), both positive: an argparse type, so a bad one is a one-line
    usage error."""
    batch, _, n = text.lower().partition("x")
    if not (batch.isdigit() and n.isdigit() and int(batch) > 0 and int(n) > 0):
        raise argparse.ArgumentTypeError(f"{text!r} is not BATCHxN (e.g. 640x512)")
    return int(batch), int(n)


def load_variant(seeds_dir: Path, spec: str) -> ModuleType:
    """A seed as `STEM` or `STEM:KEY=VALUE,...`: the module with those module constants replaced
    (bools and ints parsed as ints, the rest by the constant's own type), as the tuner writes a
    variant. Raises AttributeError for a constant the seed does not have."""
    stem, _, overrides = spec.partition(":")
    mod = load_module(seeds_dir / f"{stem}.py", f"bench_{stem}_{abs(hash(spec))}")
    for item in filter(None, overrides.split(",")):
        key, _, value = item.partition("=")
        if not hasattr(mod, key):
            raise AttributeError(f"{stem} has no module constant {key!r}")
        old = getattr(mod, key)
        setattr(
            mod, key, type(old)(int(value)) if isinstance(old, bool | int) else type(old)(value)
        )
    return mod


def time_calls(fn, inputs: list, reps: int, budget_s: float, flush=None, hold=None) -> list[float]:
    """Per-call times in us of fn(*inputs[i % len(inputs)]), at least 3 and at most `reps`
    calls, stopping after `budget_s`. On a GPU: CUDA events, each call preceded by a write of
    `flush` (if given: evicts L2) and the harness's launch slack (the GPU sleeps so the host's
    launch latency is not timed; with `hold`, a `cockpit.harness.hold.Hold`, the slack is the
    arena's own: every SM held, the call made once the flush is done, the start event recorded
    just before it); on the CPU: the host clock."""
    import time

    import torch

    from cockpit.harness.arena import LAUNCH_SLACK_CYCLES

    times = []
    t_end = time.monotonic() + budget_s
    for i in range(reps):
        args = inputs[i % len(inputs)]
        if args[0].is_cuda:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            if flush is not None:
                flush.fill_(float(i))
            if hold is None:
                torch.cuda._sleep(LAUNCH_SLACK_CYCLES)
            else:
                flushed = torch.cuda.Event()
                flushed.record()
                hold.launch()
                flushed.synchronize()
            start.record()
            fn(*args)
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end) * 1e3)
        else:
            t0 = time.perf_counter()
            fn(*args)
            times.append((time.perf_counter() - t0) * 1e6)
        if time.monotonic() > t_end and len(times) >= 3:
            break
    return times


def device_us_per_call(events: list, is_marker) -> list[float]:
    """The device time of each call in a profiled run where every call followed a marker (the
    L2 flush): `events` are the run's device activities (anything with `.name` and
    `.time_range.start` / `.end` in us: kernels and memcpys), in any order. Each call's time is
    the sum of its activities' durations: its kernels' time without the gaps between them (the
    launches). Activities before the first marker belong to no call."""
    calls: list[float] = []
    cur = None
    for ev in sorted(events, key=lambda e: e.time_range.start):
        if is_marker(ev.name):
            if cur is not None:
                calls.append(cur)
            cur = 0.0
        elif cur is not None:
            cur += ev.time_range.end - ev.time_range.start
    if cur is not None:
        calls.append(cur)
    return calls


def kernel_times(fn, inputs: list, reps: int, flush) -> tuple[list[float], list[str]]:
    """Per-call device time in us of fn(*inputs[i % len(inputs)]) on a GPU, from the profiler
    (CUPTI): each call preceded by a write of `flush` (its fill kernel marks where a call
    begins), the call's kernels' and memcpys' durations summed (`device_us_per_call`), so
    launch latency and the gaps between a call's kernels are left out. Also the names of the
    activities seen (which kernels a call ran). Slower than `time_calls` (the profiler); for
    telling a kernel's time from its launches'."""
    import warnings

    import torch

    acts = [torch.profiler.ProfilerActivity.CUDA]
    with warnings.catch_warnings():  # "Profiler clears events at the end of each cycle": one cycle
        warnings.simplefilter("ignore", UserWarning)
        with torch.profiler.profile(activities=acts) as prof:
            for i in range(reps):
                flush.fill_(float(i))
                fn(*inputs[i % len(inputs)])
            torch.cuda.synchronize()
    events = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]

    def marker(name: str) -> bool:
        return "fill" in name.lower()

    names = sorted({e.name[:60] for e in events if not marker(e.name)})
    return device_us_per_call(events, marker), names
