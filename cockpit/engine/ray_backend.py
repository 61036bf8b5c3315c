"""Evaluations on a Ray cluster: the `ray` backend, with `WorkerPool`'s interface.

One slot is one Ray actor that holds one GPU of the cluster (`num_gpus=1`) or, on a CPU cluster,
`cpus` CPU slots, for the whole run: like a local worker, it is a long-lived process pinned to one
device (Ray sets its `CUDA_VISIBLE_DEVICES` once), it runs the judge, the judge spawns a fresh
sandboxed arena per candidate on that node, and a warm spare arena stays with the actor. Ray never
places two actors on one GPU, and an actor runs one evaluation at a time, so no two timed
evaluations share a GPU. On a CPU cluster an actor holds its CPU slots but Ray pins no cores:
evaluations on one node may share cores, as CPU times are labelled not comparable anyway.

What travels: the candidate's source and the task folder's files (as bytes, materialized in a
temporary folder on the node named by their hash, so nodes need no shared file system). What
comes back: the verdict dict, plus `node` (which node, host and GPU ran it). Nothing on a node
writes the session: the engine records the verdict as it does a local one.

A node (or the actor's process) lost mid-evaluation: the evaluation is given once more to a live
actor, on another node where one exists; lost again, its verdict is `crash` saying so. The slot of
a lost actor is gone for the rest of the run (its GPU went with the node).

Ray is an optional dependency (`pip install -e '.[ray]'`): this module imports it only when a
pool is made.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import socket
import tempfile
import threading
import time
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cockpit.harness import DEFAULT_EXCHANGE

INSTALL_HINT = "pip install -e '.[ray]'"
# A task folder travels with every evaluation; one past this size is a mistake (data sets belong
# in `make_inputs`, not in the folder).
TASK_FILES_LIMIT = 64 << 20
START_TIMEOUT_S = 120.0  # how long the pool waits for its actors to come up


class BackendUnavailable(RuntimeError):
    """The backend cannot run: Ray missing, the cluster unreachable or without a usable slot.
    Its text is one line for the user."""


def ray_installed() -> bool:
    import importlib.util

    return importlib.util.find_spec("ray") is not None


def _ray() -> Any:
    try:
        import ray
    except ImportError:
        raise BackendUnavailable(
            f"--backend ray needs Ray, which is not installed: {INSTALL_HINT}"
        ) from None
    return ray


def check_reachable(address: str | None) -> None:
    """A `host:port` address nobody listens on fails here in seconds (ray.init would retry it
    for minutes); `auto`, `ray://` and no address are left to Ray."""
    address = address or os.environ.get("RAY_ADDRESS")
    if not address or ":" not in address or "://" in address:
        return
    host, _, port = address.rpartition(":")
    try:
        socket.create_connection((host, int(port)), timeout=5).close()
    except (OSError, ValueError) as exc:
        raise BackendUnavailable(f"no Ray cluster answers at {address} ({exc})") from None


def connect(address: str | None) -> Any:
    """`ray.init` for this process: `address` (host:port of a cluster's head, `auto`, or a
    `ray://` client address), else `$RAY_ADDRESS`, else a Ray instance started on this machine.
    The process keeps its own SIGTERM/SIGINT handlers (ray.init replaces SIGTERM's; the engine's
    turns a `kill` into a recorded stop)."""
    import logging
    import signal

    ray = _ray()
    if ray.is_initialized():
        return ray
    check_reachable(address)
    main = threading.current_thread() is threading.main_thread()
    handlers = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)} if main else {}
    kwargs: dict[str, Any] = dict(
        log_to_driver=False, logging_level=logging.WARNING, namespace="kernel-cockpit"
    )
    if not (address or os.environ.get("RAY_ADDRESS")):
        kwargs["include_dashboard"] = False
    try:
        ray.init(address=address or None, **kwargs)
    except Exception as exc:  # noqa: BLE001 - unreachable, refused, version mismatch
        where = address or os.environ.get("RAY_ADDRESS") or "a local Ray instance"
        raise BackendUnavailable(f"cannot connect to Ray at {where}: {_first_line(exc)}") from None
    finally:
        for sig, handler in handlers.items():
            if handler is not None:
                signal.signal(sig, handler)
    return ray


def cluster_slots(resources: dict[str, float], device: str, cpus: float) -> int:
    """How many evaluations a cluster with `resources` (ray.cluster_resources()) runs at once:
    one per GPU, or one per `cpus` CPU slots on the CPU."""
    if device != "cpu":
        return int(resources.get("GPU", 0))
    return int(resources.get("CPU", 0) // cpus)


def probe(address: str | None) -> dict[str, float]:
    """The resources of the cluster at `address` (connects, reads, disconnects)."""
    ray = connect(address)
    try:
        return dict(ray.cluster_resources())
    finally:
        ray.shutdown()


# --- the task folder on the wire -------------------------------------------------------------------
def task_files(root: str | Path) -> dict[str, bytes]:
    """Every regular file under the task folder (relative path -> bytes), without caches and
    hidden files; a folder past TASK_FILES_LIMIT is refused."""
    root = Path(root)
    files: dict[str, bytes] = {}
    total = 0
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root)
        if any(part == "__pycache__" or part.startswith(".") for part in rel.parts):
            continue
        if not p.is_file():
            continue
        data = p.read_bytes()
        total += len(data)
        if total > TASK_FILES_LIMIT:
            raise BackendUnavailable(
                f"task folder {root} holds more than {TASK_FILES_LIMIT >> 20} MiB: too much to "
                "send with every evaluation"
            )
        files[rel.as_posix()] = data
    return files


def files_digest(files: dict[str, bytes]) -> str:
    h = hashlib.sha256()
    for rel in sorted(files):
        h.update(rel.encode() + b"\0" + hashlib.sha256(files[rel]).digest())
    return h.hexdigest()


def materialize(folder_name: str, files: dict[str, bytes], base: Path | None = None) -> Path:
    """Write the task's files under `<tmp>/cockpit-ray-tasks/<hash>/<folder_name>` once per node
    and return that folder. The path depends only on the content, so the same task keeps the
    same path (a warm arena is reused only for the same task configuration), and a folder is
    complete once it exists (written aside, then renamed into place)."""
    base = base or Path(tempfile.gettempdir()) / "cockpit-ray-tasks"
    base.mkdir(parents=True, exist_ok=True)
    final = base / files_digest(files)[:32]
    if not final.is_dir():
        part = Path(tempfile.mkdtemp(prefix=".part-", dir=base))
        try:
            for rel, data in files.items():
                target = part / folder_name / rel
                if ".." in Path(rel).parts or Path(rel).is_absolute():
                    raise ValueError(f"task file outside its folder: {rel!r}")
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(data)
            (part / folder_name).mkdir(exist_ok=True)
            with contextlib.suppress(OSError):  # another evaluation on this node got there first
                os.rename(part, final)
        finally:
            shutil.rmtree(part, ignore_errors=True)
    return final / folder_name


# --- what runs on a node ---------------------------------------------------------------------------
class Evaluator:
    """The actor: made a Ray actor by `RayPool` (`ray.remote(Evaluator)`), so this module never
    needs Ray to be imported."""

    def where(self) -> dict[str, Any]:
        """The node, host and device this actor runs on."""
        import ray

        ctx = ray.get_runtime_context()
        gpus = [str(g) for g in ray.get_gpu_ids()]
        return {
            "node_id": ctx.get_node_id(),
            "host": socket.gethostname(),
            "ip": ray.util.get_node_ip_address(),
            "pid": os.getpid(),
            "gpu": ",".join(gpus) if gpus else None,
        }

    def evaluate(
        self,
        folder_name: str,
        files: dict[str, bytes],
        name: str,
        source: str,
        device: str,
        mode: str,
        incumbent: dict[str, Any] | None,
        exchange: str,
        cascade: bool,
        warm: bool,
    ) -> dict[str, Any]:
        from cockpit.engine.workers import _evaluate

        root = materialize(folder_name, files)
        result = _evaluate(
            str(root), name, source, device, mode, incumbent, exchange, cascade, warm
        )
        result["node"] = self.where()
        return result


class NodeSampler:
    """One per node of a run (no CPU or GPU held, pinned to its node): that node's telemetry."""

    def sample(self, gpus: list[int] | None) -> list[dict[str, Any]]:
        from cockpit.engine.telemetry import node_sample

        return node_sample(gpus)


