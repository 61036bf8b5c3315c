"""What a report shows, read from a session record: the facts, no drawing.

Reads the record read-only inside one snapshot (`SessionRecord.open_readonly`, as `cockpit
status` does), so a report of a running session is a consistent picture of one moment and never
blocks its engine. Evaluations come from the `evaluation_finished` events with only the fields a
chart needs (`json_extract` in SQL: a result record carries every shape's timings, and a long
session holds thousands); the full record is read only for the best candidate and baselines.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cockpit.store import SessionRecord, figures
from cockpit.store import events as ev
from cockpit.store.models import Branch, Candidate
from cockpit.store.sessions import effective_state

# Events whose payload may carry `usage` (what the model calls behind them cost); the same list
# the cockpit's spend panel folds (cockpit/tui/spend.py).
USAGE_KINDS = (
    ev.CANDIDATE_PROPOSED,
    ev.PROPOSAL_FAILED,
    ev.PROPOSAL_CANCELLED,
    ev.PROPOSAL_DISCARDED,
)
NOT_COMPARABLE = "not comparable (Triton interpreter on a CPU: correctness runs, not timings)"


@dataclass(frozen=True)
class Evaluation:
    """One finished evaluation, in the order the record holds them (`n` counts from 1)."""

    n: int
    t: float
    candidate: str
    branch: str | None
    family: str | None
    model: str | None
    status: str | None
    score_us: float | None
    comparable: bool
    baseline: bool

    @property
    def scored(self) -> bool:
        return self.status == "ok" and self.score_us is not None and self.score_us > 0


@dataclass(frozen=True)
class Mark:
    """Something that happened to the search: a human's command, a plateau, an escalation, a
    model switch, a fork, a change of the session's state. `kind` picks its color and legend."""

    t: float
    kind: str  # human | plateau | escalation | model | fork | session
    branch: str | None
    label: str


@dataclass(frozen=True)
class SpendPoint:
    t: float
    branch: str | None
    model: str | None
    usd: float
    tokens: int


@dataclass(frozen=True)
class Baseline:
    """Per-shape times of a baseline: one evaluated in the session (a task's baseline seed) or
    one `cockpit baseline` stored for this task on this kind of machine."""

    name: str
    origin: str
    per_shape: dict[str, float]
    comparable: bool = True


@dataclass
class Report:
    folder: Path
    meta: dict[str, Any]
    state: str
    engine_pid: int | None
    branches: list[Branch]
    candidates: list[Candidate]
    evaluations: list[Evaluation]
    marks: list[Mark]
    spend: list[SpendPoint]
    notes: dict[str, str]  # candidate -> the proposer's note ("BLOCK: 512 -> 1024", "seed")
    start_t: float | None
    end_t: float | None
    best: Candidate | None = None
    best_result: dict[str, Any] | None = None
    baselines: list[Baseline] = field(default_factory=list)
    # Whether rankings are over comparable times: True as soon as one scored evaluation is
    # comparable (the non-comparable ones are then shown but never ranked); False when no
    # comparable time exists (a CPU session), where every ranking is labelled as such.
    comparable_pool: bool = True

    @property
    def name(self) -> str:
        return str(self.meta.get("name") or self.folder.name)

    def ranked(self, e: Evaluation) -> bool:
        """An evaluation that takes part in rankings (best lines, the best candidate)."""
        return e.scored and e.comparable == self.comparable_pool

    def candidate(self, cid: str | None) -> Candidate | None:
        return next((c for c in self.candidates if c.id == cid), None)


def model_text(model: str | None, meta: dict[str, Any]) -> str:
    """A candidate's model, or why it has none."""
    if model:
        return model
    return "none (offline tuner)" if (meta.get("config") or {}).get("agent") == "tuner" else "none"


