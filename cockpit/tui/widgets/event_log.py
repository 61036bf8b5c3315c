"""`EventLog`: the session's events as one line each, newest at the bottom.

The lines shown are kept as events too, so the `/` filter can redraw the log from them."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable

from textual.content import Content
from textual.events import Resize
from textual.widgets import RichLog

from cockpit.store.models import Event
from cockpit.tui.describe import QUIET_KINDS, TONE_STYLE, describe
from cockpit.tui.format import fmt_clock

MAX_LINES = 500
INDENT = 9  # a line's text starts past "HH:MM:SS "
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
        super().__init__(id=id, max_lines=MAX_LINES, wrap=False, markup=False, highlight=False)
        self.border_title = "events"
        # Events and the cockpit's own lines (Content), newest last, for redrawing.
        self._items: deque[Event | Content] = deque(maxlen=MAX_LINES)
        self._predicate: EventPredicate | None = None
        self._drawn_width = 0

    def _put(self, line: Content) -> None:
        """Write one line, wrapped at the panel's width: RichLog does not wrap `Content`, and
        renders at least 78 columns wide, so a narrower panel would cut an engine's refusal
        mid-word. (Lines keep the width they were written at; a filter redraws them.)"""
        width = self.scrollable_content_region.width
        if not self._size_known or width < 20 or line.cell_length <= width:
            self.write(line)
            return
        first = line.wrap(width)[0]
        self.write(first, width=width)
        rest = line[len(first.plain) :]
        rest = rest[len(rest.plain) - len(rest.plain.lstrip()) :]
        for part in rest.wrap(width - INDENT):  # continued under the text, past the time
            self.write(Content(" " * INDENT) + part, width=width)

    def _shows(self, e: Event) -> bool:
        return self._predicate is None or self._predicate(e, describe(e)[0])

    def add(self, events: Iterable[Event]) -> None:
        for e in events:
            if e.kind not in QUIET_KINDS:
                self._items.append(e)
                if self._shows(e):
                    self._put(event_line(e))

    def reset(self, events: Iterable[Event]) -> None:
        self._items.clear()
        self.clear()
        self.add(events)

    def say(self, text: str, style: str = "$accent") -> None:
        """A line from the cockpit itself (a command sent), not from the record; never
        filtered out."""
        line = Content.styled(f"         {text}", style)
        self._items.append(line)
        self._put(line)

    def set_filter(self, predicate: EventPredicate | None, label: str = "") -> None:
        """Redraw from the kept events, showing only those the predicate accepts."""
        self._predicate = predicate
        self.border_title = f"events ⧩ {label}" if predicate is not None else "events"
        self._redraw()

    def on_resize(self, event: Resize) -> None:
        super().on_resize(event)
        width = self.scrollable_content_region.width
        if width != self._drawn_width:  # wrapped lines keep the width they were written at
            self._redraw()

    def _redraw(self) -> None:
        self._drawn_width = self.scrollable_content_region.width
        self.clear()
        for item in self._items:
            if isinstance(item, Content):
                self._put(item)
            elif self._shows(item):
                self._put(event_line(item))
