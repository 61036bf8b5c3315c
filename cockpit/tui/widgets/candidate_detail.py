"""`CandidateDetail`: one candidate's code, diff against its parent, verifier feedback,
per-shape table and profile census, as tabs."""

from __future__ import annotations

from typing import Any

from rich.syntax import Syntax
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.widgets import DataTable, Static, TabbedContent, TabPane

from cockpit.render import collapse_flags
from cockpit.tui.describe import verdict_style
from cockpit.tui.format import fmt_speedup, fmt_us
from cockpit.tui.sources import CandidateDetail as Detail
from cockpit.tui.spend import fmt_tokens, fmt_usd, usage_of

TABS = ("code", "diff", "feedback", "shapes", "profile")
SYNTAX_THEME = "ansi_dark"  # ANSI colours: follows the terminal's palette


def title_line(d: Detail) -> Content:
    c = d.candidate
    parts: list[tuple[str, str] | str] = [
        (c.id, "bold"),
        f" · {c.branch or '?'} · {c.family or '?'}",
        " · ",
        (c.status or "?", verdict_style(c.status)),
        " (screened only)" if c.screened else "",
        f" · score {fmt_us(c.score_us)} · geomean {fmt_us(c.geomean_us)}",
    ]
    speedup = fmt_speedup(c.summary.get("speedups"))
    if speedup:
        parts.append(f" · {speedup} ref")
    parts.append(f" · parent {c.parent or 'none (seed)'}")
    if c.model:
        parts.append(f" · {c.model}")
    usd, tokens, _ = usage_of(d.proposal or {})
    if usd or tokens:
        parts.append((f" · {fmt_usd(usd)} {fmt_tokens(tokens)} tok", "$text-muted"))
    return Content.assemble(*parts)


def feedback_text(d: Detail) -> Content:
    """What the verifier said, as the agent would read it."""
    r = d.result
    lines: list[Content] = []
    note = (d.proposal or {}).get("note")
    if note:
        lines.append(Content.styled(f"proposal: {note}", "$text-muted"))
    if r is None:
        lines.append(Content.styled("not evaluated yet", "$text-muted"))
        return Content("\n").join(lines)
    status = r.get("status", "?")
    lines.append(Content.assemble("verdict ", (status, "bold " + verdict_style(status))))
    if r.get("tier") in ("screened", "promoted"):
        why = (r.get("promotion") or {}).get("why", "")
        lines.append(Content.styled(f"{r['tier']}: {why}", "$text-muted"))
    for reason in r.get("reasons") or []:
        where = f" [{reason.get('shape')}]" if reason.get("shape") else ""
        stage = f"{reason.get('stage')}/" if reason.get("stage") else ""
        lines.append(
            Content.assemble(
                ("✗ ", "$error"),
                (f"{stage}{reason.get('kind', '')}{where}: ", "bold"),
                str(reason.get("message", "")),
            )
        )
    for flag in collapse_flags(r.get("flags") or []):
        lines.append(Content.styled(f"! {flag}", "$warning"))
    extra = []
    if r.get("roofline_pct") is not None:
        extra.append(f"roofline {r['roofline_pct']:.2f}%")
    if r.get("hidden_geomean_us") is not None:
        extra.append(f"hidden geomean {fmt_us(r['hidden_geomean_us'])}")
    if r.get("wall_s") is not None:
        extra.append(f"evaluated in {r['wall_s']:.1f}s")
    if r.get("mode"):
        extra.append(f"mode {r['mode']}")
    if extra:
        lines.append(Content.styled(" · ".join(extra), "$text-muted"))
    return Content("\n").join(lines)


