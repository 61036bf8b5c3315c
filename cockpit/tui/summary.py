""" "Since you last looked": what changed in a session between two visits, and where the last
visit is remembered.

The user looks for thirty seconds every few hours; this is the answer to "what happened?"
before any panel is read. The mark is a small JSON file in the session folder, one entry per
user, so two people watching the same run each get their own summary; the record itself stays
untouched (viewers never write to session.db except through the command queue).
"""

from __future__ import annotations

import contextlib
import getpass
import json
import os
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from cockpit.store import events as ev
from cockpit.store.models import Event
from cockpit.tui.describe import command_target
from cockpit.tui.format import fmt_ago, fmt_us
from cockpit.tui.notify import outage_pause
from cockpit.tui.spend import Spend, fmt_tokens, fmt_usd

LAST_LOOKED_FILE = "last_looked.json"
SUMMARY_KINDS = (
    ev.BEST_CHANGED,
    ev.EVALUATION_FINISHED,
    ev.PROPOSAL_FAILED,
    ev.PLATEAU_DETECTED,
    ev.ESCALATED,
    ev.BRANCH_STATE,
    ev.BRANCH_FORKED,
    ev.COMMAND_RECEIVED,
    ev.COMMAND_ACKED,
    ev.SESSION_STATE,
    ev.ERROR,
)


@dataclass(frozen=True)
class LastLooked:
    event_id: int
    t: float


@dataclass(frozen=True)
class CommandLine:
    command_id: int | None
    what: str
    source: str
    outcome: str  # "acked" | "failed" | "pending"
    message: str = ""


@dataclass
class Summary:
    since: LastLooked | None
    events: int = 0
    evaluations: int = 0
    bests: list[Event] = field(default_factory=list)
    failures: Counter = field(default_factory=Counter)  # verdict or "no proposal" -> count
    plateaus: list[str] = field(default_factory=list)
    escalations: list[str] = field(default_factory=list)
    retired: list[str] = field(default_factory=list)
    commands: list[CommandLine] = field(default_factory=list)
    states: list[str] = field(default_factory=list)
    errors: int = 0
    outages: list[str] = field(default_factory=list)  # branches paused by a failing provider
    cost_usd: float = 0.0
    tokens: int = 0
    calls: int = 0

    @property
    def empty(self) -> bool:
        return self.events == 0 and not self.cost_usd and not self.tokens

    def add_spend(self, spend: Spend) -> None:
        self.cost_usd += spend.usd
        self.tokens += spend.tokens
        self.calls += spend.calls


def summarize(events: Iterable[Event], since: LastLooked | None) -> Summary:
    """Fold the events after the mark into a summary (pure: the caller reads the events)."""
    s = Summary(since=since)
    commands: dict[int | None, CommandLine] = {}
    for e in events:
        s.events += 1
        p = e.payload
        if outage_pause(e):
            s.outages.append(e.branch or "?")
        if e.kind == ev.EVALUATION_FINISHED:
            status = p.get("status")
            if status != "duplicate":
                s.evaluations += 1
            if status not in ("ok", "duplicate"):
                s.failures[status or "?"] += 1
        elif e.kind == ev.BEST_CHANGED:
            s.bests.append(e)
        elif e.kind == ev.PROPOSAL_FAILED:
            s.failures["no proposal"] += 1
        elif e.kind == ev.PLATEAU_DETECTED:
            s.plateaus.append(e.branch or "?")
        elif e.kind == ev.ESCALATED:
            to = p.get("family") if p.get("mode") == "family" else p.get("model")
            s.escalations.append(f"{e.branch} → {p.get('mode')} {to or ''}".strip())
        elif e.kind == ev.BRANCH_STATE and p.get("state") == "retired":
            s.retired.append(f"{e.branch} ({p.get('reason') or 'no reason'})")
        elif e.kind == ev.SESSION_STATE:
            s.states.append(str(p.get("state")))
        elif e.kind == ev.ERROR:
            s.errors += 1
        elif e.kind == ev.COMMAND_RECEIVED:
            cid = p.get("command_id")
            commands[cid] = CommandLine(
                cid, command_target(p.get("kind"), p.get("args")), p.get("source") or "?", "pending"
            )
        elif e.kind == ev.COMMAND_ACKED:
            cid = p.get("command_id")
            seen = commands.get(cid) or CommandLine(cid, str(p.get("kind")), "?", "pending")
            outcome = "acked" if p.get("ok") else "failed"
            commands[cid] = CommandLine(cid, seen.what, seen.source, outcome, p.get("message", ""))
    s.commands = list(commands.values())
    return s