# --- the engine's side -----------------------------------------------------------------------------
@dataclass
class _Slot:
    actor: Any
    where: dict[str, Any] = field(default_factory=dict)
    alive: bool = True
    load: int = 0  # evaluations given to this actor and not yet back


@dataclass
class _Sampler:
    actor: Any
    label: str  # the node as the cockpit names it: host and the node id's first 8 digits
    gpus: list[int] | None  # NVML indices to sample; None: all of the node's
    pending: Any = None  # the reading asked for and not yet collected


@dataclass
class _Call:
    future: Future  # what the engine waits on
    args: tuple
    slot: int
    attempt: int = 0
    lost: list[str] = field(default_factory=list)  # why earlier attempts ended


class RayPool:
    """`WorkerPool`'s interface (`submit`, `free_slot`, `size`, `devices`, `busy`, `shutdown`)
    over Ray actors; see the module's docstring."""

    def __init__(
        self,
        device: str,
        exchange: str = DEFAULT_EXCHANGE,
        cascade: bool = False,
        warm: bool = True,
        address: str | None = None,
        cpus: float = 1.0,
        start_timeout_s: float = START_TIMEOUT_S,
    ) -> None:
        self.device = device
        self.exchange = exchange
        self.cascade = cascade
        self.warm = warm
        self.cpus = cpus
        ray = self._ray = connect(address)
        try:
            wanted = cluster_slots(ray.cluster_resources(), device, cpus)
            if wanted < 1:
                what = "GPU" if device != "cpu" else f"{cpus:g} free CPU slots for one evaluation"
                raise BackendUnavailable(
                    f"the Ray cluster has no {what}"
                    + (" (use --device cpu for a CPU cluster)" if device != "cpu" else "")
                )
            need = {"num_gpus": 1} if device != "cpu" else {"num_cpus": cpus}
            cls = ray.remote(Evaluator).options(max_restarts=0, max_concurrency=1, **need)
            actors = [cls.remote() for _ in range(wanted)]
            pending = {a.where.remote(): a for a in actors}
            ready, _ = ray.wait(list(pending), num_returns=len(pending), timeout=start_timeout_s)
            self._slots: list[_Slot] = []
            why = f"none was placed within {start_timeout_s:g} s"
            for ref in pending:
                if ref in ready:
                    try:
                        self._slots.append(_Slot(pending[ref], ray.get(ref)))
                        continue
                    except ray.exceptions.RayError as exc:  # e.g. cockpit not importable there
                        why = _first_line(exc)
                ray.kill(pending[ref], no_restart=True)  # never placed, or died starting
            if not self._slots:
                raise BackendUnavailable(
                    f"no evaluation actor started on the Ray cluster ({why}); is kernel-cockpit "
                    "installed on its nodes?"
                )
        except BaseException:
            ray.shutdown()
            raise
        self.busy: dict[int, Future] = {}
        self._calls: dict[Any, _Call] = {}  # actor call ref -> call
        self._files: tuple[str, str, Any] | None = None  # (task root, digest, object ref)
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self._watcher = threading.Thread(target=self._watch, name="ray-pool", daemon=True)
        self._watcher.start()
        self._samplers: dict[str, _Sampler] = {}
        with contextlib.suppress(Exception):  # telemetry is never a reason not to run
            self._samplers = self._start_samplers()

    # --- WorkerPool's interface ----------------------------------------------------------------
    @property
    def size(self) -> int:
        return sum(s.alive for s in self._slots)

    @property
    def devices(self) -> list[str]:
        """Per slot, where its evaluations run: `IP:GPU` on a GPU cluster (the engine shows it as
        the evaluation's GPU); empty on the CPU, as for a local CPU worker."""
        if self.device == "cpu":
            return []
        return [f"{s.where.get('ip', '?')}:{s.where.get('gpu') or '?'}" for s in self._slots]

    def nodes(self) -> list[dict[str, Any]]:
        """Per slot: its node (`where`) and whether it is still alive."""
        return [dict(s.where, alive=s.alive, slot=i) for i, s in enumerate(self._slots)]

    def node_telemetry(self) -> list[dict[str, Any]]:
        """The readings the nodes' samplers sent since the last call (each asked again at once),
        `node` set to `host node-id`, `t` this host's clock at receipt (nodes' clocks may
        differ). A sampler that fails (its node lost) is dropped: its node's last reading ages in
        the cockpit. Never waits for a node."""
        ray = self._ray
        out: list[dict[str, Any]] = []
        for node_id, sm in list(self._samplers.items()):
            if sm.pending is not None:
                ready, _ = ray.wait([sm.pending], timeout=0)
                if not ready:
                    continue
                try:
                    rows = ray.get(sm.pending)
                except Exception:  # noqa: BLE001 - the node or the sampler is gone
                    del self._samplers[node_id]
                    with contextlib.suppress(Exception):
                        ray.kill(sm.actor, no_restart=True)
                    continue
                now = time.time()
                out += [dict(r, node=sm.label, t=now) for r in rows]
            sm.pending = sm.actor.sample.remote(sm.gpus)
        return out

    def free_slot(self) -> int | None:
        """A live slot with nothing to do; None while all are busy. With every slot lost (the
        cluster's nodes are gone) the run cannot go on here: BackendUnavailable, and the engine
        ends the session `crashed`, resumable on the local backend or once the cluster is back."""
        with self._lock:
            for i, s in enumerate(self._slots):
                if s.alive and s.load == 0:
                    return i
            if not any(s.alive for s in self._slots):
                raise BackendUnavailable(
                    "every Ray node of this run was lost: resume it when the cluster is back, "
                    "or with --backend local"
                )
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
        from cockpit.engine.workers import job_args

        task_ref = self._task_ref(task_root)
        args = (Path(task_root).name, *job_args(self, task_ref, name, source, mode, incumbent))
        fut: Future = Future()
        with self._lock:
            self._start(_Call(fut, args, slot))
        self.busy[slot] = fut
        return fut

    def shutdown(self) -> None:
        self._closing.set()
        with self._lock:
            calls = list(self._calls.values())
            self._calls.clear()
        for c in calls:
            c.future.cancel()
        for actor in [s.actor for s in self._slots] + [m.actor for m in self._samplers.values()]:
            with contextlib.suppress(Exception):
                self._ray.kill(actor, no_restart=True)
        self._watcher.join(timeout=5)
        with contextlib.suppress(Exception):
            self._ray.shutdown()

    # --- inside --------------------------------------------------------------------------------
    def _start_samplers(self) -> dict[str, _Sampler]:
        """A NodeSampler on every node that holds a slot, sampling the GPUs its slots hold (all
        of the node's on a CPU cluster)."""
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        ray = self._ray
        out: dict[str, _Sampler] = {}
        for s in self._slots:
            node_id = s.where.get("node_id")
            if not node_id:
                continue
            if node_id not in out:
                cls = ray.remote(NodeSampler).options(
                    num_cpus=0,
                    max_restarts=0,
                    scheduling_strategy=NodeAffinitySchedulingStrategy(node_id, soft=False),
                )
                label = f"{s.where.get('host') or s.where.get('ip') or '?'} {node_id[:8]}"
                out[node_id] = _Sampler(cls.remote(), label, None if self.device == "cpu" else [])
            gpus = out[node_id].gpus
            if gpus is not None:
                gpus += [int(g) for g in str(s.where.get("gpu") or "").split(",") if g.isdigit()]
        return out

    def _task_ref(self, task_root: str) -> Any:
        """The task folder's files in the object store, put once per content (re-read at every
        submit, so an edited task travels as edited)."""
        files = task_files(task_root)
        digest = files_digest(files)
        if self._files is None or self._files[:2] != (task_root, digest):
            self._files = (task_root, digest, self._ray.put(files))
        return self._files[2]

    def _start(self, call: _Call) -> None:
        """Give `call` to its slot's actor (the lock is held)."""
        s = self._slots[call.slot]
        s.load += 1
        ref = s.actor.evaluate.remote(*call.args)
        self._calls[ref] = call

    def _watch(self) -> None:
        ray = self._ray
        while not self._closing.is_set():
            with self._lock:
                refs = list(self._calls)
            if not refs:
                self._closing.wait(0.1)
                continue
            try:
                ready, _ = ray.wait(refs, num_returns=1, timeout=0.5, fetch_local=False)
            except Exception:  # noqa: BLE001 - shutting down under us
                if self._closing.is_set():
                    return
                raise
            for ref in ready:
                self._settle(ref)

    def _settle(self, ref: Any) -> None:
        ray = self._ray
        with self._lock:
            call = self._calls.pop(ref, None)
        if call is None:
            return
        slot = self._slots[call.slot]
        try:
            result = ray.get(ref)
        except ray.exceptions.RayTaskError as exc:  # the evaluation itself raised: not retried
            cause = exc.cause if getattr(exc, "cause", None) is not None else exc
            result = _crash(
                f"harness error on {_node_name(slot.where)}: {type(cause).__name__}: "
                + _first_line(cause)
            )
        except ray.exceptions.RayError as exc:  # the actor, its node or its process was lost
            with self._lock:
                slot.load -= 1
                self._lose(call.slot)
                call.lost.append(f"{_node_name(slot.where)} ({type(exc).__name__})")
                if call.attempt == 0:
                    target = self._retry_target(slot.where.get("node_id"))
                    if target is not None:
                        call.attempt, call.slot = 1, target
                        self._start(call)
                        return
            how = " and again on ".join(call.lost)
            retried = (
                "after one retry" if len(call.lost) > 1 else "with no live worker left to retry on"
            )
            result = _crash(f"the Ray worker evaluating it was lost on {how}, {retried}")
            if not call.future.cancelled():
                call.future.set_result(result)
            return
        with self._lock:
            slot.load -= 1
        if call.lost:
            result["retried_after"] = call.lost  # which attempt was lost, and where
        if not call.future.cancelled():
            call.future.set_result(result)

    def _lose(self, i: int) -> None:
        """Slot `i`'s actor is gone: never used again (killed, in case it is only unreachable)."""
        s = self._slots[i]
        if s.alive:
            s.alive = False
            with contextlib.suppress(Exception):
                self._ray.kill(s.actor, no_restart=True)

    def _retry_target(self, lost_node: str | None) -> int | None:
        """A live slot for a retry: on another node than the one lost, the least loaded first."""
        live = [i for i, s in enumerate(self._slots) if s.alive]
        if not live:
            return None
        return min(
            live,
            key=lambda i: (self._slots[i].where.get("node_id") == lost_node, self._slots[i].load),
        )


def _first_line(exc: BaseException) -> str:
    lines = [line for line in str(exc).strip().splitlines() if line.strip()]
    return lines[0][:300] if lines else type(exc).__name__


def _node_name(where: dict[str, Any]) -> str:
    node = str(where.get("node_id") or "?")[:8]
    host = where.get("host") or where.get("ip") or "?"
    return f"node {node} ({host})"


def _crash(message: str) -> dict[str, Any]:
    return {"status": "crash", "reasons": [{"kind": "crash", "message": message}]}


__all__ = [
    "BackendUnavailable",
    "Evaluator",
    "RayPool",
    "INSTALL_HINT",
    "cluster_slots",
    "connect",
    "materialize",
    "probe",
    "ray_installed",
    "task_files",
]
