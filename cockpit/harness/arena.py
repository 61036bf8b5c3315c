"""The candidate's process: load the candidate, call it on inputs the judge hands over, time it.

This module runs in a fresh process spawned by `judge.py` with a scrubbed environment. It never
sees the task folder, the reference, the hidden-shape list or the seeds: inputs arrive as raw
tensor files, and outputs go back the same way for the *judge* to check. Messages are JSON (never
pickle: the judge must not unpickle bytes a candidate could forge).

Order matters: harness modules and originals of every timer are bound first, then the OS
sandbox goes up, then the identity snapshot is taken, and only then is the candidate imported.
"""

from __future__ import annotations

import collections
import contextlib
import importlib.util
import json
import math
import os
import random
import statistics
import sys
import threading
import time
import traceback
from collections.abc import Iterable
from multiprocessing.connection import Connection
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy  # noqa: F401  (the Triton interpreter needs it; import before the sandbox)
import torch

from cockpit.harness import integrity, sandbox, wire
from cockpit.harness.timing import LAUNCH_SLACK_US, Policy, should_stop

if TYPE_CHECKING:  # the messages' types only: the arena imports no more modules for them
    from cockpit.harness.protocol import (
        ArenaConfig,
        Burst,
        BurstRequest,
        BurstRevealRequest,
        Compared,
        CompareRequest,
        Failure,
        LoadBRequest,
        Loaded,
        LoadedB,
        LoadReply,
        NullBurstRequest,
        Profiled,
        ProfileRequest,
        Reply,
        Request,
        Revealed,
        Timed,
        TimeRequest,
        Verified,
        VerifyRequest,
    )

_perf_ns = time.perf_counter_ns  # bound before the candidate exists; used for every host time
# the CPU device's timer, bound alike: the CPU time of this process (every thread a call starts
# included). Wall time on a shared machine also counts the moments the arena waited for a core,
# which load moves by more than the differences a timing or an A/B comparison must see
_cpu_ns = time.process_time_ns

# Side streams. A candidate may fork CUDA streams from the timed one (a panel factored beside an
# update, say); torch.cuda.Stream is replaced, before the candidate is imported, by a subclass
# that remembers every stream it makes, and after every call of the candidate the current stream
# waits for each of them that still has work (`_joined`). So the end event of a timed call comes
# after whatever the call left on a side stream: forgetting to join, or not joining on purpose,
# is timed, not hidden. Work a timed call puts on a side stream waits for its start event
# (`_fence`, below; docs/decisions/0018-side-streams-tracked-joined-fenced.md).
# Raw handles (ExternalStream), torch.Stream and hand-set current streams are refused by the
# static scan. Bound here, before the candidate exists: the class, its waits, the registry.
_CudaStream = torch.cuda.Stream
_wait_stream = torch.cuda.Stream.wait_stream
_stream_done = torch.cuda.Stream.query
_SIDE_STREAMS: dict[tuple[int, int], Any] = {}  # (device, stream id) -> a stream the candidate made
# ... and, during a timed call, every side stream waits for its start event (`_fence`): the hold
# keeps the SMs busy but not the copy engines, so a side stream that does not wait on the timed
# one could move data (x to the host, a CPU's result back) before the clock starts
# (tests/gpu/cpu_offload.py). A stream made during the call waits for it from birth.
_wait_event = torch.cuda.Stream.wait_event
_FENCE: list[Any] = [None]  # the running timed call's start event, or None


class _TrackedStream(_CudaStream):
    """torch.cuda.Stream as the candidate sees it: the same stream, remembered. It cannot be
    subclassed (a subclass could answer `record_event` or `query` for the join with something
    else, or make its streams through the base class's __new__; `super(T, obj)` is refused by
    the static scan for the same reason)."""

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        stream = super().__new__(cls, *args, **kwargs)
        _SIDE_STREAMS[(stream.device_index, stream.stream_id)] = stream
        if _FENCE[0] is not None:  # made during a timed call: nothing before its clock starts
            _wait_event(stream, _FENCE[0])
        return stream

    def __init_subclass__(cls, **kwargs: Any) -> None:
        raise TypeError(
            "torch.cuda.Stream cannot be subclassed in the arena (its streams are joined)"
        )


def _track_side_streams() -> list[tuple[Any, str]]:
    """Install _TrackedStream as torch.cuda.Stream (and torch.cuda.streams.Stream); returns the
    (object, name) pairs the integrity snapshot must then keep watching."""
    torch.cuda.Stream = _TrackedStream
    torch.cuda.streams.Stream = _TrackedStream
    return [(torch.cuda, "Stream"), (torch.cuda.streams, "Stream")]


def _fence(start: Any) -> None:
    """A timed call's side streams wait for its start event: work the candidate puts on one
    (copies included, which the hold's busy SMs do not stop) runs inside the clock. Streams made
    during the call wait from birth (`_TrackedStream`); `_FENCE` is cleared when the call
    returns."""
    _FENCE[0] = start
    for stream in list(_SIDE_STREAMS.values()):
        _wait_event(stream, start)


def _joined(kernel: Any, device: torch.device) -> Any:
    """`kernel`, then the current stream waits for every side stream the candidate made that
    still has work queued (one whose work has all completed has nothing left to hide; not while
    a graph is being captured: there a side stream must be joined by the candidate, or the
    capture fails). Idle streams are skipped because every join costs GPU time, which on calls
    of a few microseconds is a large share of what is timed
    (docs/decisions/0018-side-streams-tracked-joined-fenced.md)."""

    def call(*inputs: Any) -> Any:
        out = kernel(*inputs)
        if _SIDE_STREAMS and not torch.cuda.is_current_stream_capturing():
            current = torch.cuda.current_stream(device)
            for stream in list(_SIDE_STREAMS.values()):
                if stream != current and not _stream_done(stream):
                    _wait_stream(current, stream)
        return out

    return call


_GUARD_BYTES = 64 * 1024
# The launch slack between the flush and a timed call's start event (`_before_timed`): ~200 us,
# longer than any single launch takes on the host. The arena holds every SM for that long
# (harness/hold.py) and calls the candidate only once the hold runs, so no side-stream work can
# use the slack; where the hold cannot be built, the GPU sleeps instead (one thread: weaker, said
# in `protections`). The sleep is bound here, before any candidate loads, to the C function
# itself (the integrity check also watches torch.cuda._sleep); either way every timed call
# checks that the slack really elapsed on the GPU. The ~200 us is timing.LAUNCH_SLACK_US, and it
# is a floor: the hold follows the host, SLACK_SUBMIT_X times the p90 of the last SLACK_WINDOW
# calls' host time from the hold's launch until the call returned (the arena's own steps before
# the call, and the call's submit time; warm-up calls count their submit time), up to
# hold.MAX_US, in iterations recalibrated once the shape has warmed up (`_aim_hold`). A fixed
# hold runs out before many timed calls return, and their samples then hold host time
# (docs/decisions/0017-hold-length-follows-the-host.md has the late-call rates and times).
SLACK_SUBMIT_X = 1.5
SLACK_WINDOW = 64
LAUNCH_SLACK_CYCLES = 400_000  # the sleep's ~200 us at the H200's 1980 MHz
_gpu_sleep = getattr(torch._C, "_cuda_sleep", None)
# ... and the event query the arena waits on, for the same reason (a candidate that patched
# torch.cuda.Event.query to answer True at once would be called during the flush again)
_event_query = getattr(getattr(torch._C, "_CudaEventBase", None), "query", None)


