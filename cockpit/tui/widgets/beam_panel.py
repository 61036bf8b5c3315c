"""`BeamPanel`: the beam as a list, branches with their latest candidates under them.

An `OptionList` rather than a `DataTable`: rows carry theme-styled `Content` and stable ids
(`b:<branch>`, `c:<candidate>`), so the highlight survives every refresh. Columns shrink with
the panel: family and model disappear first, then the words of the state.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from textual import on
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.content import Content
from textual.message import Message
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option, OptionDoesNotExist

from cockpit.store import figures
from cockpit.store.models import Branch, Candidate
from cockpit.store.states import branch_state
from cockpit.tui.describe import STATE_GLYPH, STATE_STYLE, branch_style, verdict_style
from cockpit.tui.filter import NO_FILTER, Filter
from cockpit.tui.format import clip, fmt_speedup, fmt_us
from cockpit.tui.model import branch_outage
from cockpit.tui.spend import BranchSpend, Spend, fmt_tokens, fmt_usd

CANDIDATES_PER_BRANCH = 4
MATCHES_PER_BRANCH = 50  # while filtering: the newest matching candidates of each branch
WIDE = 58  # inner width from which the state is spelled out and the model gets a column


@dataclass(frozen=True)
class Columns:
    name: int = 8
    state: int = 9
    family: int = 0
    model: int = 0
    verdict: int = 9
    score: int = 8
    speedup: int = 6

    @classmethod
    def for_width(cls, width: int) -> Columns:
        if width >= WIDE:
            rest = width - (8 + 12 + 8 + 8 + 6) - 6  # family and model share the rest
            model = min(16, rest * 2 // 5) if rest >= 26 else 0
            return cls(
                state=12, verdict=8, family=max(6, rest - model - (1 if model else 0)), model=model
            )
        family = width - (7 + 2 + 6 + 7) - 4
        return cls(
            name=7, state=2, verdict=6, score=7, speedup=0, family=family if family >= 6 else 0
        )


def _cells(cols: Columns, cells: list[tuple[str, int, str, bool]]) -> Content:
    """(text, width, style, right-aligned) cells, space separated; zero-width cells dropped."""
    parts: list[tuple[str, str] | str] = []
    for text, width, style, right in cells:
        if width <= 0:
            continue
        cell = text[:width].rjust(width) if right else clip(text, width)
        parts += [(cell, style), " "]
    return Content.assemble(*parts[:-1])


SHORT_LABELS = {"state": "", "verdict": "verd."}


def header(cols: Columns) -> Content:
    def label(name: str, width: int) -> str:
        return name if len(name) <= width else SHORT_LABELS.get(name, name)

    return _cells(
        cols,
        [
            ("branch", cols.name, "bold", False),
            (label("state", cols.state), cols.state, "bold", False),
            ("family", cols.family, "bold", False),
            ("model", cols.model, "bold", False),
            (label("verdict", cols.verdict), cols.verdict, "bold", False),
            ("score", cols.score, "bold", True),
            ("×ref", cols.speedup, "bold", True),
        ],
    )


def activity(b: Branch, spend: BranchSpend, live: bool) -> tuple[str, str]:
    """The branch row's verdict cell: what its model is doing, else what it has cost."""
    if branch_outage(b):
        return "outage", "bold $error"
    if live and spend.asking_since is not None and b.state != "retired":
        return "ask…", "$accent"
    if spend.usd:
        return fmt_usd(spend.usd), "$text-muted"
    if spend.tokens:
        return f"{fmt_tokens(spend.tokens)}t", "$text-muted"
    return "", ""


def reference_candidate(candidates: tuple[Candidate, ...]) -> Candidate | None:
    """The session's own baseline: the fastest passing candidate of the `baseline` family (the
    task's torch seed), timed comparably. None when there is none."""
    ok = [
        c
        for c in candidates
        if c.family == "baseline"
        and c.status == "ok"
        and c.score_us
        and c.summary.get("comparable") is not False
    ]
    return min(ok, key=lambda c: c.score_us or 0.0) if ok else None


def times_ref(c: Candidate | None, ref: Candidate | None) -> str:
    """The ×ref cell: the harness's speedup over the stored reference where `cockpit baseline`
    measured one, else the speedup over the session's baseline candidate. `n/c` for a time that
    is not comparable (the Triton interpreter on a CPU): the label the score column has no room
    for."""
    if c is None:
        return ""
    if c.status == "ok" and c.score_us and not figures.comparable(c.summary):
        return figures.NC
    stored = fmt_speedup(c.summary.get("speedups"))
    if stored or ref is None or c.status != "ok" or not c.score_us or not ref.score_us:
        return stored
    if c.summary.get("comparable") is False:
        return ""
    return fmt_speedup({"reference": ref.score_us / c.score_us})


