"""The loop: propose -> evaluate -> record -> keep or discard, over a beam of branches.

Every fact goes to the session record *before* anything is shown (the headless printer and the
TUI read the record or the callback after the write). The engine holds the session's lock, takes
commands from the queue between steps and acknowledges each, and can be SIGKILLed at any moment:
on resume it rebuilds its state from the record and the git repository and loses at most the
evaluation that was in flight.

One thread owns the record and the beam. Proposals run on threads of their own (one per branch
step; an LLM call takes seconds to minutes), so commands are applied and acknowledged while a
call is in flight and the next proposals are prepared while candidates are evaluated. A branch
has at most one step in the pipeline at a time: proposing, ready (recorded, waiting for a worker)
or evaluating. Interrupting a branch (pause, retire, stop, redirect) while its proposal is in
flight cancels it cooperatively: the request's cancel event is set, `proposal_cancelled` is
recorded at once, and whatever the thread returns later is discarded (`proposal_discarded`,
with its usage, so costs still count).
"""

from __future__ import annotations

import ast
import contextlib
import errno
import itertools
import os
import queue
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cockpit.agents.base import Attempt, Proposal, ProposalError, ProposalRequest, Proposer
from cockpit.engine.beam import next_family, plateaued, significantly_better, source_hash
from cockpit.engine.config import EngineConfig
from cockpit.harness.task import TaskError
from cockpit.store import SessionRecord, events
from cockpit.store.sessions import REPO_DIR

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


def _spawn(fn: Callable[..., Any], *args: Any, name: str = "propose") -> Future:
    """Run `fn` on a daemon thread; its Future. Daemon: an abandoned call (cancelled, its HTTP
    request still waiting for the provider) must not keep a stopping engine alive."""
    fut: Future = Future()

    def run() -> None:
        if not fut.set_running_or_notify_cancel():
            return
        try:
            fut.set_result(fn(*args))
        except BaseException as exc:  # noqa: BLE001 - handed to the engine's thread
            fut.set_exception(exc)

    threading.Thread(target=run, name=name, daemon=True).start()
    return fut


@dataclass
class Job:
    """A branch's proposal in flight, from its proposal_requested to its outcome."""

    branch: str
    request_event: int
    request: ProposalRequest
    cancel: threading.Event
    future: Future
    queued: list[str]  # the queued instructions it carries (given back if it is cancelled)
    escalation: str | None
    reason: str = ""  # why it was cancelled


@dataclass
class Ready:
    """A recorded candidate waiting for a worker slot."""

    cid: str
    branch: str
    proposal: Proposal
    parent_id: str | None
    group: int | None = None


@dataclass
class Group:
    """A best-of-n step: its candidates are evaluated one by one, then the best is kept."""

    branch: str
    pending: set[str]
    done: list[tuple[str, Proposal, dict[str, Any]]] = field(default_factory=list)


@dataclass
class Seed:
    path: Path
    family: str
    source: str


@dataclass
class BranchState:
    id: str
    family: str
    state: str = "running"
    model: str | None = None
    head_id: str | None = None  # candidate proposals start from (the family's best, or its seed)
    head_source: str = ""
    best_id: str | None = None
    best_result: dict[str, Any] | None = None
    since_best: int = 0
    families_tried: set[str] = field(default_factory=set)
    steer: list[str] = field(default_factory=list)
    queued: list[str] = field(default_factory=list)
    history: list[Attempt] = field(default_factory=list)
    pending_seed: bool = False  # head not evaluated yet (a fresh branch or a family switch)
    escalation: str | None = None  # for the next proposal only: "model" | "family" | "prompt"
    escalations_done: set[str] = field(default_factory=set)
    retry_at: float | None = None  # paused by a provider outage: resume automatically at this time
    unusable: int = 0  # unusable replies in a row (a duplicate, no code, unparseable code)
    stalled: bool = False  # paused by the engine for `unusable`; a resume of the session lifts it
    waiting: bool = False  # the record says it waits for the provider (a back-off is announced)


class _NoCandidate:
    commit_sha = None


_NO = _NoCandidate()


# a wait for the provider at least this long is recorded on its branch ("waiting for provider
# until HH:MM:SS"); shorter back-offs pass unannounced
WAIT_SHOWN_S = 1.0


def read_family(source: str, default: str) -> str:
    try:
        for node in ast.parse(source).body:
            if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "FAMILY" for t in node.targets
            ):
                value = ast.literal_eval(node.value)
                if isinstance(value, str) and value:
                    return value
    except (SyntaxError, ValueError):
        pass
    return default


