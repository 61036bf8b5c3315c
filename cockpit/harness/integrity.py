"""Integrity snapshots taken inside the candidate's process.

Before the candidate is imported we record the identity of every function the harness relies on
(timers, synchronization, the Tensor methods we use to copy outputs out, builtins, torch's
top-level functions) and the global precision flags. After every call we compare. A candidate that
patches `time.perf_counter` to report 1 µs, or flips TF32 on to go faster than its float32
contract, is caught by identity, not by trusting what it reports.
"""

from __future__ import annotations

import builtins
import threading
import time
from typing import Any

import torch

TIMERS = [
    (time, "perf_counter"),
    (time, "perf_counter_ns"),
    (time, "monotonic"),
    (time, "monotonic_ns"),
    (time, "time"),
    (time, "time_ns"),
    (time, "process_time"),
]
# functions a checker would use; patching them is aimed at a harness that checks in-process
CHECKERS = [
    (torch, "allclose"),
    (torch, "equal"),
    (torch, "isclose"),
    (torch, "isfinite"),
    (torch, "isnan"),
    (torch.testing, "assert_close"),
]


def _cuda_targets() -> list[tuple[Any, str]]:
    return [
        (torch.cuda, "synchronize"),
        (torch.cuda, "Event"),
        (torch.cuda.Event, "record"),
        (torch.cuda.Event, "elapsed_time"),
        (torch.cuda.Event, "synchronize"),
        (torch.cuda.Event, "query"),  # the arena waits on it before a timed call
        (torch.cuda, "current_stream"),
        (torch.cuda, "graph"),
        (torch.cuda, "CUDAGraph"),
        (torch.cuda, "_sleep"),  # the arena's launch slack (arena.LAUNCH_SLACK_CYCLES)
    ]


def precision_flags() -> dict[str, Any]:
    flags: dict[str, Any] = {
        "float32_matmul_precision": torch.get_float32_matmul_precision(),
        "default_dtype": str(torch.get_default_dtype()),
        "deterministic": torch.are_deterministic_algorithms_enabled(),
        "grad_enabled": torch.is_grad_enabled(),
        "num_threads": torch.get_num_threads(),
    }
    try:
        flags["cuda.matmul.allow_tf32"] = torch.backends.cuda.matmul.allow_tf32
        flags["cuda.matmul.fp16_reduced"] = (
            torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction
        )
        flags["cuda.matmul.bf16_reduced"] = (
            torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction
        )
        flags["cudnn.allow_tf32"] = torch.backends.cudnn.allow_tf32
    except AttributeError:
        pass
    return flags


class Snapshot:
    """Identity and flag snapshot; `diff()` names whatever changed since it was taken."""

    def __init__(
        self,
        cuda: bool,
        extra: list[tuple[Any, str]] | None = None,
        guarded: list[Any] | None = None,
    ) -> None:
        self.targets = TIMERS + CHECKERS + (_cuda_targets() if cuda else []) + (extra or [])
        # the harness's own modules and classes: rebinding `_perf_ns` in the arena's globals,
        # or `wire.pack`, is a patch of the harness
        self.guarded = [(g, dict(vars(g))) for g in (guarded or [])]
        self.ids = {(id(o), n): id(getattr(o, n, None)) for o, n in self.targets}
        self.names = {
            (id(o), n): f"{getattr(o, '__name__', type(o).__name__)}.{n}" for o, n in self.targets
        }
        self.builtins = {k: id(v) for k, v in vars(builtins).items()}
        self.torch_funcs = {k: id(v) for k, v in vars(torch).items() if callable(v)}
        self._torch_objs = {k: v for k, v in vars(torch).items() if callable(v)}
        self.tensor_attrs = {k: id(v) for k, v in vars(torch.Tensor).items()}
        self.flags = precision_flags()
        self.threads = {t.ident for t in threading.enumerate()}

    def diff(self) -> list[tuple[str, str]]:
        """[(kind, message)]: kind is `timer`, `checker`, `patch`, `flags` or `threads`."""
        out: list[tuple[str, str]] = []
        for o, n in self.targets:
            key = (id(o), n)
            if id(getattr(o, n, None)) != self.ids[key]:
                kind = (
                    "timer"
                    if (o, n) in TIMERS or "Event" in self.names[key] or "synchronize" in n
                    else ("checker" if (o, n) in CHECKERS else "patch")
                )
                out.append((kind, f"{self.names[key]} was replaced"))
        cur = vars(builtins)
        for k, v in self.builtins.items():
            if id(cur.get(k)) != v:
                out.append(("patch", f"builtins.{k} was replaced"))
        cur = vars(torch)
        for k, v in self.torch_funcs.items():
            if k in cur and id(cur[k]) != v and not _wraps(cur[k], self._torch_objs[k]):
                out.append(("patch", f"torch.{k} was replaced"))
        cur = vars(torch.Tensor)
        for k, v in self.tensor_attrs.items():
            if id(cur.get(k)) != v:
                out.append(("patch", f"torch.Tensor.{k} was replaced"))
        for g, before in self.guarded:
            now_vars = vars(g)
            for k, v in before.items():
                if now_vars.get(k) is not v:
                    out.append(("patch", f"{getattr(g, '__name__', g)}.{k} was replaced"))
        now = precision_flags()
        for k, v in self.flags.items():
            if now.get(k) != v:
                out.append(("flags", f"{k} changed from {v} to {now.get(k)}"))
        extra = [
            t
            for t in threading.enumerate()
            if t.ident not in self.threads
            and t.is_alive()
            and not type(t).__module__.startswith("tqdm")
        ]  # torch.compile's progress monitor
        if extra:
            names = ", ".join(t.name for t in extra[:3])
            out.append(
                (
                    "threads",
                    f"{len(extra)} background thread(s) still running after the call ({names})",
                )
            )
        return out


def _wraps(new: Any, old: Any) -> bool:
    """torch's own lazy imports re-wrap a few functions (dynamo wraps `torch.manual_seed` with
    functools.wraps); a replacement that still delegates to the original is not a patch."""
    for _ in range(4):
        new = getattr(new, "__wrapped__", None)
        if new is None:
            return False
        if new is old:
            return True
    return False
