"""`EventLog`: the session's events as one line each, newest at the bottom."""

from __future__ import annotations

from collections.abc import Iterable

from textual.content import Content
from textual.widgets import RichLog

from cockpit.store.models import Event
from cockpit.tui.describe import QUIET_KINDS, TONE_STYLE, describe
from cockpit.tui.format import fmt_clock

MAX_LINES = 500


def event_line(e: Event) -> Content:
    text, tone = describe(e)
    return Content.assemble((fmt_clock(e.t), "$text-muted"), " ", (text, TONE_STYLE[tone]))


class EventLog(RichLog):
    DEFAULT_CSS = """
    EventLog { height: 1fr; background: $surface; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, max_lines=MAX_LINES, wrap=False, markup=False, highlight=False)
        self.border_title = "events"

    def add(self, events: Iterable[Event]) -> None:
        for e in events:
            if e.kind not in QUIET_KINDS:
                self.write(event_line(e))

    def reset(self, events: Iterable[Event]) -> None:
        self.clear()
        self.add(events)

    def say(self, text: str, style: str = "$accent") -> None:
        """A line from the cockpit itself (a command sent), not from the record."""
        self.write(Content.styled(f"         {text}", style))