def _f(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _comparable(value: Any) -> bool:
    # json_extract turns JSON false into 0; a missing field means comparable (older records)
    return value is None or bool(value)


def load_report(folder: str | Path) -> Report:
    """Everything a report of the session in `folder` shows."""
    from cockpit.store import engine_pid

    folder = Path(folder)
    pid = engine_pid(folder)
    with SessionRecord.open_readonly(folder) as rec, rec.snapshot():
        meta = rec.meta()
        branches = rec.branches()
        candidates = rec.candidates()
        by_id = {c.id: c for c in candidates}
        notes = {
            cid: note
            for cid, note in rec.execute(
                "SELECT candidate, json_extract(payload, '$.note') FROM events "
                "WHERE kind = ? AND candidate IS NOT NULL ORDER BY id",
                (ev.CANDIDATE_PROPOSED,),
            )
            if note
        }
        evaluations = _evaluations(rec, by_id)
        marks = _marks(rec)
        spend = _spend(rec)
        (first_t, last_t) = rec.execute("SELECT min(t), max(t) FROM events")[0]
        report = Report(
            folder=folder,
            meta=meta,
            state=effective_state(meta.get("state"), pid is not None),
            engine_pid=pid,
            branches=branches,
            candidates=candidates,
            evaluations=evaluations,
            marks=marks,
            spend=spend,
            notes=notes,
            start_t=_f(meta.get("started_t")) or _f(meta.get("created")) or first_t,
            end_t=last_t,
            comparable_pool=any(e.comparable for e in evaluations if e.scored),
        )
        best = pick_best(evaluations, branches)
        if best is not None:
            report.best = by_id.get(best)
            report.best_result = _last_result(rec, best)
        report.baselines = _session_baselines(rec, evaluations)
    report.baselines += _stored_baselines(meta, report.best_result)
    return report


def pick_best(evaluations: list[Evaluation], branches: Iterable[Branch] = ()) -> str | None:
    """The session's best as `figures.best` names it: the lowest passing score among the
    branches' bests (among every evaluation where no branch names one), baselines left out;
    over comparable times when a candidate has one, else over the others (on a CPU the Triton
    candidates' times are the interpreter's while an eager baseline's is not). Earliest wins a
    tie."""
    pool = figures.branch_bests(
        (e for e in evaluations if e.scored and not e.baseline), branches, lambda e: e.candidate
    )
    found = figures.pick(pool, lambda e: (e.score_us, e.n), lambda e: e.comparable)
    return found.candidate if found else None


def read_evaluations(rec: SessionRecord) -> list[Evaluation]:
    """Every finished evaluation of the record (read inside the caller's snapshot)."""
    return _evaluations(rec, {c.id: c for c in rec.candidates()})


def _evaluations(rec: SessionRecord, by_id: dict[str, Candidate]) -> list[Evaluation]:
    rows = rec.execute(
        "SELECT t, branch, candidate, json_extract(payload, '$.status'), "
        "json_extract(payload, '$.score_us'), json_extract(payload, '$.comparable'), "
        "json_extract(payload, '$.baseline_exempt') FROM events "
        "WHERE kind = ? AND candidate IS NOT NULL ORDER BY id",
        (ev.EVALUATION_FINISHED,),
    )
    out = []
    for n, (t, branch, cid, status, score, comparable, baseline) in enumerate(rows, start=1):
        c = by_id.get(cid)
        out.append(
            Evaluation(
                n=n,
                t=t,
                candidate=cid,
                branch=branch if branch is not None else (c.branch if c else None),
                family=c.family if c else None,
                model=c.model if c else None,
                status=status,
                score_us=_f(score),
                comparable=_comparable(comparable),
                baseline=bool(baseline),
            )
        )
    return out


def _last_result(rec: SessionRecord, cid: str) -> dict[str, Any] | None:
    found = rec.events(kinds=[ev.EVALUATION_FINISHED], candidate=cid)
    return found[-1].payload if found else None


def _args_text(args: Any) -> str:
    if not isinstance(args, dict):
        return ""
    parts = []
    for k, v in args.items():
        if v in (None, "", [], {}):
            continue
        text = v if isinstance(v, str) else json.dumps(v)
        parts.append(f"{k}={text}" if k not in ("branch", "text", "instruction") else text)
    return " ".join(parts)


def _marks(rec: SessionRecord) -> list[Mark]:
    kinds = [
        ev.COMMAND_RECEIVED,
        ev.PLATEAU_DETECTED,
        ev.ESCALATED,
        ev.MODEL_CHANGED,
        ev.BRANCH_FORKED,
        ev.SESSION_STATE,
        ev.SESSION_STARTED,
    ]
    acks = {c.id: c for c in rec.commands()}
    out: list[Mark] = []
    started = 0
    for e in rec.events(kinds=kinds):
        p = e.payload
        if e.kind == ev.COMMAND_RECEIVED:
            cmd = acks.get(p.get("command_id"))
            what = f"{p.get('kind', '?')} {_args_text(p.get('args'))}".strip()
            source = p.get("source") or "?"
            refused = "" if cmd is None or cmd.state != "failed" else " (refused)"
            out.append(Mark(e.t, "human", e.branch, f"{what} (from {source}){refused}"))
        elif e.kind == ev.PLATEAU_DETECTED:
            since = p.get("evaluations_since_best")
            extra = f" after {since} evaluations without a gain" if since is not None else ""
            out.append(Mark(e.t, "plateau", e.branch, f"plateau{extra}"))
        elif e.kind == ev.ESCALATED:
            mode = p.get("mode") or "?"
            to = p.get("family") if mode == "family" else p.get("model")
            out.append(
                Mark(e.t, "escalation", e.branch, f"escalated ({mode}){' to ' + to if to else ''}")
            )
        elif e.kind == ev.MODEL_CHANGED:
            scope = e.branch or "every branch"
            out.append(Mark(e.t, "model", e.branch, f"model of {scope}: {p.get('model') or '-'}"))
        elif e.kind == ev.BRANCH_FORKED:
            src = p.get("from_candidate") or p.get("from_branch") or "?"
            out.append(Mark(e.t, "fork", e.branch, f"forked from {src}"))
        elif e.kind == ev.SESSION_STARTED:
            started += 1
            if p.get("resumed") or started > 1:
                out.append(Mark(e.t, "session", None, "resumed"))
        elif e.kind == ev.SESSION_STATE and p.get("state") not in (None, "running"):
            reason = f": {p['reason']}" if p.get("reason") else ""
            out.append(Mark(e.t, "session", None, f"{p['state']}{reason}"))
    return out


def usage_of(payload: dict[str, Any]) -> tuple[float, int]:
    """(USD, tokens) of one event's `usage`; zeros when absent or malformed."""
    usage = payload.get("usage")
    if not isinstance(usage, dict):
        return 0.0, 0
    tokens = _f(usage.get("tokens"))
    if tokens is None:
        tokens = (_f(usage.get("prompt_tokens")) or 0.0) + (
            _f(usage.get("completion_tokens")) or 0.0
        )
    return _f(usage.get("cost_usd")) or 0.0, int(tokens)


def _spend(rec: SessionRecord) -> list[SpendPoint]:
    marks = ",".join("?" * len(USAGE_KINDS))
    rows = rec.execute(
        f"SELECT t, branch, json_extract(payload, '$.model'), json_extract(payload, '$.usage') "
        f"FROM events WHERE kind IN ({marks}) AND json_extract(payload, '$.usage') IS NOT NULL "
        "ORDER BY id",
        USAGE_KINDS,
    )
    out = []
    for t, branch, model, usage_text in rows:
        try:
            usage = json.loads(usage_text)
        except (TypeError, ValueError):
            continue
        usd, tokens = usage_of({"usage": usage})
        if usd or tokens:
            model = model or (usage.get("model") if isinstance(usage, dict) else None)
            out.append(SpendPoint(t, branch, model, usd, tokens))
    return out


def _per_shape(result: dict[str, Any]) -> dict[str, float]:
    return {
        s["shape"]: float(s["timing"]["median_us"])
        for s in result.get("shapes") or []
        if isinstance(s, dict) and s.get("timing") and _f(s["timing"].get("median_us"))
    }


def _session_baselines(rec: SessionRecord, evaluations: list[Evaluation]) -> list[Baseline]:
    """Baseline seeds the session evaluated (the harness marks them `baseline_exempt`)."""
    out = []
    seen = set()
    for e in reversed(evaluations):
        if not (e.baseline and e.status == "ok") or e.candidate in seen:
            continue
        seen.add(e.candidate)
        result = _last_result(rec, e.candidate) or {}
        per_shape = _per_shape(result)
        if per_shape:
            name = e.family or "baseline"
            origin = f"{e.candidate}, evaluated in this session"
            out.append(Baseline(name, origin, per_shape, e.comparable))
    return out


def _stored_baselines(meta: dict[str, Any], result: dict[str, Any] | None) -> list[Baseline]:
    """Baselines `cockpit baseline` stored for the task on the machine the best candidate ran
    on (the result's `env.machine` is the key they are stored under)."""
    if not result:
        return []
    machine = (result.get("env") or {}).get("machine")
    task = result.get("task") or meta.get("task")
    if not machine or not task:
        return []
    # the folder of cockpit.harness.scoring.data_dir, not imported from there: it imports torch
    root = os.environ.get("COCKPIT_DATA_DIR") or Path.home() / ".local" / "share" / "cockpit"
    path = Path(root) / "baselines" / Path(str(task)).name / f"{machine}.json"
    try:
        stored = json.loads(path.read_text())
    except (OSError, ValueError):
        return []
    out = []
    for name, entry in sorted(stored.items()):
        if not isinstance(entry, dict) or entry.get("status") != "ok":
            continue
        per_shape = {k: float(v) for k, v in (entry.get("per_shape") or {}).items() if _f(v)}
        if per_shape:
            when = entry.get("measured") or "?"
            out.append(Baseline(name, f"stored by `cockpit baseline`, measured {when}", per_shape))
    return out
