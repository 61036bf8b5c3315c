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

from cockpit.store import figures
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
    # the session's baseline time: a dotted line across the plot when it is comparable with the
    # plotted times (`reference_drawn`), else only named in the legend, as not comparable
    reference_us: float | None = None
    reference_drawn: bool = False
    comparable: bool = True  # False: the plotted times are not comparable ones (legend: n/c)


# the dotted reference line's owner in the canvas (branches are 0, 1, ...)
REFERENCE = -1


def reference_line(model) -> dict:
    """HistoryData's reference fields for a SessionModel: its baseline time, and whether that
    time may be drawn among the series (both comparable, or both not)."""
    pool = model.history_comparable()
    ref = model.reference()
    if ref is None or not ref.score_us:
        return {"comparable": pool}
    drawn = figures.comparable(ref.summary) == pool
    return {"reference_us": ref.score_us, "reference_drawn": drawn, "comparable": pool}


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
        if d.reference_drawn and d.reference_us:
            values.append(d.reference_us)
        scale = LogScale.around(values)
        canvas = plot_steps(d.series, plot_w, plot_h, d.t0, d.t1, scale)
        if d.reference_drawn and d.reference_us:
            y = round(scale.frac(d.reference_us) * (canvas.dots_y - 1))
            for x in range(0, canvas.dots_x, 3):  # dotted: every third dot
                canvas.set(x, y, REFERENCE)
        for y, row in enumerate(canvas.rows()):
            label = fmt_us(scale.hi) if y == 0 else fmt_us(scale.lo) if y == plot_h - 1 else ""
            parts: list[tuple[str, str] | str] = []
            if label_w:
                parts.append((f"{label:>{label_w - 1}} ", "$text-muted"))
            for char, owner in row:
                if owner == REFERENCE:
                    parts.append((char, "$text-muted"))
                else:
                    parts.append(
                        (char, branch_style(d.colours[owner])) if owner is not None else char
                    )
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
        if not d.comparable:
            parts += [(f"{figures.NC}:", "$warning"), " "]
        for bid, colour, s in zip(d.branch_ids, d.colours, d.series):
            parts.append((f"■ {bid} {fmt_us(s.points[-1][1])}", branch_style(colour)))
            parts.append("  ")
        if d.reference_us:
            if d.reference_drawn:
                parts.append((f"┄ ref {fmt_us(d.reference_us)}", "$text-muted"))
            else:  # not on the same footing as the plotted times: named, never drawn among them
                parts.append((f"ref {fmt_us(d.reference_us)} {figures.NC}", "$text-muted"))
        return Content.assemble(*parts).truncate(width)