def summary_lines(s: Summary, now: float, *, best_per_branch: int = 1) -> list[tuple[str, str]]:
    """The summary as (text, tone) lines, most important first."""
    when = f"{fmt_ago(now - s.since.t)} ago" if s.since else "the start of the session"
    lines = [
        (f"Since you last looked ({when}): {s.events} events, {s.evaluations} evaluations", "info")
    ]
    if s.empty:
        return [(f"Nothing new since you last looked ({when}).", "muted")]
    latest: dict[str, Event] = {}
    for e in s.bests:
        latest[e.branch or "?"] = e
    if latest:
        parts = []
        for branch, e in sorted(latest.items(), key=lambda kv: kv[1].payload.get("score_us") or 0):
            first = next(b for b in s.bests if b.branch == e.branch)
            was = first.payload.get("previous_us")
            parts.append(
                f"{branch} {e.payload.get('candidate', e.candidate)} "
                f"{fmt_us(e.payload.get('score_us'))}{f' (was {fmt_us(was)})' if was else ''}"
            )
        noun = "new best" if len(s.bests) == 1 else "new bests"
        lines.append((f"★ {len(s.bests)} {noun}: " + "; ".join(parts), "good"))
    else:
        lines.append(("★ no new best", "muted"))
    if s.failures:
        text = ", ".join(f"{n} {k}" for k, n in s.failures.most_common())
        lines.append((f"✗ failures: {text}", "bad"))
    if s.plateaus:
        lines.append((f"≈ plateaus: {', '.join(s.plateaus)}", "warn"))
    if s.escalations:
        lines.append((f"↑ escalations: {'; '.join(s.escalations)}", "warn"))
    if s.retired:
        lines.append((f"✕ retired: {'; '.join(s.retired)}", "warn"))
    if s.commands:
        text = "; ".join(f"{c.what} by {c.source} ({c.outcome})" for c in s.commands)
        lines.append((f"⌘ commands: {text}", "human"))
    if s.states:
        lines.append((f"session: {' → '.join(s.states)}", "warn"))
    if s.errors:
        lines.append((f"! {s.errors} engine error(s)", "bad"))
    if s.outages:
        lines.append((f"✗ provider outages paused: {', '.join(s.outages)}", "bad"))
    if s.cost_usd or s.tokens:
        parts = [f"{fmt_tokens(s.tokens)} tokens"] if s.tokens else []
        parts += [f"{s.calls} calls"] if s.calls else []
        extra = f" ({', '.join(parts)})" if parts else ""
        lines.append((f"$ {fmt_usd(s.cost_usd)[1:]} spent on model calls{extra}", "info"))
    return lines


# --- the mark --------------------------------------------------------------------------------


def current_user() -> str:
    with contextlib.suppress(Exception):
        return getpass.getuser()
    return "user"


def read_last_looked(folder: Path, user: str | None = None) -> LastLooked | None:
    try:
        data = json.loads((Path(folder) / LAST_LOOKED_FILE).read_text())
        entry = data[user or current_user()]
        return LastLooked(int(entry["event_id"]), float(entry["t"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def write_last_looked(folder: Path, mark: LastLooked, user: str | None = None) -> None:
    """Atomically replace this user's entry (other users' entries are kept)."""
    path = Path(folder) / LAST_LOOKED_FILE
    try:
        data = json.loads(path.read_text())
        if not isinstance(data, dict):
            data = {}
    except (OSError, ValueError):
        data = {}
    data[user or current_user()] = {"event_id": mark.event_id, "t": mark.t}
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data))
    os.replace(tmp, path)
