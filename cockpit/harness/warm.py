"""Arena processes, started ahead of their candidate.

Starting an arena costs seconds (the interpreter, torch, Triton, the CUDA context, the GPU hold,
the sandbox) and none of it depends on the candidate. An arena starts in two steps: spawned, it
imports what it needs (CPU only) and waits for its task-level configuration; configured
(`Started.prime`), it sets up (CUDA context, hold, sandbox), reports `ready`, and only then is
told to import a candidate. A judge that evaluates many candidates in a row (an engine worker)
keeps one such arena *spare*: spawned when an evaluation begins, it imports beside it and is
handed to the next evaluation. A spare never imports more than one candidate, so every candidate
still gets a process that no earlier candidate touched; it only skips the wait.

A spare must not disturb a measurement. On a GPU it is configured only when the evaluation that
spawned it has finished (`prime_spare`): its set-up creates a CUDA context and launches the
hold's calibration, and nothing is timed then. On the CPU, where its imports would compete with a
timed candidate for the cores, it is configured at once and `settle()` waits (before any timed
stage) until it is idle, blocked on its socket with `ready` sent.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import shutil
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cockpit.harness import wire
from cockpit.harness.channel import Channel, ProtocolViolation
from cockpit.harness.protocol import ArenaConfig, ArenaTaskConfig, SetupReply

# How long a spare may take to report ready before the judge gives up on it (a cold CUDA
# context with a cold Triton cache takes several seconds; a spare that takes longer is killed,
# and the next evaluation spawns its own arena).
SETTLE_S = 120.0


@dataclass
class Started:
    """One arena process, its work folder, its exchange folder and regions, and its channel."""

    key: str  # the task-level configuration it was started with (reuse only for the same)
    workdir: Path
    ex: Path
    tx: Any  # wire.Region or wire.Files: to the arena
    rx: Any  # ... and from it
    ch: Channel
    cfg: ArenaConfig
    beacon: wire.Beacon | None = None  # where the arena counts the compiles it starts
    setup: SetupReply | None = None  # the arena's first reply ({"ready": True} or a failure)
    primed: bool = False  # its configuration was sent (it is setting up, or set up)
    serving: bool = False  # it loaded its candidate and answers requests

    def alive(self) -> bool:
        return self.ch.proc.poll() is None

    def prime(self) -> None:
        """Send the configuration: the arena sets up (touching the GPU) and then reports ready."""
        if not self.primed:
            self.primed = True
            with contextlib.suppress(OSError):  # a process that died: the next recv says so
                self.ch.send(self.cfg)

    def wait_ready(self, deadline: float) -> SetupReply:
        """The arena's set-up reply; raises what `Channel.recv` raises (died, timeout)."""
        if self.setup is None:
            self.setup = self.ch.recv(deadline)
        return self.setup

    def close(self) -> tuple[str, int, bool]:
        """End the process and remove both folders. Returns the end of its output, the bytes of
        output counted but not kept, and whether bytes were waiting on the result channel after
        the last reply (a forged or late message).

        Nothing of a finished arena is waited for: it is killed (with anything it started) at
        once, and reaped and cleaned up on a background thread, off the evaluation's clock (a
        process that held a CUDA context takes up to a second to go)."""
        tail, dropped, late = "", 0, False
        try:
            tail = self.ch.log_tail(800)
            late = self.ch.goodbye() if self.serving else False
            self.ch.kill()
            late = self.ch.unread_bytes() or late
            dropped = self.ch.output_dropped
        finally:
            threading.Thread(target=self._reap, name="arena-reaper", daemon=True).start()
        return tail, dropped, late

    def _reap(self) -> None:
        try:
            self.ch.close()
        finally:
            for r in {id(self.tx): self.tx, id(self.rx): self.rx}.values():
                if isinstance(r, wire.Region):
                    r.close()
            if self.beacon is not None:
                self.beacon.close()
            shutil.rmtree(self.workdir, ignore_errors=True)
            shutil.rmtree(self.ex, ignore_errors=True)


def start(
    cfg: ArenaTaskConfig,
    *,
    device: str,
    exchange: str,
    memory_bytes: int | None,
    cache: Path,
    prefix: str = "cockpit-eval-",
    prime: bool = True,
) -> Started:
    """Spawn an arena for the task-level `cfg` (device, outputs, watches, sandbox, limits); with
    `prime`, send it the configuration at once (it sets up and waits for `load`), else later."""
    workdir = Path(tempfile.mkdtemp(prefix=prefix))
    ex = Path(tempfile.mkdtemp(prefix="cockpit-x-", dir=wire.exchange_root()))
    tx = rx = beacon = None
    try:
        tx, rx = wire.exchange(exchange, ex)
        beacon = wire.Beacon()
        fds = tuple(r.fd for r in (tx, rx) if isinstance(r, wire.Region)) + (beacon.fd,)
        ch = Channel(workdir, cache, device, memory_bytes, pass_fds=fds)
    except BaseException:
        for r in (tx, rx, beacon):
            if isinstance(r, wire.Region | wire.Beacon):
                r.close()
        shutil.rmtree(workdir, ignore_errors=True)
        shutil.rmtree(ex, ignore_errors=True)
        raise
    full: ArenaConfig = dict(
        cfg,
        candidate=str(workdir / "candidate.py"),
        workdir=str(workdir),
        exchange=str(ex),
        regions=[tx.fd, rx.fd] if isinstance(tx, wire.Region) else None,
        beacon=beacon.fd,
        cache_dir=str(cache),
    )
    started = Started(key(cfg), workdir, ex, tx, rx, ch, full, beacon)
    if prime:
        started.prime()
    return started


def key(cfg: ArenaTaskConfig) -> str:
    return json.dumps(cfg, sort_keys=True)


# --- the spare ----------------------------------------------------------------------------------
_SPARE: list[Started] = []  # at most one: the arena the next evaluation in this process takes


def take(cfg: ArenaTaskConfig) -> Started | None:
    """The spare, if one was started with this configuration and is still alive; else None
    (a spare of another configuration is ended)."""
    if not _SPARE:
        return None
    s = _SPARE.pop()
    if s.key == key(cfg) and s.alive():
        s.prime()
        return s
    s.close()
    return None


def keep(s: Started) -> None:
    """Make `s` the spare (ending any other)."""
    drop()
    _SPARE.append(s)


def prime_spare() -> None:
    """Let the spare set up now (the evaluation that spawned it is over)."""
    if _SPARE:
        _SPARE[0].prime()


def settle(limit_s: float = SETTLE_S) -> None:
    """Wait until a configured spare has finished setting up (so it is idle while something is
    timed); one that dies or takes longer is ended and forgotten. A spare not yet configured
    only imports, on the CPU, and is left alone."""
    if not _SPARE or not _SPARE[0].primed:
        return
    s = _SPARE[0]
    try:
        reply = s.wait_ready(time.monotonic() + limit_s)
        if not reply.get("ready"):
            raise ProtocolViolation("set-up failed")
    except Exception:  # noqa: BLE001 - died, timed out, set-up failed: no spare
        drop()


def drop() -> None:
    while _SPARE:
        with contextlib.suppress(Exception):
            _SPARE.pop().close()


atexit.register(drop)