def load_seeds(task_root: Path) -> list[Seed]:
    seeds = []
    for p in sorted((task_root / "seeds").glob("*.py")):
        if p.name.startswith("_"):
            continue
        src = p.read_text()
        seeds.append(Seed(p, read_family(src, p.stem), src))
    return seeds


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
        self.branches: dict[str, BranchState] = {}
        self.seen_hashes: dict[str, str] = {}
        self.evaluations = 0
        self.budget = config.budget
        self.paused = False
        self.stopping = False
        self.stop_reason = "by command"
        # --max-time: stop starting evaluations at this monotonic time (set by start())
        self.deadline: float | None = None
        self.pool = pool
        self.inflight: dict[
            Future, tuple[str, str, Proposal | None, str, int | None]
        ] = {}  # evaluations
        self.proposing: dict[str, Job] = {}  # branch -> its proposal in flight
        self.abandoned: dict[
            Future, Job
        ] = {}  # cancelled proposals whose threads are still running
        self.ready: list[Ready] = []  # recorded candidates waiting for a worker slot, oldest first
        # candidate -> how the workers evaluating it died (one death re-queues it, two are `crash`)
        self.worker_lost: dict[str, list[str]] = {}
        self.groups: dict[int, Group] = {}  # best-of-n steps being evaluated, by request event id
        self.paused_by_cap = (
            False  # the session was paused by an LLM budget cap (set-budget lifts it)
        )
        self._ids = itertools.count(1)
        self._rr = 0
        self._deferred: list[tuple[str, dict[str, Any]]] | None = None  # prints held until commit
        settings = getattr(proposer, "settings", None)
        # the spend controls (agent profile fields; the tuner gets the defaults and no call cap)
        self.max_unusable = int(getattr(settings, "max_unusable", 5))
        self.calls_per_eval: int | None = getattr(settings, "max_calls_per_eval", None)
        # (branch, until, why) from proposal threads about to wait for the provider
        self._waits: queue.SimpleQueue[tuple[str, float, str]] = queue.SimpleQueue()

    # --- set-up and resume ----------------------------------------------------------------------
    def _emit(
        self,
        kind: str,
        payload: dict[str, Any] | None = None,
        branch: str | None = None,
        candidate: str | None = None,
    ) -> int:
        eid = self.record.append(kind, payload or {}, branch=branch, candidate=candidate)
        info = {**(payload or {}), "branch": branch, "candidate": candidate}
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

    @property
    def ledger(self) -> Any:
        """The LLM proposer's cost ledger (None for the tuner)."""
        return getattr(self.proposer, "ledger", None)

    def start(self) -> None:
        if self.cfg.max_time_s:  # per run of the engine: a resume gets the whole limit again
            self.deadline = time.monotonic() + self.cfg.max_time_s
        meta = self.record.meta()  # read before session_started records the state as running
        resumed = bool(self.record.branches())
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
        if meta.get("budget") is not None:
            self.budget = int(meta["budget"])
        self._set_request_cap()
        if resumed:
            self._restore()
            self._restore_costs(meta)
            if meta.get("state") == "paused":  # the engine died while paused: stay paused
                self.paused = True
                self._emit(
                    events.SESSION_STATE,
                    {"state": "paused", "reason": "paused when the engine stopped"},
                )
        else:
            caps = {}
            if self.ledger is not None:
                caps = self._initial_caps()
            self._emit(events.BUDGET_CHANGED, {"budget": self.budget, "previous": None, **caps})
            self._create_initial_beam()

    def _initial_caps(self) -> dict[str, Any]:
        """A new session's LLM caps: the USD cap of `cockpit run --usd` (None: no cap), else the
        profile's `budget_usd`, else DEFAULT_USD_CAP (only priced calls count toward it, so a
        local server's unpriced model is bounded by the call caps alone)."""
        from cockpit.agents.costs import DEFAULT_USD_CAP

        caps = self.ledger.caps
        if "usd" in self.cfg.extra:
            usd, where = self.cfg.extra["usd"], "set by cockpit run --usd"
        elif caps.usd is not None:
            usd, where = caps.usd, "the profile's budget_usd"
        else:
            usd, where = DEFAULT_USD_CAP, "the default for priced models"
        usd = None if usd is None else float(usd)
        self.ledger.set_caps(usd=usd, tokens=caps.tokens, usd_from=where)
        return {"usd": usd, "tokens": caps.tokens, "usd_from": where}

    def _restore_costs(self, meta: dict[str, Any]) -> None:
        """The LLM ledger from the record: every call's cost is in the usage of the event that
        ended its proposal (`calls_detail`), so budget caps hold across engine restarts. Caps
        changed by `set-budget` override the profile's."""
        if self.ledger is None:
            return
        calls: list[dict[str, Any]] = []
        requests = 0  # every attempt, failed ones too: the request cap holds across restarts
        for e in self.record.events(
            kinds=[events.CANDIDATE_PROPOSED, events.PROPOSAL_FAILED, events.PROPOSAL_DISCARDED]
        ):
            usage = e.payload.get("usage") or {}
            detail = [c for c in usage.get("calls_detail") or [] if isinstance(c, dict)]
            calls += detail
            attempts = usage.get("attempts")
            requests += attempts if isinstance(attempts, int) else len(detail)
        self.ledger.restore(calls)
        if hasattr(self.ledger, "count_request"):
            self.ledger.count_request(requests)
        if "budget_usd" in meta or "budget_tokens" in meta:
            caps = self.ledger.caps
            last = [
                e.payload
                for e in self.record.events(kinds=[events.BUDGET_CHANGED])
                if "usd" in e.payload
            ]
            self.ledger.set_caps(
                usd=meta.get("budget_usd", caps.usd),
                tokens=meta.get("budget_tokens", caps.tokens),
                usd_from=str(last[-1].get("usd_from") or "") if last else "",
            )

    def _new_candidate_id(self) -> str:
        while True:
            cid = f"c{next(self._ids):04d}"
            if self.record.candidate(cid) is None:
                return cid

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
        started: set[str] = set()
        for i, seed in enumerate(picks[: self.cfg.beam], start=1):
            bid = f"b{i}"
            self._emit(
                events.BRANCH_CREATED,
                {
                    "family": seed.family,
                    "model": self.cfg.model,
                    "parent_candidate": None,
                    "instruction": None,
                    "seed": seed.path.name,
                },
                branch=bid,
            )
            # a second branch of a family starts from the seed's first *child*, not the seed again
            first = seed.path.name not in started
            started.add(seed.path.name)
            self.branches[bid] = BranchState(
                bid,
                seed.family,
                model=self.cfg.model,
                head_source=seed.source,
                families_tried={seed.family},
                pending_seed=first,
            )

    def _restore(self) -> None:
        """Rebuild the beam from the record: branches, bests, counters, steer instructions, each
        branch's history of attempts and the escalations it had, candidates waiting for a worker;
        close requests the dead engine left without an outcome."""
        cands = self.record.candidates()
        requeue = []
        for c in cands:
            if c.summary.get("source_hash"):
                self.seen_hashes.setdefault(c.summary["source_hash"], c.id)
            if c.status not in (None, "proposed", "evaluating", "duplicate"):
                self.evaluations += 1
            # a candidate with a verdict but no commit: the engine died between the two writes, or
            # after moving the branch ref and before recording the sha (then the tip is its commit;
            # commit_candidate does not recognise that for a candidate without a parent)
            if c.status not in (None, "proposed", "evaluating") and not c.commit_sha:
                tip = self.repo.log(c.branch, max_count=1) if c.branch else []
                if tip and tip[0].candidate == c.id:
                    self.record.append(
                        events.CANDIDATE_COMMITTED,
                        {"commit_sha": tip[0].sha},
                        branch=c.branch,
                        candidate=c.id,
                    )
                else:
                    self._commit(
                        c.id,
                        c.branch,
                        self._source_of(c.id) or "",
                        self._result_of(c.id),
                        c.parent,
                        c.family,
                        c.model,
                    )
            # reported once, not again on every later resume; a candidate only proposed (waiting
            # for a worker when the engine died) is evaluated now, below
            if c.status in ("proposed", "evaluating") and not self.record.events(
                kinds=[events.ERROR], candidate=c.id
            ):
                last = self.record.events(
                    kinds=[events.EVALUATION_STARTED, events.NOTE], candidate=c.id
                )
                if last and last[-1].payload.get("requeued"):
                    # its worker died and the engine stopped before a fresh one took it again:
                    # it waits for a worker, as a proposed candidate does; one retry was spent
                    self.worker_lost[c.id] = [str(last[-1].payload.get("how", "ended"))]
                    requeue.append(c)
                elif c.status == "evaluating":
                    self._emit(
                        events.ERROR,
                        {
                            "message": f"{c.id}: evaluation lost when the engine stopped; not "
                            "retried",
                            "where": "resume",
                        },
                        branch=c.branch,
                        candidate=c.id,
                    )
                else:
                    requeue.append(c)
        by_branch: dict[str, list] = {}
        for c in cands:
            by_branch.setdefault(c.branch, []).append(c)
        forks = {e.branch: e.payload for e in self.record.events(kinds=[events.BRANCH_FORKED])}
        last_state = {e.branch: e.payload for e in self.record.events(kinds=[events.BRANCH_STATE])}
        for b in self.record.branches():
            st = BranchState(b.id, b.family or "", state=b.state or "running", model=b.model)
            own = sorted(by_branch.get(b.id, []), key=lambda c: c.created_t or 0)
            st.families_tried = {b.family or ""} | {c.family for c in own if c.family}
            mine = [c for c in own if c.family == b.family]  # since the branch's last family switch
            if b.best_candidate and any(c.id == b.best_candidate for c in mine):
                st.best_id = b.best_candidate
                st.best_result = self._result_of(b.best_candidate)
                st.head_id = b.best_candidate
                st.head_source = self._source_of(b.best_candidate) or ""
                best_t = next((c.evaluated_t for c in mine if c.id == b.best_candidate), 0) or 0
                st.since_best = sum(1 for c in mine if (c.evaluated_t or 0) > best_t)
            elif mine:
                st.head_id = mine[-1].id
                st.head_source = self._source_of(mine[-1].id) or ""
                st.since_best = len(mine)
            elif b.id in forks and forks[b.id].get("from_candidate"):
                # forked, not evaluated yet: start from the forked candidate, as the fork did
                fork = forks[b.id]
                st.head_id = fork["from_candidate"]
                st.head_source = self._source_of(st.head_id) or ""
                origin = self.record.candidate(st.head_id)
                if origin is not None and origin.status == "ok":
                    st.best_id, st.best_result = st.head_id, self._result_of(st.head_id)
            else:  # a fresh branch, or one that switched family and died before the new seed ran
                seed = next((s for s in self.seeds if s.family == b.family), None)
                st.head_source = seed.source if seed else ""
                st.pending_seed = True
            # the engine may have died between the best's commit and moving its tag
            best = self.record.candidate(b.best_candidate) if b.best_candidate else None
            if best is not None and best.commit_sha and self.repo.best(b.id) != best.commit_sha:
                self.repo.tag_best(b.id, best.commit_sha)
            if b.id in forks and forks[b.id].get("instruction"):
                st.steer.append(forks[b.id]["instruction"])
            if st.state == "plateau" or (
                st.state == "paused" and last_state.get(b.id, {}).get("cause") == "unusable"
            ):
                st.state = "running"  # a resume is the decision to give a stalled branch more calls
            # what the proposer is shown of the branch's past, as `_finish` recorded it
            judged = [c for c in own if c.status not in (None, "proposed", "evaluating")]
            st.history = [
                Attempt(
                    c.id,
                    c.status or "?",
                    c.score_us,
                    "; ".join(
                        str(r.get("message", ""))[:120]
                        for r in (c.summary.get("reasons") or [])[:2]
                    ),
                )
                for c in sorted(judged, key=lambda c: (c.evaluated_t or 0, c.id))
            ]
            self.branches[b.id] = st
        for e in self.record.events(kinds=[events.ESCALATED]):
            if e.payload.get("mode") == "model" and e.branch in self.branches:
                self.branches[e.branch].escalations_done.add("model")  # once per branch
        for cmd in self.record.commands(state="acked"):
            if (
                cmd.kind == "redirect"
                and cmd.args.get("mode", "steer") == "steer"
                and cmd.args.get("branch") in self.branches
            ):
                self.branches[cmd.args["branch"]].steer.append(cmd.args.get("instruction", ""))
        open_requests, queued = self._replay_requests()
        for rid, bid in open_requests:
            self._emit(
                events.PROPOSAL_CANCELLED,
                {"reason": "the engine stopped during the call", "request": rid, "model": None},
                branch=bid,
            )
        for bid, items in queued.items():
            if bid in self.branches:
                self.branches[bid].queued = items
        for c in requeue:
            b = self.branches.get(c.branch or "")
            source = self._source_of(c.id)
            if b is None or b.state == "retired" or source is None:
                continue
            evs = self.record.events(kinds=[events.CANDIDATE_PROPOSED], candidate=c.id)
            note = evs[-1].payload.get("note", "") if evs else ""
            self.ready.append(
                Ready(
                    c.id,
                    b.id,
                    Proposal(source=source, family=c.family or b.family, note=note, model=c.model),
                    c.parent,
                )
            )

    def _replay_requests(self) -> tuple[list[tuple[int, str | None]], dict[str, list[str]]]:
        """One pass over the proposal requests and their outcomes in the record. Returns the
        requests left without an outcome (the engine died during the call; a branch has one open
        at most, and an outcome without a `request` field, from older records, closes the
        branch's open one) and each branch's `queue` instructions not yet used: an acked queue
        redirect adds one, a request takes all the branch has, a request cancelled, failed or
        left open gives them back (as `_cancel` and `_failed` do); one that came back used them."""
        cmds = {c.id: c for c in self.record.commands(state="acked")}
        open_: dict[str | None, int] = {}
        queued: dict[str, list[str]] = {}
        carried: dict[int, tuple[str, list[str]]] = {}

        def give_back(rid: int | None) -> None:
            bid, items = carried.pop(rid, ("", []))
            if items:
                queued[bid] = items + queued.get(bid, [])

        kinds = [
            events.COMMAND_ACKED,
            events.PROPOSAL_REQUESTED,
            events.CANDIDATE_PROPOSED,
            events.PROPOSAL_FAILED,
            events.PROPOSAL_CANCELLED,
        ]
        for e in self.record.events(kinds=kinds):
            if e.kind == events.COMMAND_ACKED:
                cmd = cmds.get(e.payload.get("command_id"))
                if (
                    cmd is not None
                    and e.payload.get("ok")
                    and cmd.kind == "redirect"
                    and cmd.args.get("mode") == "queue"
                    and cmd.args.get("branch")
                ):
                    queued.setdefault(cmd.args["branch"], []).append(
                        cmd.args.get("instruction", "")
                    )
            elif e.kind == events.PROPOSAL_REQUESTED:
                open_[e.branch] = e.id
                if e.branch:
                    carried[e.id] = (e.branch, queued.pop(e.branch, []))
            else:
                rid = e.payload.get("request", open_.get(e.branch))
                if e.branch in open_ and rid == open_[e.branch]:
                    del open_[e.branch]
                if e.kind == events.CANDIDATE_PROPOSED:
                    carried.pop(rid, None)  # the proposal used what it carried
                else:
                    give_back(rid)
        for rid in open_.values():
            give_back(rid)
        return [(rid, bid) for bid, rid in open_.items()], {
            b: items for b, items in queued.items() if items
        }

    def _result_of(self, cid: str) -> dict[str, Any] | None:
        evs = self.record.events(kinds=[events.EVALUATION_FINISHED], candidate=cid)
        return evs[-1].payload if evs else None

    def _source_of(self, cid: str) -> str | None:
        c = self.record.candidate(cid)
        if c and c.commit_sha:
            return self.repo.read_source(c.commit_sha)
        evs = self.record.events(kinds=[events.CANDIDATE_PROPOSED], candidate=cid)
        return evs[-1].payload.get("source") if evs else None

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
                    ok, msg = self._apply(cmd.kind, dict(cmd.args))
                except Exception as exc:  # noqa: BLE001 - a bad command is refused, never fatal
                    ok, msg = False, f"{type(exc).__name__}: {exc}"
                _fault("command_applied", cmd.kind)
                self.record.ack_command(cmd.id, ok, msg)
            self.print(
                events.COMMAND_ACKED,
                {"command_id": cmd.id, "kind": cmd.kind, "ok": ok, "message": msg},
            )

    def _cancel(self, b: BranchState, reason: str) -> bool:
        """Cancel the branch's proposal in flight, if any: recorded now, its reply discarded when it
        comes. The instructions and escalation it carried go back to the branch for the next one."""
        job = self.proposing.pop(b.id, None)
        if job is None:
            return False
        job.cancel.set()
        job.reason = reason
        self.abandoned[job.future] = job
        b.queued[:0] = job.queued
        if b.escalation is None:
            b.escalation = job.escalation
        self._emit(
            events.PROPOSAL_CANCELLED,
            {"reason": reason, "model": job.request.model, "request": job.request_event},
            branch=b.id,
        )
        return True

    def _branch(self, args: dict[str, Any]) -> BranchState:
        bid = args.get("branch")
        if bid not in self.branches:
            raise ValueError(f"no branch {bid!r} (branches: {', '.join(self.branches)})")
        return self.branches[bid]

    def _apply(self, kind: str, a: dict[str, Any]) -> tuple[bool, str]:
        if kind in ("pause", "resume"):
            target = "paused" if kind == "pause" else "running"
            if a.get("branch"):
                b = self._branch(a)
                if b.state == "retired":
                    return False, f"{b.id} is retired"
                b.state, b.retry_at = target, None
                b.stalled, b.unusable = False, 0
                cancelled = kind == "pause" and self._cancel(b, "branch paused by command")
                self._emit(
                    events.BRANCH_STATE, {"state": target, "reason": "by command"}, branch=b.id
                )
                return True, f"{b.id} {target}" + (
                    " (its proposal in flight was cancelled)" if cancelled else ""
                )
            self.paused = kind == "pause"
            self.paused_by_cap = False
            n = (
                sum(
                    self._cancel(b, "session paused by command")
                    for b in list(self.branches.values())
                )
                if self.paused
                else 0
            )
            self._emit(events.SESSION_STATE, {"state": target, "reason": "by command"})
            return True, f"session {target}" + (
                f" ({n} proposal{'s' * (n > 1)} in flight cancelled)" if n else ""
            )
        if kind == "stop":
            self.stopping = True
            for b in list(self.branches.values()):
                self._cancel(b, "the session is stopping")
            return True, "stopping after the evaluation in flight"
        if kind == "retire":
            b = self._branch(a)
            b.state = "retired"
            self._cancel(b, "branch retired by command")
            self._emit(
                events.BRANCH_STATE,
                {"state": "retired", "reason": a.get("reason") or "by command"},
                branch=b.id,
            )
            return True, f"{b.id} retired"
        if kind == "redirect":
            b = self._branch(a)
            text = str(a.get("instruction") or "").strip()
            if not text:
                return False, "redirect needs an instruction"
            mode = a.get("mode") or "steer"
            if mode not in ("steer", "queue"):
                return False, f"redirect mode must be steer or queue, not {mode!r}"
            (b.steer if mode == "steer" else b.queued).append(text)
            # the call in flight was asked without it: cancel, and ask again with the instruction
            cancelled = self._cancel(b, f"redirected by command ({mode})")
            return True, (
                f"{b.id}: instruction {'kept from now on' if mode == 'steer' else 'queued for the next proposal'}"
                + ("; the proposal in flight was cancelled" if cancelled else "")
            )
        if kind == "set_model":
            model = a.get("model")
            if not model:
                return False, "set-model needs a model"
            from cockpit.agents.profiles import LLM_FIELDS

            try:  # the cockpit's `m` key posts what was typed
                model = LLM_FIELDS["model"](model)
            except ValueError as exc:
                return False, f"set-model: the model {exc}"
            if getattr(self.proposer, "name", None) == "llm":  # every call would fail with it
                from cockpit.agents.llm import check_model

                try:
                    check_model(model)
                except ValueError as exc:
                    return False, f"set-model: {exc}"
            if a.get("branch") and self._branch(a).state == "retired":  # e.g. queued, then retired
                return False, f"{a['branch']} is retired"
            targets = (
                [self._branch(a)]
                if a.get("branch")
                else [b for b in self.branches.values() if b.state != "retired"]
            )
            for b in targets:
                b.model = model
            self._emit(
                events.MODEL_CHANGED, {"model": model, "previous": None}, branch=a.get("branch")
            )
            if not a.get("branch"):
                self.cfg.model = model
            return True, f"model {model} for {', '.join(b.id for b in targets)}"
        if kind == "set_budget":
            return self._set_budget(a)
        if kind == "fork":
            cid = a.get("candidate")
            c = self.record.candidate(cid) if cid else None
            if c is None:
                return False, f"no candidate {cid!r}"
            family = a.get("family") or c.family or "unknown"
            live = sum(
                1 for b in self.branches.values() if b.family == family and b.state != "retired"
            )
            if live >= self.cfg.family_quota and not a.get("family"):
                return (
                    False,
                    f"family {family} is at its quota of {self.cfg.family_quota} live branches",
                )
            bid = f"b{max(int(x[1:]) for x in self.branches) + 1 if self.branches else 1}"
            self._emit(
                events.BRANCH_FORKED,
                {
                    "from_branch": c.branch,
                    "from_candidate": cid,
                    "family": family,
                    "model": a.get("model") or self.cfg.model,
                    "instruction": a.get("instruction"),
                },
                branch=bid,
            )
            st = BranchState(
                bid,
                family,
                model=a.get("model") or self.cfg.model,
                head_id=cid,
                head_source=self._source_of(cid) or "",
                families_tried={family},
            )
            if a.get("instruction"):
                st.steer.append(a["instruction"])
            if c.status == "ok":
                st.best_id, st.best_result = cid, self._result_of(cid)
            self.branches[bid] = st
            return True, f"forked {cid} into {bid} ({family})"
        return False, f"unknown command {kind!r}"

    def _set_budget(self, a: dict[str, Any]) -> tuple[bool, str]:
        """Evaluations (`budget`) and/or the LLM caps (`usd`, `tokens`; null = no cap)."""
        if not any(k in a for k in ("budget", "usd", "tokens")):
            return False, "set-budget needs a budget (evaluations), --usd or --tokens"
        budget = self.budget if a.get("budget") is None else int(a["budget"])
        if budget < 0:
            return False, "budget must be >= 0"
        payload: dict[str, Any] = {"budget": budget, "previous": self.budget}
        parts = [f"budget {budget} evaluations ({self.evaluations} used)"]
        if "usd" in a or "tokens" in a:
            if self.ledger is None:
                return (
                    False,
                    "this session's proposer makes no paid calls (no USD or token budget to set)",
                )
            caps = self.ledger.caps
            usd = caps.usd if "usd" not in a else (None if a["usd"] is None else float(a["usd"]))
            tokens = (
                caps.tokens
                if "tokens" not in a
                else (None if a["tokens"] is None else int(a["tokens"]))
            )
            if (usd is not None and usd < 0) or (tokens is not None and tokens < 0):
                return False, "LLM caps must be >= 0"
            usd_from = self.ledger.usd_from if "usd" not in a else "set by set-budget --usd"
            payload.update(
                usd=usd,
                tokens=tokens,
                previous_usd=caps.usd,
                previous_tokens=caps.tokens,
                usd_from=usd_from,
            )
            self.ledger.set_caps(usd=usd, tokens=tokens, usd_from=usd_from)
            spent = self.ledger.summary()["total"]
            parts.append(
                f"LLM cap {'none' if usd is None else f'${usd:.4f}'} (${spent['cost_usd']:.4f} spent), "
                f"{'none' if tokens is None else f'{tokens:,}'} tokens ({spent['tokens']:,} used)"
            )
        self._emit(events.BUDGET_CHANGED, payload)
        self.budget = budget
        self._set_request_cap()
        if self.paused_by_cap and self._cap_allows():
            self.paused, self.paused_by_cap = False, False
            self._emit(
                events.SESSION_STATE,
                {"state": "running", "reason": "the new budget allows more calls"},
            )
            parts.append("session resumed")
        return True, "; ".join(parts)

    def _set_request_cap(self) -> None:
        """The hard cap on model requests: `max_calls_per_eval` for each evaluation of the
        budget (follows `set-budget`)."""
        if self.calls_per_eval and self.ledger is not None:
            self.ledger.set_request_cap(
                self.calls_per_eval * self.budget,
                f"{self.calls_per_eval} per evaluation of a budget of {self.budget}",
            )

    def _unusable(self, b: BranchState, why: str) -> None:
        """One more unusable reply in a row for `b`; at `max_unusable` the branch is paused with
        the reason (the session stops once no branch is left running: see `_all_stalled`)."""
        b.unusable += 1
        if b.unusable < self.max_unusable or b.state != "running":
            return
        b.state, b.retry_at, b.stalled = "paused", None, True
        self._cancel(b, "the branch is paused: unusable replies")
        self._emit(
            events.BRANCH_STATE,
            {
                "state": "paused",
                "cause": "unusable",
                "reason": f"{b.unusable} unusable replies in a row (last: {why[:300]})",
            },
            branch=b.id,
        )

    def _all_stalled(self) -> str | None:
        """The reason to stop when no branch can go on by itself: every one is retired or paused
        by the engine for unusable replies (at least one of them)."""
        live = [b for b in self.branches.values() if b.state != "retired"]
        if not live or not all(b.state == "paused" and b.stalled for b in live):
            return None
        names = ", ".join(b.id for b in live)
        return (
            f"every branch is paused or retired ({names}: {self.max_unusable} unusable replies "
            f"in a row); to try again: cockpit resume {self.dir.name}"
        )

    def _show_waits(self) -> None:
        """Record each announced wait for the provider on its branch: the status and the
        cockpit show "waiting for provider until HH:MM:SS"."""
        while True:
            try:
                bid, until, why = self._waits.get_nowait()
            except queue.Empty:
                return
            b = self.branches.get(bid)
            if b is None or b.state != "running" or bid not in self.proposing:
                continue
            if until - time.time() < WAIT_SHOWN_S:
                continue  # a blink: nothing a person could act on
            b.waiting = True
            clock = time.strftime("%H:%M:%S", time.localtime(until))
            self._emit(
                events.BRANCH_STATE,
                {
                    "state": "running",
                    "cause": "provider_wait",
                    "reason": f"waiting for provider until {clock} ({why[:200]})",
                    "until": until,
                },
                branch=bid,
            )

    def _cap_allows(self) -> bool:
        from cockpit.agents.costs import BudgetExceeded

        try:
            self.ledger.check("")
        except BudgetExceeded:
            return False
        return True

    # --- one step -------------------------------------------------------------------------------
    def _retry_outages(self) -> None:
        now = time.monotonic()
        for b in self.branches.values():
            if b.state == "paused" and b.retry_at is not None and now >= b.retry_at:
                b.state, b.retry_at = "running", None
                self._emit(
                    events.BRANCH_STATE,
                    {"state": "running", "reason": "retrying after the provider outage"},
                    branch=b.id,
                )

    def _busy(self) -> set[str]:
        return (
            set(self.proposing)
            | {r.branch for r in self.ready}
            | {v[1] for v in self.inflight.values()}
        )

    def _runnable(self) -> list[BranchState]:
        busy = self._busy()
        return [b for b in self.branches.values() if b.state == "running" and b.id not in busy]

    def _pick(self) -> BranchState | None:
        live = self._runnable()
        if not live:
            return None
        self._rr += 1
        return live[self._rr % len(live)]

    def _in_pipeline(self) -> int:
        """Steps that will become evaluations: in flight, recorded and waiting, being proposed."""
        return len(self.inflight) + len(self.ready) + len(self.proposing)

    def _request(self, b: BranchState) -> None:
        """Start the branch's next step: its pending seed is recorded at once; a proposal is asked
        for on a thread of its own and collected by a later turn of the loop."""
        if b.pending_seed:
            b.pending_seed = False
            self._accept(
                b,
                None,
                Proposal(source=b.head_source, family=b.family, note="seed", model=None),
                None,
            )
            return
        rid = self._emit(
            events.PROPOSAL_REQUESTED,
            {"parent": b.head_id, "model": b.model, "instructions": list(b.queued)},
            branch=b.id,
        )
        cancel = threading.Event()
        req = ProposalRequest(
            task_name=self.task_root.name,
            task_root=str(self.task_root),
            branch=b.id,
            family=b.family,
            parent_id=b.head_id,
            parent_source=b.head_source,
            parent_result=b.best_result,
            history=b.history[-8:],
            tried_hashes=set(self.seen_hashes),
            steer=list(b.steer),
            queued=list(b.queued),
            model=b.model,
            seed=self.cfg.seed * 1000 + self.evaluations,
            escalation=b.escalation,
            cancel=cancel,
            on_wait=lambda until, why, bid=b.id: self._waits.put((bid, until, why)),
        )
        fut = _spawn(self.proposer.propose, req, name=f"propose-{b.id}")
        self.proposing[b.id] = Job(b.id, rid, req, cancel, fut, list(b.queued), b.escalation)
        b.queued.clear()
        b.escalation = None

    def _collect_proposals(self) -> None:
        for bid, job in list(self.proposing.items()):
            if job.future.done():
                del self.proposing[bid]
                b = self.branches[bid]
                if b.waiting:
                    b.waiting = False
                    if b.state == "running":
                        self._emit(
                            events.BRANCH_STATE,
                            {"state": "running", "reason": "the provider answered"},
                            branch=bid,
                        )
                self._proposal_outcome(b, job)
        for fut, job in list(self.abandoned.items()):
            if fut.done():
                del self.abandoned[fut]
                self._discarded(job)

    def _proposal_outcome(self, b: BranchState, job: Job) -> None:
        try:
            proposal = job.future.result()
        except ProposalError as exc:
            self._failed(b, job, exc)
            return
        except Exception as exc:  # noqa: BLE001 - a proposer bug pauses its branch, never the engine
            err = ProposalError(f"proposer error: {type(exc).__name__}: {exc}")
            err.pause = "branch"  # type: ignore[attr-defined]
            self._failed(b, job, err)
            return
        self._accept(b, job, proposal, job.request.parent_id)

    def _discarded(self, job: Job) -> None:
        """A cancelled proposal's thread ended: its reply is not used, what it cost is recorded."""
        try:
            usage = job.future.result().usage
        except BaseException as exc:  # noqa: BLE001 - ProposalCancelled or any failure
            usage = getattr(exc, "usage", None) or {}
        if usage.get("calls_detail"):
            self._emit(
                events.PROPOSAL_DISCARDED,
                {
                    "reason": f"the reply came after the request was cancelled ({job.reason})",
                    "request": job.request_event,
                    "usage": usage,
                },
                branch=job.branch,
            )

    def _failed(self, b: BranchState, job: Job, exc: ProposalError) -> None:
        b.queued[:0] = job.queued  # nothing came of them: the next request carries them again
        self._emit(
            events.PROPOSAL_FAILED,
            {
                "reason": exc.reason,
                "model": job.request.model,
                "usage": getattr(exc, "usage", {}),
                "request": job.request_event,
            },
            branch=b.id,
        )
        # an LLM outage pauses the branch, a spent budget the session, with the reason
        pause = getattr(exc, "pause", None)
        if pause == "branch":
            b.state = "paused"
            b.retry_at = time.monotonic() + self.cfg.outage_cooldown_s
            self._emit(
                events.BRANCH_STATE,
                {
                    "state": "paused",
                    "reason": f"{exc.reason} (retrying in "
                    f"{self.cfg.outage_cooldown_s:.0f} s, or resume it now)",
                },
                branch=b.id,
            )
        elif pause == "session":
            self.paused, self.paused_by_cap = True, True
            for other in list(self.branches.values()):
                self._cancel(other, "the session paused: LLM budget reached")
            self._emit(events.SESSION_STATE, {"state": "paused", "reason": exc.reason})
        elif pause == "stop" and not self.stopping:  # the model request cap or the USD cap
            self.stopping = True
            how = getattr(exc, "raise_with", None) or "N"
            self.stop_reason = (
                f"{exc.reason}; to go on: cockpit send {self.dir.name} set-budget {how} --queue, "
                f"then cockpit resume {self.dir.name}"
            )
            for other in list(self.branches.values()):
                self._cancel(other, f"the session is stopping: {exc.reason[:120]}")
            self._emit(events.NOTE, {"text": f"stopping: {self.stop_reason}"})
        if exc.exhausted:
            self._plateau(b, exc.reason)
        if pause is None and not exc.exhausted:  # no usable code in the reply
            self._unusable(b, exc.reason)

    def _accept(
        self, b: BranchState, job: Job | None, proposal: Proposal, parent_id: str | None
    ) -> None:
        """Record the step's candidates (best-of-n: every usable choice) in one transaction; a
        duplicate is finished at once, the others wait for a worker."""
        members = [proposal, *proposal.alternatives]
        left = self.budget - self.evaluations - len(self.inflight) - len(self.ready)
        dropped = max(
            0, len(members) - max(1, left)
        )  # the budget may have shrunk since the request
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
                    payload["dropped_choices"] = (
                        dropped  # usable choices left out: no budget for them
                    )
                self._emit(events.CANDIDATE_PROPOSED, payload, branch=b.id, candidate=cid)
                if not dup:
                    self.seen_hashes[h] = cid
                recorded.append((cid, prop, dup))
        if group is not None:
            self.groups[group] = Group(b.id, {cid for cid, _, _ in recorded})
        for cid, prop, dup in recorded:
            if dup:
                result = {
                    "status": "duplicate",
                    "reasons": [{"kind": "duplicate", "message": f"same code as {dup}"}],
                }
                self._finish(b, cid, prop, parent_id, result, group)
            else:
                self.ready.append(Ready(cid, b.id, prop, parent_id, group))
        fresh = [cid for cid, _, dup in recorded if not dup]
        if fresh:
            b.unusable = 0
        elif recorded:
            self._unusable(b, f"the same code as {recorded[0][2]}")

    def _submit_ready(self) -> None:
        """Hand waiting candidates of running branches to free workers, oldest first."""
        for r in list(self.ready):
            b = self.branches.get(r.branch)
            if b is None or b.state == "retired":  # never evaluated; stays `proposed` in the record
                self.ready.remove(r)
                self.groups.pop(r.group, None)
                continue
            if b.state != "running":
                continue
            slot = self.pool.free_slot()
            if slot is None:
                return
            self.ready.remove(r)
            started: dict[str, Any] = {"worker": slot, "device": self.cfg.device}
            devs = getattr(self.pool, "devices", None) or []
            if slot < len(devs):
                started["gpu"] = devs[slot]  # the worker's CUDA_VISIBLE_DEVICES: which GPU ran it
            self._emit(
                events.EVALUATION_STARTED,
                started,
                branch=b.id,
                candidate=r.cid,
            )
            incumbent = None
            if b.best_id and (b.best_result or {}).get("score_us"):
                # the cascade screens against its result; the A/B times against its source
                src = self._source_of(b.best_id) if self.cfg.ab_enabled else None
                incumbent = {
                    "id": b.best_id,
                    "score_us": b.best_result["score_us"],
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

    def _finish(
        self,
        b: BranchState,
        cid: str,
        proposal: Proposal,
        parent_id: str | None,
        result: dict[str, Any],
        group: int | None = None,
    ) -> None:
        """Record a verdict. A single candidate is judged against the branch's best at once; the
        candidates of a best-of-n step when the last of them is in: the fastest passing one is
        judged, and kept as the branch head if it beats the incumbent."""
        g = self.groups.get(group) if group is not None else None
        decide: list[tuple[str, Proposal, dict[str, Any]]] | None = [(cid, proposal, result)]
        if g is not None:
            g.pending.discard(cid)
            g.done.append((cid, proposal, result))
            decide = None
            if not g.pending:
                del self.groups[group]
                decide = g.done
        winner, verdict = None, None
        if decide is not None:
            ok = [m for m in decide if m[2].get("status") == "ok" and m[2].get("score_us")]
            decide = sorted(decide, key=lambda m: m[0])
            pick = min(ok, key=lambda m: (m[2]["score_us"], m[0])) if ok else decide[-1]
            verdict = significantly_better(pick[2], b.best_result, ab=pick[2].get("ab"))
            winner = pick if verdict.better else None
        counted = result.get("status") != "duplicate"
        with self._tx():
            if counted:
                self.evaluations += 1
            self._emit(events.EVALUATION_FINISHED, result, branch=b.id, candidate=cid)
            if winner is not None:
                extra = {"choices": [m[0] for m in decide]} if len(decide) > 1 else {}
                self._emit(
                    events.BEST_CHANGED,
                    {
                        "candidate": winner[0],
                        "score_us": winner[2].get("score_us"),
                        "previous_us": (b.best_result or {}).get("score_us"),
                        "previous_candidate": b.best_id,
                        "why": verdict.reason,
                        **extra,
                    },
                    branch=b.id,
                    candidate=winner[0],
                )
        sha = self._commit(
            cid, b.id, proposal.source, result, parent_id, proposal.family, proposal.model
        )
        b.history.append(
            Attempt(
                cid,
                result.get("status", "?"),
                result.get("score_us"),
                "; ".join(r.get("message", "")[:120] for r in result.get("reasons", [])[:2]),
            )
        )
        if decide is None:
            return  # more candidates of this step to come
        if winner is not None:
            wid, wprop, wresult = winner
            b.best_id, b.best_result, b.since_best = wid, wresult, 0
            b.head_id, b.head_source = wid, wprop.source
            wsha = sha if wid == cid else (self.record.candidate(wid) or _NO).commit_sha
            if wsha:
                self.repo.tag_best(b.id, wsha)
        else:
            b.since_best += len(decide)
            if b.best_id is None and b.head_id is None:
                b.head_id, b.head_source = cid, proposal.source
            if plateaued(b.since_best, self.cfg.plateau_window):
                self._plateau(b, f"no significant improvement in {b.since_best} evaluations")

    def _commit(
        self,
        cid: str,
        branch: str,
        source: str,
        result: dict[str, Any] | None,
        parent_id: str | None,
        family: str | None,
        model: str | None,
    ) -> str | None:
        from cockpit.store import format_commit_message

        parent_sha = None
        if parent_id:
            p = self.record.candidate(parent_id)
            parent_sha = p.commit_sha if p else None
        msg = format_commit_message(
            cid, result, branch=branch, parent=parent_id, family=family, model=model
        )
        sha = self.repo.commit_candidate(
            branch, cid, "kernel.py", source, msg, parent_sha=parent_sha
        )
        self.record.append(
            events.CANDIDATE_COMMITTED, {"commit_sha": sha}, branch=branch, candidate=cid
        )
        return sha

    def _plateau(self, b: BranchState, reason: str) -> None:
        self._emit(
            events.PLATEAU_DETECTED,
            {
                "evaluations_since_best": b.since_best,
                "best_us": (b.best_result or {}).get("score_us"),
                "window": self.cfg.plateau_window,
                "reason": reason,
            },
            branch=b.id,
        )
        advisor = getattr(self.proposer, "advisor", None)
        if advisor is not None and "model" not in b.escalations_done:
            # an LLM branch first gets the stronger model (the profile's advisor), then a family switch
            b.escalations_done.add("model")
            b.escalation = "model"
            b.since_best = 0
            self._emit(
                events.ESCALATED,
                {
                    "mode": "model",
                    "model": advisor.settings().model,
                    "family": None,
                    "instruction": "advisor model for the next proposal",
                    "reason": reason,
                },
                branch=b.id,
            )
            return
        in_beam: dict[str, int] = {}
        for x in self.branches.values():
            if x.state != "retired" and x.id != b.id:
                in_beam[x.family] = in_beam.get(x.family, 0) + 1
        fam = next_family(b.family, self.families, in_beam, self.cfg.family_quota, b.families_tried)
        if fam is None:
            b.state = "retired"
            self._emit(
                events.BRANCH_STATE,
                {
                    "state": "retired",
                    "reason": f"plateau in {b.family} and no other family left to try",
                },
                branch=b.id,
            )
            return
        seed = next(s for s in self.seeds if s.family == fam)
        self._emit(
            events.ESCALATED,
            {
                "mode": "family",
                "family": fam,
                "model": None,
                "instruction": f"switch from {b.family} to {fam}",
                "reason": reason,
            },
            branch=b.id,
        )
        b.family = fam
        b.families_tried.add(fam)
        b.head_source, b.head_id = seed.source, None
        b.best_id, b.best_result, b.since_best = None, None, 0
        b.pending_seed = True

    # --- the loop -------------------------------------------------------------------------------
    def tick(self, wait_s: float = 0.2) -> str | None:
        """One turn of the loop: commands, finished proposals, new work, then wait (at most
        `wait_s`) for an evaluation or a proposal. The final state when the run is over."""
        self.apply_commands()
        self._check_deadline()
        self._retry_outages()
        self._collect_proposals()
        self._show_waits()
        if not self.stopping and (why := self._all_stalled()):
            self.stopping, self.stop_reason = True, why
            self._emit(events.NOTE, {"text": f"stopping: {why}"})
        if self.stopping:
            if not self.inflight:
                return (
                    "stopped"  # candidates still waiting stay `proposed`; a resume evaluates them
                )
        elif not self.paused:
            self._submit_ready()
            while self.evaluations + self._in_pipeline() < self.budget:
                b = self._pick()
                if b is None:
                    break
                self._request(b)
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
            self._cancel(b, "the time limit is reached")
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
        sampler = TelemetrySampler(self.dir)
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
            lost = self.worker_lost.setdefault(cid, [])
            lost.append(how)
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
                )
                self.ready.insert(0, Ready(cid, bid, proposal, parent_id or None, group))
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
        self._finish(self.branches[bid], cid, proposal, parent_id or None, result, group)

    def _task_broken(self, why: str) -> None:
        """reference.py raised (on a shape the start-up check did not try) or task.toml no longer
        loads: stop as `cockpit stop` does, with the one line naming the file, resumable once it
        is fixed, instead of spending the budget on candidates that cannot be judged."""
        if self.stopping:
            return
        self.stopping = True
        self.stop_reason = f"the task is broken: {why}; fix it, then cockpit resume {self.dir.name}"
        for b in list(self.branches.values()):
            self._cancel(b, "the task is broken")
        self._emit(events.NOTE, {"text": f"stopping: {self.stop_reason}"})

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
