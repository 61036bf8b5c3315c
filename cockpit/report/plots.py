"""The report's charts as SVG text (matplotlib, imported here and only when a chart is drawn).

Figures are built with `matplotlib.figure.Figure`, never pyplot, so drawing keeps no global
state; the backend is Agg (no display is ever opened) and figures are written as SVG with text
kept as text (`svg.fonttype = none`: smaller, selectable, searchable in the page), a fixed hash
salt and no date, so the same session gives the same bytes. Each SVG's ids get a prefix of its
own, so several can sit inline in one HTML page without their clip paths colliding.
"""

from __future__ import annotations

import io
import re
from collections.abc import Callable, Sequence
from typing import Any

from cockpit.render import fmt_us
from cockpit.report.data import Evaluation, Mark, Report, SpendPoint

# Colors of the kinds of marks (human actions, plateaus, ...) on every chart and in the timeline.
MARK_COLORS = {
    "human": "#d62728",
    "plateau": "#7f7f7f",
    "escalation": "#9467bd",
    "model": "#17becf",
    "fork": "#2ca02c",
    "session": "#8c564b",
}
MARK_NAMES = {
    "human": "human action",
    "plateau": "plateau",
    "escalation": "escalation",
    "model": "model switch",
    "fork": "fork",
    "session": "session state",
}
PALETTE = (
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#d62728",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#bcbd22",
    "#17becf",
    "#7f7f7f",
    "#aec7e8",
    "#ffbb78",
    "#98df8a",
    "#ff9896",
    "#c5b0d5",
    "#c49c94",
)
# Families get colors of their own (Dark2, then Set1), so a family is never read as a branch.
FAMILY_PALETTE = (
    "#1b9e77",
    "#d95f02",
    "#7570b3",
    "#e7298a",
    "#66a61e",
    "#e6ab02",
    "#a6761d",
    "#666666",
    "#e41a1c",
    "#377eb8",
    "#4daf4a",
    "#984ea3",
)
MAX_NUMBERED_MARKS = 60  # past this many, marks are drawn as lines without their numbers


def group_colors(keys: Sequence[str], palette: Sequence[str] = PALETTE) -> dict[str, str]:
    """A color for each branch or family, in order of first appearance (stable per session)."""
    out: dict[str, str] = {}
    for k in keys:
        if k not in out:
            out[k] = palette[len(out) % len(palette)]
    return out


def _matplotlib() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    return matplotlib


def _svg(fig: Any, prefix: str) -> str:
    """The figure as an SVG element for inline use: no XML prolog, comments or metadata, and
    every id (and every reference to one) prefixed with `prefix`."""
    buf = io.StringIO()
    fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None, "Format": None})
    text = buf.getvalue()
    text = text[text.index("<svg") :]
    text = re.sub(r"<!--.*?-->", "", text, flags=re.S)
    text = re.sub(r"<metadata>.*?</metadata>", "", text, flags=re.S)
    text = re.sub(r'\bid="([^"]+)"', rf'id="{prefix}-\1"', text)
    text = re.sub(r"url\(#([^)]+)\)", rf"url(#{prefix}-\1)", text)
    text = re.sub(r'href="#([^"]+)"', rf'href="#{prefix}-\1"', text)
    return text.strip()


def _rc() -> dict[str, Any]:
    return {
        "svg.fonttype": "none",
        "svg.hashsalt": "cockpit-report",
        "font.size": 9,
        "axes.titlesize": 10,
        "axes.spines.top": False,
        "axes.spines.right": False,
        "axes.grid": True,
        "grid.alpha": 0.25,
        "legend.fontsize": 8,
        "legend.frameon": False,
    }


def time_axis(report: Report) -> tuple[float, str, float]:
    """(start time, unit name, seconds per unit) for wall-time axes: minutes up to three hours,
    hours past that."""
    start = report.start_t or (report.evaluations[0].t if report.evaluations else 0.0)
    end = report.end_t or start
    if end - start > 3 * 3600:
        return start, "hours", 3600.0
    return start, "minutes", 60.0


def _clusters(
    marks: Sequence[tuple[int, Mark]], x_of: Callable[[Mark], float], width: float
) -> list[list[tuple[int, Mark, float]]]:
    """Runs of marks (in time order) that fall within `width` of the run's first one."""
    out: list[list[tuple[int, Mark, float]]] = []
    for number, m in marks:
        x = x_of(m)
        if out and abs(x - out[-1][0][2]) < width:
            out[-1].append((number, m, x))
        else:
            out.append([(number, m, x)])
    return out


