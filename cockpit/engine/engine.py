"""The loop's scheduler: propose -> evaluate -> record -> keep or discard, over a beam of branches.

`Engine` decides what runs next and owns what is in flight; everything else lives beside it:

- `state.py`: the engine's state, a fold over the session's events. The engine appends an event
  (`_emit`) and applies the same `fold` that a resumed engine applies to the whole record, so a
  resumed run knows what the stopped one knew (`resume.py` repairs what a kill left half-done).
- `proposals.py`: asking a proposer on a thread, collecting and cancelling proposals.
- `verdicts.py`: recording a verdict, keep or discard, plateaus and escalations.
- `commands.py`: one small handler per queue command.
- `spend.py`: the evaluation budget, the LLM caps, branches paused for unusable replies.

Every fact goes to the session record *before* anything is shown (the headless printer and the
TUI read the record or the callback after the write). The engine holds the session's lock, takes
commands from the queue between steps and acknowledges each, and can be SIGKILLed at any moment:
on resume it folds the record again and loses at most the evaluation that was in flight.

One thread owns the record and the beam. Proposals run on threads of their own (one per branch
step; an LLM call takes seconds to minutes), so commands are applied and acknowledged while a
call is in flight and the next proposals are prepared while candidates are evaluated. A branch
has at most one step in the pipeline at a time: proposing, ready (recorded, waiting for a worker)
or evaluating.
"""

from __future__ import annotations

import contextlib
import errno
import itertools
import os
import queue
import signal
import socket
import sys
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cockpit.agents.base import Proposal, Proposer
from cockpit.engine import commands, proposals, resume, spend, verdicts
from cockpit.engine.config import EngineConfig
from cockpit.engine.proposals import WAIT_SHOWN_S, Job
from cockpit.engine.seeds import load_seeds, read_family
from cockpit.engine.state import BranchState, EngineState, Seed, fold, fold_events, snapshot
from cockpit.harness.task import TaskError
from cockpit.hashing import source_hash
from cockpit.result_view import ResultView
from cockpit.store import Event, SessionRecord, events
from cockpit.store.sessions import REPO_DIR

__all__ = [
    "FAULT_ENV",
    "WAIT_SHOWN_S",
    "BranchState",
    "Engine",
    "Interrupted",
    "Job",
    "Ready",
    "Seed",
    "SessionUnwritable",
    "load_seeds",
    "read_family",
    "storage_failure",
]

Printer = Callable[[str, dict[str, Any]], None]
# Fault injection for the crash tests: `COCKPIT_TEST_SIGKILL_AT=command_applied:fork` makes the
# engine SIGKILL itself right after applying a fork command and before acknowledging it.
FAULT_ENV = "COCKPIT_TEST_SIGKILL_AT"


class Interrupted(BaseException):
    """A signal (SIGTERM from `kill` or `timeout`, SIGHUP from a closed ssh terminal) asked the
    engine to end now. Like Ctrl-C it is recorded as `stopped`, with the signal as the reason,
    so the record never says `running` for an engine that is gone; the evaluation in flight is
    lost (a resume says so and goes on)."""

    def __init__(self, signame: str) -> None:
        super().__init__(signame)
        self.signame = signame


def _fault(point: str, detail: str = "") -> None:
    spec = os.environ.get(FAULT_ENV)
    if spec and spec in (point, f"{point}:{detail}"):
        os.kill(os.getpid(), signal.SIGKILL)


@dataclass
class Ready:
    """A recorded candidate waiting for a worker slot."""

    cid: str
    branch: str
    proposal: Proposal
    parent_id: str | None
    group: int | None = None