def slack_target(submits: Iterable[float]) -> float:
    """How long a timed call's launch slack should last: SLACK_SUBMIT_X times the p90 of the
    recent calls' host times (us from the hold's launch until the call returned; a warm-up
    call's submit time), LAUNCH_SLACK_US at least."""
    recent = sorted(submits)
    if not recent:
        return LAUNCH_SLACK_US
    return max(LAUNCH_SLACK_US, SLACK_SUBMIT_X * recent[(len(recent) * 9) // 10])


def _now_us() -> float:
    return _perf_ns() / 1000.0


class CallFailed(Exception):
    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind, self.message = kind, message


def _fenced_call(fn: Any, inp: list[torch.Tensor]) -> tuple[Any, int, int]:
    """The candidate's timed call, after its start event's fence is set (`_fence`): (what it
    returned, host ns at the call, host ns at its return). The fence is cleared whether the call
    returns or raises; a raise becomes CallFailed."""
    h0 = _perf_ns()
    try:
        out = fn(*inp)
    except BaseException as exc:  # noqa: BLE001
        raise CallFailed(*_classify(exc)) from None
    finally:
        _FENCE[0] = None
    return out, h0, _perf_ns()


def _classify(exc: BaseException) -> tuple[str, str]:
    text = f"{type(exc).__name__}: {exc}".strip()
    last = text.splitlines()[0][:400] if text else type(exc).__name__
    low = text.lower()
    if isinstance(exc, SystemExit | KeyboardInterrupt):
        return "integrity", f"the candidate tried to end the process ({type(exc).__name__})"
    if isinstance(exc, ForbiddenCall):
        return "forbidden_call", str(exc)
    if isinstance(exc, torch.cuda.OutOfMemoryError) or "out of memory" in low:
        return "oom", last
    if "illegal memory access" in low or "illegal address" in low or "misaligned address" in low:
        return "illegal_address", last
    if "cuda error" in low or "device-side assert" in low:
        return "crash", last
    if isinstance(exc, MemoryError) or _HOST_OOM in low:
        return "oom", _host_oom(exc)
    return "exception", _trim_tb(exc)


# What torch's CPU allocator says when malloc fails (RLIMIT_AS reached, or more than the host has)
_HOST_OOM = "can't allocate memory"


def _host_oom(exc: BaseException) -> str:
    """A host allocation that failed, in a line: `out of host memory: tried to allocate 400.00
    GiB (RuntimeError; line 7 in kernel: ...)`. A bare MemoryError says nothing by itself."""
    import re

    text = str(exc)
    m = re.search(r"tried to allocate (\d+) bytes", text)
    what = f"tried to allocate {int(m[1]) / 2**30:.2f} GiB" if m else ""
    if not what and text.strip() and _HOST_OOM not in text.lower():
        what = text.strip().splitlines()[0][:200]
    where = _trim_tb(exc).rpartition(" (line ")
    at = f"; line {where[2]}" if where[1] else ""
    return f"out of host memory{': ' + what if what else ''} ({type(exc).__name__}{at}"


def _trim_tb(exc: BaseException) -> str:
    """The candidate's own frames and the error line; torch/triton internals cut."""
    frames = traceback.extract_tb(exc.__traceback__)
    mine = [f for f in frames if f.filename.endswith("candidate.py")]
    where = "; ".join(
        f"line {f.lineno} in {f.name}: {(f.line or '').strip()[:120]}" for f in mine[-3:]
    )
    lines = str(exc).strip().splitlines()
    msg = f"{type(exc).__name__}: {lines[0][:300] if lines else ''}"
    # a build that failed (load_inline: "Error building extension", then the compiler's log):
    # its first diagnostic is what the author can act on, not the command line that heads it
    diag = next((ln.strip() for ln in lines[1:] if "error:" in ln), "")
    if diag:
        msg += f" | {diag[:300]}"
    return f"{msg} ({where})" if where else msg


def _import_candidate(name: str, path: Path) -> tuple[Any, Failure | None]:
    """Import a candidate file as module `name`: (module, None), or (None, the verdict) when it
    does not import or defines no callable `kernel`."""
    try:
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    except SyntaxError as exc:
        return None, {"ok": False, "kind": "syntax", "message": f"{exc.msg} (line {exc.lineno})"}
    except ModuleNotFoundError as exc:
        return None, {
            "ok": False,
            "kind": "missing_import",
            "message": f"no module named {exc.name!r}",
        }
    except ImportError as exc:
        return None, {"ok": False, "kind": "import_error", "message": _trim_tb(exc)}
    except (SystemExit, KeyboardInterrupt) as exc:
        return None, {
            "ok": False,
            "kind": "integrity",
            "message": f"the candidate tried to end the process at import ({type(exc).__name__})",
        }
    except BaseException as exc:  # noqa: BLE001 - any import failure is a verdict
        kind, msg = _classify(exc)
        return None, {
            "ok": False,
            "kind": "import_error" if kind == "exception" else kind,
            "message": msg,
        }
    if not callable(getattr(module, "kernel", None)):
        return None, {
            "ok": False,
            "kind": "no_kernel",
            "message": "the file defines no callable `kernel`",
        }
    return module, None


def _random(spec: dict[str, Any], device: str) -> torch.Tensor:
    """A tensor of `spec`'s shape and dtype with random values (zeros for integers)."""
    dtype = getattr(torch, spec["dtype"])
    if dtype.is_floating_point or dtype.is_complex:
        gen = torch.float32 if dtype.is_floating_point else dtype
        return torch.randn(spec["shape"], device=device, dtype=gen).to(dtype)
    return torch.zeros(spec["shape"], device=device, dtype=dtype)


def _count_compiles(beacon: wire.Beacon, registered: list[bool]) -> list[str]:
    """Count, in `beacon`, every compile the candidate starts: a Triton JIT cache miss and a
    Dynamo frame compile (Inductor's kernels compile inside it). The judge grants a shape's first
    call its compile allowance only when the count moved during that call. `registered` records
    the Dynamo callback once it is in place. Returns what is counted."""
    counted = []
    try:
        from triton import knobs

        chained = knobs.runtime.jit_cache_hook

        def on_cache_miss(*args: Any, **kwargs: Any) -> bool:
            beacon.bump()
            # a hook that returns True skips the compile: only a chained hook may say so
            return bool(chained(*args, **kwargs)) if chained is not None else False

        knobs.runtime.jit_cache_hook = on_cache_miss
        counted.append("triton")
    except (ImportError, AttributeError):
        pass
    # Dynamo's compiles are counted once `torch._dynamo` is imported (`_count_dynamo`): before
    # every request, and right after a `torch.compile` made inside a call
    plain_compile = torch.compile

    def compile_and_count(*args: Any, **kwargs: Any) -> Any:
        compiled = plain_compile(*args, **kwargs)
        _count_dynamo(beacon, registered)
        return compiled

    torch.compile = compile_and_count
    counted.append("dynamo")
    return counted


def _count_dynamo(beacon: wire.Beacon, registered: list[bool]) -> None:
    """Count Dynamo's frame compiles in `beacon` once `torch._dynamo` is imported (importing it
    costs a second, so the arena never does: a candidate that uses `torch.compile` has)."""
    if registered or "torch._dynamo" not in sys.modules:
        return
    registered.append(True)
    try:
        from torch._dynamo.callback import callback_handler

        callback_handler.register_start_callback(beacon.bump)
    except (ImportError, AttributeError):
        pass


class Arena:
    def __init__(self, conn: Connection, cfg: ArenaConfig) -> None:
        self.conn = conn
        self.cfg = cfg
        self.device = torch.device(cfg["device"])
        self.cuda = self.device.type == "cuda"
        self.exchange = Path(cfg["exchange"])
        regions = cfg.get("regions")
        if regions:  # wire.Region: read what the judge sent from one, write replies to the other
            self.rx: Any = wire.Region(fd=int(regions[0]))
            self.tx: Any = wire.Region(fd=int(regions[1]))
        else:
            self.rx = self.tx = wire.Files(self.exchange)
        beacon = cfg.get("beacon")
        self.beacon = wire.Beacon(fd=int(beacon)) if beacon is not None else None
        self._dynamo_counted: list[bool] = []
        self.n_outputs = int(cfg["n_outputs"])
        # built now, before the candidate exists, and held in a closure: rebinding an attribute
        # of this object later cannot disarm it
        self._watch = _make_watch(
            frozenset(o.lower() for o in cfg.get("forbidden_ops", [])),
            frozenset(o.lower() for o in cfg.get("forbidden_cnames", [])),
            self.device,
        )
        self.watching = bool(cfg.get("forbidden_ops") or cfg.get("forbidden_cnames"))
        self.kernel = None
        self.module = None
        self.snapshot: integrity.Snapshot | None = None
        self.triton_names: set[str] = set()
        self.protections: dict[str, Any] = {}
        self.flush: torch.Tensor | None = None
        self.cudart = None
        self.hold = None  # harness.hold.Hold, or None: the sleep is the slack
        self.slack_us = 0.0  # what the slack takes on the GPU (checked on every timed call)
        self.late = 0  # timed calls of this op that returned after their slack had run out
        self.submits: collections.deque[float] = collections.deque(maxlen=SLACK_WINDOW)
        self.seen: list[float] = []  # what each timed call's slack took on the GPU, this op
        self.slack_short = 0  # timed calls whose slack was cut short
        self.burst_pool: list[list[torch.Tensor]] | None = None  # the last timed shape's pool
        self.burst_outs: list[list[torch.Tensor]] = []  # the last burst's outputs, until revealed
        self.null_pool: list[list[torch.Tensor]] = []  # a null burst's inputs and outputs
        self.null_outs: list[torch.Tensor] = []
        # the task's timing for the op in progress (`time`, `compare`): end_to_end times each
        # call by its wall time to the device synchronize after it, with no hold before it
        self.end_to_end = False
        self.gpu: list[float] = []  # end-to-end: each timed call's GPU time (events), this op

    # --- set-up ---------------------------------------------------------------------------------
    def setup(self) -> dict[str, Any]:
        cfg = self.cfg
        if cfg.get("sandbox", True):
            self.protections["network"] = sandbox.drop_network()
            _preload()  # main() did it already, before the configuration; a no-op then
            if self.cuda:
                torch.cuda.init()
                torch.empty(1, device=self.device)  # create the context while /dev is open
            read = sandbox.default_read_paths(exclude=cfg.get("exclude", []))
            write = [cfg["workdir"], cfg["exchange"], cfg["cache_dir"], "/dev"]
            self.protections["filesystem"] = sandbox.apply_landlock(read, write)
            self.protections.update(sandbox.set_limits(cfg.get("memory_bytes"), None))
        else:
            self.protections["sandbox"] = "off"
        if self.cuda:
            self._setup_cuda()
        if self.beacon is not None:
            self.protections["compile_beacon"] = _count_compiles(self.beacon, self._dynamo_counted)
        return self.protections

    def _setup_cuda(self) -> None:
        props = torch.cuda.get_device_properties(self.device)
        l2 = getattr(props, "L2_cache_size", 50 << 20)
        nbytes = max(256 << 20, 2 * l2)
        self.flush = torch.empty(nbytes // 4, dtype=torch.float32, device=self.device)
        self.cudart = _load_cudart()
        self.protections["l2_reset"] = (
            "cudaCtxResetPersistingL2Cache" if self.cudart else "unavailable"
        )
        self._l2_start = self._l2_state()
        try:
            from cockpit.harness.hold import Hold

            self.hold = Hold(self.device, LAUNCH_SLACK_US)
            self.slack_us = self.hold.us
            self.protections["launch_slack"] = self.hold.describe()
        except Exception as exc:  # noqa: BLE001 - any failure: the sleep, and say so
            self.hold = None
            self.protections["launch_slack"] = (
                f"sleep (no hold: {type(exc).__name__}: {str(exc)[:120]})"
                if _gpu_sleep is not None
                else "none"
            )
            self.slack_us = self._slack_only() if _gpu_sleep is not None else 0.0

    def _l2_state(self) -> tuple[int, int]:
        """(persisting-L2 carve-out, access-policy window bytes on the current stream); the
        carve-out is not zero by default on every machine (11.25 MiB on the H200 here)."""
        if self.cudart is None:
            return (0, 0)
        import ctypes

        limit = ctypes.c_size_t(0)
        if self.cudart.cudaDeviceGetLimit(ctypes.byref(limit), 0x06) != 0:
            limit.value = 0
        buf = (ctypes.c_uint8 * 256)()
        stream = ctypes.c_void_p(torch.cuda.current_stream(self.device).cuda_stream)
        window = 0
        if self.cudart.cudaStreamGetAttribute(stream, 1, ctypes.byref(buf)) == 0:
            window = int.from_bytes(bytes(buf[8:16]), "little")
        return (int(limit.value), window)

    def _l2_diffs(self) -> list[tuple[str, str]]:
        """A persisting-L2 carve-out or an access-policy window on the timed stream keeps a
        candidate's data in L2 across the flush: a GPU-only way to fake cold-cache speed."""
        if self.cudart is None:
            return []
        (limit0, window0), (limit, window) = self._l2_start, self._l2_state()
        out = []
        if limit != limit0:
            out.append(
                (
                    "l2",
                    f"the persisting-L2 carve-out was changed from {limit0 >> 10} to {limit >> 10} KiB",
                )
            )
        if window != window0:
            out.append(
                (
                    "l2",
                    f"an L2 access-policy window of {window >> 10} KiB was set on the timed stream",
                )
            )
        return out

    def load(self) -> Loaded | Failure:  # `protections` is added by main()
        me = sys.modules[__name__]
        watched = _track_side_streams() if self.cuda else []
        self.snapshot = integrity.Snapshot(
            cuda=self.cuda,
            extra=watched,
            guarded=[
                me,
                wire,
                wire.Region,  # the exchange's classes: rebinding Region.pack is a patch too
                wire.Files,
                integrity,
                sys.modules["cockpit.harness.timing"],
                Arena,
                integrity.Snapshot,
            ],
        )
        self._diff = (
            self.snapshot.diff
        )  # bound now: patching Snapshot.diff later changes nothing here
        path = Path(self.cfg["candidate"])
        module, failure = _import_candidate("candidate", path)
        if failure:
            return failure
        self.module, self.kernel = module, module.kernel
        if self.cuda:  # its side streams joined after every call (see _TrackedStream)
            self.kernel = _joined(module.kernel, self.device)
        for name, obj in vars(module).items():
            if hasattr(obj, "fn") and type(obj).__name__ in (
                "JITFunction",
                "Autotuner",
                "Heuristics",
            ):
                self.triton_names.add(getattr(getattr(obj, "fn", None), "__name__", name))
        uses_triton = (
            bool(self.triton_names)
            or "triton" in sys.modules
            and any(getattr(v, "__name__", "") == "triton" for v in vars(module).values())
        )
        return {
            "ok": True,
            "uses_triton": uses_triton,
            "family": str(getattr(module, "FAMILY", "")),
            "tunables": _jsonable(getattr(module, "TUNABLES", {})),
            "integrity": self._diff(),
        }

    # --- inputs ---------------------------------------------------------------------------------
    def _guarded(self, t: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Place `t` inside a buffer with random guard bands on both sides."""
        item = t.element_size()
        guard = _GUARD_BYTES // item
        buf = torch.empty(t.numel() + 2 * guard, dtype=t.dtype, device=self.device)
        raw = buf.view(torch.uint8)
        raw.copy_(torch.randint(0, 256, raw.shape, dtype=torch.uint8, device=self.device))
        inner = buf[guard : guard + t.numel()].view(t.shape)
        inner.copy_(t)
        return inner, buf, raw.clone()

    def _poison(self, nbytes: int) -> None:
        """Fill soon-to-be-recycled allocator blocks with NaN so uninitialized outputs fail."""
        n = max(nbytes // 4, 1024)
        for _ in range(2):
            p = torch.full((n,), math.nan, dtype=torch.float32, device=self.device)
            del p

    # --- calls ----------------------------------------------------------------------------------
    def _outputs(self, out: Any) -> list[torch.Tensor]:
        if self.n_outputs == 1:
            outs = [out]
        else:
            if not isinstance(out, tuple | list) or len(out) != self.n_outputs:
                raise CallFailed(
                    "bad_type",
                    f"expected a tuple of {self.n_outputs} tensors, got {type(out).__name__}",
                )
            outs = list(out)
        for i, o in enumerate(outs):
            if type(o) is not torch.Tensor:  # noqa: E721 - exact type, subclasses are refused
                raise CallFailed(
                    "bad_type",
                    f"output {i} is a {type(o).__module__}.{type(o).__qualname__}, not a plain torch.Tensor",
                )
        return outs

    def _sync(self) -> None:
        if self.cuda:
            torch.cuda.synchronize(self.device)

    def _call(self, inputs: list[torch.Tensor]) -> list[torch.Tensor]:
        try:
            h0 = _perf_ns()
            out = self.kernel(*inputs)
            self.submits.append((_perf_ns() - h0) / 1000.0)
            self._sync()
        except CallFailed:
            raise
        except BaseException as exc:  # noqa: BLE001
            raise CallFailed(*_classify(exc)) from None
        return self._outputs(out)

    def _recorded_call(self, inputs: list[torch.Tensor]) -> tuple[list[torch.Tensor], list[str]]:
        """A call under the forbidden-call watch (see `_make_watch`)."""
        if not self.watching:
            return self._call(inputs), []
        return self._watch(lambda: self._call(inputs))

    def verify(self, msg: VerifyRequest) -> Verified:
        t0 = _perf_ns()
        originals = [self.rx.unpack(m, self.device) for m in msg["inputs"]]
        guarded = [self._guarded(t) for t in originals]
        inputs = [g[0] for g in guarded]
        pristine = [t.clone() for t in inputs]
        info: dict[str, Any] = {"ok": True}
        self._poison(sum(t.numel() * t.element_size() for t in inputs) * 2)
        c0 = _perf_ns()
        outs, ops = self._recorded_call(inputs)
        cand = _perf_ns() - c0
        info["ops"] = ops
        info["outputs"] = [self.tx.pack(o, "o") for o in outs]
        info["mutated"] = [i for i, (a, b) in enumerate(zip(inputs, pristine)) if not _same(a, b)]
        info["aliased"] = _aliases(outs, [g[1] for g in guarded])
        info["guard_broken"] = [
            i for i, (_, buf, raw) in enumerate(guarded) if not _guards_intact(buf, raw, inputs[i])
        ]
        info["integrity"] = self._diff() + (self._l2_diffs() if self.cuda else [])
        if msg.get("perturb") and not info["mutated"]:
            p = msg["perturb"]
            x = inputs[p["input"]]
            x.view(-1)[p["index"]] = p["value"]
            c0 = _perf_ns()
            outs2, ops2 = self._recorded_call(inputs)
            cand += _perf_ns() - c0
            info["ops"] = sorted(set(info["ops"]) | set(ops2))
            info["perturbed"] = [self.tx.pack(o, "p") for o in outs2]
            info["integrity"] += self._diff()
        # where a verification's time goes (informational): the candidate's calls, and the
        # arena's own work around them (unpacking, guards, poison, packing outputs)
        info["wall_s"] = {"arena": (_perf_ns() - t0) / 1e9, "candidate": cand / 1e9}
        return info

    # --- timing ---------------------------------------------------------------------------------
    @staticmethod
    def _fresh(
        pool: list[list[torch.Tensor]], rng: random.Random
    ) -> tuple[list[torch.Tensor], list[float]]:
        """A call input no earlier call has seen: cos(t)*a + sin(t)*b of two different pool entries
        with a random angle t. Not a multiple of anything seen before, so a cache keyed on
        pointers, content or scale-invariant content misses (plain scaling was beaten by a
        scale-invariant QR cache); and structure shared by both entries (zero columns,
        triangularity, near-dependent columns, row scales) survives. Returns the recipe too,
        so the judge can rebuild the exact input from its own copy of the pool."""
        ia, ib, c, s = wire.fresh_recipe(rng, len(pool))
        return [wire.combine(a, b, c, s) for a, b in zip(pool[ia], pool[ib])], [ia, ib, c, s]

    def time(self, msg: TimeRequest) -> Timed:
        t_op = _perf_ns()
        pol = msg["policy"]
        pool = [[self.rx.unpack(m, self.device) for m in entry] for entry in msg["pool"]]
        rng = random.Random(msg["seed"])
        crng = random.Random(msg["check_seed"])  # which calls are checked or audited: secret
        # warm-up calls and random audits between timed calls run under the watch, compiled
        # candidates too: the watch replaces ops in the dispatcher, not a Python dispatch mode,
        # which would make dynamo give up on compiled functions
        # (docs/decisions/0015-static-scan-plus-dynamic-watch.md)
        watch_timed = self.watching
        ops: set[str] = set()
        t_start = _now_us()
        k = 0
        self.submits.clear()  # the slack follows this shape's calls (no compile, no other shape)
        while k < pol["warmup_calls"] or (_now_us() - t_start) / 1000 < pol["warmup_ms"]:
            inp, _ = self._fresh(pool, rng)
            if watch_timed:
                ops.update(self._recorded_call(inp)[1])
            else:
                self._call(inp)
            k += 1
            if (_now_us() - t_start) / 1e6 > pol["max_wall_s"]:
                break
        self.end_to_end = msg.get("timing") == "end_to_end"
        if self.hold is not None and not self.end_to_end:
            self.hold.recalibrate()  # at the clocks this shape's calls run at
        flush_us = self._flush_cost() if self.cuda and not self.end_to_end else 0.0
        self.late = 0
        self.gpu = []
        self.seen = []
        t_loop = _perf_ns()
        samples, host, checked, integrity_notes = [], [], [], []
        submit: list[float] = []  # host time inside the call, until it returned
        wall0 = _now_us()
        policy = Policy(**pol)
        stop, i, audits = "", 0, 0
        last: dict[str, Any] | None = None
        while not stop:
            if watch_timed and crng.random() < msg["audit_prob"]:
                # an untimed call under the watch, indistinguishable from a timed one
                ops.update(self._recorded_call(self._fresh(pool, rng)[0])[1])
                audits += 1
            inp, recipe = self._fresh(pool, rng)
            ev, hs, sub, outs = self._timed_call(inp)
            samples.append(ev)
            host.append(hs)
            submit.append(sub)
            want = i in msg["check_first"] or crng.random() < msg["check_prob"]
            if want and len(checked) < msg["check_max"]:
                checked.append(
                    {
                        "call": i,
                        "recipe": recipe,
                        "outputs": [self.tx.pack(o, "co") for o in outs],
                    }
                )
                last = None
            else:
                last = {"call": i, "recipe": recipe, "outs": outs}
            if i % 16 == 0:
                integrity_notes += self._diff() + (self._l2_diffs() if self.cuda else [])
            i += 1
            stop = should_stop(samples, (_now_us() - wall0) / 1e6, policy)
            if stop and i <= max(msg["check_first"], default=-1):
                stop = ""  # never end before the calls the judge asked to see
        if last is not None:  # the final call is always checked
            checked.append(
                {
                    "call": last["call"],
                    "recipe": last["recipe"],
                    "outputs": [self.tx.pack(o, "co") for o in last["outs"]],
                }
            )
        integrity_notes += self._diff() + self._slack_diffs()
        loop_ns = _perf_ns() - t_loop
        out = {
            "ok": True,
            "samples": samples,
            "host": host,
            "submit": submit,
            "late": self.late,
            "slack_us": 0.0
            if self.end_to_end
            else (statistics.median(self.seen) if self.seen else self.slack_us),
            "slacks": list(self.seen) if self.hold is not None else [],
            "checked": checked,
            "stop": stop,
            "flush_us": flush_us,
            "gpu": list(self.gpu),
            "integrity": integrity_notes,
            "ops": sorted(ops),
            "audits": audits,
        }
        if self.cuda and msg.get("graph") and samples and sorted(samples)[len(samples) // 2] < 20.0:
            out["graph"] = self._graph_times(pool, rng)
        self.burst_pool = pool  # the judge's clock bursts that follow draw from it
        # informational: the sampling loop (timed calls, spot-check packing) within the op
        out["wall_s"] = {"arena": (_perf_ns() - t_op) / 1e9, "loop": loop_ns / 1e9}
        return out

    # --- bursts: the judge's own clock over calls back to back -----------------------------------
    def _burst(
        self, fn: Any, pool: list[list[torch.Tensor]], msg: BurstRequest | NullBurstRequest
    ) -> list[float]:
        """`msg["k"]` calls of `fn` back to back, each on a fresh input mixed from the pool by a
        recipe drawn from `msg["seed"]` (as a timed call's), each call's outputs folded into its
        commitment as it returns; one synchronize at the end. The judge times the whole request
        on its own clock; the commitments prove that each call's output existed before the reply
        (the judge then asks to see one of them). Only the outputs are kept, so a burst's memory
        is its calls' outputs."""
        rng = random.Random(msg["seed"])
        w: torch.Tensor | None = None
        outs, values = [], []
        for _ in range(int(msg["k"])):
            ia, ib, c, s = wire.fresh_recipe(rng, len(pool))
            out = fn([wire.combine(a, b, c, s) for a, b in zip(pool[ia], pool[ib])])
            if w is None:
                numel = max((o.numel() * (2 if o.is_complex() else 1) for o in out), default=1)
                w = wire.commit_weights(int(msg["wseed"]), self.device, numel)
            values.append(wire.commitment(out, w))
            outs.append(out)
        self.burst_outs = outs
        result = torch.stack(values).tolist() if values else []
        self._sync()
        return result

    def burst(self, msg: BurstRequest) -> Burst | Failure:
        """A burst of the candidate's calls on the pool of the shape timed last."""
        if self.burst_pool is None:
            return {"ok": False, "kind": "protocol", "message": "burst before time"}

        def call(inp: list[torch.Tensor]) -> list[torch.Tensor]:
            try:
                return self._outputs(self.kernel(*inp))
            except CallFailed:
                raise
            except BaseException as exc:  # noqa: BLE001
                raise CallFailed(*_classify(exc)) from None

        return {"ok": True, "commits": self._burst(call, self.burst_pool, msg)}

    def burst_reveal(self, msg: BurstRevealRequest) -> Revealed | Failure:
        """The outputs of the burst calls the judge picked after the reply; then none are kept."""
        outs, self.burst_outs = self.burst_outs, []
        calls = [int(j) for j in msg["calls"]]
        if any(not 0 <= j < len(outs) for j in calls):
            return {"ok": False, "kind": "protocol", "message": "reveal of a call not made"}
        return {"ok": True, "outputs": [[self.tx.pack(o, "bo") for o in outs[j]] for j in calls]}

    def null_burst(self, msg: NullBurstRequest) -> Burst:
        """Before the candidate is imported: a burst whose kernel only writes outputs of the
        reference's shapes, so the judge learns what a burst costs around the calls
        (inputs, commitments, the request) while this process is still only the arena's. A
        request with `inputs` stages a new shape (two random inputs of those shapes and dtypes)
        for the ones that follow."""
        if "inputs" in msg:
            self.null_pool = [[_random(spec, self.device) for spec in msg["inputs"]] for _ in "ab"]
            self.null_outs = [_random(spec, self.device) for spec in msg["outputs"]]
        outs = self.null_outs
        # outputs written once, with zeros: a commitment over uninitialized memory may read
        # denormals, which the CPU computes a hundred times slower than the candidate's outputs
        commits = self._burst(lambda inp: [torch.zeros_like(o) for o in outs], self.null_pool, msg)
        self.burst_outs = []
        return {"ok": True, "commits": commits}

    def _timed_call(
        self, inp: list[torch.Tensor]
    ) -> tuple[float, float, float, list[torch.Tensor]]:
        """(timed us, host us, submit us, outputs) of one call of the candidate."""
        if not self.cuda:
            us, out = self._cpu_timed(self.kernel, inp)
            return us, us, us, self._outputs(out)
        if self.end_to_end:
            wall, sub, out = self._wall_timed(self.kernel, inp)
            return wall, wall, sub, self._outputs(out)
        ev, hs, sub, out = self._gpu_timed(self.kernel, inp)
        return ev, hs, sub, self._outputs(out)

    def _cpu_timed(self, fn: Any, inp: list[torch.Tensor]) -> tuple[float, Any]:
        """One timed call of `fn` on the CPU: (the process's CPU time in us, what it returned)."""
        c0 = _cpu_ns()
        try:
            out = fn(*inp)
        except BaseException as exc:  # noqa: BLE001
            raise CallFailed(*_classify(exc)) from None
        return (_cpu_ns() - c0) / 1000.0, out

    def _gpu_timed(self, fn: Any, inp: list[torch.Tensor]) -> tuple[float, float, float, Any]:
        """One timed call of `fn` on the GPU: (event us, host us, submit us, what it returned).
        The host clock runs from the moment the candidate may launch to the device-wide
        synchronize after its end event; submit is the host time until the call returned."""
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize(self.device)
        self._aim_hold()
        flushed = self._before_timed(float(len(inp)))
        h_held = _perf_ns()  # the hold is launched: from here on the slack runs down
        start.record()
        _fence(start)
        self._armed(flushed)
        out, h0, h_ret = _fenced_call(fn, inp)
        end.record()
        if self.slack_us and _event_query is not None and _event_query(start):
            # the slack had run out before the call returned: its clock started while the host
            # was still submitting, so host time may be inside this sample (`late`)
            self.late += 1
        torch.cuda.synchronize(self.device)
        h1 = _perf_ns()
        self.submits.append((h_ret - h_held) / 1000.0)
        self._check_slack(flushed, start)
        return (
            start.elapsed_time(end) * 1000.0,
            (h1 - h0) / 1000.0,
            (h_ret - h0) / 1000.0,
            out,
        )

    def _wall_timed(self, fn: Any, inp: list[torch.Tensor]) -> tuple[float, float, Any]:
        """One end-to-end call of `fn` on the GPU: (wall us, submit us, what it returned). L2 is
        flushed and the device idle before the clock starts; the clock runs from the call to the
        device-wide synchronize after it (every stream, so side streams are inside it), as a
        user's loop waiting for each step sees it. No hold: the host's launches are the point.
        The call's GPU time (events) is kept in `self.gpu`, for the record only."""
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize(self.device)
        if self.cudart is not None:
            self.cudart.cudaCtxResetPersistingL2Cache()
        self.flush.fill_(float(len(inp)))
        start.record()
        torch.cuda.synchronize(self.device)  # the flush is done: nothing of it in the clock
        _fence(start)
        out, h0, h_ret = _fenced_call(fn, inp)
        end.record()
        torch.cuda.synchronize(self.device)
        h1 = _perf_ns()
        self.gpu.append(start.elapsed_time(end) * 1000.0)
        return (h1 - h0) / 1000.0, (h_ret - h0) / 1000.0, out

    def _before_timed(self, fill: float) -> torch.cuda.Event:
        """What the GPU does between the synchronize and a timed call's start event: drop any
        persisting-L2 window, flush L2 by writing the flush buffer, record `flushed`, then the
        launch slack (the hold on every SM, or the sleep) so the host has enqueued the
        candidate's first launch before the start event fires. Without a slack, a host slower
        than the flush leaks its launch latency into the timed interval, and the same kernel
        reads differently from one process to the next
        (docs/decisions/0016-launch-slack-is-a-gpu-hold.md). Returns `flushed`: the caller
        records its start event, then `_armed(flushed)` before calling the candidate."""
        if self.cudart is not None:
            self.cudart.cudaCtxResetPersistingL2Cache()
        self.flush.fill_(fill)
        flushed = torch.cuda.Event(enable_timing=True)
        flushed.record()
        if self.hold is not None:
            self.hold.launch()
        elif _gpu_sleep is not None:
            _gpu_sleep(LAUNCH_SLACK_CYCLES)
        return flushed

    def _armed(self, flushed: torch.cuda.Event) -> None:
        """With the hold: wait (on the host) until the flush is done, so the hold occupies every
        SM before the candidate can launch anything on any stream."""
        if self.hold is not None:
            query = _event_query or torch.cuda.Event.query
            while not query(flushed):
                pass

    def _aim_hold(self) -> None:
        if self.hold is not None:
            self.hold.retarget(slack_target(self.submits))

    def _check_slack(self, flushed: torch.cuda.Event, start: torch.cuda.Event) -> None:
        """The slack must really have run: a candidate that disarmed it (patched the launch,
        shortened the kernel) would reopen the window. Counted, reported as integrity."""
        if not self.slack_us:
            return
        seen = flushed.elapsed_time(start) * 1000.0
        self.seen.append(seen)
        want = self.hold.target_us if self.hold is not None else self.slack_us
        if seen < 0.5 * want:
            self.slack_short += 1

    def _slack_diffs(self) -> list[tuple[str, str]]:
        if not self.slack_short:
            return []
        n, self.slack_short = self.slack_short, 0
        return [
            (
                "timer",
                f"the launch slack before {n} timed call(s) ran shorter than half its "
                f"{self.slack_us:.0f} us: the GPU-side guard before the start event was disarmed",
            )
        ]

    def _slack_only(self) -> float:
        """The sleep's duration on the GPU (the median of 5)."""
        times = []
        for _ in range(5):
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            _gpu_sleep(LAUNCH_SLACK_CYCLES)
            e.record()
            torch.cuda.synchronize(self.device)
            times.append(s.elapsed_time(e) * 1000.0)
        return sorted(times)[2]

    def _flush_cost(self) -> float:
        """What the host clock of a timed call sees beyond the timed stream: the slack, and with
        the sleep also the flush (the host does not wait for it)."""
        times = []
        for _ in range(5):
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            flushed = self._before_timed(1.0)
            e.record()
            torch.cuda.synchronize(self.device)
            ref = flushed if self.hold is not None else s
            times.append(ref.elapsed_time(e) * 1000.0)
        return sorted(times)[2]

    def _graph_times(self, pool: list[list[torch.Tensor]], rng: random.Random) -> dict[str, Any]:
        """Replay time of a CUDA graph of one call, fresh inputs copied into its input buffers."""
        try:
            static = [t.clone() for t in pool[0]]
            s = _CudaStream()  # the arena's own, not a candidate's side stream
            s.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(s):
                for _ in range(3):
                    self.kernel(*static)
            torch.cuda.current_stream().wait_stream(s)
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                self.kernel(*static)
            samples = []
            for _ in range(200):
                for dst, src in zip(static, self._fresh(pool, rng)[0]):
                    dst.copy_(src)
                flushed = self._before_timed(2.0)
                a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                a.record()
                self._armed(flushed)
                g.replay()
                b.record()
                torch.cuda.synchronize(self.device)
                samples.append(a.elapsed_time(b) * 1000.0)
            return {"ok": True, "samples": samples}
        except BaseException as exc:  # noqa: BLE001 - not every candidate can be captured
            return {
                "ok": False,
                "message": f"not capturable: {str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__}",
            }

    # --- profile --------------------------------------------------------------------------------
    def profile(self, msg: ProfileRequest) -> Profiled:
        from torch.profiler import ProfilerActivity, profile

        inputs = [self.rx.unpack(m, self.device) for m in msg["inputs"]]
        warm = [self.rx.unpack(m, self.device) for m in msg.get("warm", [])] or [
            t.clone() for t in inputs
        ]
        self._call(warm)  # warm on other data: a cache must not serve the profiled call
        acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if self.cuda else [])
        with profile(activities=acts) as prof:
            self._call(inputs)
        kernels: dict[str, dict[str, Any]] = {}
        launches = 0
        for ev in prof.events():
            is_dev = self.cuda and str(getattr(ev, "device_type", "")).endswith("CUDA")
            if self.cuda and not is_dev:
                continue
            if not self.cuda and (ev.cpu_parent is not None or not ev.name.startswith("aten::")):
                continue
            launches += 1
            k = kernels.setdefault(
                ev.name,
                {"name": ev.name[:120], "calls": 0, "us": 0.0, "group": self._group(ev.name)},
            )
            k["calls"] += 1
            k["us"] += (ev.device_time if is_dev else ev.cpu_time_total) or 0.0
        top = sorted(kernels.values(), key=lambda k: -k["us"])[:12]
        groups: dict[str, int] = {}
        for k in kernels.values():
            groups[k["group"]] = groups.get(k["group"], 0) + k["calls"]
        info: dict[str, Any] = {
            "ok": True,
            "launches": launches,
            "groups": groups,
            "top": top,
            "unit": "device kernels" if self.cuda else "top-level aten ops",
        }
        if "torch.compile" in Path(self.cfg["candidate"]).read_text(errors="replace"):
            info.update(self._explain(inputs))
        return info

    def _explain(self, inputs: list[torch.Tensor]) -> dict[str, Any]:
        """Graph count and graph breaks with reasons. After `torch._dynamo.reset()` one more call
        recompiles every region, so dynamo's counters are complete (on a warm cache they stay
        empty); `explain` itself misses regions compiled inside the kernel. Runs last."""
        try:
            import torch._dynamo as dynamo
            from torch._dynamo.utils import counters

            dynamo.reset()
            counters.clear()
            self._call([t.clone() for t in inputs])
            breaks = []
            for reason, n in counters.get("graph_break", {}).items():
                lines = [ln.strip() for ln in str(reason).splitlines() if ln.strip()]
                text = next(
                    (
                        ln.removeprefix("Explanation:").strip()
                        for ln in lines
                        if ln.startswith("Explanation:")
                    ),
                    lines[0] if lines else "",
                )
                breaks.append(f"{text[:200]} (x{n})")
            return {
                "graphs": int(counters.get("stats", {}).get("unique_graphs", 0)),
                "graph_break_count": sum(counters.get("graph_break", {}).values()),
                "graph_breaks": breaks[:10],
            }
        except Exception as exc:  # noqa: BLE001 - the census is feedback, never a verdict
            return {"graph_breaks_error": f"{type(exc).__name__}: {str(exc)[:200]}"}

    def _group(self, name: str) -> str:
        base = name.split("(")[0].split("<")[0].strip()
        if (
            base in self.triton_names
            or name.startswith("triton_")
            or any(n in name for n in self.triton_names)
        ):
            return "triton"
        if (
            name.startswith("aten::")
            or "at::native" in name
            or "at::" in name
            or "elementwise" in name
        ):
            return "aten"
        if any(
            s in name.lower()
            for s in ("gemm", "cublas", "cutlass", "sm90", "xmma", "cudnn", "cusolver")
        ):
            return "library"
        return "custom"

    # --- A/B comparison (judge.compare) -------------------------------------------------------
    def load_b(self, msg: LoadBRequest) -> LoadedB | Failure:
        """Import a second candidate (the incumbent, B) beside the loaded one (A), for `compare`.
        Both have passed their own evaluations; this process only times them against each other."""
        # the judge's own file, never a name taken from a message
        module, failure = _import_candidate(
            "candidate_b", Path(self.cfg["workdir"]) / "candidate_b.py"
        )
        if failure:
            return failure
        self.kernel_b = _joined(module.kernel, self.device) if self.cuda else module.kernel
        return {"ok": True, "integrity": self._diff()}

    def _timed_with(self, fn: Any, inp: list[torch.Tensor]) -> float:
        """One timed call of `fn` (A's or B's kernel), as `_timed_call` times A."""
        if not self.cuda:
            return self._cpu_timed(fn, inp)[0]
        if self.end_to_end:
            return self._wall_timed(fn, inp)[0]
        return self._gpu_timed(fn, inp)[0]

    def compare(self, msg: CompareRequest) -> Compared | Failure:
        """Interleaved timing of A and B in this one process: each round times both on the same
        fresh input, in a random order (so drift, clocks and cache state hit both alike), until
        both series meet the policy's stopping rule."""
        kernel_b = getattr(self, "kernel_b", None)
        if kernel_b is None:
            return {"ok": False, "kind": "protocol", "message": "compare before load_b"}
        pol = Policy(**msg["policy"])
        pool = [[self.rx.unpack(m, self.device) for m in entry] for entry in msg["pool"]]
        rng = random.Random(msg["seed"])
        self.end_to_end = msg.get("timing") == "end_to_end"
        self.submits.clear()  # one slack for both, following both candidates' host times
        self.seen = []  # per op: a comparison reports no slack lengths, so keep none
        self.gpu = []
        for _ in range(max(pol.warmup_calls, 1)):
            inp, _ = self._fresh(pool, rng)
            self._timed_with(self.kernel, inp)
            self._timed_with(kernel_b, inp)
        if self.hold is not None and not self.end_to_end:
            self.hold.recalibrate()
        a: list[float] = []
        b: list[float] = []
        wall0 = _now_us()
        stop = ""
        while not stop:
            inp, _ = self._fresh(pool, rng)
            if rng.random() < 0.5:
                a.append(self._timed_with(self.kernel, inp))
                b.append(self._timed_with(kernel_b, inp))
            else:
                b.append(self._timed_with(kernel_b, inp))
                a.append(self._timed_with(self.kernel, inp))
            wall = (_now_us() - wall0) / 1e6
            # both converged, or either hit a hard limit (samples, total time, wall clock)
            rules = [should_stop(a, wall, pol), should_stop(b, wall, pol)]
            hard = [r for r in rules if r and r != "converged"]
            stop = hard[0] if hard else ("converged" if all(rules) else "")
        integrity = self._diff() + self._slack_diffs()
        return {"ok": True, "a": a, "b": b, "stop": stop, "integrity": integrity}

    # --- loop -----------------------------------------------------------------------------------
    def serve(self) -> None:
        while True:
            try:
                raw = self.conn.recv_bytes()
            except (EOFError, OSError):
                return
            msg: Request = json.loads(raw)
            op = msg.get("op")
            if op == "bye":  # acknowledged: the judge takes anything before this as late
                self.conn.send_bytes(json.dumps({"bye": True}).encode())
                return
            self.tx.reset()  # the judge has read the previous reply's tensors
            if self.beacon is not None:
                _count_dynamo(self.beacon, self._dynamo_counted)
            reply: Reply
            try:
                reply = {
                    "verify": self.verify,
                    "time": self.time,
                    "profile": self.profile,
                    "load_b": self.load_b,
                    "compare": self.compare,
                    "burst": self.burst,
                    "burst_reveal": self.burst_reveal,
                }[op](msg)
            except CallFailed as exc:
                reply = {"ok": False, "kind": exc.kind, "message": exc.message}
            except BaseException as exc:  # noqa: BLE001
                kind, message = _classify(exc)
                reply = {"ok": False, "kind": kind, "message": message}
            reply["seq"] = msg["seq"]
            self.conn.send_bytes(json.dumps(reply).encode())
            if (
                not reply["ok"]
                and reply.get("kind") in ("illegal_address", "crash", "oom")
                and self.cuda
            ):
                return  # after a CUDA error this process is never reused


class ForbiddenCall(RuntimeError):
    """Raised by the arena's kernel for a forbidden aten op: the op never runs in the arena."""


# Inputs that reach each forbidden op's kernel at once (the watch's kernel raises before it
# reads them): the canary that proves, after every watched call, that the watch is still there.
_CANARY_ARGS = {
    "geqrf": lambda z, t: (z,),
    "linalg_qr": lambda z, t: (z,),
    "qr": lambda z, t: (z,),
    "linalg_householder_product": lambda z, t: (z, t),
    "orgqr": lambda z, t: (z, t),
    "ormqr": lambda z, t: (z, t, z),
}


class _BackendWatch:
    """The forbidden aten ops, replaced in the dispatcher for this process: every overload of
    each op gets a CPU and a CUDA kernel that records the call and raises `ForbiddenCall`, so
    whatever path reaches the op (`torch.geqrf`, `torch.ops.aten` by a computed name, `getattr`,
    `importlib`, compiled code, `_DisableTorchDispatch`, another thread) ends here, and ordinary
    ops pay nothing. It replaced a Python dispatch mode that saw every op of every watched call:
    that made torch-level QR seeds 8-9x slower per watched call on the CPU (bench/watch_cost.py).

    `pending` holds the forbidden ops called since the last report (a call outside a watched
    call, at import or from a late thread, shows in the next watched call's report; a set, so a
    candidate calling one in a loop cannot fill memory); `canary()` calls each op once and lists
    the ones whose kernel is no longer this watch's (replaced or unregistered)."""

    def __init__(self, ops: frozenset[str], device: torch.device) -> None:
        import warnings

        self.pending: set[str] = set()
        self.in_canary = False
        self.lib = torch.library.Library("aten", "IMPL")  # kept: destroying it restores the ops
        entries: list[tuple[str, Any]] = []  # (name, the op's C++ entry point): canaries
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "overriding a previously registered kernel"
            for name in sorted(ops):
                packet = getattr(torch.ops.aten, name, None)
                if packet is None or not hasattr(packet, "overloads"):
                    continue
                fn = self._kernel(name)
                for ov in packet.overloads():
                    for key in ("CPU", "CUDA"):
                        self.lib.impl(name if ov == "default" else f"{name}.{ov}", fn, key)
                if name in _CANARY_ARGS and "default" in packet.overloads():
                    # the dispatcher's entry point itself, taken now: a candidate that later
                    # patches torch.ops or OpOverload cannot answer the canary in its place
                    entries.append((name, packet.default._op))
        devices = [torch.device("cpu")] + ([device] if device.type == "cuda" else [])
        self._z = {d: torch.zeros(2, 2, device=d) for d in devices}
        self._t = {d: torch.zeros(2, device=d) for d in devices}
        # (name, entry point, device) whose canary reaches the watch now, while it is surely in
        # place: a canary that some argument check stops first would later read as "removed"
        # and reject every candidate, so it is left out instead
        self.canaries = [(n, op, d) for n, op in entries for d in devices if self._raises(n, op, d)]

    def _raises(self, name: str, op: Any, d: torch.device) -> bool:
        self.in_canary = True
        try:
            op(*_CANARY_ARGS[name](self._z[d], self._t[d]))
        except ForbiddenCall:
            return True
        except Exception:  # noqa: BLE001 - any other outcome: not the watch's kernel
            return False
        finally:
            self.in_canary = False
        return False

    def _kernel(self, name: str):
        def forbidden(*args, **kwargs):
            if self.in_canary:
                raise ForbiddenCall("canary")
            self.pending.add(f"aten::{name}")
            raise ForbiddenCall(f"called aten::{name} at run time (forbidden in this task)")

        return forbidden

    def canary(self) -> list[str]:
        return [
            f"the watch on aten::{n} ({d.type}) was removed"
            for n, op, d in self.canaries
            if not self._raises(n, op, d)
        ]


def _make_watch(forbidden_ops: frozenset[str], cnames: frozenset[str], device: torch.device):
    """The forbidden-call watch: the forbidden aten ops replaced in the dispatcher
    (`_BackendWatch`) plus a profile hook on this thread and on threads started during the call
    (sees C functions by exact name, numpy/scipy Python functions, and `torch.ops` calls by
    name). A hook that was removed during the call, or an op kernel that is no longer the
    watch's, is itself reported."""
    backend = _BackendWatch(forbidden_ops, device) if forbidden_ops else None

    def watch(fn):
        seen: list[str] = []

        def hook(frame, event, arg):
            if event == "c_call":
                name = str(getattr(arg, "__name__", "")).lower()
                if name in cnames or name in forbidden_ops:
                    seen.append(f"{getattr(arg, '__module__', '') or 'builtin'}.{name}")
            elif event == "call":
                code = frame.f_code
                if code.co_name == "__call__":
                    if frame.f_globals.get("__name__") == "torch._ops":
                        op = frame.f_locals.get("self")
                        name = str(getattr(op, "_name", "") or getattr(op, "__name__", ""))
                        name = name.split("::")[-1].split(".")[0].lower()
                        if name in forbidden_ops:
                            seen.append(f"aten::{name}")
                elif code.co_name.lower() in cnames:
                    mod = str(frame.f_globals.get("__name__", ""))
                    if mod.startswith(("numpy", "scipy")):
                        seen.append(f"{mod}.{code.co_name}")

        sys.setprofile(hook)
        threading.setprofile(hook)
        failed: BaseException | None = None
        out = None
        try:
            out = fn()
        except BaseException as exc:  # noqa: BLE001 - reported below, with what was seen
            failed = exc
        finally:
            removed = sys.getprofile() is not hook
            sys.setprofile(None)
            threading.setprofile(None)
        if removed:
            seen.append("profile hook removed during the call")
        if backend:  # everything since the last report: also calls made between watched calls
            seen += backend.pending
            backend.pending.clear()
            seen += backend.canary()
        ops = sorted(set(seen))
        if failed is not None:
            if ops:  # the call failed after (or because) it reached a forbidden op
                raise CallFailed("forbidden_call", f"called {', '.join(ops)} at run time")
            raise failed
        return out, ops

    return watch


def _same(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.shape == b.shape and torch.equal(
        a.view(torch.uint8) if a.is_contiguous() else a,
        b.view(torch.uint8) if b.is_contiguous() else b,
    )


def _aliases(outs: list[torch.Tensor], bufs: list[torch.Tensor]) -> list[str]:
    found = []
    for i, o in enumerate(outs):
        lo = o.untyped_storage().data_ptr()
        hi = lo + o.untyped_storage().nbytes()
        for j, b in enumerate(bufs):
            blo = b.untyped_storage().data_ptr()
            bhi = blo + b.untyped_storage().nbytes()
            if lo < bhi and blo < hi:
                found.append(f"output {i} shares memory with input {j}")
    return found


def _guards_intact(buf: torch.Tensor, raw_before: torch.Tensor, inner: torch.Tensor) -> bool:
    raw = buf.view(torch.uint8)
    item = buf.element_size()
    g = _GUARD_BYTES
    n = inner.numel() * item
    return bool(
        torch.equal(raw[:g], raw_before[:g]) and torch.equal(raw[g + n :], raw_before[g + n :])
    )


def _jsonable(obj: Any) -> Any:
    try:
        json.dumps(obj)
        return obj
    except (TypeError, ValueError):
        return repr(obj)[:500]


def _load_cudart() -> Any:
    import ctypes
    import glob

    pats = []
    for p in sys.path:
        pats += glob.glob(os.path.join(p, "nvidia", "*", "lib", "libcudart.so*"))
        pats += glob.glob(os.path.join(p, "nvidia", "cuda_runtime", "lib", "libcudart.so*"))
    for name in pats + ["libcudart.so", "libcudart.so.13", "libcudart.so.12"]:
        try:
            lib = ctypes.CDLL(name)
            lib.cudaCtxResetPersistingL2Cache.restype = ctypes.c_int
            return lib
        except (OSError, AttributeError):
            continue
    return None


def _preload() -> None:
    """Import what the arena needs from the project before the sandbox makes it unreadable:
    Triton's jit reads a kernel's source when its module is imported (the hold)."""
    with contextlib.suppress(ImportError):
        import triton  # noqa: F401

        import cockpit.harness.hold  # noqa: F401


def main() -> None:
    try:  # die with the judge: an orphaned candidate must not keep the GPU busy
        import ctypes
        import signal

        ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
    fd = int(sys.argv[sys.argv.index("--fd") + 1])
    conn = Connection(fd)
    # Everything that costs CPU alone comes before the configuration: an arena started ahead
    # (a spare) does this while another candidate runs, and touches the GPU only once the judge
    # configures it, when nothing is being timed.
    _preload()
    try:
        cfg: ArenaConfig = json.loads(conn.recv_bytes())
    except (EOFError, OSError, ValueError):
        return
    arena = Arena(conn, cfg)
    try:
        protections = arena.setup()
    except BaseException as exc:  # noqa: BLE001
        conn.send_bytes(
            json.dumps(
                {"ok": False, "kind": "crash", "message": f"sandbox set-up failed: {exc}"}
            ).encode()
        )
        return
    # Set up and idle: an arena is started ahead of its candidate (the judge keeps one warm
    # while another candidate runs), and imports nothing of a candidate's until it is told to.
    conn.send_bytes(json.dumps({"ready": True}).encode())
    while True:  # the judge's null bursts, then the candidate
        try:
            go = json.loads(conn.recv_bytes())
        except (EOFError, OSError, ValueError):
            return
        if not isinstance(go, dict) or go.get("op") != "null_burst":
            break
        arena.tx.reset()
        try:
            reply = arena.null_burst(go)
        except BaseException as exc:  # noqa: BLE001
            reply = {"ok": False, "kind": "crash", "message": f"null burst failed: {exc}"}
        reply["seq"] = go.get("seq")
        conn.send_bytes(json.dumps(reply).encode())
    if not isinstance(go, dict) or go.get("op") != "load":
        return
    # The candidate's prints must never reach the judge's stdout (and are never parsed)
    loaded: LoadReply = arena.load()  # `protections` is added next
    loaded["protections"] = protections
    conn.send_bytes(json.dumps(loaded).encode())
    if loaded["ok"]:
        arena.serve()


if __name__ == "__main__":
    main()
