"""The loop: propose -> evaluate -> record -> keep or discard, over a beam of branches.

Every fact goes to the session record *before* anything is shown (the headless printer and the
TUI read the record or the callback after the write). The engine holds the session's lock, takes
commands from the queue between steps and acknowledges each, and can be SIGKILLed at any moment:
on resume it rebuilds its state from the record and the git repository and loses at most the
evaluation that was in flight.
"""

from __future__ import annotations

import ast
import itertools
import os
import socket
import sys
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
from cockpit.store import SessionRecord, events
from cockpit.store.sessions import REPO_DIR

Printer = Callable[[str, dict[str, Any]], None]


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


def read_family(source: str, default: str) -> str:
    try:
        for node in ast.parse(source).body:
            if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "FAMILY" for t in node.targets):
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
    def __init__(self, session_dir: Path, config: EngineConfig, proposer: Proposer,
                 printer: Printer | None = None, pool: Any = None) -> None:
        from cockpit.store import CandidateRepo

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
        self.pool = pool
        self.inflight: dict[Future, tuple[str, str, Proposal | None, str]] = {}
        self._ids = itertools.count(1)
        self._rr = 0

    # --- set-up and resume ----------------------------------------------------------------------
    def _emit(self, kind: str, payload: dict[str, Any] | None = None, branch: str | None = None,
              candidate: str | None = None) -> int:
        eid = self.record.append(kind, payload or {}, branch=branch, candidate=candidate)
        self.print(kind, {**(payload or {}), "branch": branch, "candidate": candidate})
        return eid

    def start(self) -> None:
        meta = self.record.meta()  # read before session_started records the state as running
        resumed = bool(self.record.branches())
        self._emit(events.SESSION_STARTED, {"pid": os.getpid(), "host": socket.gethostname(), "resumed": resumed,
                                            "argv": sys.argv[1:], "config": self.cfg.to_dict()})
        if meta.get("budget") is not None:
            self.budget = int(meta["budget"])
        if resumed:
            self._restore()
            if meta.get("state") == "paused":  # the engine died while paused: stay paused
                self.paused = True
                self._emit(events.SESSION_STATE, {"state": "paused", "reason": "paused when the engine stopped"})
        else:
            self._emit(events.BUDGET_CHANGED, {"budget": self.budget, "previous": None})
            self._create_initial_beam()

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
            if len(picks) >= self.cfg.beam or all(by_family.get(x.family, 0) >= self.cfg.family_quota or "TUNABLES" not in x.source for x in self.seeds):
                break
            if "TUNABLES" in s.source and by_family[s.family] < self.cfg.family_quota:
                picks.append(s)
                by_family[s.family] += 1
        started: set[str] = set()
        for i, seed in enumerate(picks[: self.cfg.beam], start=1):
            bid = f"b{i}"
            self._emit(events.BRANCH_CREATED, {"family": seed.family, "model": self.cfg.model,
                                               "parent_candidate": None, "instruction": None, "seed": seed.path.name},
                       branch=bid)
            # a second branch of a family starts from the seed's first *child*, not the seed again
            first = seed.path.name not in started
            started.add(seed.path.name)
            self.branches[bid] = BranchState(bid, seed.family, model=self.cfg.model, head_source=seed.source,
                                             families_tried={seed.family}, pending_seed=first)

    def _restore(self) -> None:
        """Rebuild the beam from the record: branches, bests, counters, steer instructions."""
        cands = self.record.candidates()
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
                    self.record.append(events.CANDIDATE_COMMITTED, {"commit_sha": tip[0].sha}, branch=c.branch, candidate=c.id)
                else:
                    self._commit(c.id, c.branch, self._source_of(c.id) or "", self._result_of(c.id), c.parent, c.family, c.model)
            # reported once, not again on every later resume
            if c.status in ("proposed", "evaluating") and not self.record.events(kinds=[events.ERROR], candidate=c.id):
                self._emit(events.ERROR, {"message": f"{c.id}: evaluation lost when the engine stopped; not retried",
                                          "where": "resume"}, branch=c.branch, candidate=c.id)
        by_branch: dict[str, list] = {}
        for c in cands:
            by_branch.setdefault(c.branch, []).append(c)
        forks = {e.branch: e.payload for e in self.record.events(kinds=[events.BRANCH_FORKED])}
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
            if st.state == "plateau":
                st.state = "running"
            self.branches[b.id] = st
        for cmd in self.record.commands(state="acked"):
            if cmd.kind == "redirect" and cmd.args.get("mode", "steer") == "steer" and cmd.args.get("branch") in self.branches:
                self.branches[cmd.args["branch"]].steer.append(cmd.args.get("instruction", ""))

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
        for cmd in self.record.pending_commands():
            self._emit(events.COMMAND_RECEIVED, {"command_id": cmd.id, "kind": cmd.kind, "args": cmd.args,
                                                 "source": cmd.source})
            try:
                ok, msg = self._apply(cmd.kind, dict(cmd.args))
            except Exception as exc:  # noqa: BLE001 - a bad command is refused, never fatal
                ok, msg = False, f"{type(exc).__name__}: {exc}"
            self.record.ack_command(cmd.id, ok, msg)
            self.print(events.COMMAND_ACKED, {"command_id": cmd.id, "kind": cmd.kind, "ok": ok, "message": msg})

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
                self._emit(events.BRANCH_STATE, {"state": target, "reason": "by command"}, branch=b.id)
                return True, f"{b.id} {target}"
            self.paused = kind == "pause"
            self._emit(events.SESSION_STATE, {"state": target, "reason": "by command"})
            return True, f"session {target}"
        if kind == "stop":
            self.stopping = True
            return True, "stopping after the evaluation in flight"
        if kind == "retire":
            b = self._branch(a)
            b.state = "retired"
            self._emit(events.BRANCH_STATE, {"state": "retired", "reason": a.get("reason") or "by command"}, branch=b.id)
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
            return True, f"{b.id}: instruction {'kept from now on' if mode == 'steer' else 'queued for the next proposal'}"
        if kind == "set_model":
            model = a.get("model")
            if not model:
                return False, "set-model needs a model"
            targets = [self._branch(a)] if a.get("branch") else [b for b in self.branches.values() if b.state != "retired"]
            for b in targets:
                b.model = model
            self._emit(events.MODEL_CHANGED, {"model": model, "previous": None}, branch=a.get("branch"))
            if not a.get("branch"):
                self.cfg.model = model
            return True, f"model {model} for {', '.join(b.id for b in targets)}"
        if kind == "set_budget":
            budget = int(a.get("budget"))
            if budget < 0:
                return False, "budget must be >= 0"
            self._emit(events.BUDGET_CHANGED, {"budget": budget, "previous": self.budget})
            self.budget = budget
            return True, f"budget {budget} evaluations ({self.evaluations} used)"
        if kind == "fork":
            cid = a.get("candidate")
            c = self.record.candidate(cid) if cid else None
            if c is None:
                return False, f"no candidate {cid!r}"
            family = a.get("family") or c.family or "unknown"
            live = sum(1 for b in self.branches.values() if b.family == family and b.state != "retired")
            if live >= self.cfg.family_quota and not a.get("family"):
                return False, f"family {family} is at its quota of {self.cfg.family_quota} live branches"
            bid = f"b{max(int(x[1:]) for x in self.branches) + 1 if self.branches else 1}"
            self._emit(events.BRANCH_FORKED, {"from_branch": c.branch, "from_candidate": cid, "family": family,
                                              "model": a.get("model") or self.cfg.model,
                                              "instruction": a.get("instruction")}, branch=bid)
            st = BranchState(bid, family, model=a.get("model") or self.cfg.model, head_id=cid,
                             head_source=self._source_of(cid) or "", families_tried={family})
            if a.get("instruction"):
                st.steer.append(a["instruction"])
            if c.status == "ok":
                st.best_id, st.best_result = cid, self._result_of(cid)
            self.branches[bid] = st
            return True, f"forked {cid} into {bid} ({family})"
        return False, f"unknown command {kind!r}"

    # --- one step -------------------------------------------------------------------------------
    def _retry_outages(self) -> None:
        now = time.monotonic()
        for b in self.branches.values():
            if b.state == "paused" and b.retry_at is not None and now >= b.retry_at:
                b.state, b.retry_at = "running", None
                self._emit(events.BRANCH_STATE, {"state": "running", "reason": "retrying after the provider outage"},
                           branch=b.id)

    def _runnable(self) -> list[BranchState]:
        busy = {v[1] for v in self.inflight.values()}
        return [b for b in self.branches.values() if b.state == "running" and b.id not in busy]

    def _pick(self) -> BranchState | None:
        live = self._runnable()
        if not live:
            return None
        self._rr += 1
        return live[self._rr % len(live)]

    def _launch(self, b: BranchState) -> bool:
        """Propose (or take the branch's pending seed) and submit it; False if nothing to run."""
        parent_id = b.head_id
        if b.pending_seed:
            proposal = Proposal(source=b.head_source, family=b.family, note="seed", model=None)
            parent_id = None
            b.pending_seed = False
        else:
            self._emit(events.PROPOSAL_REQUESTED, {"parent": parent_id, "model": b.model}, branch=b.id)
            req = ProposalRequest(
                task_name=self.task_root.name, task_root=str(self.task_root), branch=b.id, family=b.family,
                parent_id=parent_id, parent_source=b.head_source, parent_result=b.best_result,
                history=b.history[-8:], tried_hashes=set(self.seen_hashes), steer=list(b.steer),
                queued=list(b.queued), model=b.model, seed=self.cfg.seed * 1000 + self.evaluations,
                escalation=b.escalation,
            )
            b.queued.clear()
            b.escalation = None
            try:
                proposal = self.proposer.propose(req)
            except ProposalError as exc:
                self._emit(events.PROPOSAL_FAILED, {"reason": exc.reason, "model": b.model,
                                                    "usage": getattr(exc, "usage", {})}, branch=b.id)
                # an LLM outage pauses the branch, a spent budget the session, with the reason
                pause = getattr(exc, "pause", None)
                if pause == "branch":
                    b.state = "paused"
                    b.retry_at = time.monotonic() + self.cfg.outage_cooldown_s
                    self._emit(events.BRANCH_STATE, {"state": "paused", "reason": f"{exc.reason} (retrying in "
                                                     f"{self.cfg.outage_cooldown_s:.0f} s, or resume it now)"},
                               branch=b.id)
                elif pause == "session":
                    self.paused = True
                    self._emit(events.SESSION_STATE, {"state": "paused", "reason": exc.reason})
                if exc.exhausted:
                    self._plateau(b, exc.reason)
                return False
        cid = self._new_candidate_id()
        h = source_hash(proposal.source)
        dup = self.seen_hashes.get(h)
        self._emit(events.CANDIDATE_PROPOSED, {"parent": parent_id, "family": proposal.family, "model": proposal.model,
                                               "source_hash": h, "filename": "kernel.py", "note": proposal.note,
                                               "source": proposal.source, "duplicate_of": dup, "usage": proposal.usage},
                   branch=b.id, candidate=cid)
        if dup:
            result = {"status": "duplicate", "reasons": [{"kind": "duplicate", "message": f"same code as {dup}"}]}
            self._finish(b, cid, proposal, parent_id, result)
            return False
        self.seen_hashes[h] = cid
        slot = self.pool.free_slot()
        self._emit(events.EVALUATION_STARTED, {"worker": slot, "device": self.cfg.device}, branch=b.id, candidate=cid)
        fut = self.pool.submit(slot, str(self.task_root), f"{cid}.py", proposal.source, self.cfg.mode)
        self.inflight[fut] = (cid, b.id, proposal, parent_id or "")
        return True

    def _finish(self, b: BranchState, cid: str, proposal: Proposal, parent_id: str | None, result: dict[str, Any]) -> None:
        verdict = significantly_better(result, b.best_result)
        counted = result.get("status") != "duplicate"
        with self.record.transaction():
            if counted:
                self.evaluations += 1
            self._emit(events.EVALUATION_FINISHED, result, branch=b.id, candidate=cid)
            if verdict.better:
                self._emit(events.BEST_CHANGED, {"candidate": cid, "score_us": result.get("score_us"),
                                                 "previous_us": (b.best_result or {}).get("score_us"),
                                                 "previous_candidate": b.best_id, "why": verdict.reason},
                           branch=b.id, candidate=cid)
        sha = self._commit(cid, b.id, proposal.source, result, parent_id, proposal.family, proposal.model)
        b.history.append(Attempt(cid, result.get("status", "?"), result.get("score_us"),
                                 "; ".join(r.get("message", "")[:120] for r in result.get("reasons", [])[:2])))
        if verdict.better:
            b.best_id, b.best_result, b.since_best = cid, result, 0
            b.head_id, b.head_source = cid, proposal.source
            if sha:
                self.repo.tag_best(b.id, sha)
        else:
            b.since_best += 1
            if b.best_id is None and b.head_id is None:
                b.head_id, b.head_source = cid, proposal.source
            if plateaued(b.since_best, self.cfg.plateau_window):
                self._plateau(b, f"no significant improvement in {b.since_best} evaluations")

    def _commit(self, cid: str, branch: str, source: str, result: dict[str, Any] | None, parent_id: str | None,
                family: str | None, model: str | None) -> str | None:
        from cockpit.store import format_commit_message

        parent_sha = None
        if parent_id:
            p = self.record.candidate(parent_id)
            parent_sha = p.commit_sha if p else None
        msg = format_commit_message(cid, result, branch=branch, parent=parent_id, family=family, model=model)
        sha = self.repo.commit_candidate(branch, cid, "kernel.py", source, msg, parent_sha=parent_sha)
        self.record.append(events.CANDIDATE_COMMITTED, {"commit_sha": sha}, branch=branch, candidate=cid)
        return sha

    def _plateau(self, b: BranchState, reason: str) -> None:
        self._emit(events.PLATEAU_DETECTED, {"evaluations_since_best": b.since_best,
                                             "best_us": (b.best_result or {}).get("score_us"),
                                             "window": self.cfg.plateau_window, "reason": reason}, branch=b.id)
        advisor = getattr(self.proposer, "advisor", None)
        if advisor is not None and "model" not in b.escalations_done:
            # an LLM branch first gets the stronger model (the profile's advisor), then a family switch
            b.escalations_done.add("model")
            b.escalation = "model"
            b.since_best = 0
            self._emit(events.ESCALATED, {"mode": "model", "model": advisor.settings().model, "family": None,
                                          "instruction": "advisor model for the next proposal", "reason": reason},
                       branch=b.id)
            return
        in_beam: dict[str, int] = {}
        for x in self.branches.values():
            if x.state != "retired" and x.id != b.id:
                in_beam[x.family] = in_beam.get(x.family, 0) + 1
        fam = next_family(b.family, self.families, in_beam, self.cfg.family_quota, b.families_tried)
        if fam is None:
            b.state = "retired"
            self._emit(events.BRANCH_STATE, {"state": "retired",
                                             "reason": f"plateau in {b.family} and no other family left to try"}, branch=b.id)
            return
        seed = next(s for s in self.seeds if s.family == fam)
        self._emit(events.ESCALATED, {"mode": "family", "family": fam, "model": None,
                                      "instruction": f"switch from {b.family} to {fam}", "reason": reason}, branch=b.id)
        b.family = fam
        b.families_tried.add(fam)
        b.head_source, b.head_id = seed.source, None
        b.best_id, b.best_result, b.since_best = None, None, 0
        b.pending_seed = True

    # --- the loop -------------------------------------------------------------------------------
    def run(self) -> str:
        from cockpit.engine.telemetry import TelemetrySampler
        from cockpit.engine.workers import WorkerPool

        self.pool = self.pool or WorkerPool(self.cfg.device)
        sampler = TelemetrySampler(self.dir)
        final = "done"
        try:
            self.start()
            sampler.start()
            while True:
                self.apply_commands()
                self._retry_outages()
                if self.stopping:
                    if not self.inflight:
                        final = "stopped"
                        break
                elif self.evaluations + len(self.inflight) < self.budget and not self.paused:
                    while self.pool.free_slot() is not None and self.evaluations + len(self.inflight) < self.budget:
                        b = self._pick()
                        if b is None or not self._launch(b):
                            break
                if not self.inflight:
                    if self.evaluations >= self.budget:
                        break
                    if not self.paused and all(b.state == "retired" for b in self.branches.values()):
                        break
                    time.sleep(0.2)
                    continue
                done, _ = wait(list(self.inflight), timeout=0.5, return_when=FIRST_COMPLETED)
                for fut in done:
                    self._collect(fut)
        except BaseException as exc:
            self._emit(events.ERROR, {"message": f"{type(exc).__name__}: {exc}", "where": "engine"})
            final = "crashed" if not isinstance(exc, KeyboardInterrupt) else "stopped"
            raise
        finally:
            reason = {"done": "budget spent or beam retired", "stopped": "by command", "crashed": "engine error"}[final]
            try:
                self._emit(events.SESSION_STATE, {"state": final, "reason": reason})
            finally:
                sampler.stop()
                self.pool.shutdown()
                self.close()
        return final

    def _collect(self, fut: Future) -> None:
        cid, bid, proposal, parent_id = self.inflight.pop(fut)
        try:
            result = fut.result()
        except BrokenProcessPool:
            result = {"status": "crash", "reasons": [{"kind": "crash", "message": "the evaluation worker died"}]}
            from cockpit.engine.workers import WorkerPool

            self.pool.shutdown()
            self.pool = WorkerPool(self.cfg.device)
        except Exception as exc:  # noqa: BLE001 - a harness bug is recorded, not fatal
            result = {"status": "crash", "reasons": [{"kind": "crash", "message": f"harness error: {type(exc).__name__}: {exc}"}]}
        self._finish(self.branches[bid], cid, proposal, parent_id or None, result)

    def close(self) -> None:
        try:
            self.repo.close()
        finally:
            self.lock.release()
            self.record.close()
