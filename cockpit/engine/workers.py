"""Evaluation workers: one process per visible GPU (or one for the CPU), each running the judge.

A worker is a long-lived spawned process pinned to one device (`CUDA_VISIBLE_DEVICES`), so the
engine process itself never initializes CUDA and never holds a candidate's memory. The judge in
the worker spawns a fresh sandboxed process per candidate. Workers die with the engine
(`PR_SET_PDEATHSIG`), so a SIGKILLed engine leaves no evaluation running behind it. A worker
that dies itself (SIGKILLed from outside, the OOM killer) takes its arena with it; the engine
gives that slot a fresh worker (`WorkerPool.restart`) and evaluates the candidate once more.
"""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import os
from concurrent.futures import Future, ProcessPoolExecutor
from typing import Any

from cockpit.harness import DEFAULT_EXCHANGE
from cockpit.result_view import ResultView


def _init_worker(visible: str | None, engine_pid: int | None = None) -> None:
    if visible is not None:
        os.environ["CUDA_VISIBLE_DEVICES"] = visible
    import ctypes
    import signal

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    # An engine killed while this worker was still starting never sends the death signal, and
    # the worker would wait on its queue forever (it holds the queue's writer itself).
    if engine_pid is not None and os.getppid() != engine_pid:
        os._exit(1)


def _evaluate(
    task_root: str,
    name: str,
    source: str,
    device: str,
    mode: str,
    incumbent: dict[str, Any] | None = None,
    exchange: str = DEFAULT_EXCHANGE,
    cascade: bool = False,
    warm: bool = True,
) -> dict[str, Any]:
    """Judge one candidate, keeping an arena warm for the next one (`judge.Options.warm`).

    `incumbent` is the branch's best: {"id", "score_us", "result"} and, for an A/B
    confirmation, "source". With `cascade` the candidate is screened and promoted only if its
    screened times could beat the incumbent's result (`judge.Options.cascade`). A passing,
    promoted (or fully evaluated) candidate whose score is not worse, with the incumbent's
    source at hand, is also timed interleaved with it in one process (`judge.compare`), attached
    as `ab`: the engine decides "better" on it, because two evaluations in two processes
    differed by up to 37% on an H200 (BENCHMARKS.md, repeatability)."""
    from cockpit.harness.judge import Options, compare, evaluate
    from cockpit.harness.task import load_task

    task = load_task(task_root)
    opts = Options(
        device=device,
        mode=mode,
        exchange=exchange,
        warm=warm,
        cascade=cascade,
        incumbent=(incumbent or {}).get("result"),
    )
    result = evaluate(task, name, opts, source=source).to_dict()
    view = ResultView.from_dict(result)
    best_us = (incumbent or {}).get("score_us")
    if (
        incumbent
        and incumbent.get("source")
        and view.passing
        and not view.screened
        and best_us
        and view.score_us <= best_us
    ):
        try:
            ab = compare(task, source, incumbent["source"], opts)
        except Exception as exc:  # noqa: BLE001 - a failed comparison falls back to the scores
            ab = {"ok": False, "kind": "crash", "message": f"{type(exc).__name__}: {exc}"}
        ab["incumbent"] = incumbent.get("id")
        result["ab"] = ab
    return result


def gpu_ids() -> list[str]:
    """The GPUs this process may use, as `CUDA_VISIBLE_DEVICES` entries for one worker each:
    the parent's own list when it has one (`CUDA_VISIBLE_DEVICES=1 cockpit run` must evaluate
    on GPU 1, not on GPU 0 next to another job), else every GPU NVML counts. Counted through
    NVML so the engine never initializes CUDA itself."""
    try:
        import pynvml

        pynvml.nvmlInit()
        try:
            n = pynvml.nvmlDeviceGetCount()
        finally:
            pynvml.nvmlShutdown()
    except Exception:  # noqa: BLE001 - no driver, no library: no GPU
        return []
    return visible_ids(os.environ.get("CUDA_VISIBLE_DEVICES"), n)


def visible_ids(visible: str | None, count: int) -> list[str]:
    """`CUDA_VISIBLE_DEVICES` (None: unset) and the number of GPUs NVML sees -> one entry per
    worker. Entries are kept as written (indices or GPU-/MIG- UUIDs) so each worker's own
    `CUDA_VISIBLE_DEVICES` names exactly one of the parent's devices."""
    if visible is None:
        return [str(i) for i in range(count)]
    return [v.strip() for v in visible.split(",") if v.strip()]


