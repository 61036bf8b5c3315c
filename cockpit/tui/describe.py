"""One line per event, in words, with a tone: what the event log and the summary say.

Tones are names, not colours: widgets map them to theme variables, so the log follows the
theme and a colourless terminal still reads the glyphs.
"""

from __future__ import annotations

from cockpit.store import events as ev
from cockpit.store import figures
from cockpit.store.commands import typed_name
from cockpit.store.models import Event
from cockpit.tui.format import fmt_us

TONES = ("good", "bad", "warn", "info", "human", "muted")
TONE_STYLE = {
    "good": "$success",
    "bad": "$error",
    "warn": "$warning",
    "info": "$foreground",
    "human": "$accent",
    "muted": "$text-muted",
}
# Bookkeeping the log leaves out: each is implied by the event after it.
QUIET_KINDS = frozenset({ev.PROPOSAL_REQUESTED, ev.CANDIDATE_COMMITTED})


def first_reason(payload: dict) -> str:
    """The first reason's message, prefixed by its kind when that differs from the verdict."""
    reasons = payload.get("reasons") or []
    if reasons and isinstance(reasons[0], dict):
        r = reasons[0]
        kind = r.get("kind", "")
        prefix = f"{kind}: " if kind and kind != payload.get("status") else ""
        return f"{prefix}{r.get('message', '')}"
    return ""


def command_target(kind: str | None, args: dict | None) -> str:
    """`pause b2`, `fork c0005`, `set-model gpt-x (all)`: a command in a few words, named as a
    user types it."""
    args = args or {}
    target = args.get("branch") or args.get("candidate") or ""
    extra = ""
    if kind == "set_model":
        extra = f" {args.get('model')}" + ("" if args.get("branch") else " (all)")
    elif kind == "set_budget":
        extra = f" {args.get('budget')}"
    elif kind == "redirect":
        extra = f" ({args.get('mode', 'steer')})"
    return f"{typed_name(kind or '?')}{' ' + target if target else ''}{extra}"


def _cost(payload: dict) -> str:
    """` $0.012` when the event's usage says what its model calls cost, else nothing."""
    usage = payload.get("usage")
    cost = usage.get("cost_usd") if isinstance(usage, dict) else None
    return f" ${cost:.3f}" if isinstance(cost, int | float) and cost > 0 else ""


def on_node(p: dict) -> str:
    """' on HOST[ GPU g]' for a verdict from a Ray node (`--backend ray`), else ''."""
    node = p.get("node")
    if not isinstance(node, dict):
        return ""
    gpu = f" GPU {node['gpu']}" if node.get("gpu") else ""
    return f" on {node.get('host') or node.get('ip') or '?'}{gpu}"


