"""`EventLog`: the session's events as one line each, newest at the bottom.

The lines shown are kept as events too, so the `/` filter can redraw the log from them."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable

from textual.content import Content
from textual.widgets import RichLog

from cockpit.store.models import Event
from cockpit.tui.describe import QUIET_KINDS, TONE_STYLE, describe
from cockpit.tui.format import fmt_clock

MAX_LINES = 500
# (event, its text) -> show it?  None: show everything.
EventPredicate = Callable[[Event, str], bool]


def event_line(e: Event) -> Content:
    text, tone = describe(e)
    return Content.assemble((fmt_clock(e.t), "$text-muted"), " ", (text, TONE_STYLE[tone]))


class EventLog(RichLog):
    DEFAULT_CSS = """
    EventLog { height: 1fr; background: $surface; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        # wrapped: an engine's refusal is read whole, not cut at the panel's edge
        super().__init__(id=id, max_lines=MAX_LINES, wrap=True, markup=False, highlight=False)
        self.border_title = "events"
        # Events and the cockpit's own lines (Content), newest last, for redrawing.
        self._items: deque[Event | Content] = deque(maxlen=MAX_LINES)
        self._predicate: EventPredicate | None = None

    def _shows(self, e: Event) -> bool:
        return self._predicate is None or self._predicate(e, describe(e)[0])

    def add(self, events: Iterable[Event]) -> None:
        for e in events:
            if e.kind not in QUIET_KINDS:
                self._items.append(e)
                if self._shows(e):
                    self.write(event_line(e))

    def reset(self, events: Iterable[Event]) -> None:
        self._items.clear()
        self.clear()
        self.add(events)

    def say(self, text: str, style: str = "$accent") -> None:
        """A line from the cockpit itself (a command sent), not from the record; never
        filtered out."""
        line = Content.styled(f"         {text}", style)
        self._items.append(line)
        self.write(line)

    def set_filter(self, predicate: EventPredicate | None, label: str = "") -> None:
        """Redraw from the kept events, showing only those the predicate accepts."""
        self._predicate = predicate
        self.border_title = f"events ⧩ {label}" if predicate is not None else "events"
        self.clear()
        for item in self._items:
            if isinstance(item, Content):
                self.write(item)
            elif self._shows(item):
                self.write(event_line(item))
