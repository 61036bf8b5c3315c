"""`SessionBar`: one line with the session's name, state, budget, best, pending commands and
(in replay) the virtual clock and speed."""

from __future__ import annotations

from textual.content import Content
from textual.widgets import Static

from cockpit.store import figures
from cockpit.tui.format import fmt_ago, fmt_clock, fmt_us, fmt_when
from cockpit.tui.model import SessionModel
from cockpit.tui.spend import fmt_tokens, fmt_usd

STATE_STYLE = {"running": "$success", "paused": "$warning", "created": "$text-muted"}


def bar_content(
    name: str,
    model: SessionModel,
    now: float,
    replay: tuple[bool, float, int, int] | None = None,
) -> Content:
    """`replay`: (playing, speed, delivered, total) when replaying."""
    meta = model.meta
    state = meta.get("state") or "?"
    best = model.best
    budget = meta.get("budget")
    # Most important first: a narrow terminal cuts the end of the line.
    parts: list[tuple[str, str] | str] = [
        (name, "bold"),
        " · ",
        (state, STATE_STYLE.get(state, "$error" if state == "crashed" else "$text-muted")),
    ]
    ended = model.ended
    if ended:
        parts += [": ", (ended, "$warning")]
    if replay is not None:
        playing, speed, done, total = replay
        parts += [
            " · ",
            (f"REPLAY {'▶' if playing else '‖'} {speed:g}× {done}/{total}", "$accent"),
            f" {fmt_clock(model.clock)}",
        ]
    parts += [
        " · ",
        f"{model.evaluations}/{budget if budget is not None else '?'} evals",
        " · best ",
        (f"{fmt_us(best.score_us)} {best.id}" if best else "–", "$success" if best else ""),
    ]
    if figures.tag(best):  # n/c: no comparable time in the session, this one is not either
        parts += [" ", (figures.tag(best), "$warning")]
    spend = model.spend
    if spend.any:
        tokens = f" {fmt_tokens(spend.tokens)} tok" if spend.tokens else ""
        parts += [" · ", (f"{fmt_usd(spend.usd)}{tokens}", "bold")]
    outages = model.outages()
    if outages:
        parts += [" · ", (f"✗ provider down: {','.join(outages)}", "$error")]
    asking = spend.asking if model.engine_active and replay is None else []
    if asking:
        parts += [" · ", (f"⧗ {len(asking)} asking", "$accent")]
    pending = model.pending
    if pending:
        parts += [" · ", (f"⧗ {len(pending)} pending", "$warning")]
    recorded_end = meta.get("recorded_state", state) == state  # not a crash seen by a viewer
    if replay is None and ended and recorded_end and meta.get("state_t") is not None:
        # an ended session's last event only grows older: say when it ended instead
        parts += [" · ", (f"ended {fmt_when(meta['state_t'], now)}", "$text-muted")]
    elif replay is None and model.last_t is not None:
        parts += [" · ", (f"last event {fmt_ago(now - model.last_t)} ago", "$text-muted")]
    parts += [" · ", f"{meta.get('task') or '?'} on {meta.get('device') or '?'}"]
    return Content.assemble(*parts)


class SessionBar(Static):
    DEFAULT_CSS = """
    SessionBar { height: 1; background: $panel; padding: 0 1; }
    """
