"""`HistoryPlot`: best-so-far time per branch over the session, log scale, in braille.

Markers under the plot: ▲ a human command took effect, ◆ a family switch or a fork. Redrawn
when its data or size changes, never on a timer.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from textual.content import Content
from textual.reactive import reactive
from textual.widget import Widget

from cockpit.tui.describe import branch_style
from cockpit.tui.format import fmt_ago, fmt_clock, fmt_us
from cockpit.tui.plot import LogScale, StepSeries, marker_row, plot_steps

LABEL_WIDTH = 8
# What the marker row's glyphs mean, in the panel's bottom border while any is shown (the short
# one where the long one does not fit).
MARK_LEGEND = "▲ command took effect · ◆ family switch or fork"
MARK_LEGEND_SHORT = "▲ cmd ◆ fork/switch"


@dataclass(frozen=True)
class HistoryData:
    branch_ids: tuple[str, ...]
    colours: tuple[int, ...]  # each branch's index in the beam (its colour)
    series: tuple[StepSeries, ...]
    marks: tuple[tuple[float, str], ...]
    t0: float
    t1: float
    live: bool = True


def quantize_end(t0: float, t1: float, steps: int = 200) -> float:
    """Round the right edge up to 1/steps of the span, so a live plot is redrawn only when
    the axis has moved visibly, not on every poll."""
    resolution = max(1.0, (t1 - t0) / steps)
    return math.ceil(t1 / resolution) * resolution


class HistoryPlot(Widget, can_focus=True):
    DEFAULT_CSS = """
    HistoryPlot { height: 1fr; }
    """

    data: reactive[HistoryData | None] = reactive(None)

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.border_title = "best so far (log)"

    def watch_data(self, data: HistoryData | None) -> None:
        self._mark_legend()

    def on_resize(self) -> None:
        self._mark_legend()

    def _mark_legend(self) -> None:
        legend = MARK_LEGEND if self.size.width >= len(MARK_LEGEND) + 4 else MARK_LEGEND_SHORT
        self.border_subtitle = legend if self.data is not None and self.data.marks else ""

    def render(self) -> Content:
        width, height = self.size.width, self.size.height
        d = self.data
        if d is None or not d.series:
            return Content.styled("no passing candidate yet", "$text-muted")
        lines: list[Content] = [self._legend(d, width)]
        label_w = LABEL_WIDTH if width >= 40 else 0  # narrow: the range goes in the axis row
        plot_w = max(1, width - label_w)
        plot_h = max(1, height - 3)
        values = [v for s in d.series for _, v in s.points]
        scale = LogScale.around(values)
        canvas = plot_steps(d.series, plot_w, plot_h, d.t0, d.t1, scale)
        for y, row in enumerate(canvas.rows()):
            label = fmt_us(scale.hi) if y == 0 else fmt_us(scale.lo) if y == plot_h - 1 else ""
            parts: list[tuple[str, str] | str] = []
            if label_w:
                parts.append((f"{label:>{label_w - 1}} ", "$text-muted"))
            for char, owner in row:
                parts.append((char, branch_style(d.colours[owner])) if owner is not None else char)
            lines.append(Content.assemble(*parts))
        if height >= 4:
            marks = marker_row(d.marks, plot_w, d.t0, d.t1)
            lines.append(Content.assemble(" " * label_w, (marks, "$accent")))
        if height >= 3:
            left = f"-{fmt_ago(d.t1 - d.t0)}"
            right = "now" if d.live else fmt_clock(d.t1)
            if not label_w:
                right = f"{fmt_us(scale.lo)}–{fmt_us(scale.hi)} {right}"
            gap = max(1, plot_w - len(left) - len(right))
            lines.append(Content.styled(" " * label_w + left + " " * gap + right, "$text-muted"))
        return Content("\n").join(lines[:height])

    def _legend(self, d: HistoryData, width: int) -> Content:
        parts: list[tuple[str, str] | str] = []
        for bid, colour, s in zip(d.branch_ids, d.colours, d.series):
            parts.append((f"■ {bid} {fmt_us(s.points[-1][1])}", branch_style(colour)))
            parts.append("  ")
        return Content.assemble(*parts).truncate(width)