class Engine:
    def __init__(
        self,
        session_dir: Path,
        config: EngineConfig,
        proposer: Proposer,
        printer: Printer | None = None,
        pool: Any = None,
    ) -> None:
        from cockpit.store import CandidateRepo
        from cockpit.store.sessions import check_repo

        check_repo(session_dir)
        self.dir = session_dir
        self.cfg = config
        self.proposer = proposer
        self.print = printer or (lambda kind, info: None)
        self.record = SessionRecord.open(session_dir)
        self.lock = self.record.acquire_engine_lock()
        self.repo = CandidateRepo(session_dir / REPO_DIR)
        self.repo.recover()
        self.task_root = Path(config.task)
        self.seeds = load_seeds(self.task_root)
        self.families = list(dict.fromkeys(s.family for s in self.seeds))
        # everything the record says, folded event by event (state.py)
        self.state = EngineState(self.seeds, model=config.model, budget=config.budget)
        # what is in flight and when to act; none of it survives the engine
        self.stopping = False
        self.stop_reason = "by command"
        self.deadline: float | None = None  # --max-time: no new evaluations after it (monotonic)
        self.pool = pool
        # evaluations: future -> (candidate, branch, proposal, parent, best-of-n group)
        self.inflight: dict[Future, tuple[str, str, Proposal | None, str, int | None]] = {}
        self.proposing: dict[str, Job] = {}  # branch -> its proposal in flight
        self.abandoned: dict[Future, Job] = {}  # cancelled proposals whose threads still run
        self.retry_at: dict[str, float] = {}  # branch paused by an outage -> when it retries
        self._ids = itertools.count(1)
        self._rr = 0
        self._deferred: list[tuple[str, dict[str, Any]]] | None = None  # prints held until commit
        settings = getattr(proposer, "settings", None)
        # the spend controls (agent profile fields; the tuner gets the defaults and no call cap)
        self.max_unusable = int(getattr(settings, "max_unusable", 5))
        self.calls_per_eval: int | None = getattr(settings, "max_calls_per_eval", None)
        # (branch, until, why) from proposal threads about to wait for the provider
        self._waits: queue.SimpleQueue[tuple[str, float, str]] = queue.SimpleQueue()

    # --- the state, read through (state.py changes it, from events only) ------------------------
    @property
    def branches(self) -> dict[str, BranchState]:
        return self.state.branches

    @property
    def evaluations(self) -> int:
        return self.state.evaluations

    @property
    def budget(self) -> int:
        return self.state.budget

    @property
    def paused(self) -> bool:
        return self.state.paused

    @property
    def paused_by_cap(self) -> bool:
        return self.state.paused_by_cap

    @property
    def seen_hashes(self) -> dict[str, str]:
        return self.state.seen_hashes

    @property
    def ready(self) -> list[Ready]:
        """Recorded candidates of live branches waiting for a worker, in the order they go."""
        out = []
        for w in self.state.waiting.values():
            b = self.state.branches.get(w.branch)
            if w.evaluating or b is None or b.state == "retired":
                continue
            prop = Proposal(
                source=self.state.sources.get(w.cid, ""),
                family=w.family or b.family,
                note=w.note,
                model=w.model,
            )
            out.append(Ready(w.cid, w.branch, prop, w.parent, w.group))
        return out

    def snapshot(self) -> dict[str, Any]:
        """The state as plain data (`state.snapshot`): what a resume must give back."""
        return snapshot(self.state)

    @property
    def ledger(self) -> Any:
        """The LLM proposer's cost ledger (None for the tuner)."""
        return getattr(self.proposer, "ledger", None)

    # --- recording ------------------------------------------------------------------------------
    def _emit(
        self,
        kind: str,
        payload: dict[str, Any] | None = None,
        branch: str | None = None,
        candidate: str | None = None,
        *,
        show: bool = True,
    ) -> int:
        """Record one event, fold it into the state, then show it (after the commit)."""
        data = payload or {}
        eid = self.record.append(kind, data, branch=branch, candidate=candidate)
        fold(self.state, Event(eid, time.time(), kind, branch, candidate, data))
        if show:
            info = {**data, "branch": branch, "candidate": candidate}
            if self._deferred is not None:
                self._deferred.append((kind, info))  # shown once the transaction has committed
            else:
                self.print(kind, info)
        return eid

    @contextlib.contextmanager
    def _tx(self):
        """One record transaction; what it emits is printed only after it commits."""
        outer = self._deferred is None
        if outer:
            self._deferred = []
        try:
            with self.record.transaction():
                yield
        except BaseException:
            if outer:
                self._deferred = None
            raise
        if outer:
            held, self._deferred = self._deferred, None
            for kind, info in held:
                self.print(kind, info)

    # --- set-up and resume ----------------------------------------------------------------------
    def start(self) -> None:
        if self.cfg.max_time_s:  # per run of the engine: a resume gets the whole limit again
            self.deadline = time.monotonic() + self.cfg.max_time_s
        meta = self.record.meta()
        resumed = bool(self.record.branches())
        if resumed:
            fold_events(self.state, self.record.events())
        self._emit(
            events.SESSION_STARTED,
            {
                "pid": os.getpid(),
                "host": socket.gethostname(),
                "resumed": resumed,
                "argv": sys.argv[1:],
                "config": self.cfg.to_dict(),
            },
        )
        spend.set_request_cap(self)
        if resumed:
            resume.repair(self)
            spend.restore_costs(self, meta)
            if self.paused:  # the engine died while paused: stay paused
                cause = {"cause": "budget_cap"} if self.paused_by_cap else {}
                self._emit(
                    events.SESSION_STATE,
                    {"state": "paused", "reason": "paused when the engine stopped", **cause},
                )
        else:
            caps = spend.initial_caps(self) if self.ledger is not None else {}
            self._emit(events.BUDGET_CHANGED, {"budget": self.budget, "previous": None, **caps})
            self._create_initial_beam()

    def _create_initial_beam(self) -> None:
        """One branch per seed family first, then more branches of tunable families up to the
        beam size, never more than the family quota."""
        picks: list[Seed] = []
        by_family: dict[str, int] = {}
        for s in self.seeds:
            if s.family not in by_family:
                picks.append(s)
                by_family[s.family] = 1
        for s in itertools.cycle(self.seeds or []):
            if len(picks) >= self.cfg.beam or all(
                by_family.get(x.family, 0) >= self.cfg.family_quota or "TUNABLES" not in x.source
                for x in self.seeds
            ):
                break
            if "TUNABLES" in s.source and by_family[s.family] < self.cfg.family_quota:
                picks.append(s)
                by_family[s.family] += 1
        for i, seed in enumerate(picks[: self.cfg.beam], start=1):
            self._emit(
                events.BRANCH_CREATED,
                {
                    "family": seed.family,
                    "model": self.cfg.model,
                    "parent_candidate": None,
                    "instruction": None,
                    "seed": seed.name,
                },
                branch=f"b{i}",
            )

    def _new_candidate_id(self) -> str:
        while True:
            cid = f"c{next(self._ids):04d}"
            if self.record.candidate(cid) is None:
                return cid

    # --- commands -------------------------------------------------------------------------------
    def apply_commands(self) -> None:
        """Apply and acknowledge each pending command in one transaction: its receipt, the events
        it causes and its ack commit together. An engine killed in the middle leaves the command
        pending and none of its effects recorded, so the next engine applies it exactly once."""
        for cmd in self.record.pending_commands():
            with self._tx():
                self._emit(
                    events.COMMAND_RECEIVED,
                    {
                        "command_id": cmd.id,
                        "kind": cmd.kind,
                        "args": cmd.args,
                        "source": cmd.source,
                    },
                )
                try:
                    ok, msg = commands.apply(self, cmd.kind, dict(cmd.args))
                except Exception as exc:  # noqa: BLE001 - a bad command is refused, never fatal
                    ok, msg = False, f"{type(exc).__name__}: {exc}"
                _fault("command_applied", cmd.kind)
                ack = {"command_id": cmd.id, "ok": bool(ok), "message": msg, "kind": cmd.kind}
                eid = self.record.ack_command(cmd.id, ok, msg)
                fold(self.state, Event(eid, time.time(), events.COMMAND_ACKED, None, None, ack))
            self.print(
                events.COMMAND_ACKED,
                {"command_id": cmd.id, "kind": cmd.kind, "ok": ok, "message": msg},
            )

    def cancel(self, b: BranchState, reason: str) -> bool:
        """Cancel the branch's proposal in flight, if any (`proposals.cancel`)."""
        return proposals.cancel(self, b, reason)

    def stop(self, reason: str, cancel_reason: str) -> None:
        """Stop as `cockpit stop` does, with the reason: no new proposals or evaluations, the
        proposals in flight cancelled, the evaluations in flight finish."""
        self.stopping, self.stop_reason = True, reason
        for b in list(self.branches.values()):
            self.cancel(b, cancel_reason)
        self._emit(events.NOTE, {"text": f"stopping: {reason}"})

    # --- one step -------------------------------------------------------------------------------
    def _busy(self) -> set[str]:
        return (
            set(self.proposing)
            | {r.branch for r in self.ready}
            | {v[1] for v in self.inflight.values()}
        )

    def _pick(self) -> BranchState | None:
        busy = self._busy()
        live = [b for b in self.branches.values() if b.state == "running" and b.id not in busy]
        if not live:
            return None
        self._rr += 1
        return live[self._rr % len(live)]

    def _in_pipeline(self) -> int:
        """Steps that will become evaluations: in flight, recorded and waiting, being proposed."""
        return len(self.inflight) + len(self.ready) + len(self.proposing)

    def _accept(
        self, b: BranchState, job: Job | None, proposal: Proposal, parent_id: str | None
    ) -> None:
        """Record the step's candidates (best-of-n: every usable choice) in one transaction; a
        duplicate is finished at once, the others wait for a worker."""
        members = [proposal, *proposal.alternatives]
        left = self.budget - self.evaluations - len(self.inflight) - len(self.ready)
        # the budget may have shrunk since the request
        dropped = max(0, len(members) - max(1, left))
        members = members[: len(members) - dropped]
        rid = job.request_event if job else None
        group = rid if len(members) > 1 else None
        recorded: list[tuple[str, Proposal, str | None]] = []
        with self._tx():
            for k, prop in enumerate(members):
                cid = self._new_candidate_id()
                h = prop.source_hash or source_hash(prop.source)
                dup = self.seen_hashes.get(h)
                payload = {
                    "parent": parent_id,
                    "family": prop.family,
                    "model": prop.model,
                    "source_hash": h,
                    "filename": "kernel.py",
                    "note": prop.note,
                    "source": prop.source,
                    "duplicate_of": dup,
                    "usage": prop.usage if k == 0 else {},
                    "request": rid,
                }
                if group is not None:
                    payload.update(group=group, choice=k + 1, choices=len(members))
                if k == 0 and dropped:
                    payload["dropped_choices"] = dropped  # usable choices left out: no budget
                self._emit(events.CANDIDATE_PROPOSED, payload, branch=b.id, candidate=cid)
                recorded.append((cid, prop, dup))
        for cid, prop, dup in recorded:
            if dup:
                result = {
                    "status": "duplicate",
                    "reasons": [{"kind": "duplicate", "message": f"same code as {dup}"}],
                }
                verdicts.finish(self, b, cid, prop, parent_id, result, group)
        if recorded and all(dup for _, _, dup in recorded):
            spend.stall_if_unusable(self, b, f"the same code as {recorded[0][2]}")

    def _submit_ready(self) -> None:
        """Hand waiting candidates of running branches to free workers, oldest first."""
        for r in self.ready:
            b = self.branches[r.branch]
            if b.state != "running":
                continue
            slot = self.pool.free_slot()
            if slot is None:
                return
            started: dict[str, Any] = {"worker": slot, "device": self.cfg.device}
            devs = getattr(self.pool, "devices", None) or []
            if slot < len(devs):
                started["gpu"] = devs[slot]  # the worker's CUDA_VISIBLE_DEVICES: which GPU ran it
            self._emit(events.EVALUATION_STARTED, started, branch=b.id, candidate=r.cid)
            incumbent = None
            best = ResultView.from_dict(b.best_result)
            if b.best_id and best.score_us:
                # the cascade screens against its result; the A/B times against its source
                src = self.state.sources.get(b.best_id) if self.cfg.ab_enabled else None
                incumbent = {
                    "id": b.best_id,
                    "score_us": best.score_us,
                    "result": b.best_result,
                    **({"source": src} if src is not None else {}),
                }
            fut = self.pool.submit(
                slot,
                str(self.task_root),
                f"{r.cid}.py",
                r.proposal.source,
                self.cfg.mode,
                **({"incumbent": incumbent} if incumbent else {}),  # in-process test pools lack it
            )
            self.inflight[fut] = (r.cid, b.id, r.proposal, r.parent_id or "", r.group)

    # --- the loop -------------------------------------------------------------------------------
    def tick(self, wait_s: float = 0.2) -> str | None:
        """One turn of the loop: commands, finished proposals, new work, then wait (at most
        `wait_s`) for an evaluation or a proposal. The final state when the run is over."""
        self.apply_commands()
        self._check_deadline()
        spend.retry_outages(self)
        proposals.collect(self)
        proposals.show_waits(self)
        if not self.stopping and (why := spend.all_stalled(self)):
            self.stopping, self.stop_reason = True, why
            self._emit(events.NOTE, {"text": f"stopping: {why}"})
        if self.stopping:
            if not self.inflight:
                return "stopped"  # candidates still waiting stay `proposed`; a resume takes them
        elif not self.paused:
            self._submit_ready()
            while self.evaluations + self._in_pipeline() < self.budget:
                b = self._pick()
                if b is None:
                    break
                proposals.request(self, b)
            self._submit_ready()
        if not (self.inflight or self.proposing or self.ready):
            if self.evaluations >= self.budget:
                return "done"
            if not self.paused and all(b.state == "retired" for b in self.branches.values()):
                return "done"
        futures = [*self.inflight, *(j.future for j in self.proposing.values())]
        if not futures:
            time.sleep(wait_s)
            return None
        done, _ = wait(futures, timeout=wait_s, return_when=FIRST_COMPLETED)
        for fut in sorted(
            (f for f in done if f in self.inflight), key=lambda f: self.inflight[f][0]
        ):
            self._collect(fut)  # in candidate order, not the set's
        return None

    def _check_deadline(self) -> None:
        """At the --max-time deadline the engine stops as `cockpit stop` does: no new
        evaluations or proposals, the ones in flight finish and are recorded, nothing is lost."""
        if self.deadline is None or self.stopping or time.monotonic() < self.deadline:
            return
        self.stopping = True
        self.stop_reason = f"time limit of {_duration(self.cfg.max_time_s)} reached"
        for b in list(self.branches.values()):
            self.cancel(b, "the time limit is reached")
        n = len(self.inflight)
        self._emit(
            events.NOTE,
            {
                "text": f"time limit of {_duration(self.cfg.max_time_s)} reached: "
                + (
                    f"finishing the {n} evaluation{'s' * (n > 1)} in flight, then stopping"
                    if n
                    else "stopping"
                )
            },
        )

    def run(self) -> str:
        from cockpit.engine.telemetry import TelemetrySampler

        self.pool = self.pool or self._new_pool()
        # with the ray backend, the pool's nodes sample themselves too
        sampler = TelemetrySampler(self.dir, nodes=getattr(self.pool, "node_telemetry", None))
        final = "done"
        try:
            self.start()
            sampler.start()
            while True:
                state = self.tick()
                if state is not None:
                    final = state
                    break
        except BaseException as exc:
            unwritable = storage_failure(exc, self.dir)
            if isinstance(exc, Interrupted):
                final, self.stop_reason = "stopped", f"interrupted by {exc.signame}"
            elif isinstance(exc, KeyboardInterrupt):
                final, self.stop_reason = "stopped", "interrupted (Ctrl-C)"
            elif unwritable:
                # a full disk or a read-only folder: not a bug to report but a stop to resume
                # from. The write that failed was one transaction (rolled back) or one git
                # object (written to a temporary file first): nothing is half-written, and a
                # verdict recorded without its commit is committed on resume.
                final = "stopped"
                self.stop_reason = (
                    f"{unwritable}; free space or make the folder writable, then "
                    f"`cockpit resume {self.dir.name}`"
                )
            else:
                final = "crashed"
                self._emit(
                    events.ERROR, {"message": f"{type(exc).__name__}: {exc}", "where": "engine"}
                )
            if not unwritable:
                raise
        finally:
            for job in self.proposing.values():
                job.cancel.set()  # threads still calling out stop at their next check
            reason = {
                "done": _done_reason(self.record) if final == "done" else "",
                "stopped": self.stop_reason,
                "crashed": "engine error",
            }[final]
            try:
                self._record_final(final, reason)
            finally:
                sampler.stop()
                self.pool.shutdown()
                self.close()
        return final

    def _record_final(self, final: str, reason: str) -> None:
        """Record the session's final state. On a full disk the record may refuse it once: a
        checkpoint moves the log's frames into the database, the log then restarts from its
        beginning in space it already has, and the write is tried again. Refused again: raise
        SessionUnwritable (the record still says `running`; `status` shows `crashed`)."""
        try:
            self._emit(events.SESSION_STATE, {"state": final, "reason": reason})
            return
        except Exception as exc:  # noqa: BLE001 - sorted below
            if not storage_failure(exc, self.dir):
                raise
        try:
            self.record.checkpoint()
            self._emit(events.SESSION_STATE, {"state": final, "reason": reason})
        except Exception as exc:  # noqa: BLE001 - sorted below
            why = storage_failure(exc, self.dir)
            if not why:
                raise
            raise SessionUnwritable(
                f"session {self.dir.name} stopped: {why}; the record could not take the stop "
                f"either: free space or make the folder writable, then `cockpit resume "
                f"{self.dir.name}`"
            ) from None

    def _new_pool(self) -> Any:
        if self.cfg.backend == "ray":
            from cockpit.engine.ray_backend import RayPool

            return RayPool(
                self.cfg.device,
                self.cfg.exchange,
                cascade=self.cfg.cascade_enabled,
                warm=self.cfg.warm_enabled,
                address=self.cfg.ray_address,
                cpus=self.cfg.ray_cpus,
            )
        from cockpit.engine.workers import WorkerPool

        return WorkerPool(
            self.cfg.device,
            self.cfg.exchange,
            cascade=self.cfg.cascade_enabled,
            warm=self.cfg.warm_enabled,
        )

    def _collect(self, fut: Future) -> None:
        cid, bid, proposal, parent_id, group = self.inflight.pop(fut)
        try:
            result = fut.result()
        except BrokenProcessPool:
            # The worker process itself died (killed from outside, the OOM killer), not the
            # candidate's arena, whose death the judge turns into a verdict. That may say nothing
            # about the candidate: it is evaluated once more by a fresh worker, and only a second
            # death is its verdict, `crash`.
            how = self._worker_died(fut)
            lost = [*self.state.worker_lost.get(cid, []), how]
            if len(lost) == 1:
                self._emit(
                    events.NOTE,
                    {
                        "text": f"{cid}: the evaluation worker died ({how}) while evaluating it; "
                        "evaluating it again with a fresh worker",
                        "requeued": True,
                        "how": how,
                    },
                    branch=bid,
                    candidate=cid,
                )  # it waits for a worker again, first in line (state.fold)
                return
            result = {
                "status": "crash",
                "reasons": [
                    {
                        "kind": "crash",
                        "message": "the evaluation worker died twice while evaluating it ("
                        + ", then ".join(lost)
                        + "); not retried again",
                    }
                ],
            }
        except TaskError as exc:  # the task, not the candidate: every evaluation would fail so
            result = {
                "status": "crash",
                "reasons": [{"kind": "crash", "message": f"the task is broken: {exc}"}],
            }
            self._task_broken(str(exc))
        except Exception as exc:  # noqa: BLE001 - a harness bug is recorded, not fatal
            result = {
                "status": "crash",
                "reasons": [
                    {"kind": "crash", "message": f"harness error: {type(exc).__name__}: {exc}"}
                ],
            }
        verdicts.finish(self, self.branches[bid], cid, proposal, parent_id or None, result, group)

    def _task_broken(self, why: str) -> None:
        """reference.py raised (on a shape the start-up check did not try) or task.toml no longer
        loads: stop as `cockpit stop` does, with the one line naming the file, resumable once it
        is fixed, instead of spending the budget on candidates that cannot be judged."""
        if not self.stopping:
            self.stop(
                f"the task is broken: {why}; fix it, then cockpit resume {self.dir.name}",
                "the task is broken",
            )

    def _worker_died(self, fut: Future) -> str:
        """Replace the dead worker that ran `fut`; how it died, in a few words."""
        slot_of = getattr(self.pool, "slot_of", None)
        slot = slot_of(fut) if slot_of else None
        if slot is None or not hasattr(self.pool, "restart"):
            self.pool.shutdown()
            self.pool = self._new_pool()
            return "ended"
        how = self.pool.how_it_died(slot)
        self.pool.restart(slot)
        return how

    def close(self) -> None:
        try:
            self.repo.close()
        finally:
            self.lock.release()
            self.record.close()