def shape_rows(result: dict[str, Any] | None) -> list[tuple[str, ...]]:
    rows = []
    for s in (result or {}).get("shapes") or []:
        t = s.get("timing") or {}
        err = s.get("error") or {}
        rows.append(
            (
                str(s.get("shape", "")),
                str(s.get("set", "")),
                "ok" if s.get("ok") else "✗",
                fmt_us(t.get("median_us")) if t else "–",
                f"{t['sem_pct']:.1f}%" if t.get("sem_pct") is not None else "",
                fmt_us(s.get("floor_us")),
                f"{s['roofline_pct']:.1f}%" if s.get("roofline_pct") is not None else "",
                str(s.get("bound", "")),
                f"{err['tol_ratio']:.2g}" if err.get("tol_ratio") is not None else "",
            )
        )
    return rows


SHAPE_COLUMNS = ("shape", "set", "ok", "median", "±sem", "floor", "roofline", "bound", "err/tol")


def profile_text(result: dict[str, Any] | None) -> Content:
    p = (result or {}).get("profile") or {}
    if not p:
        return Content.styled("no profile recorded", "$text-muted")
    groups = ", ".join(f"{k} {v}" for k, v in (p.get("groups") or {}).items())
    lines = [
        Content.assemble(
            ("launches per call ", "bold"),
            str(p.get("launches", "?")),
            f"  ({groups})" if groups else "",
        ),
        Content.styled(f"{p.get('unit', '')} at {p.get('shape', '?')}", "$text-muted"),
    ]
    for k in p.get("top") or []:
        lines.append(
            Content(
                f"{fmt_us(k.get('us')):>9}  {k.get('calls', '?'):>4}×  {k.get('group', ''):<7} {k.get('name', '')}"
            )
        )
    for key in ("graph_breaks", "recompiles"):
        if p.get(key):
            lines.append(Content.styled(f"{key.replace('_', ' ')}: {p[key]}", "$warning"))
    return Content("\n").join(lines)


class CandidateDetail(Vertical):
    DEFAULT_CSS = """
    CandidateDetail { height: 1fr; }
    CandidateDetail > #detail-title { height: 1; padding: 0 1; }
    CandidateDetail TabPane { padding: 0; }
    CandidateDetail VerticalScroll { height: 1fr; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.border_title = "candidate"
        self.detail: Detail | None = None

    def compose(self) -> ComposeResult:
        yield Static(
            Content.styled("select a candidate in the beam", "$text-muted"), id="detail-title"
        )
        with TabbedContent(id="detail-tabs"):
            for tab in TABS:
                with TabPane(tab, id=f"tab-{tab}"):
                    if tab == "shapes":
                        yield DataTable(id="detail-shapes", cursor_type="row", zebra_stripes=True)
                    else:
                        with VerticalScroll():
                            yield Static(id=f"detail-{tab}")

    def on_mount(self) -> None:
        self.query_one("#detail-shapes", DataTable).add_columns(*SHAPE_COLUMNS)

    def show_tab(self, tab: str) -> None:
        self.query_one("#detail-tabs", TabbedContent).active = f"tab-{tab}"

    def show(self, d: Detail | None) -> None:
        self.detail = d
        if d is None:
            return
        self.border_title = f"candidate {d.candidate.id}"
        self.query_one("#detail-title", Static).update(title_line(d))
        code = self.query_one("#detail-code", Static)
        if d.source is None:
            code.update(Content.styled("source not recorded", "$text-muted"))
        else:
            code.update(Syntax(d.source, "python", theme=SYNTAX_THEME, line_numbers=True))
        diff = self.query_one("#detail-diff", Static)
        if d.diff:
            diff.update(Syntax(d.diff, "diff", theme=SYNTAX_THEME))
        else:
            why = "no parent (a seed)" if not d.candidate.parent else "identical to its parent"
            diff.update(Content.styled(why, "$text-muted"))
        self.query_one("#detail-feedback", Static).update(feedback_text(d))
        self.query_one("#detail-profile", Static).update(profile_text(d.result))
        table = self.query_one("#detail-shapes", DataTable)
        table.clear()
        table.add_rows(shape_rows(d.result))