def _draw_marks(ax: Any, marks: Sequence[tuple[int, Mark]], x_of: Callable[[Mark], float]) -> None:
    """A dashed line per mark and its number above the axes. Numbers of marks that fall close
    together are stacked (up to three); a larger bunch shows as one range ("1-7")."""
    from matplotlib.transforms import blended_transform_factory

    trans = blended_transform_factory(ax.transData, ax.transAxes)
    for _number, m in marks:
        color = MARK_COLORS.get(m.kind, "#444444")
        ax.axvline(x_of(m), color=color, lw=0.9, ls=(0, (3, 2)), alpha=0.8, zorder=1)
    if len(marks) > MAX_NUMBERED_MARKS:
        return
    span = ax.get_xlim()
    for run in _clusters(marks, x_of, (span[1] - span[0]) * 0.025):
        if len(run) <= 3:
            badges = [(str(n), MARK_COLORS.get(m.kind, "#444444"), x) for n, m, x in run]
        else:
            badges = [(f"{run[0][0]}-{run[-1][0]}", "#444444", run[0][2])]
        for level, (text, color, x) in enumerate(badges):
            ax.text(
                x,
                1.0 + 0.055 * level,
                text,
                transform=trans,
                ha="center",
                va="bottom",
                fontsize=7,
                color="white",
                bbox={"boxstyle": "round,pad=0.18", "fc": color, "ec": "none"},
                zorder=5,
                clip_on=False,
            )


def _series(
    ax: Any,
    report: Report,
    key: Callable[[Evaluation], str | None],
    colors: dict[str, str],
    x_of: Callable[[Evaluation], float],
) -> None:
    from matplotlib.transforms import blended_transform_factory

    fail_y = blended_transform_factory(ax.transData, ax.transAxes)
    groups: dict[str, list[Evaluation]] = {k: [] for k in colors}  # the legend in color order
    for e in report.evaluations:
        groups.setdefault(key(e) or "?", []).append(e)
    groups = {k: v for k, v in groups.items() if v}
    unranked = False
    for name, evals in groups.items():
        color = colors.get(name, "#444444")
        ranked = [e for e in evals if report.ranked(e)]
        xs = [x_of(e) for e in ranked]
        ys = [e.score_us for e in ranked]
        if ranked:
            ax.scatter(xs, ys, s=24, color=color, alpha=0.55, lw=0, zorder=3)
            best_x, best_y, best = [], [], float("inf")
            for x, y in zip(xs, ys):
                if y < best:
                    if best_x:  # hold the previous best up to this point: a step line
                        best_x.append(x)
                        best_y.append(best)
                    best = y
                    best_x.append(x)
                    best_y.append(y)
            # a branch's best stands until the session's last evaluation (a branch with one
            # passing evaluation is a line too, not a lone dot)
            end_x = max(x_of(e) for e in report.evaluations)
            if end_x > best_x[-1]:
                best_x.append(end_x)
                best_y.append(best)
            ax.plot(best_x, best_y, color=color, lw=1.8, zorder=4, label=name)
        else:
            why = "no comparable time" if any(e.scored for e in evals) else "no passing time"
            ax.plot([], [], color=color, lw=1.8, label=f"{name} ({why})")
        other = [e for e in evals if e.scored and not report.ranked(e)]
        if other:
            ax.scatter(
                [x_of(e) for e in other],
                [e.score_us for e in other],
                s=22,
                facecolors="none",
                edgecolors=color,
                lw=1.0,
                zorder=3,
            )
            unranked = True
        failed = [e for e in evals if not e.scored]
        if failed:
            ax.scatter(
                [x_of(e) for e in failed],
                [0.03] * len(failed),
                transform=fail_y,
                marker="x",
                s=18,
                color=color,
                lw=1.1,
                zorder=3,
                clip_on=False,
            )
    if unranked:  # one neutral legend entry for the hollow circles of every group
        ax.scatter([], [], s=22, facecolors="none", edgecolors="#555555", label="not comparable")
    if any(not e.scored for e in report.evaluations):
        ax.scatter([], [], marker="x", s=18, color="#555555", label="did not pass")


def _minor_labels(ax: Any) -> Callable[[float, Any], str]:
    """Minor ticks of a log axis: all labelled within one decade, only 2x and 5x beyond."""

    def label(y: float, _pos: Any) -> str:
        lo, hi = ax.get_ylim()
        if hi / max(lo, 1e-30) <= 10:
            return fmt_us(y)
        lead = f"{y:.0e}"[0]
        return fmt_us(y) if lead in "25" else ""

    return label