def branch_row(
    b: Branch,
    colour: int,
    best: Candidate | None,
    cols: Columns,
    act: tuple[str, str] = ("", ""),
    session: str | None = None,
    ref: Candidate | None = None,
) -> Content:
    """`session`: the session's state; once it has ended, no branch reads running."""
    state = branch_state(b.state, session)
    plateaus = b.info.get("plateaus", 0)
    label = STATE_GLYPH.get(state, "?") + ("" if cols.state < 6 else f" {state}")
    if plateaus and cols.state >= 6:
        label += f" ≈{plateaus}"
    muted = state != b.state or state == "retired"
    return _cells(
        cols,
        [
            (b.id, cols.name, "bold " + ("$text-muted" if muted else branch_style(colour)), False),
            (label, cols.state, STATE_STYLE.get(state, "$text-muted"), False),
            (b.family or "", cols.family, "$text-muted" if muted else "", False),
            (b.model or "default", cols.model, "$text-muted", False),
            (act[0], cols.verdict, act[1], False),
            (fmt_us(b.best_us), cols.score, "bold $success" if b.best_us else "$text-muted", True),
            (times_ref(best, ref), cols.speedup, "", True),
        ],
    )


def candidate_row(
    c: Candidate, is_best: bool, cols: Columns, ref: Candidate | None = None
) -> Content:
    status = c.status or "?"
    verdict = "eval…" if status == "evaluating" else "ok·scr" if c.screened else status
    return _cells(
        cols,
        [
            (f" {c.id}", cols.name, "", False),
            ("★" if is_best else "", cols.state, "$success", False),
            (c.family or "", cols.family, "$text-muted", False),
            (c.model or "", cols.model, "$text-muted", False),
            (verdict, cols.verdict, verdict_style(status), False),
            (fmt_us(c.score_us), cols.score, "", True),
            (times_ref(c, ref), cols.speedup, "", True),
        ],
    )


def beam_options(
    branches: tuple[Branch, ...],
    candidates: tuple[Candidate, ...],
    cols: Columns,
    flt: Filter = NO_FILTER,
    spend: Spend | None = None,
    live: bool = True,
    session: str | None = None,
) -> list[Option]:
    """Branches in beam order, each followed by its newest candidates (and its best, always).

    With a filter: only branches that match or have a matching candidate, each followed by its
    newest matching candidates."""
    by_branch: dict[str | None, list[Candidate]] = {}
    index = {c.id: c for c in candidates}
    for c in candidates:
        by_branch.setdefault(c.branch, []).append(c)
    options = []
    ref = reference_candidate(candidates)
    for colour, b in enumerate(branches):
        best = index.get(b.best_candidate or "")
        own = by_branch.get(b.id, [])
        if flt.active:
            seen = as_shown(b, session)  # `state:` matches what the row says
            own = [c for c in own if flt.candidate(c, seen)]
            if not own and not flt.branch(seen):
                continue
            shown = list(reversed(own[-MATCHES_PER_BRANCH:]))
        else:
            shown = list(reversed(own[-CANDIDATES_PER_BRANCH:]))
            if best is not None and best.branch == b.id and best not in shown:
                shown.append(best)
        act = activity(b, (spend or Spend()).of(b.id), live)
        row = branch_row(b, colour, best, cols, act, session, ref)
        options.append(Option(row, id=f"b:{b.id}"))
        for c in shown:
            row = candidate_row(c, c.id == b.best_candidate, cols, ref)
            options.append(Option(row, id=f"c:{c.id}"))
        hidden = len(own) - len([c for c in shown if c.branch == b.id])
        if hidden > 0:
            more = Content.styled(
                f"  … {hidden} more{' match' if flt.active else ''}", "$text-muted"
            )
            options.append(Option(more, id=f"m:{b.id}", disabled=True))
    return options


def as_shown(b: Branch, session: str | None) -> Branch:
    """The branch with the state its row shows (none runs in a session that has ended)."""
    state = branch_state(b.state, session)
    return b if state == b.state else replace(b, state=state)


def count_matches(
    branches: tuple[Branch, ...],
    candidates: tuple[Candidate, ...],
    flt: Filter,
    session: str | None = None,
) -> int:
    by_id = {b.id: as_shown(b, session) for b in branches}
    return sum(1 for c in candidates if flt.candidate(c, by_id.get(c.branch or "")))