def job_args(
    pool: Any, task: Any, name: str, source: str, mode: str, incumbent: dict[str, Any] | None
) -> tuple:
    """What one evaluation job is called with, in `_evaluate`'s order, for a pool of either
    backend (`pool` has `device`, `exchange`, `cascade` and `warm`): the local workers pass a
    task folder, the Ray backend a reference to the task's files."""
    device = "cpu" if pool.device == "cpu" else "cuda"
    return (task, name, source, device, mode, incumbent, pool.exchange, pool.cascade, pool.warm)


class WorkerPool:
    def __init__(
        self,
        device: str,
        exchange: str = DEFAULT_EXCHANGE,
        cascade: bool = False,
        warm: bool = True,
    ) -> None:
        self.device = device
        self.exchange = exchange  # Options.exchange of every evaluation
        self.cascade = cascade  # Options.cascade of every evaluation
        self.warm = warm  # Options.warm of every evaluation
        ctx = mp.get_context("spawn")
        self.devices: list[str] = []  # CUDA_VISIBLE_DEVICES of each worker, in slot order
        if device == "cpu":
            self.slots = [
                ProcessPoolExecutor(
                    1, mp_context=ctx, initializer=_init_worker, initargs=(None, os.getpid())
                )
            ]
        else:
            # no GPU counted: one worker with the parent's setting ("" stays "": the judge then
            # says there is no GPU, instead of the worker finding one the parent hid)
            self.devices = gpu_ids() or [os.environ.get("CUDA_VISIBLE_DEVICES", "0")]
            self.slots = [
                ProcessPoolExecutor(
                    1, mp_context=ctx, initializer=_init_worker, initargs=(gpu, os.getpid())
                )
                for gpu in self.devices
            ]
        self.busy: dict[int, Future] = {}
        self._procs: dict[int, list[Any]] = {}  # slot -> its worker's Process, seen at submit

    @property
    def size(self) -> int:
        return len(self.slots)

    def free_slot(self) -> int | None:
        for i in range(len(self.slots)):
            if i not in self.busy or self.busy[i].done():
                return i
        return None

    def submit(
        self,
        slot: int,
        task_root: str,
        name: str,
        source: str,
        mode: str,
        incumbent: dict[str, Any] | None = None,
    ) -> Future:
        fut = self.slots[slot].submit(
            _evaluate, *job_args(self, task_root, name, source, mode, incumbent)
        )
        self.busy[slot] = fut
        with contextlib.suppress(AttributeError):  # the executor spawned its worker at submit
            self._procs[slot] = list(self.slots[slot]._processes.values())
        return fut

    def slot_of(self, fut: Future) -> int | None:
        return next((i for i, f in self.busy.items() if f is fut), None)

    def how_it_died(self, slot: int) -> str:
        """How slot `slot`'s worker ended, from its exit code: "killed by SIGKILL", "exit code 1"."""
        import signal
        import time

        procs = self._procs.get(slot, [])
        # Its pipe closes a moment before it can be reaped, and the executor's own thread reaps
        # it at the same time (whichever of the two waits second sees no status): wait for the
        # exit code to be set, briefly.
        deadline = time.monotonic() + 2.0
        for p in procs:
            with contextlib.suppress(Exception):
                p.join(timeout=2)
            while p.exitcode is None and time.monotonic() < deadline:
                time.sleep(0.02)
        codes = [p.exitcode for p in procs if p.exitcode is not None]
        if not codes:
            return "ended"
        code = codes[0]
        if code < 0:
            try:
                return f"killed by {signal.Signals(-code).name}"
            except ValueError:
                return f"killed by signal {-code}"
        return f"exit code {code}"

    def restart(self, slot: int) -> None:
        """Give slot `slot` a fresh worker after its own died (a dead worker breaks its executor
        for good). The other slots and their evaluations in flight are left alone."""
        ctx = mp.get_context("spawn")
        gpu = self.devices[slot] if slot < len(self.devices) else None
        self.slots[slot].shutdown(wait=False, cancel_futures=True)
        self.slots[slot] = ProcessPoolExecutor(
            1, mp_context=ctx, initializer=_init_worker, initargs=(gpu, os.getpid())
        )
        self.busy.pop(slot, None)
        self._procs.pop(slot, None)

    def shutdown(self) -> None:
        for ex in self.slots:
            ex.shutdown(wait=False, cancel_futures=True)