def progress_svg(
    report: Report, numbered_marks: Sequence[tuple[int, Mark]], branch_colors: dict[str, str]
) -> str | None:
    """Best score so far against evaluations and against wall time, per branch (top row) and
    per family (bottom row), log scale, with the numbered marks. None without evaluations."""
    if not report.evaluations:
        return None
    mpl = _matplotlib()
    from matplotlib.figure import Figure
    from matplotlib.ticker import FuncFormatter, MaxNLocator

    us_formatter = FuncFormatter(lambda y, _pos: fmt_us(y))
    start, unit, per = time_axis(report)
    times = [e.t for e in report.evaluations]

    def eval_x(e: Evaluation) -> float:
        return float(e.n)

    def wall_x(e: Evaluation) -> float:
        return (e.t - start) / per

    def mark_eval_x(m: Mark) -> float:
        return sum(1 for t in times if t <= m.t) + 0.5

    def mark_wall_x(m: Mark) -> float:
        return (m.t - start) / per

    family_colors = group_colors([e.family or "?" for e in report.evaluations], FAMILY_PALETTE)
    rows = (
        ("branch", lambda e: e.branch, branch_colors),
        ("family", lambda e: e.family, family_colors),
    )
    any_ranked = any(report.ranked(e) for e in report.evaluations)
    with mpl.rc_context(_rc()):
        fig = Figure(figsize=(13, 8.4), layout="constrained")
        axes = fig.subplots(2, 2, sharey=True)
        for r, (what, key, colors) in enumerate(rows):
            for c, (xlabel, x_of, m_x) in enumerate(
                (
                    ("evaluations", eval_x, mark_eval_x),
                    (f"wall time ({unit} since the start)", wall_x, mark_wall_x),
                )
            ):
                ax = axes[r][c]
                _series(ax, report, key, colors, x_of)
                if any_ranked:
                    ax.set_yscale("log")
                    ax.yaxis.set_major_formatter(us_formatter)
                    ax.yaxis.set_minor_formatter(FuncFormatter(_minor_labels(ax)))
                ax.set_xlabel(xlabel)
                if c == 0:
                    ax.set_ylabel(f"best score per {what}\n(lower is better)")
                else:
                    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), title=what)
                if c == 0:
                    ax.set_xlim(0.5, max(len(times), 1) + 0.5)
                    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
                else:
                    ax.set_xlim(left=min(0.0, ax.get_xlim()[0]))
                _draw_marks(ax, numbered_marks, m_x)
        if not report.comparable_pool:
            fig.suptitle("every time here is " + "not comparable", color="#b35900")
        return _svg(fig, "progress")


def spend_svg(report: Report, branch_colors: dict[str, str]) -> str | None:
    """Cumulative model spend (USD, and tokens) over wall time per branch and in total; None
    when the session spent nothing (an offline tuner)."""
    points: list[SpendPoint] = report.spend
    if not points:
        return None
    mpl = _matplotlib()
    from matplotlib.figure import Figure

    start, unit, per = time_axis(report)
    end_x = ((report.end_t or points[-1].t) - start) / per
    has_usd = any(p.usd for p in points)
    panels = (("usd", "spend (USD, cumulative)"),) if has_usd else ()
    panels += (("tokens", "tokens (cumulative)"),)
    with mpl.rc_context(_rc()):
        fig = Figure(figsize=(13, 3.4), layout="constrained")
        axes = fig.subplots(1, len(panels), squeeze=False)[0]
        for ax, (field_name, ylabel) in zip(axes, panels):
            by_branch: dict[str, list[SpendPoint]] = {}
            for p in points:
                by_branch.setdefault(p.branch or "session", []).append(p)
            series = [("total", points, "#222222", "--")]
            series += [(b, ps, branch_colors.get(b, "#444444"), "-") for b, ps in by_branch.items()]
            for name, ps, color, ls in series:
                xs, ys, acc = [0.0], [0.0], 0.0
                for p in ps:
                    x = (p.t - start) / per
                    xs += [x, x]
                    ys += [acc, acc + getattr(p, field_name)]
                    acc += getattr(p, field_name)
                xs.append(max(end_x, xs[-1]))
                ys.append(acc)
                ax.plot(xs, ys, color=color, ls=ls, lw=1.6, label=name)
            ax.set_xlabel(f"wall time ({unit} since the start)")
            ax.set_ylabel(ylabel)
            ax.set_xlim(left=0)
            ax.set_ylim(bottom=0)
        axes[-1].legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), title="branch")
        return _svg(fig, "spend")
