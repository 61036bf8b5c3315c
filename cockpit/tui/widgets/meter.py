"""`Meter`: one telemetry quantity as label, fixed-scale sparkline and current value, one line."""

from __future__ import annotations

from textual.content import Content
from textual.reactive import reactive
from textual.widget import Widget

from cockpit.tui.plot import sparkline

LABEL_WIDTH = 6
VALUE_WIDTH = 8


class Meter(Widget):
    """A one-line meter on a fixed range [lo, hi] (never auto-scaled: 40% looks like 40%)."""

    DEFAULT_CSS = """
    Meter { height: 1; }
    """

    values: reactive[tuple[float | None, ...]] = reactive(tuple)
    text: reactive[str] = reactive("")

    def __init__(self, label: str, lo: float, hi: float, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.label, self.lo, self.hi = label, lo, hi

    def show(self, values: tuple[float | None, ...], text: str) -> None:
        # A new sample that leaves the line as it is drawn (same blocks, same reading) is kept
        # without a repaint: each repaint is composited onto the terminal.
        if text == self.text and self._spark(values) == self._spark(self.values):
            self.set_reactive(Meter.values, values)
            return
        self.values, self.text = values, text

    def _spark(self, values: tuple[float | None, ...]) -> str:
        spark_width = max(0, self.size.width - LABEL_WIDTH - VALUE_WIDTH)
        return sparkline(values, spark_width, self.lo, self.hi)

    def render(self) -> Content:
        spark = self._spark(self.values)
        return Content.assemble(
            (self.label[: LABEL_WIDTH - 1].ljust(LABEL_WIDTH), "$text-muted"),
            (spark, "$accent"),
            (self.text[: VALUE_WIDTH - 1].rjust(VALUE_WIDTH), "bold"),
        )
