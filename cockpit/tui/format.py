"""Number and time formatting shared by the panels: short, fixed-width friendly, unit-bearing."""

from __future__ import annotations

import time


def fmt_us(us: float | None) -> str:
    """A time in microseconds as the shortest readable string: 812µs, 11.2ms, 1.93s."""
    if us is None:
        return "–"
    if us < 1:
        return f"{us * 1000:.0f}ns"
    if us < 10:
        return f"{us:.2f}µs"
    if us < 1000:
        return f"{us:.0f}µs" if us >= 100 else f"{us:.1f}µs"
    if us < 1e6:
        ms = us / 1000
        return f"{ms:.2f}ms" if ms < 10 else f"{ms:.1f}ms" if ms < 100 else f"{ms:.0f}ms"
    return f"{us / 1e6:.2f}s"


def fmt_ago(seconds: float) -> str:
    """A duration as the two largest units: 45s, 3m12s, 2h13m, 3d4h."""
    s = max(0, int(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    if s < 86400:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    return f"{s // 86400}d{s % 86400 // 3600}h"


def fmt_clock(t: float | None) -> str:
    """Wall-clock time of day (local time zone) of a record timestamp."""
    return "--:--:--" if t is None else time.strftime("%H:%M:%S", time.localtime(t))


def fmt_when(t: float, now: float) -> str:
    """A past moment as a reader wants it: `14:05` today, `Dec 3 14:05` on another day."""
    then, today = time.localtime(t), time.localtime(now)
    if then[:3] == today[:3]:
        return time.strftime("%H:%M", then)
    return time.strftime("%b %-d %H:%M", then)


def fmt_speedup(speedups: dict | None) -> str:
    """The speedup over the reference (or else the best one recorded): 3.2×."""
    if not speedups:
        return ""
    value = speedups.get("reference")
    if not isinstance(value, int | float):
        numbers = [v for v in speedups.values() if isinstance(v, int | float)]
        value = max(numbers) if numbers else None
    return "" if value is None else f"{value:.1f}×" if value < 100 else f"{value:.0f}×"


def clip(text: str, width: int) -> str:
    """Cut to `width` cells with an ellipsis, pad to exactly `width`."""
    if width <= 0:
        return ""
    if len(text) > width:
        return text[: width - 1] + "…"
    return text.ljust(width)