class SessionUnwritable(RuntimeError):
    """The engine stopped on a write that failed and could not record even that; one line."""


# errno values of a write that failed for want of room or permission, not because of a bug
_WRITE_ERRNOS = {
    errno.ENOSPC,
    errno.EDQUOT,
    errno.EROFS,
    errno.EFBIG,
    errno.EACCES,
    errno.EPERM,
}
_SQLITE_WRITE = ("disk is full", "readonly database", "disk i/o error")


def storage_failure(exc: BaseException, session_dir: Path) -> str | None:
    """`cannot write FILE: WHY` when `exc` is a write to the session folder that failed (a full
    disk, a read-only file system or folder, a file-size limit), else None. An errno that can
    also mean a bug elsewhere (EACCES, EPERM) counts only with a file inside the folder."""
    import sqlite3

    if isinstance(exc, OSError) and exc.errno in _WRITE_ERRNOS:
        name = exc.filename if isinstance(exc.filename, str) else None
        inside = name is not None and Path(name).resolve().is_relative_to(session_dir.resolve())
        if exc.errno in (errno.EACCES, errno.EPERM) and not inside:
            return None
        if name is not None and not Path(name).exists():  # a file it could not create
            return f"cannot write in {Path(name).parent}: {exc.strerror or exc}"
        return f"cannot write {name or session_dir}: {exc.strerror or exc}"
    if isinstance(exc, OSError) and "failed to write all bytes" in str(exc).lower():
        # gitdb's loose-object writer on a short write (the disk filled up under it): no errno
        return f"cannot write in {session_dir / 'repo'}: a write was cut short (a full disk?)"
    if isinstance(exc, sqlite3.OperationalError) and any(
        w in str(exc).lower() for w in _SQLITE_WRITE
    ):
        return f"cannot write {session_dir / 'session.db'}: {exc}"
    return None


def _done_reason(record: Any) -> str:
    """Why a run ended `done`, in one sentence from the record (cockpit.store.states)."""
    from cockpit.store.states import GENERIC_DONE, record_end_reason

    try:
        return record_end_reason(record, "done") or GENERIC_DONE
    except Exception:  # noqa: BLE001 - the reason must never keep the final state unrecorded
        return GENERIC_DONE


def _duration(seconds: float) -> str:
    """90 -> '1m30s', 7200 -> '2h', 5 -> '5s' (what --max-time accepts back)."""
    total = round(seconds)
    h, rest = divmod(total, 3600)
    m, sec = divmod(rest, 60)
    out = (f"{h}h" if h else "") + (f"{m}m" if m else "") + (f"{sec}s" if sec else "")
    return out or f"{seconds:g}s"