class BeamPanel(Vertical):
    DEFAULT_CSS = """
    BeamPanel { height: 1fr; }
    BeamPanel > #beam-header { height: 1; padding: 0 1; }
    BeamPanel > OptionList, BeamPanel > OptionList:focus { height: 1fr; border: none; padding: 0; }
    """

    @dataclass
    class Selected(Message):
        """The highlighted row changed: its branch, and its candidate (a branch row: its best)."""

        branch: str | None
        candidate: str | None

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.border_title = "beam"
        self._branches: tuple[Branch, ...] = ()
        self._candidates: tuple[Candidate, ...] = ()
        self._cols: Columns | None = None
        self._rows: tuple = ()  # the rows shown, as drawn (`_rebuild`)
        self._spend: Spend | None = None
        self._live = True
        self._session: str | None = None
        self.filter = NO_FILTER

    def compose(self) -> ComposeResult:
        yield Static(id="beam-header")
        yield OptionList(id="beam-list")

    @property
    def option_list(self) -> OptionList:
        return self.query_one("#beam-list", OptionList)

    def show(
        self,
        branches: tuple[Branch, ...],
        candidates: tuple[Candidate, ...],
        spend: Spend | None = None,
        live: bool = True,
        session: str | None = None,
    ) -> None:
        """`live`: an engine is at work, so a request without an outcome is in flight.
        `session`: the session's state (a branch of a session that has ended does not run)."""
        same = branches is self._branches and candidates is self._candidates
        if same and spend is self._spend and live == self._live and session == self._session:
            return
        self._branches, self._candidates, self._spend, self._live, self._session = (
            branches,
            candidates,
            spend,
            live,
            session,
        )
        self._rebuild()

    def set_filter(self, flt: Filter) -> None:
        """Show only what matches (NO_FILTER: everything); the title says what is hidden."""
        if flt == self.filter:
            return
        self.filter = flt
        self._rebuild()

    def on_resize(self) -> None:
        cols = Columns.for_width(self._inner_width())
        if cols != self._cols:
            self._rebuild()

    def _inner_width(self) -> int:
        return self.size.width - 1 - self.option_list.styles.scrollbar_size_vertical

    def _rebuild(self) -> None:
        cols = Columns.for_width(self._inner_width())
        if cols != self._cols:
            self._cols = cols
            self.query_one("#beam-header", Static).update(header(cols))
        options = beam_options(
            self._branches,
            self._candidates,
            cols,
            self.filter,
            self._spend,
            self._live,
            self._session,
        )
        # Rows are compared as drawn (text and styles): most snapshots change nothing the list
        # shows, or only what some rows say (a verdict, a score). Those rows are replaced in
        # place; the list is rebuilt only when rows come or go, which lays the screen out again
        # and moves the highlight. A branch row's best candidate is part of its identity: it is
        # what the row selects, and a rebuild re-announces the highlighted row.
        best = {f"b:{b.id}": b.best_candidate for b in self._branches}
        rows = tuple(
            ((o.id, o.disabled, best.get(o.id or "")), o.prompt.plain, tuple(o.prompt.spans))
            for o in options
            if isinstance(o.prompt, Content)
        )
        if self.filter.active:
            n = count_matches(self._branches, self._candidates, self.filter, self._session)
            title = f"beam ⧩ {self.filter.text} ({n}/{len(self._candidates)})"
        else:
            title = "beam"
        if title != self.border_title:
            self.border_title = title
        ol = self.option_list
        if len(rows) == len(options) == len(self._rows) == ol.option_count:
            if rows == self._rows:
                return
            if all(new[0] == old[0] for new, old in zip(rows, self._rows)):
                for i, (new, old) in enumerate(zip(rows, self._rows)):
                    if new != old:
                        ol.replace_option_prompt_at_index(i, options[i].prompt)
                self._rows = rows
                return
        self._rows = rows
        highlighted = ol.highlighted_option.id if ol.highlighted_option else None
        ol.clear_options()
        ol.add_options(options)
        if ol.option_count:
            try:
                ol.highlighted = ol.get_option_index(highlighted) if highlighted else 0
            except (LookupError, OptionDoesNotExist):  # the row is gone (filtered, a replay
                # stepped back): start over
                ol.highlighted = 0

    def select(self, option_id: str) -> None:
        """Highlight a row by id (`b:b2`, `c:c0005`)."""
        ol = self.option_list
        ol.highlighted = ol.get_option_index(option_id)

    @on(OptionList.OptionHighlighted, "#beam-list")
    def _highlighted(self, event: OptionList.OptionHighlighted) -> None:
        event.stop()
        oid = event.option.id or ""
        kind, _, key = oid.partition(":")
        if kind == "b":
            branch = next((b for b in self._branches if b.id == key), None)
            self.post_message(self.Selected(key, branch.best_candidate if branch else None))
        elif kind == "c":
            cand = next((c for c in self._candidates if c.id == key), None)
            self.post_message(self.Selected(cand.branch if cand else None, key))
