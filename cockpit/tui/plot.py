"""Tiny text plots drawn by hand: fixed-scale sparklines (blocks) and a log-scale step plot
(braille, 2×4 dots per cell). No plotting dependency: a cockpit over ssh needs a few dozen
cells, and owning the code keeps the scales honest (fixed ranges, never auto-scaled meters).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

BLOCKS = "▁▂▃▄▅▆▇█"
# Braille dot bits, indexed [x][y] inside a cell (x 0-1 left to right, y 0-3 top to bottom).
_DOTS = ((0x01, 0x02, 0x04, 0x40), (0x08, 0x10, 0x20, 0x80))


def sparkline(values: Sequence[float | None], width: int, lo: float, hi: float) -> str:
    """The last `width` values as block characters on the fixed range [lo, hi], right-aligned.

    Values are clamped to the range, so a meter never rescales under the eye; a missing value
    is a space, so a gap in sampling shows as a gap."""
    if width <= 0:
        return ""
    span = (hi - lo) or 1.0
    cells = []
    for v in list(values)[-width:]:
        if v is None:
            cells.append(" ")
            continue
        frac = (min(max(v, lo), hi) - lo) / span
        cells.append(BLOCKS[min(len(BLOCKS) - 1, int(frac * len(BLOCKS)))])
    return "".join(cells).rjust(width)


class BrailleCanvas:
    """A grid of braille cells addressed in dots; each cell remembers who drew in it last."""

    def __init__(self, width: int, height: int) -> None:
        self.width, self.height = max(0, width), max(0, height)
        self._bits = [[0] * self.width for _ in range(self.height)]
        self._owner: list[list[int | None]] = [[None] * self.width for _ in range(self.height)]

    @property
    def dots_x(self) -> int:
        return self.width * 2

    @property
    def dots_y(self) -> int:
        return self.height * 4

    def set(self, x: int, y: int, owner: int) -> None:
        if 0 <= x < self.dots_x and 0 <= y < self.dots_y:
            cx, cy = x // 2, y // 4
            self._bits[cy][cx] |= _DOTS[x % 2][y % 4]
            self._owner[cy][cx] = owner

    def vline(self, x: int, y0: int, y1: int, owner: int) -> None:
        for y in range(min(y0, y1), max(y0, y1) + 1):
            self.set(x, y, owner)

    def rows(self) -> list[list[tuple[str, int | None]]]:
        """Each row as (character, owner) cells; empty cells are spaces owned by nobody."""
        return [
            [(chr(0x2800 + b) if b else " ", o) for b, o in zip(bits, owners)]
            for bits, owners in zip(self._bits, self._owner)
        ]


@dataclass(frozen=True)
class StepSeries:
    """Best-so-far of one branch: (t, value) points in time order; flat after the last one
    until `end_t` (when the branch stopped; None: until the right edge)."""

    points: tuple[tuple[float, float], ...]
    end_t: float | None = None


@dataclass(frozen=True)
class LogScale:
    lo: float
    hi: float

    @classmethod
    def around(cls, values: Sequence[float]) -> LogScale:
        """A range with a little room above and below; a single value gets ×/÷ 1.5."""
        positive = [v for v in values if v and v > 0]
        if not positive:
            return cls(1.0, 10.0)
        lo, hi = min(positive), max(positive)
        if hi / lo < 1.5:
            mid = math.sqrt(lo * hi)
            return cls(mid / 1.5, mid * 1.5)
        return cls(lo / 1.08, hi * 1.08)

    def frac(self, value: float) -> float:
        """0 at the top (hi) to 1 at the bottom (lo)."""
        value = min(max(value, self.lo), self.hi)
        return (math.log(self.hi) - math.log(value)) / (math.log(self.hi) - math.log(self.lo))


def plot_steps(
    series: Sequence[StepSeries],
    width: int,
    height: int,
    t0: float,
    t1: float,
    scale: LogScale,
) -> BrailleCanvas:
    """Draw step series (owner = index in `series`) on a log y-axis over [t0, t1].

    Sampled per dot column: each column shows the value in force at its time, and a vertical
    stroke joins a step to the previous column so improvements read as drops."""
    canvas = BrailleCanvas(width, height)
    if canvas.dots_x == 0 or canvas.dots_y == 0:
        return canvas
    span = max(t1 - t0, 1e-9)
    ymax = canvas.dots_y - 1
    for owner, s in enumerate(series):
        if not s.points:
            continue
        prev_y: int | None = None
        i = -1
        for x in range(canvas.dots_x):
            t = t0 + span * (x + 1) / canvas.dots_x
            while i + 1 < len(s.points) and s.points[i + 1][0] <= t:
                i += 1
            if i < 0 or (s.end_t is not None and t > s.end_t + span / canvas.dots_x):
                prev_y = None
                continue
            y = round(scale.frac(s.points[i][1]) * ymax)
            if prev_y is not None and prev_y != y:
                canvas.vline(x, prev_y, y, owner)
            canvas.set(x, y, owner)
            prev_y = y
    return canvas


def marker_row(marks: Sequence[tuple[float, str]], width: int, t0: float, t1: float) -> str:
    """One text row with a glyph at the column of each (t, glyph); later marks win a cell."""
    row = [" "] * max(0, width)
    span = max(t1 - t0, 1e-9)
    for t, glyph in marks:
        x = int((t - t0) / span * width)
        if 0 <= x < width:
            row[x] = glyph
        elif x == width and width:
            row[-1] = glyph
    return "".join(row)