def describe(e: Event) -> tuple[str, str]:
    """(text, tone) for one event. Unknown kinds are shown by name, never dropped."""
    p, b, c = e.payload, e.branch or "", e.candidate or ""
    k = e.kind
    if k == ev.BEST_CHANGED:
        prev = p.get("previous_us")
        gain = f" (was {fmt_us(prev)})" if prev else ""
        time = figures.labelled(fmt_us(p.get("score_us")), p)
        return f"★ {b} new best {p.get('candidate', c)} {time}{gain}", "good"
    if k == ev.EVALUATION_FINISHED:
        status = p.get("status", "?")
        if status == "ok":
            tier = " (screened, not promoted)" if p.get("tier") == "screened" else ""
            nc = f" {figures.NC}" if not figures.comparable(p) else ""
            return f"{c} {b} ok {fmt_us(p.get('score_us'))}{nc}{tier}{on_node(p)}", "info"
        if status == "duplicate":
            return f"{c} {b} duplicate", "muted"
        return f"✗ {c} {b} {status}{on_node(p)}: {first_reason(p)}", "bad"
    if k == ev.CANDIDATE_PROPOSED:
        note = p.get("note")
        return f"{c} {b} proposed{f' ({note})' if note else ''}{_cost(p)}", "muted"
    if k == "proposal_cancelled":
        return f"⊘ {b} proposal cancelled: {p.get('reason') or '?'}", "muted"
    if k == "proposal_discarded":
        return f"⊘ {b} late reply discarded{_cost(p)}", "muted"
    if k == ev.EVALUATION_STARTED:
        gpu = f" on GPU {p['gpu']}" if p.get("gpu") not in (None, "") else ""
        return f"{c} {b} evaluating{gpu}", "muted"
    if k == ev.PROPOSAL_FAILED:
        return f"✗ {b} no proposal: {p.get('reason', '')}{_cost(p)}", "bad"
    if k == ev.PLATEAU_DETECTED:
        why = p.get("reason") or f"{p.get('evaluations_since_best', '?')} evaluations without gain"
        return f"≈ {b} plateau: {why}", "warn"
    if k == ev.ESCALATED:
        to = p.get("family") if p.get("mode") == "family" else p.get("model") or p.get("mode")
        return f"↑ {b} escalated ({p.get('mode')}) → {to}", "warn"
    if k == ev.BRANCH_STATE:
        reason = p.get("reason")
        return f"{b} {p.get('state')}{f' ({reason})' if reason else ''}", "warn"
    if k == ev.BRANCH_CREATED:
        return f"+ {b} created ({p.get('family')})", "info"
    if k == ev.BRANCH_FORKED:
        return f"⑂ {b} forked from {p.get('from_candidate')} ({p.get('family')})", "info"
    if k == ev.COMMAND_RECEIVED:
        return (
            f"⌘ {command_target(p.get('kind'), p.get('args'))} from {p.get('source') or '?'}",
            "human",
        )
    if k == ev.COMMAND_ACKED:
        mark = "✓" if p.get("ok") else "✗"
        kind = typed_name(str(p.get("kind") or "?"))
        return f"{mark} {kind}: {p.get('message', '')}", "human" if p.get("ok") else "bad"
    if k == ev.SESSION_STATE:
        reason = p.get("reason")
        return f"session {p.get('state')}{f' ({reason})' if reason else ''}", "warn"
    if k == ev.SESSION_STARTED:
        return f"engine started (pid {p.get('pid')} on {p.get('host')})", "info"
    if k == ev.SESSION_CREATED:
        return f"session {p.get('name')} created ({p.get('task')} on {p.get('device')})", "info"
    if k == ev.BUDGET_CHANGED:
        text = f"budget {p.get('budget')} evaluations"
        if "usd" in p or "tokens" in p:  # LLM caps (None: no cap)
            usd, tokens = p.get("usd"), p.get("tokens")
            text += f", LLM cap {'none' if usd is None else f'${usd:.2f}'}"
            text += f" / {'none' if tokens is None else f'{tokens:,} tokens'}"
        return text, "info"
    if k == ev.MODEL_CHANGED:
        return f"model {p.get('model')} for {b or 'all branches'}", "info"
    if k == ev.ERROR:
        return f"error: {p.get('message', '')}", "bad"
    if k == ev.NOTE:
        return str(p.get("text", "")), "muted"
    return f"{k} {b} {c}".strip(), "muted"


# Branch colours, by the branch's position in the beam: the history plot and the beam agree.
BRANCH_STYLES = ("$primary", "$success", "$warning", "$accent", "$error", "$secondary")


def branch_style(index: int) -> str:
    return BRANCH_STYLES[index % len(BRANCH_STYLES)]


STATE_GLYPH = {
    "running": "▶",
    "paused": "‖",
    "retired": "✕",
    "plateau": "≈",
    "done": "■",
    "stopped": "■",
    "crashed": "✗",
}
STATE_STYLE = {
    "running": "$success",
    "paused": "$warning",
    "plateau": "$warning",
    "retired": "$text-muted",
    "crashed": "$error",
}


def verdict_style(status: str | None) -> str:
    if status == "ok":
        return "$success"
    if status in (None, "proposed", "evaluating", "duplicate"):
        return "$text-muted"
    return "$error"
